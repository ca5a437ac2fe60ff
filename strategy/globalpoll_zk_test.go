package strategy_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// openZKCounter opens a ZooKeeper handle with a session of its own (handles
// share sessions only per namespace) and returns the counter at path.
func openZKCounter(tb testing.TB, server *zkserver.Server, namespace, path string) *discovery.ZKCounter {
	tb.Helper()
	d, err := discovery.OpenZooKeeper(context.Background(), discovery.ZooKeeperConfig{
		Servers: []string{server.Addr()}, Path: namespace,
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close() })
	return d.Counter(path)
}

// Two global_poll strategies on different ZooKeeper sessions sharing one
// counter znode visit the nodes in exact global turn.
func TestGlobalPollZooKeeperCounter(t *testing.T) {
	server := zkserver.StartT(t)
	snap := discovery.NewSnapshot("test", 1, []discovery.Node{
		{Addr: "10.0.0.1:8080"}, {Addr: "10.0.0.2:8080"}, {Addr: "10.0.0.3:8080"},
	})
	var pickers [2]strategy.Picker
	for i := range pickers {
		counter := openZKCounter(t, server, fmt.Sprintf("/client%d", i), "/zkpresto/global_poll")
		s, name := strategy.New("global_poll", strategy.Options{Counter: counter})
		if name != "global_poll" {
			t.Fatalf("New(global_poll) made %s", name)
		}
		pickers[i] = s.Build(snap.Nodes)
	}
	for i, client := range []int{0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1} {
		node, err := pickers[client].Pick(&strategy.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if want := snap.Nodes[i%3].Addr; node.Addr != want {
			t.Fatalf("pick %d by client %d: %s, want %s", i, client, node.Addr, want)
		}
	}
}

// BenchmarkPickGlobalPollZooKeeper is what global_poll costs per pick with a
// ZooKeeper counter on a local server: a read and a versioned write.
func BenchmarkPickGlobalPollZooKeeper(b *testing.B) {
	server := zkserver.StartT(b)
	counter := openZKCounter(b, server, "/bench", "/zkpresto/bench_counter")
	s, _ := strategy.New("global_poll", strategy.Options{Counter: counter})
	p := s.Build(discovery.NewSnapshot("bench", 1, []discovery.Node{{Addr: "a:1"}, {Addr: "b:1"}, {Addr: "c:1"}}).Nodes)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Pick(nil); err != nil {
			b.Fatal(err)
		}
	}
}
