package strategy

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
)

// GlobalPollBudget is the longest a global_poll pick waits for its shared
// counter, whatever the caller's deadline (a shorter deadline bounds it
// further). A healthy ZooKeeper counter answers in milliseconds; waiting
// longer would hold every statement of the process hostage to an ensemble
// that does not answer (a black-holed network drops packets, and the
// ZooKeeper client may notice only two thirds of a session timeout later), so
// past the budget the pick uses the process-local counter instead.
const GlobalPollBudget = 250 * time.Millisecond

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
// When Next fails, or does not answer within the caller's context and
// GlobalPollBudget, that pick uses a process-local counter instead, with a
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
			message:  "strategy: shared counter failed or did not answer in time; this pick uses the local counter",
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

var _ ContextPicker = (*globalPollPicker)(nil)

// Pick waits for the shared counter for at most GlobalPollBudget.
func (p *globalPollPicker) Pick(req *Request) (*discovery.Node, error) {
	return p.PickContext(context.Background(), req)
}

// PickContext waits for the shared counter until ctx is done or for
// GlobalPollBudget, whichever comes first.
func (p *globalPollPicker) PickContext(ctx context.Context, _ *Request) (*discovery.Node, error) {
	n := uint64(len(p.nodes))
	if n == 0 {
		return nil, ErrNoNodes
	}
	return &p.nodes[p.s.next(ctx)%n], nil
}

// next returns the next value of the shared counter, or of the local one
// when there is no shared counter or it fails or is too slow.
func (s *globalPollStrategy) next(ctx context.Context) uint64 {
	if s.counter != nil {
		// Without a counter no context is made: that path allocates nothing.
		ctx, cancel := context.WithTimeout(ctx, GlobalPollBudget)
		v, err := s.counter.Next(ctx)
		cancel()
		if err == nil {
			return v
		}
		s.warn.log(err)
	}
	return s.local.Add(1) - 1
}
