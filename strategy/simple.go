package strategy

import (
	"fmt"
	"slices"

	"github.com/zkpresto/zkpresto/discovery"
)

// funcStrategy adapts a Kyuubi-style choose function, which sees only the
// server addresses, to a Strategy.
type funcStrategy struct {
	choose func(hosts []string) string
}

func (s *funcStrategy) Build(nodes []discovery.Node) Picker {
	p := &funcPicker{
		choose: s.choose,
		hosts:  make([]string, len(nodes)),
		nodes:  nodes,
		byAddr: make(map[string]int, len(nodes)),
	}
	for i := range nodes {
		p.hosts[i] = nodes[i].Addr
		p.byAddr[nodes[i].Addr] = i
	}
	// Nodes arrive sorted by Addr; sort anyway so choose can rely on it even
	// for hand-built node lists. Clip so that an append by choose cannot
	// write into memory another pick is reading.
	slices.Sort(p.hosts)
	p.hosts = slices.Clip(p.hosts)
	return p
}

type funcPicker struct {
	choose func(hosts []string) string
	hosts  []string // shared by every pick; choose must not modify it
	nodes  []discovery.Node
	byAddr map[string]int
}

func (p *funcPicker) Pick(*Request) (*discovery.Node, error) {
	if len(p.nodes) == 0 {
		return nil, ErrNoNodes
	}
	host := p.choose(p.hosts)
	if i, ok := p.byAddr[host]; ok {
		return &p.nodes[i], nil
	}
	return nil, fmt.Errorf("choose returned %q, which is not one of the hosts", host)
}
