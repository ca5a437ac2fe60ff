package strategy

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/zkpresto/zkpresto/discovery"
)

// Limits for precomputing one smooth cycle. The cycle is sum(weights/gcd)
// picks long and takes that many times len(nodes) steps to compute; past
// either limit the picker runs the algorithm incrementally under a mutex.
// Variables, not constants, so tests can force the incremental path.
var (
	maxSmoothCycle     = 1 << 16
	maxSmoothCycleWork = 1 << 24
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
	if total <= uint64(maxSmoothCycle) && total*uint64(len(nodes)) <= uint64(maxSmoothCycleWork) {
		s := newSmoothState(weights, total)
		cycle := make([]int32, total)
		for i := range cycle {
			cycle[i] = int32(s.next())
		}
		return &cycleWeightedPicker{nodes: nodes, cycle: cycle}
	}
	return &smoothWeightedPicker{nodes: nodes, state: newSmoothState(weights, total)}
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

// smoothState runs the smooth weighted round robin one pick at a time.
type smoothState struct {
	weights []int64
	scores  []int64
	total   int64
}

func newSmoothState(weights []uint64, total uint64) *smoothState {
	s := &smoothState{
		weights: make([]int64, len(weights)),
		scores:  make([]int64, len(weights)),
		total:   int64(total),
	}
	for i, w := range weights {
		s.weights[i] = int64(w)
	}
	return s
}

// next returns the index of the next node in the cycle.
func (s *smoothState) next() int {
	scores := s.scores[:len(s.weights)]
	best, bestScore := 0, int64(math.MinInt64)
	for i, w := range s.weights {
		score := scores[i] + w
		scores[i] = score
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	scores[best] -= s.total
	return best
}

// cycleWeightedPicker replays a precomputed cycle, so Pick is one atomic add.
type cycleWeightedPicker struct {
	nodes []discovery.Node
	cycle []int32
	picks atomic.Uint64
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
