package strategy

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/discovery"
)

// hangingCounter is a SharedCounter whose store never answers, as a
// ZooKeeper counter behind a black-holed network: Next returns only when its
// context is done, as the SharedCounter contract asks. It records the
// deadlines it was given and how many calls wait at once.
type hangingCounter struct {
	calls, waiting, peak atomic.Int64

	mu        sync.Mutex
	deadlines []time.Duration // from each call to its context's deadline; -1: none
}

func (c *hangingCounter) Next(ctx context.Context) (uint64, error) {
	c.calls.Add(1)
	left := time.Duration(-1)
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	c.mu.Lock()
	c.deadlines = append(c.deadlines, left)
	c.mu.Unlock()
	n := c.waiting.Add(1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	defer c.waiting.Add(-1)
	<-ctx.Done()
	return 0, ctx.Err()
}

func (c *hangingCounter) lastDeadline() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadlines[len(c.deadlines)-1]
}

func newHangingGlobalPoll(t *testing.T, n int) (*hangingCounter, ContextPicker, []discovery.Node, *logBuffer) {
	t.Helper()
	logger, logs := newLogger()
	counter := &hangingCounter{}
	s := newGlobalPoll(Options{Logger: logger, Counter: counter}).(*globalPollStrategy)
	s.warn.now = func() int64 { return 1 } // one warning however slow the test
	nodes := makeNodes(n)
	p, ok := s.Build(nodes).(ContextPicker)
	if !ok {
		t.Fatal("global_poll's picker is not a ContextPicker")
	}
	return counter, p, nodes, logs
}

// A caller's deadline shorter than the budget bounds the pick: it returns
// at that deadline, with the local counter's turn.
func TestGlobalPollPickContextStopsAtDeadline(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	counter, p, nodes, logs := newHangingGlobalPoll(t, 3)
	const wait = 30 * time.Millisecond
	for i := range 4 { // the local counter: 0, 1, 2, 0
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		node, err := p.PickContext(ctx, &Request{})
		elapsed := time.Since(start)
		cancel()
		if err != nil {
			t.Fatalf("pick %d: %v", i, err)
		}
		if got := indexOf(t, nodes, node); got != i%3 {
			t.Fatalf("pick %d: node %d, want %d (the local turn)", i, got, i%3)
		}
		if got := counter.lastDeadline(); got < 0 || got > wait {
			t.Fatalf("pick %d: the counter's context ends %v after its call, want the caller's %v deadline", i, got, wait)
		}
		if elapsed < wait || elapsed > wait+GlobalPollBudget/2 {
			t.Fatalf("pick %d took %v with a %v deadline", i, elapsed, wait)
		}
	}
	lines := logs.lines()
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "deadline exceeded") {
		t.Errorf("logs %q, want one rate-limited warning with the counter's error", lines)
	}
}

// A caller's deadline longer than the budget, and no deadline at all (plain
// Pick), wait GlobalPollBudget and no longer: the counter is given the
// budget as its deadline.
func TestGlobalPollPickWaitsAtMostTheBudget(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	counter, p, nodes, _ := newHangingGlobalPoll(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	picks := []struct {
		name string
		pick func() (*discovery.Node, error)
	}{
		{"PickContext with a 2s deadline", func() (*discovery.Node, error) { return p.PickContext(ctx, nil) }},
		{"PickContext without a deadline", func() (*discovery.Node, error) { return p.PickContext(context.Background(), nil) }},
		{"Pick", func() (*discovery.Node, error) { return p.Pick(nil) }},
	}
	for i, tc := range picks {
		start := time.Now()
		node, err := tc.pick()
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := indexOf(t, nodes, node); got != i {
			t.Errorf("%s: node %d, want %d (the local turn)", tc.name, got, i)
		}
		if got := counter.lastDeadline(); got < GlobalPollBudget*9/10 || got > GlobalPollBudget {
			t.Errorf("%s: the counter's context ends %v after its call, want the %v budget", tc.name, got, GlobalPollBudget)
		}
		// The counter hangs until its context ends, and that context's
		// deadline is the budget (checked above): a pick that returned
		// sooner did not wait for it. How much later it returned depends
		// on the machine, not on the pick, so it is not bounded here.
		if elapsed < GlobalPollBudget {
			t.Errorf("%s took %v, less than the %v budget it should have waited", tc.name, elapsed, GlobalPollBudget)
		}
	}
}

// Many concurrent picks while the counter hangs: each returns at its
// deadline, none starts a goroutine (each waits in its caller's), and every
// local turn is taken exactly once.
func TestGlobalPollHangingCounterConcurrentPicks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	counter, p, nodes, _ := newHangingGlobalPoll(t, 4)
	const picks = 200
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		counts  = make([]int, len(nodes))
		maxWait time.Duration
		release = make(chan struct{})
	)
	for range picks {
		wg.Go(func() {
			<-release
			start := time.Now()
			node, err := p.PickContext(ctx, nil)
			elapsed := time.Since(start)
			if err != nil {
				t.Error(err)
				return
			}
			i := indexOf(t, nodes, node)
			mu.Lock()
			counts[i]++
			maxWait = max(maxWait, elapsed)
			mu.Unlock()
		})
	}
	close(release)
	// While they all wait on the counter, the only goroutines are theirs.
	for counter.waiting.Load() < picks/2 {
		time.Sleep(time.Millisecond)
	}
	if extra := runtime.NumGoroutine() - before; extra > picks {
		t.Errorf("%d goroutines for %d picks waiting on the counter", extra, picks)
	}
	wg.Wait()
	if maxWait > 100*time.Millisecond+GlobalPollBudget {
		t.Errorf("the slowest pick took %v with a 100ms deadline", maxWait)
	}
	for i, n := range counts {
		if n != picks/len(nodes) {
			t.Errorf("node %d picked %d times, want %d: local turns %v", i, n, picks/len(nodes), counts)
			break
		}
	}
	if got := counter.calls.Load(); got != picks {
		t.Errorf("%d counter calls for %d picks", got, picks)
	}
}

// ctxPickerFunc is a user picker that waits on I/O: a ContextPicker.
type ctxPickerFunc func(context.Context, *Request) (*discovery.Node, error)

func (f ctxPickerFunc) Pick(req *Request) (*discovery.Node, error) {
	return f(context.Background(), req)
}

func (f ctxPickerFunc) PickContext(ctx context.Context, req *Request) (*discovery.Node, error) {
	return f(ctx, req)
}

// The guard passes a user ContextPicker the caller's context, still vets its
// answers, and stays a plain Picker around plain user pickers.
func TestGuardPassesContextThrough(t *testing.T) {
	type key struct{}
	var sawValue atomic.Value
	s, logs := registerTest(t, func(nodes []discovery.Node) Picker {
		return ctxPickerFunc(func(ctx context.Context, req *Request) (*discovery.Node, error) {
			if v := ctx.Value(key{}); v != nil {
				sawValue.Store(v)
			}
			if req != nil && req.User == "panic" {
				panic("boom")
			}
			return &nodes[1], nil
		})
	})
	nodes := makeNodes(3)
	p, ok := s.Build(nodes).(ContextPicker)
	if !ok {
		t.Fatal("the guard hides its user picker's PickContext")
	}
	node, err := p.PickContext(context.WithValue(context.Background(), key{}, "statement"), &Request{})
	if err != nil || indexOf(t, nodes, node) != 1 {
		t.Fatalf("PickContext = %v, %v; want node 1", node, err)
	}
	if got := sawValue.Load(); got != "statement" {
		t.Errorf("the user picker saw context value %v, want the caller's", got)
	}
	if _, err := p.PickContext(context.Background(), &Request{User: "panic"}); err != nil {
		t.Fatalf("panicking PickContext: %v, want a random pick", err)
	}
	if out := strings.Join(logs.lines(), "\n"); !strings.Contains(out, "its PickContext panicked: boom") {
		t.Errorf("logs %q, want the panic reported", out)
	}
	if _, err := p.PickContext(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if empty, ok := s.Build(nil).(ContextPicker); !ok {
		t.Error("the guard over no nodes is not a ContextPicker")
	} else if _, err := empty.PickContext(context.Background(), nil); err != ErrNoNodes {
		t.Errorf("PickContext over no nodes: %v, want ErrNoNodes", err)
	}

	plain, _ := registerTest(t, func(nodes []discovery.Node) Picker {
		return pickerFunc(func(*Request) (*discovery.Node, error) { return &nodes[0], nil })
	})
	if _, ok := plain.Build(nodes).(ContextPicker); ok {
		t.Error("the guard over a plain user picker is a ContextPicker: the router would take the slow path")
	}
}
