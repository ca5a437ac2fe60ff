package strategy

import (
	"github.com/zkpresto/zkpresto/discovery"
)

// activeWindow is how many nodes least_active and local_first compare per
// pick, starting at a random node. Like Motan's ActiveWeight it looks at a
// bounded window rather than at every node: the cost stays flat at any fleet
// size, the random start spreads picks among equally idle nodes, and picks
// racing each other do not all land on the one globally least loaded node.
const activeWindow = 8

// leastActiveStrategy is least_active: of activeWindow nodes from a random
// start, the one whose in-flight statements relative to its weight would be
// lowest with this statement added, (in-flight+1)/weight. Idle nodes tie at
// 1/weight, so at low concurrency the heavier node in the window wins; ties
// go to the first in the window.
type leastActiveStrategy struct {
	loadAware
}

func newLeastActive(opts Options) Strategy {
	return &leastActiveStrategy{newLoadAware(opts)}
}

func (s *leastActiveStrategy) Build(nodes []discovery.Node) Picker {
	return &activePicker{cands: candidates(nodes, s.loadsFor(nodes), nil), rng: s.rng}
}

// activePicker picks the least loaded candidate in a random window.
type activePicker struct {
	cands []candidate
	rng   *rng
}

func (p *activePicker) Pick(*Request) (*discovery.Node, error) {
	if node, err, ok := pickFew(p.cands); ok {
		return node, err
	}
	n := len(p.cands)
	// The window is cands[start:start+w], wrapping past the end: two plain
	// ranges, so the loop has no wrap-around test.
	w := min(n, activeWindow)
	start := p.rng.intN(n)
	best := &p.cands[start]
	bestLoad := max(best.load.InFlight(), 0) + 1
	first, wrapped := p.cands[start+1:min(start+w, n)], p.cands[:max(start+w-n, 0)]
	for _, window := range [2][]candidate{first, wrapped} {
		for k := range window {
			c := &window[k]
			// load/weight < bestLoad/best.weight, without division.
			if load := max(c.load.InFlight(), 0) + 1; load*best.weight < bestLoad*c.weight {
				best, bestLoad = c, load
			}
		}
	}
	return best.node, nil
}
