package strategy

import (
	"github.com/zkpresto/zkpresto/discovery"
)

// p2cScanAll is the fleet size up to which p2c compares every node instead
// of two: with so few nodes two random ones often leave out the best, and
// reading them all costs about as much as drawing two.
const p2cScanAll = 4

// scanOrders[n] lists every order of n nodes, for n up to p2cScanAll (24
// orders of 4 at most), so that a scan in a random order costs one draw.
var scanOrders = func() [p2cScanAll + 1][][p2cScanAll]uint8 {
	var out [p2cScanAll + 1][][p2cScanAll]uint8
	for n := 1; n <= p2cScanAll; n++ {
		var perm [p2cScanAll]uint8
		var extend func(k int, used uint)
		extend = func(k int, used uint) {
			if k == n {
				out[n] = append(out[n], perm)
				return
			}
			for i := range n {
				if used&(1<<i) == 0 {
					perm[k] = uint8(i)
					extend(k+1, used|1<<i)
				}
			}
		}
		extend(0, 0)
	}
	return out
}()

// p2cStrategy is p2c, the power of two choices: two distinct nodes drawn
// with probability proportional to weight, and the one with the lower cost
// wins, cost being (in-flight+1) × latency / weight, where latency is the
// node's moving average. With at most p2cScanAll nodes every node is
// compared, in a random order, ties going to the first.
//
// Drawing by weight matters on unequal nodes: drawn uniformly, two small
// nodes make up the pair often enough (a third of the time with capacities
// 1:1:4) to be sent more than they can do, whatever their load. Latency
// follows what weight cannot: a node that turns slow, or one loaded by other
// clients, whose statements this process does not count in flight. While
// either of two nodes compared has no latency yet, their costs leave latency
// out, so a new node is tried rather than shunned. Two candidates rather
// than all avoid herding concurrent picks onto the one least loaded node of
// a large fleet, yet keep the busiest nodes almost out of reach.
type p2cStrategy struct {
	loadAware
}

func newP2C(opts Options) Strategy {
	return &p2cStrategy{newLoadAware(opts)}
}

func (s *p2cStrategy) Build(nodes []discovery.Node) Picker {
	// Every node is a candidate, so candidate i is nodes[i] and the weighted
	// draw's indices serve both.
	return &p2cPicker{
		cands: candidates(nodes, s.loadsFor(nodes), nil),
		draw:  newWeightedPicker(nodes, s.rng),
		rng:   s.rng,
	}
}

type p2cPicker struct {
	cands []candidate
	draw  *weightedPicker // draws candidate indices ∝ weight
	rng   *rng
}

func (p *p2cPicker) Pick(*Request) (*discovery.Node, error) {
	if node, err, ok := pickFew(p.cands); ok {
		return node, err
	}
	n := len(p.cands)
	if n <= p2cScanAll {
		// In a random order, so that the first of equally cheap nodes, which
		// wins, is a uniformly random one of them.
		orders := scanOrders[n]
		order := &orders[p.rng.intN(len(orders))]
		best := &p.cands[order[0]]
		bestCost := costOf(best)
		for _, k := range order[1:n] {
			c := &p.cands[k]
			if cost := costOf(c); cost.below(bestCost) {
				best, bestCost = c, cost
			}
		}
		return best.node, nil
	}
	i, j := p.draw.index(p.rng.float64()), p.draw.index(p.rng.float64())
	if j == i {
		// Another node, uniformly: redrawing by weight could repeat a
		// dominant node many times over.
		j = p.rng.intN(n - 1)
		if j >= i {
			j++
		}
	}
	if a, b := &p.cands[i], &p.cands[j]; costOf(b).below(costOf(a)) {
		return b.node, nil
	}
	return p.cands[i].node, nil
}

// p2cCost is what p2c compares of a node, read once per pick.
type p2cCost struct {
	inFlight float64 // statements in flight, with the one being picked for
	weight   float64
	latency  float64 // nanoseconds; 0 before the first statement ended
}

func costOf(c *candidate) p2cCost {
	return p2cCost{
		inFlight: float64(max(c.load.InFlight(), 0) + 1),
		weight:   float64(c.weight),
		latency:  float64(c.load.Latency()),
	}
}

// below reports whether x's cost is lower than y's: (in-flight+1) ×
// latency / weight, leaving latency out unless both have one. It
// cross-multiplies rather than divides, which is several times slower.
func (x p2cCost) below(y p2cCost) bool {
	a, b := x.inFlight*y.weight, y.inFlight*x.weight
	if x.latency > 0 && y.latency > 0 {
		a *= x.latency
		b *= y.latency
	}
	return a < b
}
