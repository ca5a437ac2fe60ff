package health_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

// The Checker judges nodes by the probe it is given and nothing else: a
// node the probe passes is healthy, one it fails is unhealthy with the
// probe's reason, and the log says whether it was starting or down. Each
// check gets the node and a context bounded by the check's timeout.
func TestCheckerUsesItsProbe(t *testing.T) {
	nodes := []discovery.Node{{Addr: "up:1"}, {Addr: "starting:1"}, {Addr: "down:1"}}
	var (
		mu        sync.Mutex
		asked     []string
		deadlines []time.Duration
	)
	probe := func(ctx context.Context, node discovery.Node) error {
		mu.Lock()
		asked = append(asked, node.Addr)
		if d, ok := ctx.Deadline(); ok {
			deadlines = append(deadlines, time.Until(d))
		}
		mu.Unlock()
		switch node.Addr {
		case "starting:1":
			return fmt.Errorf("GET http://%s/v1/info: %w", node.Addr, health.ErrStarting)
		case "down:1":
			return fmt.Errorf("GET http://%s/v1/info: status 503", node.Addr)
		}
		return nil
	}
	var logs testutil.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tr := health.NewTracker(health.Policy{})
	c := health.StartChecker(time.Hour, probe, func() []discovery.Node { return nodes }, tr, logger)
	defer c.Close()
	c.CheckNow(context.Background())

	mu.Lock()
	if fmt.Sprint(len(asked), len(deadlines)) != "3 3" {
		t.Fatalf("probe asked about %v, %d with a deadline; want each node once, each with one", asked, len(deadlines))
	}
	for _, d := range deadlines {
		if d <= 0 || d > health.MaxCheckTimeout {
			t.Errorf("a check's deadline is %v away, want within MaxCheckTimeout", d)
		}
	}
	mu.Unlock()
	if st := tr.State("up:1"); st.Unhealthy {
		t.Errorf("up:1 unhealthy: %s", st.LastError)
	}
	for addr, want := range map[string]string{"starting:1": "starting", "down:1": "503"} {
		st := tr.State(addr)
		if !st.Unhealthy || !strings.Contains(st.LastError, "health check: GET http://"+addr) || !strings.Contains(st.LastError, want) {
			t.Errorf("%s: %+v, want unhealthy, the probe's reason", addr, st)
		}
	}

	verdicts := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct{ Msg, Addr, Verdict string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Msg == "coordinator check failed" {
			verdicts[rec.Addr] = rec.Verdict
		}
	}
	if fmt.Sprint(verdicts) != "map[down:1:down starting:1:starting]" {
		t.Errorf("logged verdicts %v", verdicts)
	}
}

// A checker cannot start without a probe: it says so at once, not at the
// first round in a goroutine of its own.
func TestStartCheckerWithoutProbe(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Probe") {
			t.Fatalf("recovered %v, want a panic naming the Probe", r)
		}
	}()
	c := health.StartChecker(time.Hour, nil, nil, health.NewTracker(health.Policy{}), nil)
	c.Close()
}

// A check that Close cuts short marks nothing, whatever the probe returns
// once its context has ended.
func TestCheckerIgnoresAProbeCutShort(t *testing.T) {
	entered := make(chan struct{})
	probe := func(ctx context.Context, node discovery.Node) error {
		close(entered)
		<-ctx.Done()
		return errors.New("cut short")
	}
	tr := health.NewTracker(health.Policy{})
	nodes := []discovery.Node{{Addr: "slow:1"}}
	c := health.StartChecker(time.Hour, probe, func() []discovery.Node { return nodes }, tr, nil)
	done := make(chan struct{})
	go func() { defer close(done); c.CheckNow(context.Background()) }()
	<-entered
	c.Close()
	<-done
	if st := tr.State("slow:1"); st.Unhealthy {
		t.Fatalf("a check cut short marked the node: %+v", st)
	}
}
