package discovery_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/testrig/zkserver"
)

// openCounterZK opens a handle on server with its own session: handles share
// a session only when they name the same namespace, so each caller passes a
// different one.
func openCounterZK(t *testing.T, server *zkserver.Server, namespace string) *discovery.ZooKeeper {
	t.Helper()
	d, err := discovery.OpenZooKeeper(context.Background(), discovery.ZooKeeperConfig{
		Servers: []string{server.Addr()}, Path: namespace,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// rawZK is a plain session for arranging znodes behind the counter's back.
func rawZK(t *testing.T, server *zkserver.Server) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{server.Addr()}, 10*time.Second, zk.WithLogInfo(false),
		zk.WithLogger(discardZKLog{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

type discardZKLog struct{}

func (discardZKLog) Printf(string, ...any) {}

func TestZKCounterCountsFromZero(t *testing.T) {
	server := zkserver.StartT(t)
	c := openCounterZK(t, server, "/ns").Counter("/zkpresto/counters/etl/")
	if c.Path() != "/zkpresto/counters/etl" {
		t.Errorf("Path() = %q", c.Path())
	}
	for want := range uint64(5) {
		got, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("Next() = %d, want %d", got, want)
		}
	}
	data, _, err := rawZK(t, server).Get("/zkpresto/counters/etl")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "5" {
		t.Errorf("znode data %q, want \"5\"", data)
	}
}

// Clients on different sessions racing for the znode get every value once.
func TestZKCounterConcurrentSessions(t *testing.T) {
	server := zkserver.StartT(t)
	const (
		sessions   = 3
		goroutines = 3
		each       = 20
	)
	var (
		mu   sync.Mutex
		seen []uint64
		wg   sync.WaitGroup
	)
	for s := range sessions {
		c := openCounterZK(t, server, "/ns"+string(rune('a'+s))).Counter("/shared")
		for range goroutines {
			wg.Go(func() {
				for range each {
					v, err := c.Next()
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seen = append(seen, v)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	slices.Sort(seen)
	for i, v := range seen {
		if v != uint64(i) {
			t.Fatalf("values %v: want each of 0..%d exactly once", seen, sessions*goroutines*each-1)
		}
	}
	if len(seen) != sessions*goroutines*each {
		t.Errorf("got %d values, want %d", len(seen), sessions*goroutines*each)
	}
}

func TestZKCounterUsesExistingZnode(t *testing.T) {
	server := zkserver.StartT(t)
	raw := rawZK(t, server)
	acl := zk.WorldACL(zk.PermAll)
	for path, data := range map[string]string{"/empty": "", "/seven": " 7\n", "/bad": "seven"} {
		if _, err := raw.Create(path, []byte(data), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	d := openCounterZK(t, server, "/ns")
	if v, err := d.Counter("/empty").Next(); err != nil || v != 0 {
		t.Errorf("empty znode: Next() = %d, %v; want 0", v, err)
	}
	if v, err := d.Counter("/seven").Next(); err != nil || v != 7 {
		t.Errorf("znode holding 7: Next() = %d, %v; want 7", v, err)
	}
	_, err := d.Counter("/bad").Next()
	for _, want := range []string{"/bad", server.Addr(), `"seven"`, "not a decimal counter"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("non-numeric znode: error %v, want it to mention %s", err, want)
		}
	}
}

func TestZKCounterErrors(t *testing.T) {
	server := zkserver.StartT(t)
	d := openCounterZK(t, server, "/ns")
	if _, err := d.Counter("/").Next(); err == nil || !strings.Contains(err.Error(), "no counter path") {
		t.Errorf("empty path: error %v", err)
	}
	c := d.Counter("/after-close")
	d.Close()
	_, err := c.Next()
	if err == nil || !strings.Contains(err.Error(), server.Addr()) || !strings.Contains(err.Error(), "/after-close") {
		t.Errorf("closed session: error %v, want one naming the ensemble and path", err)
	}
}
