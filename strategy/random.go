package strategy

import "github.com/zkpresto/zkpresto/discovery"

// randomStrategy picks uniformly; it is the default and the fallback for
// unknown names and misbehaving user strategies.
type randomStrategy struct {
	rng *rng
}

func newRandom(opts Options) Strategy {
	return &randomStrategy{rng: newRNG(opts.Seed)}
}

func (s *randomStrategy) Build(nodes []discovery.Node) Picker {
	return &randomPicker{nodes: nodes, rng: s.rng}
}

type randomPicker struct {
	nodes []discovery.Node
	rng   *rng
}

func (p *randomPicker) Pick(*Request) (*discovery.Node, error) {
	switch len(p.nodes) {
	case 0:
		return nil, ErrNoNodes
	case 1:
		return &p.nodes[0], nil
	}
	return &p.nodes[p.rng.intN(len(p.nodes))], nil
}
