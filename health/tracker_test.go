package health_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeClock is a clock that moves only when told; safe for concurrent use.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

var errRefused = errors.New("connection refused")

func makeNodes(n int) []discovery.Node {
	nodes := make([]discovery.Node, n)
	for i := range nodes {
		nodes[i] = discovery.Node{Addr: fmt.Sprintf("10.0.0.%d:8080", i+1), Scheme: "http", Weight: 1}
	}
	return nodes
}

func addrs(nodes []discovery.Node) []string {
	out := make([]string, len(nodes))
	for i := range nodes {
		out[i] = nodes[i].Addr
	}
	return out
}

// newTracker returns a tracker on a fake clock that knows nodes.
func newTracker(t *testing.T, p health.Policy, nodes []discovery.Node) (*health.Tracker, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	tr := health.NewTracker(p, health.WithClock(clock.Now))
	tr.Forget(nodes)
	return tr, clock
}

func TestPolicyDefaults(t *testing.T) {
	got := health.NewTracker(health.Policy{}).Policy()
	want := health.Policy{ConsecutiveFailures: 3, BaseEjection: 2 * time.Second, MaxEjection: time.Minute, MaxEjectedPercent: 50}
	if got != want {
		t.Fatalf("defaults = %+v, want %+v", got, want)
	}
	got = health.NewTracker(health.Policy{ConsecutiveFailures: -1, BaseEjection: 2 * time.Minute, MaxEjection: time.Second, MaxEjectedPercent: 400}).Policy()
	want = health.Policy{ConsecutiveFailures: 3, BaseEjection: 2 * time.Minute, MaxEjection: 2 * time.Minute, MaxEjectedPercent: 100}
	if got != want {
		t.Fatalf("normalised = %+v, want %+v", got, want)
	}
}

func TestThresholdEjection(t *testing.T) {
	nodes := makeNodes(4)
	tr, clock := newTracker(t, health.Policy{ConsecutiveFailures: 3, BaseEjection: time.Second}, nodes)
	a := nodes[0].Addr
	v0 := tr.Version()

	for i := 1; i <= 2; i++ {
		if tr.Failure(a, errRefused) {
			t.Fatalf("ejected after %d failures, want 3", i)
		}
		if st := tr.State(a); st.ConsecutiveFailures != i || st.Ejected {
			t.Fatalf("after %d failures: state %+v", i, st)
		}
	}
	if tr.Version() != v0 {
		t.Fatal("Version changed before any ejection")
	}
	// A success in between starts the count over.
	tr.Success(a)
	if st := tr.State(a); st.ConsecutiveFailures != 0 {
		t.Fatalf("after success: ConsecutiveFailures = %d", st.ConsecutiveFailures)
	}
	tr.Failure(a, errRefused)
	tr.Failure(a, errRefused)
	if !tr.Failure(a, errRefused) {
		t.Fatal("not ejected after 3 failures in a row")
	}
	if tr.Version() == v0 {
		t.Fatal("Version unchanged by an ejection")
	}
	st := tr.State(a)
	want := health.NodeState{
		Ejected:     true,
		Until:       clock.Now().Add(time.Second),
		Ejections:   1,
		LastError:   "connection refused",
		LastFailure: clock.Now(),
	}
	if st != want {
		t.Fatalf("state = %+v, want %+v", st, want)
	}
	if got := addrs(tr.Usable(nodes)); !slices.Equal(got, addrs(nodes[1:])) {
		t.Fatalf("Usable = %v", got)
	}
	// Further failures while ejected neither count nor extend the ejection.
	if !tr.Failure(a, errors.New("later")) {
		t.Fatal("Failure on an ejected node returned false")
	}
	if st := tr.State(a); st.Ejections != 1 || st.Until != want.Until || st.LastError != "later" {
		t.Fatalf("state after a failure while ejected = %+v", st)
	}
}

func TestEjectImmediately(t *testing.T) {
	nodes := makeNodes(2)
	tr, _ := newTracker(t, health.Policy{}, nodes)
	v0 := tr.Version()
	if !tr.Eject(nodes[1].Addr, errRefused) {
		t.Fatal("Eject returned false")
	}
	if tr.Version() == v0 {
		t.Fatal("Version unchanged by Eject")
	}
	if got := addrs(tr.Usable(nodes)); !slices.Equal(got, addrs(nodes[:1])) {
		t.Fatalf("Usable = %v", got)
	}
	v1 := tr.Version()
	if !tr.Eject(nodes[1].Addr, errRefused) {
		t.Fatal("second Eject returned false")
	}
	if tr.Version() != v1 || tr.State(nodes[1].Addr).Ejections != 1 {
		t.Fatal("ejecting an ejected node changed something")
	}
}

func TestEjectionExpiry(t *testing.T) {
	nodes := makeNodes(3)
	tr, clock := newTracker(t, health.Policy{BaseEjection: 2 * time.Second}, nodes)
	a := nodes[2].Addr
	tr.Eject(a, errRefused)
	v1 := tr.Version()

	clock.Advance(2*time.Second - time.Nanosecond)
	if tr.Version() != v1 {
		t.Fatal("Version changed before the ejection ended")
	}
	if got := tr.Usable(nodes); len(got) != 2 {
		t.Fatalf("Usable before expiry = %v", addrs(got))
	}
	clock.Advance(time.Nanosecond)
	v2 := tr.Version()
	if v2 == v1 {
		t.Fatal("Version unchanged when the ejection ended")
	}
	if got := tr.Usable(nodes); &got[0] != &nodes[0] || len(got) != 3 {
		t.Fatalf("Usable after expiry = %v, want the input slice", addrs(got))
	}
	if st := tr.State(a); st.Ejected || !st.Until.IsZero() || st.Ejections != 1 {
		t.Fatalf("state after expiry = %+v", st)
	}
	if tr.Version() != v2 {
		t.Fatal("Version changed with nothing changing")
	}
}

// ejectionLength returns how long addr's current ejection lasts from now.
func ejectionLength(t *testing.T, tr *health.Tracker, clock *fakeClock, addr string) time.Duration {
	t.Helper()
	st := tr.State(addr)
	if !st.Ejected {
		t.Fatalf("%s not ejected: %+v", addr, st)
	}
	return st.Until.Sub(clock.Now())
}

func TestEjectionGrowsAndDecays(t *testing.T) {
	nodes := makeNodes(2)
	tr, clock := newTracker(t, health.Policy{ConsecutiveFailures: 3, BaseEjection: time.Second, MaxEjection: 3500 * time.Millisecond}, nodes)
	a := nodes[0].Addr

	for range 3 {
		tr.Failure(a, errRefused)
	}
	// A node that fails again right after its ejection ends is ejected at
	// once (probation), each time for longer, up to MaxEjection.
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3500 * time.Millisecond, 3500 * time.Millisecond} {
		if got := ejectionLength(t, tr, clock, a); got != want {
			t.Fatalf("ejection %d lasts %v, want %v", i+1, got, want)
		}
		clock.Advance(want)
		if tr.State(a).Ejected {
			t.Fatalf("ejection %d did not end", i+1)
		}
		if !tr.Failure(a, errRefused) {
			t.Fatalf("one failure on probation after ejection %d did not eject", i+1)
		}
	}

	// A success after the ejection ends starts over: the next ejection
	// needs a full run of failures again and lasts BaseEjection.
	clock.Advance(time.Minute)
	tr.Success(a)
	first, second := tr.Failure(a, errRefused), tr.Failure(a, errRefused)
	if first || second {
		t.Fatal("ejected before 3 failures after a success")
	}
	if !tr.Failure(a, errRefused) {
		t.Fatal("not ejected after 3 failures")
	}
	if got := ejectionLength(t, tr, clock, a); got != time.Second {
		t.Fatalf("ejection after a success lasts %v, want 1s", got)
	}
}

func TestSuccessWhileEjectedKeepsMultiplier(t *testing.T) {
	nodes := makeNodes(2)
	tr, clock := newTracker(t, health.Policy{BaseEjection: time.Second}, nodes)
	a := nodes[0].Addr
	tr.Eject(a, errRefused)
	tr.Success(a) // a statement that began before the ejection
	if !tr.State(a).Ejected {
		t.Fatal("a success ended the ejection")
	}
	clock.Advance(time.Second)
	if !tr.Failure(a, errRefused) {
		t.Fatal("not on probation after a success during the ejection")
	}
	if got := ejectionLength(t, tr, clock, a); got != 2*time.Second {
		t.Fatalf("second ejection lasts %v, want 2s", got)
	}
}

func TestMaxEjectedPercent(t *testing.T) {
	for _, tc := range []struct {
		nodes, percent, want int
	}{
		{nodes: 4, percent: 50, want: 2},
		{nodes: 1, percent: 50, want: 1},
		{nodes: 3, percent: 50, want: 1},
		{nodes: 3, percent: 10, want: 1},
		{nodes: 10, percent: 30, want: 3},
		{nodes: 5, percent: 100, want: 5},
	} {
		t.Run(fmt.Sprintf("%d nodes %d%%", tc.nodes, tc.percent), func(t *testing.T) {
			nodes := makeNodes(tc.nodes)
			tr, _ := newTracker(t, health.Policy{MaxEjectedPercent: tc.percent}, nodes)
			ejected := 0
			for i := range nodes {
				if tr.Eject(nodes[i].Addr, errRefused) {
					ejected++
				}
			}
			if ejected != tc.want {
				t.Fatalf("ejected %d, want %d", ejected, tc.want)
			}
			for i := range nodes {
				if got := tr.State(nodes[i].Addr).Ejected; got != (i < tc.want) {
					t.Fatalf("node %d ejected = %v", i, got)
				}
			}
		})
	}
}

func TestCapFreesAfterExpiry(t *testing.T) {
	nodes := makeNodes(4)
	tr, clock := newTracker(t, health.Policy{ConsecutiveFailures: 1, BaseEjection: time.Second}, nodes)
	tr.Eject(nodes[0].Addr, errRefused)
	tr.Eject(nodes[1].Addr, errRefused)
	if tr.Failure(nodes[2].Addr, errRefused) {
		t.Fatal("third of four nodes ejected under a 50% cap")
	}
	clock.Advance(time.Second)
	// The count stayed at the threshold, so the next failure ejects.
	if !tr.Failure(nodes[2].Addr, errRefused) {
		t.Fatal("not ejected once the cap had room")
	}
}

func TestCapUsesUsableLength(t *testing.T) {
	// Without Forget, the length of the last Usable list is the known count.
	clock := newFakeClock()
	tr := health.NewTracker(health.Policy{}, health.WithClock(clock.Now))
	nodes := makeNodes(4)
	tr.Usable(nodes)
	ejected := 0
	for i := range nodes {
		if tr.Eject(nodes[i].Addr, errRefused) {
			ejected++
		}
	}
	if ejected != 2 {
		t.Fatalf("ejected %d of 4, want 2", ejected)
	}
}

func TestAllExcludedUsesAll(t *testing.T) {
	nodes := makeNodes(3)
	tr, _ := newTracker(t, health.Policy{MaxEjectedPercent: 100}, nodes)
	for i := range nodes {
		if !tr.Eject(nodes[i].Addr, errRefused) {
			t.Fatalf("node %d not ejected with a 100%% cap", i)
		}
	}
	if got := tr.Usable(nodes); len(got) != 3 || &got[0] != &nodes[0] {
		t.Fatalf("Usable with all ejected = %v, want all nodes", addrs(got))
	}

	// The same holds for one node, and for unhealthy marks.
	one := makeNodes(1)
	tr, _ = newTracker(t, health.Policy{}, one)
	if !tr.Eject(one[0].Addr, errRefused) {
		t.Fatal("the only node was not ejected: one ejection must always be allowed")
	}
	if got := tr.Usable(one); len(got) != 1 {
		t.Fatalf("Usable with the only node ejected = %v", addrs(got))
	}
	tr, _ = newTracker(t, health.Policy{}, nodes)
	for i := range nodes {
		tr.SetUnhealthy(nodes[i].Addr, errRefused)
	}
	if got := tr.Usable(nodes); len(got) != 3 {
		t.Fatalf("Usable with all unhealthy = %v", addrs(got))
	}
}

func TestUnhealthy(t *testing.T) {
	nodes := makeNodes(4)
	tr, clock := newTracker(t, health.Policy{BaseEjection: time.Second}, nodes)
	v0 := tr.Version()
	// Unhealthy marks are not capped: three of four is allowed.
	for i := range 3 {
		tr.SetUnhealthy(nodes[i].Addr, errors.New("starting"))
	}
	if got := addrs(tr.Usable(nodes)); !slices.Equal(got, addrs(nodes[3:])) {
		t.Fatalf("Usable = %v", got)
	}
	v1 := tr.Version()
	if v1 == v0 {
		t.Fatal("Version unchanged by SetUnhealthy")
	}
	tr.SetUnhealthy(nodes[0].Addr, errors.New("still starting"))
	if tr.Version() != v1 {
		t.Fatal("Version changed by a repeated SetUnhealthy")
	}
	// Unhealthy marks do not expire with time.
	clock.Advance(time.Hour)
	if st := tr.State(nodes[0].Addr); !st.Unhealthy || st.LastError != "still starting" {
		t.Fatalf("state = %+v", st)
	}
	// They do not count towards the cap: two ejections are still allowed.
	if !tr.Eject(nodes[3].Addr, errRefused) {
		t.Fatal("ejection refused although only unhealthy marks were set")
	}

	tr.SetHealthy(nodes[0].Addr)
	tr.SetHealthy(nodes[1].Addr)
	if got := addrs(tr.Usable(nodes)); !slices.Equal(got, addrs(nodes[:2])) {
		t.Fatalf("Usable after SetHealthy = %v", got)
	}
	v2 := tr.Version()
	tr.SetHealthy(nodes[0].Addr)
	tr.SetHealthy("10.9.9.9:1") // unknown: no-op
	if tr.Version() != v2 {
		t.Fatal("Version changed by SetHealthy on healthy nodes")
	}
}

func TestSetHealthyEndsEjection(t *testing.T) {
	nodes := makeNodes(2)
	tr, clock := newTracker(t, health.Policy{BaseEjection: time.Second}, nodes)
	a := nodes[0].Addr
	tr.Eject(a, errRefused)
	v := tr.Version()
	tr.SetHealthy(a)
	if tr.Version() == v || tr.State(a).Ejected {
		t.Fatal("a passing check did not end the ejection")
	}
	// The node is on probation: one failure ejects it for longer.
	if !tr.Failure(a, errRefused) {
		t.Fatal("not on probation after a check ended the ejection")
	}
	if got := ejectionLength(t, tr, clock, a); got != 2*time.Second {
		t.Fatalf("ejection lasts %v, want 2s", got)
	}
}

func TestForget(t *testing.T) {
	nodes := makeNodes(4)
	tr, _ := newTracker(t, health.Policy{}, nodes)
	tr.Eject(nodes[0].Addr, errRefused)
	tr.Failure(nodes[1].Addr, errRefused)
	v := tr.Version()

	tr.Forget(nodes[1:])
	if tr.Version() == v {
		t.Fatal("Version unchanged when an ejected node was forgotten")
	}
	if st := tr.State(nodes[0].Addr); st != (health.NodeState{}) {
		t.Fatalf("forgotten node has state %+v", st)
	}
	if st := tr.State(nodes[1].Addr); st.ConsecutiveFailures != 1 {
		t.Fatalf("kept node lost its state: %+v", st)
	}
	// The forgotten ejection no longer counts towards the cap (1 of 3).
	if !tr.Eject(nodes[2].Addr, errRefused) {
		t.Fatal("ejection refused: the forgotten node still counts")
	}
	v = tr.Version()
	tr.Forget(nodes[1:])
	if tr.Version() != v {
		t.Fatal("Version changed by a Forget that dropped nothing")
	}
}

func TestUsableReturnsInputWithoutAllocating(t *testing.T) {
	nodes := makeNodes(8)
	tr, _ := newTracker(t, health.Policy{}, nodes)
	check := func(name string) {
		t.Helper()
		got := tr.Usable(nodes)
		if len(got) != len(nodes) || &got[0] != &nodes[0] {
			t.Fatalf("%s: Usable did not return its input", name)
		}
		if allocs := testing.AllocsPerRun(100, func() { tr.Usable(nodes) }); allocs != 0 {
			t.Fatalf("%s: Usable allocates %v times", name, allocs)
		}
	}
	check("no state")
	// A node outside the list is excluded: the list still needs no copy.
	tr.Eject("10.9.9.9:8080", errRefused)
	check("exclusion outside the list")
}

func TestHotPathsDoNotAllocate(t *testing.T) {
	nodes := makeNodes(4)
	tr, _ := newTracker(t, health.Policy{}, nodes)
	tr.Failure(nodes[0].Addr, errRefused)
	tr.Eject(nodes[1].Addr, errRefused)
	for name, fn := range map[string]func(){
		"Success known":   func() { tr.Success(nodes[0].Addr) },
		"Success unknown": func() { tr.Success(nodes[3].Addr) },
		"Version":         func() { tr.Version() },
	} {
		if allocs := testing.AllocsPerRun(100, fn); allocs != 0 {
			t.Errorf("%s allocates %v times", name, allocs)
		}
	}
}

// TestConcurrentUse is for -race: failures, successes, ejections, expiries,
// checks and readers all at once, with the clock moving. Version must never
// go backwards for any reader.
func TestConcurrentUse(t *testing.T) {
	nodes := makeNodes(6)
	tr, clock := newTracker(t, health.Policy{ConsecutiveFailures: 2, BaseEjection: time.Millisecond}, nodes)
	const rounds = 2000
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 4 {
		wg.Go(func() {
			for i := range rounds {
				addr := nodes[(i+w)%len(nodes)].Addr
				switch i % 5 {
				case 0, 1:
					tr.Failure(addr, errRefused)
				case 2:
					tr.Success(addr)
				case 3:
					tr.Eject(addr, errRefused)
				case 4:
					if w == 0 {
						tr.SetUnhealthy(addr, errRefused)
					} else {
						tr.SetHealthy(addr)
					}
				}
				clock.Advance(100 * time.Microsecond)
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			var last uint64
			for range rounds {
				v := tr.Version()
				if v < last {
					errs <- fmt.Errorf("Version went back from %d to %d", last, v)
					return
				}
				last = v
				if got := tr.Usable(nodes); len(got) == 0 {
					errs <- errors.New("Usable returned no nodes")
					return
				}
				tr.State(nodes[0].Addr)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Once everything has run out and every node is healthy, all are usable.
	for i := range nodes {
		tr.SetHealthy(nodes[i].Addr)
	}
	clock.Advance(time.Hour)
	if got := tr.Usable(nodes); &got[0] != &nodes[0] || len(got) != len(nodes) {
		t.Fatalf("after the storm Usable = %v", addrs(got))
	}
	ejected := 0
	for i := range nodes {
		if tr.State(nodes[i].Addr).Ejected {
			ejected++
		}
	}
	if ejected != 0 {
		t.Fatalf("%d nodes still ejected", ejected)
	}
	// The ejected count must have stayed consistent: the cap allows 3 of 6.
	for i := range 3 {
		if !tr.Eject(nodes[i].Addr, errRefused) {
			t.Fatalf("ejection %d refused after the storm", i+1)
		}
	}
	if tr.Eject(nodes[3].Addr, errRefused) {
		t.Fatal("fourth ejection of six allowed under a 50% cap")
	}
}

func BenchmarkTrackerVersion(b *testing.B) {
	nodes := makeNodes(8)
	b.Run("idle", func(b *testing.B) {
		tr := health.NewTracker(health.Policy{})
		tr.Forget(nodes)
		b.ReportAllocs()
		for b.Loop() {
			tr.Version()
		}
	})
	b.Run("ejection running", func(b *testing.B) {
		tr := health.NewTracker(health.Policy{BaseEjection: time.Hour})
		tr.Forget(nodes)
		tr.Eject(nodes[0].Addr, errRefused)
		b.ReportAllocs()
		for b.Loop() {
			tr.Version()
		}
	})
	b.Run("parallel ejection running", func(b *testing.B) {
		tr := health.NewTracker(health.Policy{BaseEjection: time.Hour})
		tr.Forget(nodes)
		tr.Eject(nodes[0].Addr, errRefused)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				tr.Version()
			}
		})
	})
}

func BenchmarkTrackerSuccess(b *testing.B) {
	nodes := makeNodes(8)
	tr := health.NewTracker(health.Policy{})
	tr.Forget(nodes)
	tr.Failure(nodes[1].Addr, errRefused) // the node has state
	b.Run("known node", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tr.Success(nodes[1].Addr)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				tr.Success(nodes[1].Addr)
			}
		})
	})
}

func BenchmarkUsable(b *testing.B) {
	nodes := makeNodes(16)
	b.Run("none excluded", func(b *testing.B) {
		tr := health.NewTracker(health.Policy{})
		tr.Forget(nodes)
		b.ReportAllocs()
		for b.Loop() {
			tr.Usable(nodes)
		}
	})
	b.Run("one ejected", func(b *testing.B) {
		tr := health.NewTracker(health.Policy{BaseEjection: time.Hour})
		tr.Forget(nodes)
		tr.Eject(nodes[3].Addr, errRefused)
		b.ReportAllocs()
		for b.Loop() {
			tr.Usable(nodes)
		}
	})
}
