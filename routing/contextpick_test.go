package routing_test

import (
	"context"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
)

// ctxStrategy builds pickers that record which of Pick and PickContext the
// router called, and the context value they saw.
type ctxStrategy struct{ plain, withCtx int }

type ctxKey struct{}

type ctxPicker struct {
	s     *ctxStrategy
	nodes []discovery.Node
	seen  *any
}

func (p ctxPicker) Pick(*strategy.Request) (*discovery.Node, error) {
	p.s.plain++
	return &p.nodes[0], nil
}

func (p ctxPicker) PickContext(ctx context.Context, _ *strategy.Request) (*discovery.Node, error) {
	p.s.withCtx++
	*p.seen = ctx.Value(ctxKey{})
	return &p.nodes[0], nil
}

// A picker that implements strategy.ContextPicker is given the statement's
// context, by Pick and by Run.
func TestPickPassesContextToContextPicker(t *testing.T) {
	s := &ctxStrategy{}
	var seen any
	r := newRouter(t, routing.Config{
		Discoverer: newFake("a:1", "b:1"),
		Strategy: func(strategy.Options) strategy.Strategy {
			return strategyFunc(func(nodes []discovery.Node) strategy.Picker {
				return ctxPicker{s: s, nodes: nodes, seen: &seen}
			})
		},
	})
	ctx := context.WithValue(context.Background(), ctxKey{}, "statement")
	if _, err := r.Pick(ctx, &strategy.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	a, err := r.Run(ctx, &strategy.Request{}, nil, func(*routing.Attempt) (routing.Outcome, error) {
		return routing.Answered, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a.End(nil)
	if s.withCtx != 2 || s.plain != 0 || seen != "statement" {
		t.Errorf("PickContext called %d times, Pick %d, context value %v; want PickContext twice with the caller's context",
			s.withCtx, s.plain, seen)
	}
}

// strategyFunc adapts a function to strategy.Strategy.
type strategyFunc func([]discovery.Node) strategy.Picker

func (f strategyFunc) Build(nodes []discovery.Node) strategy.Picker { return f(nodes) }
