package discovery_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/zkprestotest/tcpproxy"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
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
		got, err := c.Next(context.Background())
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
					v, err := c.Next(context.Background())
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
	if v, err := d.Counter("/empty").Next(context.Background()); err != nil || v != 0 {
		t.Errorf("empty znode: Next() = %d, %v; want 0", v, err)
	}
	if v, err := d.Counter("/seven").Next(context.Background()); err != nil || v != 7 {
		t.Errorf("znode holding 7: Next() = %d, %v; want 7", v, err)
	}
	_, err := d.Counter("/bad").Next(context.Background())
	for _, want := range []string{"/bad", server.Addr(), `"seven"`, "not a decimal counter"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("non-numeric znode: error %v, want it to mention %s", err, want)
		}
	}
}

func TestZKCounterErrors(t *testing.T) {
	server := zkserver.StartT(t)
	d := openCounterZK(t, server, "/ns")
	if _, err := d.Counter("/").Next(context.Background()); err == nil || !strings.Contains(err.Error(), "no counter path") {
		t.Errorf("empty path: error %v", err)
	}
	c := d.Counter("/after-close")
	d.Close()
	_, err := c.Next(context.Background())
	if err == nil || !strings.Contains(err.Error(), server.Addr()) || !strings.Contains(err.Error(), "/after-close") {
		t.Errorf("closed session: error %v, want one naming the ensemble and path", err)
	}
}

// counterCallsRunning counts the goroutines running a ZKCounter's
// compare-and-set.
func counterCallsRunning() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "discovery.(*ZKCounter).run(")
}

// With ZooKeeper black-holed (packets held, no reset), Next returns at its
// context's deadline; while that call is still waiting on ZooKeeper, later
// calls fail at once without starting more; once ZooKeeper answers again
// the counter carries on, and Close ends a call that is still waiting.
func TestZKCounterHonoursContextWhenBlackHoled(t *testing.T) {
	server := zkserver.StartT(t)
	proxy := tcpproxy.StartT(t, server.Addr())
	d, err := discovery.OpenZooKeeper(context.Background(), discovery.ZooKeeperConfig{
		Servers: []string{proxy.Addr()}, Path: "/ns",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c := d.Counter("/blackholed")
	if v, err := c.Next(context.Background()); err != nil || v != 0 {
		t.Fatalf("Next() = %d, %v; want 0", v, err)
	}

	proxy.Stall()
	const wait = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	start := time.Now()
	_, err = c.Next(ctx)
	elapsed := time.Since(start)
	cancel()
	t.Logf("black-holed Next with a %v deadline returned after %v: %v", wait, elapsed, err)
	if elapsed > wait+300*time.Millisecond {
		t.Errorf("black-holed Next took %v with a %v deadline", elapsed, wait)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("black-holed Next: error %v, want the deadline", err)
	}
	for _, want := range []string{"/blackholed", proxy.Addr(), "no answer from ZooKeeper"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("black-holed Next: error %v, want it to mention %q", err, want)
		}
	}

	// The abandoned call still waits on ZooKeeper: later calls, however many
	// and however patient, do not queue behind it or start calls of their own.
	const callers = 50
	var wg sync.WaitGroup
	start = time.Now()
	for range callers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.Next(ctx)
			if err == nil || !strings.Contains(err.Error(), "still waiting for ZooKeeper") {
				t.Errorf("Next behind a black-holed call: error %v, want an immediate refusal", err)
			}
		})
	}
	wg.Wait()
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("%d calls behind a black-holed one took %v, want them to fail at once", callers, elapsed)
	}
	if n := counterCallsRunning(); n != 1 {
		t.Errorf("%d compare-and-set goroutines running, want the one black-holed", n)
	}

	// Healed, the held read is answered; its caller is gone, so it writes
	// nothing, and the count goes on from where it was.
	proxy.Heal()
	var v uint64
	zkWaitUntil(t, "the counter to answer again", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		v, err = c.Next(ctx)
		return err == nil
	})
	if v != 1 {
		t.Errorf("Next after healing = %d, want 1: an abandoned call must not use up a value it never returned", v)
	}

	// Closing the handle ends a call still waiting on a black-holed ensemble.
	proxy.Stall()
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	if _, err := c.Next(ctx); err == nil {
		t.Error("black-holed Next succeeded")
	}
	cancel()
	d.Close()
	zkWaitUntil(t, "Close to end the black-holed compare-and-set", func() bool { return counterCallsRunning() == 0 })
	// Let the client's own goroutines, which wait for the server to answer
	// the close, finish before the leak check.
	proxy.Heal()
}
