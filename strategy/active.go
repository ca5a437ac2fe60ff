package strategy

import (
	"os"
	"strings"

	"github.com/zkpresto/zkpresto/discovery"
)

// activeWindow is how many nodes least_active and local_first compare per
// pick, starting at a random node. Like Motan's ActiveWeight it looks at a
// bounded window rather than at every node: the cost stays flat at any fleet
// size, the random start spreads picks among equally idle nodes, and picks
// racing each other do not all land on the one globally least loaded node.
const activeWindow = 8

// ZoneEnv is the environment variable local_first reads the client's zone
// from when Options.Zone is empty.
const ZoneEnv = "ZKPRESTO_ZONE"

// candidate is a node with what load-aware pickers read on every pick, laid
// out together so that a pick never looks anything up by address.
type candidate struct {
	node   *discovery.Node
	load   *Load
	weight int64
}

// loadsOf returns the load table to read: the driver's, or, when Options has
// none, one of the strategy's own (own reports true).
func loadsOf(opts Options) (loads *Loads, own bool) {
	if opts.Loads != nil {
		return opts.Loads, false
	}
	return NewLoads(), true
}

// nodeLoads returns the Load of every node, parallel to nodes. A table of the
// strategy's own forgets departed nodes first; the driver's table is the
// driver's to prune.
func nodeLoads(loads *Loads, own bool, nodes []discovery.Node) []*Load {
	if own {
		loads.Retain(nodes)
	}
	out := make([]*Load, len(nodes))
	for i := range nodes {
		out[i] = loads.For(nodes[i].Addr)
	}
	return out
}

// candidates returns the nodes for which keep is true (every node when keep
// is nil) with their loads and weights.
func candidates(nodes []discovery.Node, loads []*Load, keep func(*discovery.Node) bool) []candidate {
	out := make([]candidate, 0, len(nodes))
	for i := range nodes {
		if keep == nil || keep(&nodes[i]) {
			out = append(out, candidate{node: &nodes[i], load: loads[i], weight: int64(nodeWeight(&nodes[i]))})
		}
	}
	return out
}

// leastActiveStrategy is least_active: of activeWindow nodes from a random
// start, the one whose in-flight statements relative to its weight would be
// lowest with this statement added, (in-flight+1)/weight. Idle nodes tie at
// 1/weight, so at low concurrency the heavier node in the window wins; ties
// go to the first in the window.
type leastActiveStrategy struct {
	rng   *rng
	loads *Loads
	own   bool
}

func newLeastActive(opts Options) Strategy {
	s := &leastActiveStrategy{rng: newRNG(opts.Seed)}
	s.loads, s.own = loadsOf(opts)
	return s
}

func (s *leastActiveStrategy) Build(nodes []discovery.Node) Picker {
	return &activePicker{cands: candidates(nodes, nodeLoads(s.loads, s.own, nodes), nil), rng: s.rng}
}

// activePicker picks the least loaded candidate in a random window.
type activePicker struct {
	cands []candidate
	rng   *rng
}

func (p *activePicker) Pick(*Request) (*discovery.Node, error) {
	n := len(p.cands)
	switch n {
	case 0:
		return nil, ErrNoNodes
	case 1:
		return p.cands[0].node, nil
	}
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

// localFirstStrategy is local_first: least_active among the nodes in the
// client's zone (Node.Zone equal to Options.Zone, else to $ZKPRESTO_ZONE,
// ignoring case), or among all nodes when no zone is set or no node is in
// it.
type localFirstStrategy struct {
	zone  string
	rng   *rng
	loads *Loads
	own   bool
}

func newLocalFirst(opts Options) Strategy {
	zone := strings.TrimSpace(opts.Zone)
	if zone == "" {
		zone = strings.TrimSpace(os.Getenv(ZoneEnv))
	}
	s := &localFirstStrategy{zone: zone, rng: newRNG(opts.Seed)}
	s.loads, s.own = loadsOf(opts)
	return s
}

func (s *localFirstStrategy) Build(nodes []discovery.Node) Picker {
	loads := nodeLoads(s.loads, s.own, nodes)
	var cands []candidate
	if s.zone != "" {
		cands = candidates(nodes, loads, func(n *discovery.Node) bool { return strings.EqualFold(n.Zone, s.zone) })
	}
	if len(cands) == 0 {
		cands = candidates(nodes, loads, nil)
	}
	return &activePicker{cands: cands, rng: s.rng}
}

// p2cStrategy is p2c, the power of two choices: two distinct nodes at
// random, and the one with the lower cost wins, cost being
// (in-flight+1) × latency / weight, where latency is the node's moving
// average. While either of the two has no latency yet, the cost leaves
// latency out, so a new node is tried rather than shunned. Two random
// candidates avoid herding every concurrent pick onto the one least loaded
// node, yet keep the busiest nodes almost out of reach.
type p2cStrategy struct {
	rng   *rng
	loads *Loads
	own   bool
}

func newP2C(opts Options) Strategy {
	s := &p2cStrategy{rng: newRNG(opts.Seed)}
	s.loads, s.own = loadsOf(opts)
	return s
}

func (s *p2cStrategy) Build(nodes []discovery.Node) Picker {
	return &p2cPicker{cands: candidates(nodes, nodeLoads(s.loads, s.own, nodes), nil), rng: s.rng}
}

type p2cPicker struct {
	cands []candidate
	rng   *rng
}

func (p *p2cPicker) Pick(*Request) (*discovery.Node, error) {
	n := len(p.cands)
	switch n {
	case 0:
		return nil, ErrNoNodes
	case 1:
		return p.cands[0].node, nil
	}
	i, j := p.rng.intN(n), p.rng.intN(n-1)
	if j >= i {
		j++ // distinct from i, still uniform
	}
	a, b := &p.cands[i], &p.cands[j]
	costA := float64(max(a.load.InFlight(), 0)+1) / float64(a.weight)
	costB := float64(max(b.load.InFlight(), 0)+1) / float64(b.weight)
	if latA, latB := a.load.Latency(), b.load.Latency(); latA > 0 && latB > 0 {
		costA *= float64(latA)
		costB *= float64(latB)
	}
	if costB < costA {
		return b.node, nil
	}
	return a.node, nil
}
