package strategy

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/zkpresto/zkpresto/discovery"
)

// Limits for precomputing one smooth cycle, which keep a rebuild under a
// millisecond. The cycle is sum(weights/gcd) picks long and takes that many
// times the number of distinct weights steps to compute; past either limit
// the picker runs the algorithm incrementally under a mutex.
// Variables, not constants, so tests can force the incremental path.
var (
	maxSmoothCycle     = 1 << 16
	maxSmoothCycleWork = 1 << 18
)

// weightedPollStrategy is nginx's smooth weighted round robin: every pick
// adds each node's weight to its running score, picks the highest score
// (the first node on a tie) and subtracts the total weight from it. Heavy
// nodes are spread through the cycle rather than picked in bursts: weights
// 5,1,1 give a,a,b,a,c,a,a. A rebuild starts a new cycle.
type weightedPollStrategy struct{}

func newWeightedPoll(Options) Strategy { return weightedPollStrategy{} }

func (weightedPollStrategy) Build(nodes []discovery.Node) Picker {
	if len(nodes) <= 1 {
		return &randomPicker{nodes: nodes} // a single node needs no rotation
	}
	weights, total := smoothWeights(nodes)
	s := newSmoothState(weights, total)
	if total <= uint64(maxSmoothCycle) && total*uint64(len(s.groups)) <= uint64(maxSmoothCycleWork) {
		cycle := make([]int32, total)
		for i := range cycle {
			cycle[i] = int32(s.next())
		}
		return &cycleWeightedPicker{nodes: nodes, cycle: cycle}
	}
	return &smoothWeightedPicker{nodes: nodes, state: s}
}

// smoothWeights returns the nodes' weights divided by their greatest common
// divisor (the cycle is then as short as it can be) and scaled down if need
// be so that the total, and so every running score, stays far from overflow.
func smoothWeights(nodes []discovery.Node) (weights []uint64, total uint64) {
	weights = make([]uint64, len(nodes))
	var divisor, largest uint64
	for i := range nodes {
		w := uint64(nodeWeight(&nodes[i]))
		weights[i] = w
		divisor = gcd(divisor, w)
		largest = max(largest, w)
	}
	largest /= divisor
	// With every weight below 2^40 and at most 2^22 nodes the total fits in
	// 62 bits. Weights that large are configuration mistakes; keeping their
	// proportions roughly is enough.
	shift := max(bits.Len64(largest)-40, 0)
	for i, w := range weights {
		weights[i] = max((w/divisor)>>shift, 1)
		total += weights[i]
	}
	return weights, total
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// smoothState runs the smooth weighted round robin one pick at a time, in
// O(distinct weights) per pick rather than nginx's O(nodes).
//
// Nodes of equal weight move in lockstep: they gain the same weight every
// pick, so they differ only in how often each was picked, by at most one,
// and the one picked next among them is always the lowest-indexed of those
// picked less. So each group of equal weight keeps one score, that of its
// members picked less (members[next:]; those before next are picked once
// more and score exactly total lower), and a rotation pointer; a pick adds
// each group's weight to its score and takes the group with the highest,
// ties to the lower node index, exactly as nginx's tie-break does.
type smoothState struct {
	groups []weightGroup
	total  int64
}

type weightGroup struct {
	weight  int64
	score   int64   // the score of members[next:]
	members []int32 // node indexes, ascending
	next    int
}

func newSmoothState(weights []uint64, total uint64) *smoothState {
	byWeight := make(map[uint64]int, 8)
	s := &smoothState{total: int64(total)}
	for i, w := range weights {
		g, ok := byWeight[w]
		if !ok {
			g = len(s.groups)
			byWeight[w] = g
			s.groups = append(s.groups, weightGroup{weight: int64(w)})
		}
		s.groups[g].members = append(s.groups[g].members, int32(i))
	}
	return s
}

// next returns the index of the next node in the cycle.
func (s *smoothState) next() int {
	best, bestScore, bestNode := 0, int64(math.MinInt64), int32(math.MaxInt32)
	for i := range s.groups {
		g := &s.groups[i]
		g.score += g.weight
		if node := g.members[g.next]; g.score > bestScore || g.score == bestScore && node < bestNode {
			best, bestScore, bestNode = i, g.score, node
		}
	}
	g := &s.groups[best]
	if g.next++; g.next == len(g.members) {
		// Every member is now picked once more: they share the lower score.
		g.next = 0
		g.score -= s.total
	}
	return int(bestNode)
}

// cycleWeightedPicker replays a precomputed cycle, so Pick is one atomic add.
type cycleWeightedPicker struct {
	nodes []discovery.Node
	cycle []int32
	// The counter every pick writes sits on a cache line of its own, so
	// that the writes do not evict the fields every pick reads from the
	// other cores' caches.
	_     [cacheLine]byte
	picks atomic.Uint64
	_     [cacheLine - 8]byte
}

func (p *cycleWeightedPicker) Pick(*Request) (*discovery.Node, error) {
	i := (p.picks.Add(1) - 1) % uint64(len(p.cycle))
	return &p.nodes[p.cycle[i]], nil
}

// smoothWeightedPicker serves cycles too long to precompute.
type smoothWeightedPicker struct {
	nodes []discovery.Node
	mu    sync.Mutex
	state *smoothState
}

func (p *smoothWeightedPicker) Pick(*Request) (*discovery.Node, error) {
	p.mu.Lock()
	i := p.state.next()
	p.mu.Unlock()
	return &p.nodes[i], nil
}
