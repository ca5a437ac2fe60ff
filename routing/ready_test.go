package routing_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
)

// setNodes lists nodes as given, not-ready marks included.
func (f *fakeDiscoverer) setNodes(nodes ...discovery.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	f.snap.Store(discovery.NewSnapshot("fake", f.gen, nodes))
}

// A coordinator its registrar marks not ready gets no statement while
// another is ready, whatever the strategy, also when every ready one has
// failed the statement before it was sent; it gets statements again once
// the mark is gone; and when none is ready, all are used.
func TestRouterSkipsNotReady(t *testing.T) {
	for _, name := range []string{"random", "round_robin", "least_connections", "shared_p2c", "weighted_random"} {
		t.Run(name, func(t *testing.T) {
			f := &fakeDiscoverer{}
			f.setNodes(discovery.Node{Addr: "a:1"}, discovery.Node{Addr: "b:1", NotReady: "workers:0/1"},
				discovery.Node{Addr: "c:1", NotReady: "drained"})
			r := newRouter(t, routing.Config{Discoverer: f, Strategy: strategy.Named(name), Retries: 5})
			ctx := context.Background()
			for range 50 {
				n, err := r.Pick(ctx, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if n.Addr != "a:1" {
					t.Fatalf("picked %s, which is not ready", n.Addr)
				}
			}
			// a:1 refuses before the statement is sent: the not-ready ones
			// are still not tried.
			var visits []string
			_, err := r.Run(ctx, nil, nil, behaviour{"a:1": routing.NotSent}.try(&visits))
			if err == nil || fmt.Sprint(visits) != "[a:1]" {
				t.Fatalf("Run visited %v (err %v), want only a:1", visits, err)
			}

			f.setNodes(discovery.Node{Addr: "b:1"}, discovery.Node{Addr: "c:1", NotReady: "drained"})
			for range 20 {
				if n, err := r.Pick(ctx, nil, nil); err != nil || n.Addr != "b:1" {
					t.Fatalf("after b:1 is ready again: picked %v, %v", n, err)
				}
			}

			f.setNodes(discovery.Node{Addr: "b:1", NotReady: "starting"}, discovery.Node{Addr: "c:1", NotReady: "drained"})
			seen := map[string]bool{}
			for range 100 {
				n, err := r.Pick(ctx, nil, nil)
				if err != nil {
					t.Fatalf("with none ready: %v", err)
				}
				seen[n.Addr] = true
			}
			if name != "shared_p2c" && name != "least_connections" && len(seen) != 2 {
				t.Fatalf("with none ready, picked %v; want both", seen)
			}
		})
	}
}
