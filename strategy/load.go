package strategy

import (
	"context"
	"maps"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/cowmap"
)

// Load is the live load of one coordinator: the statements in flight and a
// moving average of their latency. The driver reports into it (Begin, End);
// load-aware strategies read it when they pick. All methods are safe for
// concurrent use and allocate nothing.
type Load struct {
	inFlight atomic.Int64
	ewma     atomic.Int64 // nanoseconds; 0 until the first statement ends
	started  atomic.Uint64
	failed   atomic.Uint64
	_        [32]byte // one cache line per node, so parallel reports do not contend
}

// ewmaShift sets the weight of a new latency sample to 1/8: the average
// follows a node that turns slow within a few dozen statements without
// jumping on one outlier.
const ewmaShift = 3

// Begin records that a statement started on the node.
func (l *Load) Begin() {
	l.inFlight.Add(1)
	l.started.Add(1)
}

// End records that a statement finished after elapsed; err is its error, if
// any. A failure counts as at least four times the current average, so a
// node that fails fast does not look fast and attract more work.
func (l *Load) End(elapsed time.Duration, err error) {
	l.inFlight.Add(-1)
	sample := int64(elapsed)
	if err != nil {
		l.failed.Add(1)
		sample = max(sample, 4*l.ewma.Load(), int64(time.Millisecond))
	}
	sample = max(sample, 1)
	for {
		old := l.ewma.Load()
		next := sample
		if old != 0 {
			next = old + (sample-old)>>ewmaShift
		}
		if l.ewma.CompareAndSwap(old, next) {
			return
		}
	}
}

// Drop records that a statement that started on the node ended with no
// verdict on the node (its request could not be sent, or was refused for
// what the client put in it): it is no longer in flight, and neither its
// time nor a failure is counted.
func (l *Load) Drop() { l.inFlight.Add(-1) }

// InFlight returns the statements running on the node now.
func (l *Load) InFlight() int64 { return l.inFlight.Load() }

// Latency returns the moving average of statement latency; 0 before the
// first statement ended.
func (l *Load) Latency() time.Duration { return time.Duration(l.ewma.Load()) }

// Started returns how many statements were started on the node.
func (l *Load) Started() uint64 { return l.started.Load() }

// Failed returns how many statements on the node ended with an error.
func (l *Load) Failed() uint64 { return l.failed.Load() }

// Loads holds the Load of every node one connector uses, by address. A
// node's Load outlives rebuilds while the node stays, so load-aware
// strategies keep their view across membership changes. Safe for concurrent
// use; For is lock-free once the node is known.
type Loads struct {
	m cowmap.Map[*Load]
}

// NewLoads returns an empty table.
func NewLoads() *Loads { return &Loads{} }

func newLoad() *Load { return &Load{} }

// For returns the Load of the node at addr, creating it on first use.
func (t *Loads) For(addr string) *Load { return t.m.GetOrCreate(addr, newLoad) }

// ForNodes returns the Load of each node, in order, creating the missing
// ones with one copy of the table.
func (t *Loads) ForNodes(nodes []discovery.Node) []*Load {
	addrs := make([]string, len(nodes))
	for i := range nodes {
		addrs[i] = nodes[i].Addr
	}
	return t.m.GetOrCreateAll(addrs, newLoad)
}

// Retain forgets the loads of nodes not in nodes. Statements still running
// on a forgotten node keep their *Load and end on it harmlessly.
func (t *Loads) Retain(nodes []discovery.Node) {
	keep := make(map[string]bool, len(nodes))
	for i := range nodes {
		keep[nodes[i].Addr] = true
	}
	t.m.Retain(func(addr string) bool { return keep[addr] })
}

// Snapshot returns a copy of the table, by address.
func (t *Loads) Snapshot() map[string]*Load { return maps.Clone(t.m.All()) }

// SharedCounter is a counter shared by every client of a cluster, such as a
// znode updated with a versioned compare-and-set. global_poll uses it.
type SharedCounter interface {
	// Next returns the counter's value before this call's increment. It
	// returns an error by the time ctx is done, even when the store it
	// talks to has not answered: global_poll's picks wait on it, bounded by
	// the statement's context and GlobalPollBudget.
	Next(ctx context.Context) (uint64, error)
}
