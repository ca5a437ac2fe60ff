package strategy

import (
	"errors"
	"slices"
	"testing"
)

func TestPollInTurn(t *testing.T) {
	nodes := makeNodes(3)
	p := newPoll(Options{}).Build(nodes)
	for i := range 12 {
		if got := indexOf(t, nodes, mustPick(t, p, nil)); got != i%3 {
			t.Fatalf("pick %d: got node %d, want %d", i, got, i%3)
		}
	}
}

func TestPollResumesAfterRebuild(t *testing.T) {
	tests := []struct {
		name   string
		before []string
		picks  int // picks before the rebuild
		after  []string
		want   []string // the next picks after the rebuild
	}{
		{"node added", []string{"a", "b", "c"}, 2, []string{"a", "b", "c", "d"}, []string{"c", "d", "a", "b", "c"}},
		{"node added before next", []string{"a", "c"}, 1, []string{"a", "b", "c"}, []string{"b", "c", "a"}},
		{"other node removed", []string{"a", "b", "c", "d"}, 2, []string{"b", "c", "d"}, []string{"c", "d", "b", "c"}},
		{"next node removed", []string{"a", "b", "c", "d"}, 1, []string{"a", "c", "d"}, []string{"c", "d", "a"}},
		{"last node next and removed", []string{"a", "b", "c"}, 2, []string{"a", "b"}, []string{"a", "b", "a"}},
		{"full turns", []string{"a", "b"}, 4, []string{"a", "b", "c"}, []string{"c", "a", "b"}},
		{"no picks", []string{"a", "b"}, 0, []string{"b", "c"}, []string{"b", "c", "b"}},
		{"from empty", nil, 0, []string{"a", "b"}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newPoll(Options{})
			p := s.Build(nodesByAddr(tt.before...))
			for range tt.picks {
				if _, err := p.Pick(nil); err != nil && len(tt.before) > 0 {
					t.Fatal(err)
				}
			}
			got := pickAddrs(t, s.Build(nodesByAddr(tt.after...)), len(tt.want))
			if !slices.Equal(got, tt.want) {
				t.Errorf("picks after rebuild = %v, want %v", got, tt.want)
			}
		})
	}
}

// After any rebuild, every k·n consecutive picks give each node exactly k.
func TestPollFairAcrossRebuilds(t *testing.T) {
	s := newPoll(Options{})
	sizes := []int{3, 5, 4, 1, 7, 2, 6}
	for round, n := range sizes {
		nodes := makeNodes(n)
		p := s.Build(nodes)
		const k = 5
		counts := make([]int, n)
		for range k * n {
			counts[indexOf(t, nodes, mustPick(t, p, nil))]++
		}
		for i, c := range counts {
			if c != k {
				t.Fatalf("round %d (n=%d): node %d picked %d times, want %d (counts %v)", round, n, i, c, k, counts)
			}
		}
		// Leave the counter in the middle of a turn before the next rebuild.
		for range round % n {
			mustPick(t, p, nil)
		}
	}
}

func TestPickersReturnErrNoNodes(t *testing.T) {
	for _, name := range builtinNames {
		for _, seed := range []uint64{0, 7} {
			s, _ := New(name, Options{Seed: seed})
			if _, err := s.Build(nil).Pick(&Request{User: "u"}); !errors.Is(err, ErrNoNodes) {
				t.Errorf("%s (seed %d): Pick on no nodes returned %v, want ErrNoNodes", name, seed, err)
			}
			// A strategy must recover from an empty node set.
			nodes := makeNodes(2)
			indexOf(t, nodes, mustPick(t, s.Build(nodes), &Request{User: "u"}))
		}
	}
}
