package strategy

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestWeightedPollSmoothSequence(t *testing.T) {
	tests := []struct {
		weights []int
		want    string // one node letter per pick, two cycles
	}{
		{[]int{5, 1, 1}, "aabacaa" + "aabacaa"},
		{[]int{10, 2, 2}, "aabacaa" + "aabacaa"}, // divided by the gcd
		{[]int{1, 1, 1}, "abc" + "abc"},
		{[]int{2, 1}, "aba" + "aba"},
		{[]int{1, 3}, "babb" + "babb"},
		{[]int{4, 3, 2}, "abcabacba" + "abcabacba"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.weights), func(t *testing.T) {
			for _, limit := range []int{maxSmoothCycle, 1} { // precomputed, incremental
				got := weightedPollSequence(t, tt.weights, len(tt.want), limit)
				if got != tt.want {
					t.Errorf("cycle limit %d: sequence %s, want %s", limit, got, tt.want)
				}
			}
		})
	}
}

// weightedPollSequence returns k picks as letters a, b, c, ... with the
// precomputed cycle limited to cycleLimit picks.
func weightedPollSequence(t *testing.T, weights []int, k, cycleLimit int) string {
	t.Helper()
	defer func(old int) { maxSmoothCycle = old }(maxSmoothCycle)
	maxSmoothCycle = cycleLimit
	nodes := makeNodes(len(weights), weights...)
	p := newWeightedPoll(Options{}).Build(nodes)
	var b strings.Builder
	for range k {
		b.WriteByte(byte('a' + indexOf(t, nodes, mustPick(t, p, nil))))
	}
	return b.String()
}

// The precomputed cycle and the incremental algorithm agree pick for pick.
func TestWeightedPollPrecomputedMatchesIncremental(t *testing.T) {
	weightSets := [][]int{
		{7, 3, 3, 1, 9, 2},
		{100, 1},
		{6, 4, 2, 8},
		{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
	}
	for _, weights := range weightSets {
		k := 3 * sum(weights)
		pre := weightedPollSequence(t, weights, k, 1<<16)
		inc := weightedPollSequence(t, weights, k, 1)
		if pre != inc {
			t.Errorf("weights %v: precomputed %s, incremental %s", weights, pre, inc)
		}
	}
}

func sum(xs []int) int {
	var s int
	for _, x := range xs {
		s += x
	}
	return s
}

// Over whole cycles each node gets exactly its weight's share, and within a
// cycle no node falls more than one pick behind its share.
func TestWeightedPollExactShares(t *testing.T) {
	for _, limit := range []int{maxSmoothCycle, 1} {
		weights := []int{3, 1, 2, 4, 7}
		seq := weightedPollSequence(t, weights, 10*sum(weights), limit)
		counts := make([]int, len(weights))
		total := sum(weights)
		for i := range len(seq) {
			counts[seq[i]-'a']++
			for n, w := range weights {
				share := float64((i+1)*w) / float64(total)
				if d := float64(counts[n]) - share; d > 1 || d < -1 {
					t.Fatalf("limit %d, after %d picks node %d has %d picks, share %.2f", limit, i+1, n, counts[n], share)
				}
			}
		}
		for n, w := range weights {
			if counts[n] != 10*w {
				t.Errorf("limit %d: node %d picked %d times, want %d", limit, n, counts[n], 10*w)
			}
		}
	}
}

// Weights too large for a cycle are scaled down, not overflowed, and still
// give proportional picks.
func TestWeightedPollHugeWeights(t *testing.T) {
	nodes := makeNodes(3, 1<<62-1, 1<<61, 3)
	p := newWeightedPoll(Options{}).Build(nodes)
	if _, ok := p.(*smoothWeightedPicker); !ok {
		t.Fatalf("picker is %T, want the incremental picker for a long cycle", p)
	}
	counts := make([]int, len(nodes))
	for range 3000 {
		counts[indexOf(t, nodes, mustPick(t, p, nil))]++
	}
	if counts[0] < 1999 || counts[0] > 2001 || counts[1] < 999 || counts[1] > 1001 || counts[2] > 1 {
		t.Errorf("counts %v, want about 2000, 1000, 0", counts)
	}
}

// nginxSequence is nginx's smooth weighted round robin as written, O(nodes)
// per pick: the reference for the grouped implementation.
func nginxSequence(weights []int, k int) []int {
	scores := make([]int, len(weights))
	total := sum(weights)
	out := make([]int, k)
	for pick := range out {
		best := 0
		for i, w := range weights {
			scores[i] += w
			if scores[i] > scores[best] {
				best = i
			}
		}
		scores[best] -= total
		out[pick] = best
	}
	return out
}

// Grouping nodes of equal weight gives nginx's sequence pick for pick,
// whichever path serves it.
func TestWeightedPollMatchesNginx(t *testing.T) {
	src := rand.New(rand.NewPCG(17, 18))
	for round := range 200 {
		n := 2 + src.IntN(12)
		weights := make([]int, n)
		for i := range weights {
			weights[i] = 1 + src.IntN(1+round%6) // few distinct weights, many ties
		}
		// Coprime weights keep smoothWeights from dividing them.
		weights[0] = 1
		// Nodes are sorted by address, which past ten nodes is not the
		// order makeNodes was given the weights in.
		nodes := makeNodes(n, weights...)
		ordered := make([]int, n)
		for i := range nodes {
			ordered[i] = nodes[i].Weight
		}
		want := nginxSequence(ordered, 3*sum(weights))
		for _, limit := range []int{maxSmoothCycle, 1} {
			seq := weightedPollSequence(t, weights, len(want), limit)
			for i, c := range []byte(seq) {
				if int(c-'a') != want[i] {
					t.Fatalf("weights %v, limit %d: pick %d is node %d, nginx picks %d", weights, limit, i, c-'a', want[i])
				}
			}
		}
	}
}

// Across nodes joining and leaving, each picker's whole cycles give every
// node exactly its weight's share.
func TestWeightedPollFairAcrossRebuilds(t *testing.T) {
	s := newWeightedPoll(Options{})
	sets := [][]int{{3, 1, 2}, {3, 1, 2, 5}, {1, 2, 5}, {4, 4, 1, 2, 3}, {2, 1}}
	for round, weights := range sets {
		nodes := makeNodes(len(weights), weights...)
		p := s.Build(nodes)
		counts := make([]int, len(nodes))
		for range 4 * sum(weights) {
			counts[indexOf(t, nodes, mustPick(t, p, nil))]++
		}
		for i, w := range weights {
			if counts[i] != 4*w {
				t.Fatalf("round %d, weights %v: counts %v, want 4× the weights", round, weights, counts)
			}
		}
	}
}
