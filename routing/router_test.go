package routing_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeDiscoverer is a discovery source the test changes at will.
type fakeDiscoverer struct {
	mu     sync.Mutex
	snap   atomic.Pointer[discovery.Snapshot]
	gen    uint64
	closed atomic.Int32
}

func newFake(addrs ...string) *fakeDiscoverer {
	f := &fakeDiscoverer{}
	f.set(addrs...)
	return f
}

func (f *fakeDiscoverer) set(addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	nodes := make([]discovery.Node, len(addrs))
	for i, a := range addrs {
		nodes[i] = discovery.Node{Addr: a}
	}
	f.snap.Store(discovery.NewSnapshot("fake", f.gen, nodes))
}

func (f *fakeDiscoverer) Snapshot() *discovery.Snapshot              { return f.snap.Load() }
func (f *fakeDiscoverer) Subscribe(func(*discovery.Snapshot)) func() { return func() {} }
func (f *fakeDiscoverer) Status() discovery.Status {
	return discovery.Status{Connected: true, Nodes: len(f.Snapshot().Nodes)}
}
func (f *fakeDiscoverer) Close() error { f.closed.Add(1); return nil }

func newRouter(t *testing.T, cfg routing.Config) *routing.Router {
	t.Helper()
	r, err := routing.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

var errRefused = fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)

// behaviour says how each coordinator answers an attempt.
type behaviour map[string]routing.Outcome

func (b behaviour) try(visits *[]string) func(*routing.Attempt) (routing.Outcome, error) {
	return func(a *routing.Attempt) (routing.Outcome, error) {
		*visits = append(*visits, a.Node.Addr)
		switch o := b[a.Node.Addr]; o {
		case routing.Answered:
			return o, nil
		case routing.NotSent:
			return o, fmt.Errorf("%s: %w", a.Node.Addr, errRefused)
		case routing.MaybeSent:
			return o, errors.New("connection reset after the statement was written")
		case routing.Invalid:
			return o, errors.New("request not sent: header holds a control character")
		case routing.Unreached:
			return o, errors.New("no connection within the dial race's delay")
		default:
			return o, context.Canceled
		}
	}
}

// The failover loop over a static list polled in order: which coordinators
// a statement visits, what error it gets, and what the Router counts.
func TestRunFailoverTable(t *testing.T) {
	nodes := []string{"a:1", "b:1", "c:1", "d:1"}
	for _, tc := range []struct {
		name       string
		retries    int
		behaviour  behaviour
		wantVisits string
		wantErr    string // substring; empty for success
		wantNoCoord,
		wantStmt bool
	}{
		{name: "first answers", behaviour: behaviour{}, wantVisits: "a:1"},
		{name: "refusals fail over in strategy order", behaviour: behaviour{"a:1": routing.NotSent, "b:1": routing.NotSent},
			wantVisits: "a:1 b:1 c:1"},
		{name: "every coordinator refuses", behaviour: behaviour{"a:1": routing.NotSent, "b:1": routing.NotSent, "c:1": routing.NotSent, "d:1": routing.NotSent},
			wantVisits: "a:1 b:1 c:1 d:1", wantErr: "4 coordinators tried, none accepted it", wantNoCoord: true},
		{name: "retry limit", retries: 1, behaviour: behaviour{"a:1": routing.NotSent, "b:1": routing.NotSent},
			wantVisits: "a:1 b:1", wantErr: "2 coordinators tried, none accepted it", wantNoCoord: true},
		{name: "no failover", retries: -1, behaviour: behaviour{"a:1": routing.NotSent},
			wantVisits: "a:1", wantErr: "1 coordinator tried, it did not accept it", wantNoCoord: true},
		{name: "maybe sent is never resent", behaviour: behaviour{"a:1": routing.MaybeSent},
			wantVisits: "a:1", wantErr: "failed after the statement was sent", wantStmt: true},
		{name: "refused then maybe sent", behaviour: behaviour{"a:1": routing.NotSent, "b:1": routing.MaybeSent},
			wantVisits: "a:1 b:1", wantErr: "coordinator b:1 failed", wantStmt: true},
		{name: "abandoned by the caller", behaviour: behaviour{"a:1": routing.Abandoned},
			wantVisits: "a:1", wantErr: "context canceled"},
		{name: "unsendable: no blame, no other coordinator", behaviour: behaviour{"a:1": routing.Invalid},
			wantVisits: "a:1", wantErr: "request not sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRouter(t, routing.Config{Discoverer: discovery.NewStatic("static", nodesOf(nodes...)), StrategyName: "poll", Retries: tc.retries})
			var visits []string
			a, err := r.Run(context.Background(), &strategy.Request{}, nil, tc.behaviour.try(&visits))
			if got := strings.Join(visits, " "); got != tc.wantVisits {
				t.Errorf("visited %q, want %q", got, tc.wantVisits)
			}
			if tc.wantErr == "" {
				if err != nil || a == nil {
					t.Fatalf("got %v, %v", a, err)
				}
				a.End(nil)
			} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
			var noCoord *routing.NoCoordinatorError
			if errors.As(err, &noCoord) != tc.wantNoCoord {
				t.Errorf("NoCoordinatorError: got %v, want %t", err, tc.wantNoCoord)
			}
			if tc.wantNoCoord {
				if len(noCoord.Tried) != len(visits) || !errors.Is(err, syscall.ECONNREFUSED) {
					t.Errorf("NoCoordinatorError lists %d of %d visits, or hides the cause: %v", len(noCoord.Tried), len(visits), err)
				}
				for i, f := range noCoord.Tried {
					if f.Node != visits[i] || !strings.Contains(f.Err.Error(), visits[i]) {
						t.Errorf("tried[%d] = %v, want %s with its own cause", i, f, visits[i])
					}
				}
			}
			var se *routing.StatementError
			if errors.As(err, &se) != tc.wantStmt {
				t.Errorf("StatementError: got %v, want %t", err, tc.wantStmt)
			}
			// What the Router counted: a refusal ejects, up to the cap of
			// half the coordinators; nothing stays in flight.
			st := r.Stats()
			refusers, ejected := 0, 0
			for _, n := range st.Nodes {
				if n.InFlight != 0 {
					t.Errorf("%s: %d in flight after the statement", n.Node.Addr, n.InFlight)
				}
				o, listed := tc.behaviour[n.Node.Addr]
				refused := listed && o == routing.NotSent && strings.Contains(tc.wantVisits, n.Node.Addr)
				if refused {
					refusers++
				}
				if listed && o == routing.Invalid && n.Failures != 0 {
					t.Errorf("%s charged %d failures for a request that could not be sent", n.Node.Addr, n.Failures)
				}
				if n.Ejections > 0 {
					ejected++
					if !refused {
						t.Errorf("%s ejected without refusing", n.Node.Addr)
					}
				}
			}
			if want := min(refusers, len(nodes)/2); ejected != want {
				t.Errorf("%d coordinators ejected, want %d", ejected, want)
			}
		})
	}
}

// A transaction's coordinator is the only one tried.
func TestRunPinnedTriesOnlyThatCoordinator(t *testing.T) {
	r := newRouter(t, routing.Config{Discoverer: discovery.NewStatic("static", nodesOf("a:1", "b:1"))})
	pinned := &discovery.Node{Addr: "b:1"}
	var visits []string
	_, err := r.Run(context.Background(), &strategy.Request{}, pinned, behaviour{"b:1": routing.NotSent}.try(&visits))
	var noCoord *routing.NoCoordinatorError
	if !errors.As(err, &noCoord) || len(visits) != 1 || visits[0] != "b:1" {
		t.Fatalf("visited %v, got %v", visits, err)
	}
}

// When every usable coordinator was tried, the ejected ones are tried
// before giving up: an ejected coordinator may have recovered.
func TestPickTriesEjectedCoordinatorsLast(t *testing.T) {
	r := newRouter(t, routing.Config{
		Discoverer:   discovery.NewStatic("static", nodesOf("a:1", "b:1", "c:1")),
		StrategyName: "poll",
		Health:       health.Policy{MaxEjectedPercent: 100},
	})
	ctx := context.Background()
	if _, err := r.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	r.Health().Eject("a:1", errRefused)
	r.Health().Eject("b:1", errRefused)
	// c is the only usable one; once it failed, the ejected ones follow in
	// address order, and then nothing is left.
	var tried []routing.NodeFailure
	var order []string
	for range 3 {
		n, err := r.Pick(ctx, &strategy.Request{}, tried)
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, n.Addr)
		tried = append(tried, routing.NodeFailure{Node: n.Addr, Err: errRefused})
	}
	if got := strings.Join(order, " "); got != "c:1 a:1 b:1" {
		t.Errorf("pick order %q, want the usable node, then the ejected ones", got)
	}
	if _, err := r.Pick(ctx, &strategy.Request{}, tried); err == nil || !strings.Contains(err.Error(), "no untried coordinator") {
		t.Errorf("with every node tried: %v", err)
	}
}

// The all-ejected rule: the health tracker never ejects every node, so a
// cluster whose coordinators all fail still gets statements.
func TestAllFailingNeverEjectsEveryCoordinator(t *testing.T) {
	r := newRouter(t, routing.Config{Discoverer: discovery.NewStatic("static", nodesOf("a:1", "b:1")), Retries: -1})
	var visits []string
	for range 20 {
		r.Run(context.Background(), &strategy.Request{}, nil, behaviour{"a:1": routing.NotSent, "b:1": routing.NotSent}.try(&visits))
	}
	usable := 0
	for _, n := range r.Stats().Nodes {
		if n.Usable {
			usable++
		}
	}
	if usable == 0 {
		t.Fatalf("every coordinator ejected: %+v", r.Stats().Nodes)
	}
}

// Weight overrides apply to what the strategy sees, by address.
func TestWeightsOverrideRegisteredWeights(t *testing.T) {
	r := newRouter(t, routing.Config{
		Discoverer:   discovery.NewStatic("static", nodesOf("a:1", "b:1", "c:1")),
		StrategyName: "weighted_poll",
		Weights:      map[string]int{"b:1": 2, "c:1": 4},
	})
	counts := map[string]int{}
	for range 70 {
		var visits []string
		a, err := r.Run(context.Background(), &strategy.Request{}, nil, behaviour{}.try(&visits))
		if err != nil {
			t.Fatal(err)
		}
		a.End(nil)
		counts[visits[0]]++
	}
	if counts["a:1"] != 10 || counts["b:1"] != 20 || counts["c:1"] != 40 {
		t.Errorf("counts %v, want 10/20/40 for weights 1:2:4", counts)
	}
}

// Load reports: an open attempt is in flight until End; failures and
// latency are counted per coordinator; the load-aware strategies read the
// same table.
func TestLoadReports(t *testing.T) {
	r := newRouter(t, routing.Config{Discoverer: discovery.NewStatic("static", nodesOf("a:1", "b:1")), StrategyName: "least_active"})
	ctx := context.Background()
	var open []*routing.Attempt
	for range 4 {
		var visits []string
		a, err := r.Run(ctx, &strategy.Request{}, nil, behaviour{}.try(&visits))
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, a)
	}
	st := r.Stats()
	if st.Nodes[0].InFlight != 2 || st.Nodes[1].InFlight != 2 {
		t.Fatalf("least_active with 4 open statements: in flight %d/%d, want 2/2", st.Nodes[0].InFlight, st.Nodes[1].InFlight)
	}
	time.Sleep(2 * time.Millisecond)
	for i, a := range open {
		var err error
		if i == 0 {
			err = errors.New("query failed")
		}
		a.End(err)
		a.End(nil) // only the first End counts
	}
	st = r.Stats()
	var failures, picks uint64
	for _, n := range st.Nodes {
		if n.InFlight != 0 || n.Latency <= 0 {
			t.Errorf("%s: in flight %d, latency %v after the ends", n.Node.Addr, n.InFlight, n.Latency)
		}
		failures += n.Failures
		picks += n.Picks
	}
	if failures != 1 || picks != 4 {
		t.Errorf("failures %d picks %d, want 1 and 4", failures, picks)
	}
}

// A new snapshot from discovery is seen by the next pick; Stats reads the
// fake's status without a type assertion on its kind.
func TestMembershipChangeReachesTheNextPick(t *testing.T) {
	f := newFake("a:1")
	r := newRouter(t, routing.Config{Discoverer: f})
	if st := r.Stats(); st.Discovery.Open || st.Discovery.Source != "fake" {
		t.Errorf("before use: %+v", st.Discovery)
	}
	n, err := r.Pick(context.Background(), &strategy.Request{}, nil)
	if err != nil || n.Addr != "a:1" {
		t.Fatalf("got %v, %v", n, err)
	}
	f.set("b:1")
	n, err = r.Pick(context.Background(), &strategy.Request{}, nil)
	if err != nil || n.Addr != "b:1" {
		t.Fatalf("after the change: got %v, %v", n, err)
	}
	f.set()
	if err := r.Open(context.Background()); err == nil || !strings.Contains(err.Error(), "no coordinators in fake") {
		t.Errorf("empty list: %v", err)
	}
	if st := r.Stats(); !st.Discovery.Open || !st.Discovery.Connected || st.Discovery.Generation != 3 {
		t.Errorf("after use: %+v", st.Discovery)
	}
	r.Close()
	r.Close()
	if f.closed.Load() != 1 {
		t.Errorf("discoverer closed %d times, want once", f.closed.Load())
	}
	if _, err := r.Pick(context.Background(), &strategy.Request{}, nil); err != nil {
		// The open discoverer still answers; a closed Router only refuses
		// to open discovery again.
		t.Logf("pick after close: %v", err)
	}
}

// Background work is refused after Close, and Close waits for what runs.
func TestGoAndClose(t *testing.T) {
	r, err := routing.New(routing.Config{Discoverer: newFake("a:1")})
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Bool
	release := make(chan struct{})
	var sawClosing atomic.Bool
	if !r.Go(func(closing <-chan struct{}) {
		<-closing
		sawClosing.Store(true)
		<-release
		ran.Store(true)
	}) {
		t.Fatal("Go refused before Close")
	}
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while background work ran")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-closed
	if !ran.Load() || !sawClosing.Load() || r.Go(func(<-chan struct{}) {}) || !r.Closed() {
		t.Errorf("ran %t, saw closing %t, Go after Close accepted, or not Closed", ran.Load(), sawClosing.Load())
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []routing.Config{
		{},
		{Discoverer: newFake(), ZooKeeper: &discovery.ZooKeeperConfig{Servers: []string{"zk:2181"}, Path: "/presto"}},
		{Discoverer: newFake(), Strategy: func(strategy.Options) strategy.Strategy { return nil }},
		{Discoverer: newFake(), HealthCheckInterval: time.Second}, // active checks without a probe
	} {
		if _, err := routing.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// A strategy factory is called once per Router, with the Router's load
// table, so load-aware strategies see the Router's reports.
func TestStrategyFactoryGetsTheRoutersLoads(t *testing.T) {
	var calls int
	var got *strategy.Loads
	r := newRouter(t, routing.Config{Discoverer: newFake("a:1"), Strategy: func(o strategy.Options) strategy.Strategy {
		calls++
		got = o.Loads
		s, _ := strategy.New("p2c", o)
		return s
	}})
	if calls != 1 || got != r.Loads() {
		t.Errorf("factory called %d times with loads %p, want once with %p", calls, got, r.Loads())
	}
}

func nodesOf(addrs ...string) []discovery.Node {
	out := make([]discovery.Node, len(addrs))
	for i, a := range addrs {
		out[i] = discovery.Node{Addr: a}
	}
	return out
}

// OpenSnapshot never opens discovery: nothing before the first Open or
// Pick, the listing after.
func TestOpenSnapshotNeverOpens(t *testing.T) {
	r := newRouter(t, routing.Config{Discoverer: discovery.NewStatic("static", nodesOf("a:1", "b:1"))})
	if snap, open := r.OpenSnapshot(); open || snap != nil {
		t.Fatalf("before Open: %v, %v; want nothing", snap, open)
	}
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap, open := r.OpenSnapshot()
	if !open || len(snap.Nodes) != 2 {
		t.Fatalf("after Open: %v, %v; want the two nodes", snap, open)
	}
}

// A coordinator the dial race gave up on is tried no further for the
// statement, which goes to the next one, and is charged a failure, not
// ejected: three in a row eject it.
func TestUnreachedChargesAFailureAndFailsOver(t *testing.T) {
	r := newRouter(t, routing.Config{Discoverer: discovery.NewStatic("static", nodesOf("a:1", "b:1")), StrategyName: "poll"})
	b := behaviour{"a:1": routing.Unreached}
	picked := 0
	for i := 0; i < 10 && !r.Health().State("a:1").Ejected; i++ {
		var visits []string
		if _, err := r.Run(context.Background(), &strategy.Request{}, nil, b.try(&visits)); err != nil {
			t.Fatalf("statement %d: %v (visited %v)", i, err, visits)
		}
		if visits[len(visits)-1] != "b:1" {
			t.Fatalf("statement %d visited %v, want it to end on b:1", i, visits)
		}
		if visits[0] == "a:1" {
			picked++
			if st := r.Health().State("a:1"); picked < 3 && st.Ejected {
				t.Fatalf("ejected after %d unreached statements, want 3", picked)
			}
		}
	}
	if picked != 3 || !r.Health().State("a:1").Ejected {
		t.Fatalf("a:1 picked %d times, ejected %t; want ejected at the third", picked, r.Health().State("a:1").Ejected)
	}
}

// Active health checks reach the Router as the caller's probe: it asks the
// probe about every listed coordinator and keeps the one it fails out of
// the picks, knowing nothing of how the probe asks.
func TestActiveChecksUseTheCallersProbe(t *testing.T) {
	var asked sync.Map
	probe := func(ctx context.Context, node discovery.Node) error {
		asked.Store(node.Addr, true)
		if node.Addr == "b:1" {
			return errors.New("b:1 answers 503")
		}
		return nil
	}
	r := newRouter(t, routing.Config{Discoverer: newFake("a:1", "b:1"), HealthCheckInterval: 5 * time.Millisecond, Probe: probe})
	ctx := context.Background()
	if err := r.Open(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, time.Millisecond, "the probe to fail b:1", func() bool {
		return r.Health().State("b:1").Unhealthy
	})
	if _, ok := asked.Load("a:1"); !ok {
		t.Fatal("the probe was not asked about a:1")
	}
	if st := r.Health().State("b:1"); !strings.Contains(st.LastError, "b:1 answers 503") {
		t.Fatalf("b:1's reason %q is not the probe's", st.LastError)
	}
	for range 20 {
		n, err := r.Pick(ctx, &strategy.Request{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n.Addr != "a:1" {
			t.Fatalf("picked %s, which the probe fails", n.Addr)
		}
	}
}

// A Returned attempt sends the statement back to the coordinator the dial
// race gave up on just before (its connection came up first after all),
// without Pick, without charging the coordinator it leaves, and without
// using up a retry: with one retry, a:1 unreached, b:1 returned, a:1
// answers.
func TestReturnedGoesBackToTheUnreachedCoordinator(t *testing.T) {
	r := newRouter(t, routing.Config{Discoverer: discovery.NewStatic("static", nodesOf("a:1", "b:1", "c:1")), StrategyName: "poll", Retries: 1})
	var visits []string
	_, err := r.Run(context.Background(), &strategy.Request{}, nil, func(a *routing.Attempt) (routing.Outcome, error) {
		visits = append(visits, a.Node.Addr)
		switch len(visits) {
		case 1:
			return routing.Unreached, errors.New("no connection within the dial race's delay")
		case 2:
			return routing.Returned, errors.New("overtaken in the dial race")
		}
		return routing.Answered, nil
	})
	if err != nil || strings.Join(visits, " ") != "a:1 b:1 a:1" {
		t.Fatalf("visited %v, %v; want a:1 b:1 a:1 and success", visits, err)
	}
	if st := r.Health().State("b:1"); st.ConsecutiveFailures != 0 || st.Ejected {
		t.Errorf("the coordinator overtaken was charged: %+v", st)
	}
	if st := r.Health().State("a:1"); st.ConsecutiveFailures != 0 {
		t.Errorf("a:1 answered, yet has %d failures in a row", st.ConsecutiveFailures)
	}
}

// An error of the routing core names the package once: alone, and when a
// NoCoordinatorError ends with why the next pick failed.
func TestErrorsNameRoutingOnce(t *testing.T) {
	f := newFake("a:1")
	r := newRouter(t, routing.Config{Discoverer: f})
	_, err := r.Run(context.Background(), &strategy.Request{}, nil, func(a *routing.Attempt) (routing.Outcome, error) {
		f.set() // the coordinator leaves as it fails
		return routing.NotSent, errRefused
	})
	var noCoord *routing.NoCoordinatorError
	if !errors.As(err, &noCoord) || !strings.HasPrefix(err.Error(), "routing: statement not run;") ||
		strings.Count(err.Error(), "routing: ") != 1 || !strings.Contains(err.Error(), "then: no coordinators in fake") {
		t.Fatalf("after a failure, with no coordinator left: %v", err)
	}
	if err := r.Open(context.Background()); err == nil || err.Error() != "routing: no coordinators in fake" {
		t.Fatalf("Open with no coordinator: %v", err)
	}
}
