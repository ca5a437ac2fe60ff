package strategy

import (
	"github.com/zkpresto/zkpresto/discovery"
)

// candidate is a node with what load-aware pickers read on every pick, laid
// out together so that a pick never looks anything up by address.
type candidate struct {
	node   *discovery.Node
	load   *Load
	weight int64
}

// loadAware is what the load-aware strategies share: their random source and
// the load table they read. A table of the strategy's own (no Options.Loads)
// forgets departed nodes at each build; the driver's table is the driver's
// to prune.
type loadAware struct {
	rng   *rng
	loads *Loads
	own   bool
}

func newLoadAware(opts Options) loadAware {
	if opts.Loads != nil {
		return loadAware{rng: newRNG(opts.Seed), loads: opts.Loads}
	}
	return loadAware{rng: newRNG(opts.Seed), loads: NewLoads(), own: true}
}

// loadsFor returns the Load of every node, parallel to nodes.
func (s *loadAware) loadsFor(nodes []discovery.Node) []*Load {
	if s.own {
		s.loads.Retain(nodes)
	}
	return s.loads.ForNodes(nodes)
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

// pickFew answers a pick over zero or one candidates, which needs no load
// comparison; ok is false when there are more.
func pickFew(cands []candidate) (node *discovery.Node, err error, ok bool) {
	switch len(cands) {
	case 0:
		return nil, ErrNoNodes, true
	case 1:
		return cands[0].node, nil, true
	}
	return nil, nil, false
}
