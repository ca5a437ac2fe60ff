package strategy

import (
	"slices"
	"strconv"
	"testing"
)

// TestConsistentHashFigures computes the figures quoted for consistent_hash
// at 100 nodes and 1,000,000 keys, and holds them to their targets:
//
//   - moved: the fraction of keys that change node when one node leaves,
//     over every node that could leave (mean and worst), target mean ≤ 1.1/n;
//     only the departed node's keys may move;
//   - balance: the busiest node's keys over the mean, without the bound and
//     with it, where keys are placed one by one and a node's load is the
//     keys placed on it so far; target ≤ 1.05 with LoadBound 1.05.
//
// Run go test -run TestConsistentHashFigures -v ./strategy/ to see them.
// Under the race detector the test uses 100,000 keys, to finish in seconds.
func TestConsistentHashFigures(t *testing.T) {
	const n = 100
	keys := 1_000_000
	if raceEnabled {
		keys = 100_000
	}
	nodes := makeNodes(n)
	reqs := make([]Request, keys)
	for i := range reqs {
		reqs[i].Key = "key-" + strconv.Itoa(i)
	}
	mean := float64(keys) / n

	p := newConsistentHash(Options{}).Build(nodes)
	owner := make([]int32, keys)
	perNode := make([]int, n)
	for i := range reqs {
		o := nodeIndex(nodes, mustPick(t, p, &reqs[i]))
		owner[i] = int32(o)
		perNode[o]++
	}
	// Only a departed node's keys move (checked below), so the keys moved
	// when node d leaves are exactly the keys d owned.
	var movedMean, movedMax float64
	for _, c := range perNode {
		f := float64(c) / float64(keys)
		movedMean += f / n
		movedMax = max(movedMax, f)
	}
	for _, d := range []int{0, n / 2, n - 1} {
		s := newConsistentHash(Options{})
		s.Build(nodes)
		rest := slices.Delete(slices.Clone(nodes), d, d+1)
		q := s.Build(rest)
		moved := 0
		for i := range reqs {
			got := nodeIndex(rest, mustPick(t, q, &reqs[i]))
			if got >= d {
				got++ // back to an index into nodes
			}
			if got != int(owner[i]) {
				if int(owner[i]) != d {
					t.Fatalf("node %d left and key %s moved from node %d to %d", d, reqs[i].Key, owner[i], got)
				}
				moved++
			}
		}
		if moved != perNode[d] {
			t.Fatalf("node %d left: %d keys moved, it owned %d", d, moved, perNode[d])
		}
	}
	t.Logf("n=%d, %d keys, %d points per node", n, keys, ringPointsPerNode)
	t.Logf("moved when one node leaves: mean %.4f (%.2f/n), worst %.4f (%.2f/n); only the departed node's keys move",
		movedMean, movedMean*n, movedMax, movedMax*n)
	if movedMean > 1.1/n {
		t.Errorf("moved fraction %.4f, want ≤ 1.1/n = %.4f", movedMean, 1.1/n)
	}
	t.Logf("max/mean without the bound: %.3f", float64(slices.Max(perNode))/mean)

	for _, bound := range []float64{1.25, 1.05} {
		loads := NewLoads()
		q := ConsistentHash(ConsistentHashConfig{LoadBound: bound})(Options{Loads: loads}).Build(nodes)
		nodeLoad := loads.ForNodes(nodes)
		displaced := 0
		for i := range reqs {
			o := nodeIndex(nodes, mustPick(t, q, &reqs[i]))
			nodeLoad[o].Begin()
			if o != int(owner[i]) {
				displaced++
			}
		}
		var most int64
		for _, l := range nodeLoad {
			most = max(most, l.InFlight())
		}
		ratio := float64(most) / mean
		t.Logf("max/mean with LoadBound %.2f: %.3f (%.1f%% of keys off their own node)",
			bound, ratio, 100*float64(displaced)/float64(keys))
		if ratio > bound+1e-9 {
			t.Errorf("LoadBound %.2f: max/mean %.4f exceeds the bound", bound, ratio)
		}
	}
}
