package strategy

import (
	"log/slog"
	"sync/atomic"

	"github.com/zkpresto/zkpresto/discovery"
)

// globalPollStrategy is global_poll: round robin across every client of a
// cluster, as Kyuubi's polling strategy does. Each pick takes the next value
// of a SharedCounter (Options.Counter, e.g. a discovery.ZKCounter on a znode)
// and picks node value mod n, so clients that see the same nodes visit them
// in one global turn.
//
// The cost is the counter's: with a ZooKeeper counter a pick is a read and a
// versioned write, two round trips to the ensemble, the write committed to
// the ensemble's transaction log (about 1.7 ms against one local server on
// a busy machine in BenchmarkPickGlobalPollZooKeeper, more while other
// clients contend for the znode), and it allocates; every other strategy
// picks in nanoseconds without I/O.
// When Next fails that pick uses a process-local counter instead, with a
// warning at most once a second. Without a counter the rotation is
// process-local throughout, which is logged once at Info.
type globalPollStrategy struct {
	counter SharedCounter
	warn    *rateLimitedLogger
	_       [cacheLine]byte // see cycleWeightedPicker
	local   atomic.Uint64
	_       [cacheLine - 8]byte
}

func newGlobalPoll(opts Options) Strategy {
	s := &globalPollStrategy{
		counter: opts.Counter,
		warn: &rateLimitedLogger{
			logger:   opts.Logger,
			message:  "strategy: shared counter failed; this pick uses the local counter",
			strategy: "global_poll",
			now:      unixNano,
		},
	}
	if s.counter == nil && opts.Logger != nil {
		opts.Logger.Info("strategy: global_poll has no shared counter; rotating within this process only",
			slog.String("strategy", "global_poll"))
	}
	return s
}

func (s *globalPollStrategy) Build(nodes []discovery.Node) Picker {
	return &globalPollPicker{nodes: nodes, s: s}
}

type globalPollPicker struct {
	nodes []discovery.Node
	s     *globalPollStrategy
}

func (p *globalPollPicker) Pick(*Request) (*discovery.Node, error) {
	n := uint64(len(p.nodes))
	if n == 0 {
		return nil, ErrNoNodes
	}
	return &p.nodes[p.s.next()%n], nil
}

// next returns the next value of the shared counter, or of the local one
// when there is no shared counter or it fails.
func (s *globalPollStrategy) next() uint64 {
	if s.counter != nil {
		v, err := s.counter.Next()
		if err == nil {
			return v
		}
		s.warn.log(err)
	}
	return s.local.Add(1) - 1
}
