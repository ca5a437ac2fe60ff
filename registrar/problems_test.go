package registrar_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// defaultLevel captures what an operator sees without --log-level: INFO
// and above.
func defaultLevel() (*testutil.Buffer, *slog.Logger) {
	buf := &testutil.Buffer{}
	return buf, slog.New(slog.NewTextHandler(buf, nil))
}

// lines returns the log lines that contain msg.
func lines(buf *testutil.Buffer, msg string) []string {
	var out []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, msg) {
			out = append(out, l)
		}
	}
	return out
}

// runRegistrar runs reg until the test ends.
func runRegistrar(t *testing.T, reg *registrar.Registrar) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// serveInfo serves a ready coordinator's /v1/info on addr until the test
// ends.
func serveInfo(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"nodeVersion": map[string]string{"version": "0.289"}, "coordinator": true, "starting": false})
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// A coordinator that never answers is reported at once at WARN, again only
// after the repeat interval (with the count), and its recovery at INFO.
func TestLogsAClosedCoordinator(t *testing.T) {
	zks := zkserver.StartT(t)
	dead := closedPort(t)
	logs, logger := defaultLevel()
	reg, err := registrar.New(registrar.Config{
		Servers:           []string{zks.Addr()},
		AdvertiseURI:      "http://" + dead,
		Interval:          20 * time.Millisecond,
		RepeatLogInterval: time.Second,
		Logger:            logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	runRegistrar(t, reg)
	testutil.Eventually(t, 500*time.Millisecond, 5*time.Millisecond, "the first failed check logged", func() bool {
		return len(lines(logs, "coordinator is not ready")) > 0
	})
	first := lines(logs, "coordinator is not ready")[0]
	if !strings.Contains(first, "level=WARN") || !strings.Contains(first, dead) {
		t.Errorf("first line: %s", first)
	}
	time.Sleep(time.Until(start.Add(700 * time.Millisecond)))
	if n := len(lines(logs, "coordinator is not ready")); n != 1 {
		t.Errorf("%d lines in the first 700ms of checks every 20ms, want 1:\n%s", n, logs)
	}
	eventually(t, "the repeat line", func() bool { return len(lines(logs, "coordinator is not ready")) >= 2 })
	if second := lines(logs, "coordinator is not ready")[1]; !strings.Contains(second, "repeats=") {
		t.Errorf("the second line does not count the repeats: %s", second)
	}

	serveInfo(t, dead)
	eventually(t, "the recovery", func() bool { return len(lines(logs, "coordinator is ready")) == 1 })
	eventually(t, "the registration", func() bool { return len(lines(logs, "msg=registered")) == 1 })
	if l := lines(logs, "coordinator is ready")[0]; !strings.Contains(l, "level=INFO") {
		t.Errorf("recovery line: %s", l)
	}
}

// An ensemble that cannot be reached is reported at once at WARN, repeats
// are rate-limited, and the session that follows is logged at INFO.
func TestLogsAClosedZooKeeper(t *testing.T) {
	zks := zkserver.StartT(t)
	dead := closedPort(t)
	logs, logger := defaultLevel()
	reg, err := registrar.New(registrar.Config{
		Servers:           []string{dead},
		AdvertiseURI:      startCoordinator(t).URL(),
		Interval:          20 * time.Millisecond,
		RepeatLogInterval: 1500 * time.Millisecond,
		Logger:            logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	runRegistrar(t, reg)
	const msg = "cannot reach ZooKeeper"
	testutil.Eventually(t, 500*time.Millisecond, 5*time.Millisecond, "the first failed dial logged", func() bool {
		return len(lines(logs, msg)) > 0
	})
	if first := lines(logs, msg)[0]; !strings.Contains(first, "level=WARN") || !strings.Contains(first, dead) {
		t.Errorf("first line: %s", first)
	}
	// go-zookeeper dials a lone server about once a second.
	eventually(t, "the repeat line", func() bool { return len(lines(logs, msg)) >= 2 })
	if second := lines(logs, msg)[1]; !strings.Contains(second, "repeats=") {
		t.Errorf("the second line does not count the repeats: %s\n%s", second, logs)
	}

	forward(t, dead, zks.Addr())
	eventually(t, "the recovery", func() bool { return len(lines(logs, "ZooKeeper session established")) == 1 })
	eventually(t, "the registration", func() bool { return len(lines(logs, "msg=registered")) == 1 })
	if l := lines(logs, "ZooKeeper session established")[0]; !strings.Contains(l, "level=INFO") || !strings.Contains(l, "after_failures=") {
		t.Errorf("recovery line: %s", l)
	}
}

// forward listens on addr and relays every connection to target until the
// test ends.
func forward(t *testing.T, addr, target string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(s, c); s.Close() }()
			go func() { defer wg.Done(); io.Copy(c, s); c.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}
