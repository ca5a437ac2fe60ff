package routing_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
)

// Request.Prefer is picked whatever the strategy while it is usable and
// ready; one not listed, not ready, ejected or already tried for the
// statement is passed over for the strategy's choice, and a preferred
// coordinator that refuses fails the statement over to another.
func TestPickPrefers(t *testing.T) {
	f := &fakeDiscoverer{}
	f.setNodes(discovery.Node{Addr: "a:1"}, discovery.Node{Addr: "b:1"}, discovery.Node{Addr: "c:1", NotReady: "drained"})
	r := newRouter(t, routing.Config{Discoverer: f, Strategy: strategy.Named("poll"), Health: health.Policy{MaxEjectedPercent: 100}})
	ctx := context.Background()
	picks := func(prefer string) map[string]int {
		seen := map[string]int{}
		for range 10 {
			n, err := r.Pick(ctx, &strategy.Request{Prefer: prefer}, nil)
			if err != nil {
				t.Fatal(err)
			}
			seen[n.Addr]++
		}
		return seen
	}
	if got := picks("b:1"); got["b:1"] != 10 {
		t.Fatalf("preferring b:1: picks %v, want all on b:1", got)
	}
	for _, prefer := range []string{"c:1", "z:1", ""} {
		if got := picks(prefer); got["c:1"] != 0 || got["a:1"] == 0 || got["b:1"] == 0 {
			t.Errorf("preferring %q (drained, unlisted, none): picks %v, want the strategy's, a:1 and b:1", prefer, got)
		}
	}
	var visits []string
	if _, err := r.Run(ctx, &strategy.Request{Prefer: "b:1"}, nil, behaviour{"b:1": routing.NotSent}.try(&visits)); err != nil || fmt.Sprint(visits) != "[b:1 a:1]" {
		t.Fatalf("Run preferring b:1, which refuses: visited %v (err %v), want b:1 then a:1", visits, err)
	}
	r.Health().Eject("b:1", errRefused)
	if got := picks("b:1"); got["b:1"] != 0 {
		t.Errorf("preferring b:1, ejected: picks %v, want none on it", got)
	}
}
