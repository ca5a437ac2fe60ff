package strategy

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
)

const (
	hammerGoroutines = 16
	hammerPicks      = 2100 // a multiple of 3, 5 and 7
)

// hammer picks from p in many goroutines at once and returns how often each
// node was picked. It reports an error for a failed pick or a node that does
// not point into nodes.
func hammer(t *testing.T, p Picker, nodes []discovery.Node) []int {
	t.Helper()
	counts := make([]atomic.Int64, len(nodes))
	var wg sync.WaitGroup
	for g := range hammerGoroutines {
		wg.Go(func() {
			req := &Request{User: fmt.Sprintf("user%d", g%4)}
			for range hammerPicks {
				node, err := p.Pick(req)
				if err != nil {
					t.Errorf("Pick: %v", err)
					return
				}
				found := false
				for i := range nodes {
					if &nodes[i] == node {
						counts[i].Add(1)
						found = true
						break
					}
				}
				if !found {
					t.Errorf("picked %v, not a pointer into the node slice", node)
					return
				}
			}
		})
	}
	wg.Wait()
	out := make([]int, len(nodes))
	for i := range counts {
		out[i] = int(counts[i].Load())
	}
	return out
}

func TestPickersConcurrent(t *testing.T) {
	names := slices.Clone(builtinNames)
	user := uniqueName("concurrent_func")
	if err := RegisterFunc(user, func(hosts []string) string { return hosts[1] }); err != nil {
		t.Fatal(err)
	}
	defer unregister(user)
	names = append(names, user)
	for _, name := range names {
		for _, seed := range []uint64{0, 11} {
			t.Run(fmt.Sprintf("%s/seed=%d", name, seed), func(t *testing.T) {
				s, _ := New(name, Options{Seed: seed})
				nodes := makeNodes(3, 5, 1, 1)
				counts := hammer(t, s.Build(nodes), nodes)
				// Rotations stay exact however the picks interleave.
				switch name {
				case "poll", "global_poll":
					want := hammerGoroutines * hammerPicks / 3
					checkCounts(t, counts, []int{want, want, want})
				case "weighted_poll":
					k := hammerGoroutines * hammerPicks / 7
					checkCounts(t, counts, []int{5 * k, k, k})
				case user:
					checkCounts(t, counts, []int{0, hammerGoroutines * hammerPicks, 0})
				}
			})
		}
	}
}

func checkCounts(t *testing.T, got, want []int) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("counts %v, want %v", got, want)
			return
		}
	}
}

// Pickers keep working while the strategy rebuilds under them.
func TestPickDuringRebuild(t *testing.T) {
	for _, name := range builtinNames {
		t.Run(name, func(t *testing.T) {
			s, _ := New(name, Options{})
			var current atomic.Pointer[Picker]
			first := s.Build(makeNodes(3))
			current.Store(&first)
			done := make(chan struct{})
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					req := &Request{User: "bob"}
					for {
						select {
						case <-done:
							return
						default:
						}
						if _, err := (*current.Load()).Pick(req); err != nil {
							t.Errorf("Pick: %v", err)
							return
						}
					}
				})
			}
			for i := range 200 {
				p := s.Build(makeNodes(1+i%7, 3, 1, 4, 1, 5))
				current.Store(&p)
			}
			close(done)
			wg.Wait()
		})
	}
}
