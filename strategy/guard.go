package strategy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
)

// warnInterval is the least time between two warnings about one misbehaving
// user strategy, so that a strategy failing on every pick cannot flood logs.
const warnInterval = time.Second

// guardStrategy wraps a user strategy. A Build that panics or returns nil,
// and a Pick that panics, fails with anything but ErrNoNodes, or returns a
// node it was not built from, is answered by a uniform random pick instead:
// a broken plug-in degrades load balancing, never queries. A user picker
// that implements ContextPicker is guarded as one, its PickContext given the
// caller's context.
type guardStrategy struct {
	name   string
	inner  Strategy
	random *randomStrategy
	warn   *rateLimitedLogger
}

func newGuard(name string, inner Strategy, opts Options) *guardStrategy {
	return &guardStrategy{
		name:   name,
		inner:  inner,
		random: &randomStrategy{rng: newRNG(opts.Seed)},
		warn: &rateLimitedLogger{
			logger:   opts.Logger,
			message:  "strategy: user strategy misbehaved, picking at random instead",
			strategy: name,
			now:      unixNano,
		},
	}
}

func (g *guardStrategy) Build(nodes []discovery.Node) Picker {
	fallback := g.random.Build(nodes)
	inner, err := g.buildInner(nodes)
	if err != nil {
		g.warn.log(err)
		return fallback
	}
	byAddr := make(map[string]int, len(nodes))
	for i := range nodes {
		byAddr[nodes[i].Addr] = i
	}
	p := &guardPicker{guard: g, inner: inner, fallback: fallback, nodes: nodes, byAddr: byAddr}
	if ci, ok := inner.(ContextPicker); ok {
		// Only then is the guard a ContextPicker, so that the routing core
		// keeps calling plain Pick on every other user picker.
		return &guardContextPicker{guardPicker: p, ctxInner: ci}
	}
	return p
}

func (g *guardStrategy) buildInner(nodes []discovery.Node) (p Picker, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("its Build panicked: %v", r)
		}
	}()
	if p = g.inner.Build(nodes); p == nil {
		return nil, errors.New("its Build returned a nil picker")
	}
	return p, nil
}

type guardPicker struct {
	guard    *guardStrategy
	inner    Picker
	fallback Picker
	nodes    []discovery.Node
	byAddr   map[string]int // index into nodes by Addr
}

func (p *guardPicker) Pick(req *Request) (*discovery.Node, error) {
	if len(p.nodes) == 0 {
		return nil, ErrNoNodes
	}
	node, err := p.pickInner(req)
	return p.vet(req, node, err)
}

// vet returns the inner picker's answer when it is a candidate, and a
// random pick with a warning when it is not.
func (p *guardPicker) vet(req *Request, node *discovery.Node, err error) (*discovery.Node, error) {
	switch {
	case errors.Is(err, ErrNoNodes):
		// The strategy may legitimately find no candidate among the nodes
		// (say, none in its zone); the caller decides what to do.
		return nil, err
	case err != nil:
		err = fmt.Errorf("its Pick failed: %w", err)
	case node == nil:
		err = errors.New("its Pick returned no node")
	default:
		if i, ok := p.byAddr[node.Addr]; ok {
			return &p.nodes[i], nil
		}
		err = fmt.Errorf("its Pick returned %q, which is not a candidate", node.Addr)
	}
	p.guard.warn.log(err)
	return p.fallback.Pick(req)
}

func (p *guardPicker) pickInner(req *Request) (node *discovery.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			node, err = nil, fmt.Errorf("its Pick panicked: %v", r)
		}
	}()
	return p.inner.Pick(req)
}

// guardContextPicker guards a user picker that implements ContextPicker,
// passing the caller's context through.
type guardContextPicker struct {
	*guardPicker
	ctxInner ContextPicker // the same picker as guardPicker.inner
}

func (p *guardContextPicker) PickContext(ctx context.Context, req *Request) (*discovery.Node, error) {
	if len(p.nodes) == 0 {
		return nil, ErrNoNodes
	}
	node, err := p.pickInnerContext(ctx, req)
	return p.vet(req, node, err)
}

func (p *guardContextPicker) pickInnerContext(ctx context.Context, req *Request) (node *discovery.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			node, err = nil, fmt.Errorf("its PickContext panicked: %v", r)
		}
	}()
	return p.ctxInner.PickContext(ctx, req)
}

// rateLimitedLogger logs at most one warning per warnInterval and counts the
// ones it drops.
type rateLimitedLogger struct {
	logger     *slog.Logger // nil: no logging
	message    string
	strategy   string
	lastLogged atomic.Int64 // UnixNano of the last warning; 0 before the first
	suppressed atomic.Int64
	now        func() int64 // the clock, in UnixNano
}

func unixNano() int64 { return time.Now().UnixNano() }

func (l *rateLimitedLogger) log(err error) {
	if l.logger == nil {
		return
	}
	now := l.now()
	last := l.lastLogged.Load()
	if last != 0 && now-last < int64(warnInterval) || !l.lastLogged.CompareAndSwap(last, now) {
		l.suppressed.Add(1)
		return
	}
	l.logger.Warn(l.message,
		"strategy", l.strategy, "error", err, "suppressed", l.suppressed.Swap(0))
}
