package discovery_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

// BenchmarkDiscoveryPath compares what a connection costs to find its
// coordinator: zkpresto's cached snapshot plus a pick, against the
// Kyuubi/Hive JDBC scheme of a new ZooKeeper session and a listing of the
// namespace on every connect, against the same real ZooKeeper.
func BenchmarkDiscoveryPath(b *testing.B) {
	f := fleet.StartT(b, fleet.Options{Coordinators: 3})
	for _, c := range f.Coordinators {
		if _, err := f.Register(c, discovery.FormatHive, 1); err != nil {
			b.Fatal(err)
		}
	}
	servers := strings.Split(f.Ensemble(), ",")
	path := "/" + f.Namespace

	b.Run("scheme=zkpresto-cached", func(b *testing.B) {
		d, err := discovery.OpenZooKeeper(context.Background(), discovery.ZooKeeperConfig{Servers: servers, Path: path})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		s, _ := strategy.New("random", strategy.Options{})
		snap := d.Snapshot()
		picker := s.Build(snap.Nodes)
		req := &strategy.Request{User: "alice"}
		b.ReportAllocs()
		for b.Loop() {
			if cur := d.Snapshot(); cur != snap { // what the driver checks per statement
				snap, picker = cur, s.Build(cur.Nodes)
			}
			if _, err := picker.Pick(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scheme=kyuubi-new-session", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			conn, err := fleet.Dial(f.Ensemble())
			if err != nil {
				b.Fatal(err)
			}
			names, _, err := conn.Children(path)
			if err != nil {
				b.Fatal(err)
			}
			var nodes []discovery.Node
			for _, name := range names {
				if n, err := discovery.ParseZnode(name, nil); err == nil {
					nodes = append(nodes, n)
				}
			}
			if len(nodes) != 3 {
				b.Fatalf("listed %d nodes", len(nodes))
			}
			_ = nodes[time.Now().UnixNano()%int64(len(nodes))]
			conn.Close()
		}
	})
}

// BenchmarkMembershipLatency measures, against a real ZooKeeper, the time
// from another session's create (or delete) of a coordinator's znode to the
// snapshot that shows the change, i.e. to the first pick that can see it.
// In the same run a bare go-zookeeper session's child watch measures the
// watch delivery itself, the floor any client has. It reports p50 and p99 of
// both in microseconds; run with -benchtime=500x or so.
func BenchmarkMembershipLatency(b *testing.B) {
	f := fleet.StartT(b, fleet.Options{})
	d, err := discovery.OpenZooKeeper(context.Background(), discovery.ZooKeeperConfig{
		Servers: strings.Split(f.Ensemble(), ","), Path: "/" + f.Namespace,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	observer, err := fleet.Dial(f.Ensemble())
	if err != nil {
		b.Fatal(err)
	}
	defer observer.Close()
	changed := make(chan time.Time, 16)
	defer d.Subscribe(func(*discovery.Snapshot) { changed <- time.Now() })()

	var ours, watch []time.Duration
	conn := f.Conn()
	change := func(op func() error) {
		_, _, watched, err := observer.ChildrenW("/" + f.Namespace)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		<-watched
		watch = append(watch, time.Since(start))
		ours = append(ours, (<-changed).Sub(start))
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		name, data, flags, err := fleet.Znode(discovery.FormatZkpresto, discovery.Node{Addr: fmt.Sprintf("10.0.%d.%d:8080", i/250%250, i%250+1), Weight: 1})
		if err != nil {
			b.Fatal(err)
		}
		var path string
		change(func() (err error) {
			path, err = conn.Create("/"+f.Namespace+"/"+name, data, flags, zk.WorldACL(zk.PermAll))
			return err
		})
		change(func() error { return conn.Delete(path, -1) })
	}
	b.StopTimer()
	quantile := func(s []time.Duration, q float64) float64 {
		slices.Sort(s)
		return float64(s[int(q*float64(len(s)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(quantile(ours, 0.50), "p50-µs")
	b.ReportMetric(quantile(ours, 0.99), "p99-µs")
	b.ReportMetric(quantile(watch, 0.50), "watch-p50-µs")
	b.ReportMetric(quantile(watch, 0.99), "watch-p99-µs")
}
