package strategy

import (
	"sort"
	"sync/atomic"

	"github.com/zkpresto/zkpresto/discovery"
)

// pollStrategy hands out nodes in turn. The pick counter lives in the
// strategy, not the picker, and a rebuild resumes with the node that follows,
// in address order, the one picked last. So a membership change neither
// restarts the rotation at the first node nor gives a node two turns in a
// row, which is how schedulers that reset their position on change lose
// fairness.
type pollStrategy struct {
	picks atomic.Uint64 // picks made by every picker this strategy built
	last  *pollPicker   // the latest picker; Build is never concurrent
}

func newPoll(Options) Strategy { return &pollStrategy{} }

func (s *pollStrategy) Build(nodes []discovery.Node) Picker {
	start := s.picks.Load()
	offset := 0
	if prev := s.last; prev != nil && len(prev.nodes) > 0 && len(nodes) > 0 {
		// nodes is sorted by Addr: resume at the first node after the one
		// picked last or, when nothing was picked since the previous build,
		// at the node that was to come next.
		var resume func(addr string) bool
		if start > prev.start {
			last := prev.nodes[prev.index(start-1)].Addr
			resume = func(addr string) bool { return addr > last }
		} else {
			next := prev.nodes[prev.offset].Addr
			resume = func(addr string) bool { return addr >= next }
		}
		offset = sort.Search(len(nodes), func(i int) bool { return resume(nodes[i].Addr) })
		if offset == len(nodes) {
			offset = 0
		}
	}
	p := &pollPicker{nodes: nodes, picks: &s.picks, start: start, offset: uint64(offset)}
	s.last = p
	return p
}

type pollPicker struct {
	nodes  []discovery.Node
	picks  *atomic.Uint64
	start  uint64 // picks when the picker was built
	offset uint64 // index of the node for pick number start
}

// index maps a pick number to a node index. Pick numbers a picker sees are at
// least start, so the subtraction never wraps.
func (p *pollPicker) index(pick uint64) int {
	return int((p.offset + (pick - p.start)) % uint64(len(p.nodes)))
}

func (p *pollPicker) Pick(*Request) (*discovery.Node, error) {
	if len(p.nodes) == 0 {
		return nil, ErrNoNodes
	}
	return &p.nodes[p.index(p.picks.Add(1)-1)], nil
}
