// Package strategy chooses one coordinator among the live ones.
//
// As in grpc-go's balancer, building is split from picking: a Strategy builds
// an immutable Picker whenever the node set changes, and Picker.Pick, the hot
// path, runs concurrently for every statement without locks or allocation.
// Strategies are found by name (case-insensitive, with aliases such as
// Presto Router's ROUND_ROBIN); users add their own with Register or, for the
// simple Kyuubi-style shape, RegisterFunc.
package strategy

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
)

// ErrNoNodes is returned by Pick when the picker was built from no nodes.
var ErrNoNodes = errors.New("strategy: no nodes to pick from")

// Request describes the statement a node is picked for.
type Request struct {
	// User is the Presto user the work runs as.
	User string
	// Source is the Presto client source (X-Presto-Source).
	Source string
	// Key is an explicit routing key for hash-based strategies; empty means
	// "use User".
	Key string
	// Prefer is the address of a coordinator the routing core picks
	// before asking the strategy, when it is among the usable ones (listed,
	// ready, not ejected) and was not yet tried for the statement: the
	// gateway's affinity cookie. Strategies need not read it.
	Prefer string
}

// Picker picks one node. A Picker is immutable once built and safe for
// concurrent use.
//
// Pick runs on every statement, so it must not block or do I/O: it is
// expected to return in nanoseconds. The one built-in strategy that may wait
// is global_poll, whose picks take a shared counter's next value (with
// ZooKeeper, two round trips to the ensemble); it also implements
// ContextPicker, and no pick of it waits longer than GlobalPollBudget, after
// which it uses a process-local counter. A user strategy that must wait on
// I/O implements ContextPicker too and honours the context it is given.
type Picker interface {
	// Pick returns a pointer into the node slice the picker was built from.
	// It must not retain req.
	Pick(req *Request) (*discovery.Node, error)
}

// ContextPicker is a Picker whose picks may wait on I/O (global_poll's
// shared counter). The routing core calls PickContext with the statement's
// context instead of Pick when the picker it built implements it, so that a
// pick never outlasts the caller's deadline; Pick stays the context-free
// form for callers that have none.
type ContextPicker interface {
	Picker
	// PickContext is Pick bounded by ctx: it returns by the time ctx is
	// done, falling back to a choice that needs no I/O rather than failing
	// when the I/O does not finish in time. It must not retain req or ctx.
	PickContext(ctx context.Context, req *Request) (*discovery.Node, error)
}

// Strategy builds pickers. One Strategy instance serves one connector, so it
// may keep state across builds (a round-robin position, per-node load).
// Build is never called concurrently with itself, but pickers it built earlier
// may still be in use while it runs.
type Strategy interface {
	// Build returns a picker over nodes. nodes is sorted by Addr, unique by
	// Addr, immutable, and may be empty (the picker then returns ErrNoNodes).
	Build(nodes []discovery.Node) Picker
}

// Options configure a Strategy when it is created: what every strategy may
// use. A strategy's own options are in Config.
type Options struct {
	// Logger receives warnings (an unknown strategy name, a user strategy
	// that misbehaves). Nil means slog.Default's handler is not used: no logs.
	Logger *slog.Logger
	// Zone is the client's zone, for zone-aware strategies.
	Zone string
	// Seed, when non-zero, makes random choices reproducible (tests and
	// simulations). Seeded pickers serialise their random source.
	Seed uint64
	// Loads is the per-node load the driver reports into; load-aware
	// strategies read it. Nil: such a strategy keeps a table of its own,
	// which nobody reports into unless the caller does.
	Loads *Loads
	// Counter is the cluster-wide counter for strategies that rotate
	// across clients (global_poll); nil means a process-local counter.
	Counter SharedCounter
	// Now is the clock strategies measure ages with; nil means time.Now.
	// Simulations pass their virtual clock.
	Now func() time.Time
	// Config is the strategy's own options, as its ConfigParser returned
	// them (ParseConfig); nil, or a Config of another strategy, means its
	// defaults.
	Config Config
}

// Factory creates a Strategy. It is called once per connector.
type Factory func(Options) Strategy
