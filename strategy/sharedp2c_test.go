package strategy

import (
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
)

// sharedFixture is shared_p2c over nodes with a clock the test moves.
type sharedFixture struct {
	t     *testing.T
	now   time.Time
	loads *Loads
	s     Strategy
}

func newSharedFixture(t *testing.T, opts Options) *sharedFixture {
	f := &sharedFixture{t: t, now: time.UnixMilli(1_764_620_000_000), loads: NewLoads()}
	opts.Now = func() time.Time { return f.now }
	opts.Loads = f.loads
	if opts.Seed == 0 {
		opts.Seed = 7
	}
	s, name := New("shared_p2c", opts)
	if name != "shared_p2c" {
		t.Fatalf("New returned %q", name)
	}
	f.s = s
	return f
}

// published returns a figure of total queries read age ago.
func (f *sharedFixture) published(total, slots int, age time.Duration) discovery.PublishedLoad {
	return discovery.PublishedLoad{Running: total, Slots: slots, ReadAt: f.now.Add(-age)}
}

// counts picks n times and returns how often each address won.
func counts(t *testing.T, p Picker, n int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for range n {
		node, err := p.Pick(nil)
		if err != nil {
			t.Fatal(err)
		}
		out[node.Addr]++
	}
	return out
}

// The published figure decides, plus the change in this client's statements
// in flight since it arrived.
func TestSharedP2CPublishedPlusOwn(t *testing.T) {
	f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	nodes := makeNodes(2)
	a, b := nodes[0].Addr, nodes[1].Addr
	nodes[0].Load = f.published(10, 0, time.Second)
	nodes[1].Load = f.published(0, 0, time.Second)
	p := f.s.Build(nodes)
	if c := counts(t, p, 100); c[b] != 100 {
		t.Fatalf("published 10 vs 0: picks %v, want all on %s", c, b)
	}
	// Twelve statements this client started on b since its figure: 0+12
	// is now more than a's 10.
	for range 12 {
		f.loads.For(b).Begin()
	}
	if c := counts(t, p, 100); c[a] != 100 {
		t.Fatalf("b published 0 but this client started 12 there: picks %v, want all on %s", c, a)
	}
	// A rebuild for another reason (a's figure changed) keeps b's count.
	nodes2 := makeNodes(2)
	nodes2[0].Load = f.published(11, 0, 0)
	nodes2[1].Load = nodes[1].Load
	if c := counts(t, f.s.Build(nodes2), 100); c[a] != 100 {
		t.Fatalf("after a rebuild with b's figure unchanged: picks %v, want all on %s", c, a)
	}
	// Five of them end: b's estimate 0+7 is below a's 11 again.
	for range 5 {
		f.loads.For(b).End(time.Millisecond, nil)
	}
	if c := counts(t, p, 100); c[b] != 100 {
		t.Fatalf("b published 0, 7 of this client's in flight: picks %v, want all on %s", c, b)
	}
	// b's next figure includes those statements: the count starts over.
	nodes3 := makeNodes(2)
	nodes3[0].Load = nodes2[0].Load
	nodes3[1].Load = f.published(5, 0, 0)
	if c := counts(t, f.s.Build(nodes3), 100); c[b] != 100 {
		t.Fatalf("b published 5 vs a's 11: picks %v, want all on %s", c, b)
	}
}

// Capacity is the weight; published slots floor the load, so that a slow
// node's free slot does not beat a fast node's short queue.
func TestSharedP2CCapacity(t *testing.T) {
	f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	nodes := makeNodes(2, 1, 4) // b weighs 4
	a, b := nodes[0].Addr, nodes[1].Addr
	nodes[0].Load = f.published(2, 0, 0)
	nodes[1].Load = f.published(8, 0, 0)
	// By weight: (2+1)/1 = 3 against (8+1)/4 = 2.25.
	if c := counts(t, f.s.Build(nodes), 100); c[b] != 100 {
		t.Fatalf("by weight: picks %v, want all on %s", c, b)
	}
	// a idle: 1/1 against 2.25, a wins without slots ...
	nodes2 := makeNodes(2, 1, 4)
	nodes2[0].Load = f.published(0, 0, 0)
	nodes2[1].Load = f.published(8, 0, 0)
	if c := counts(t, f.s.Build(nodes2), 100); c[a] != 100 {
		t.Fatalf("idle a, no slots: picks %v, want all on %s", c, a)
	}
	// ... but with 4 slots each, a's statement takes a whole slot of a
	// node a quarter as fast: max(1, 4)/1 = 4 against max(9, 4)/4 = 2.25.
	nodes3 := makeNodes(2, 1, 4)
	nodes3[0].Load = f.published(0, 4, 0)
	nodes3[1].Load = f.published(8, 4, 0)
	if c := counts(t, f.s.Build(nodes3), 100); c[b] != 100 {
		t.Fatalf("idle a, 4 slots each: picks %v, want all on %s", c, b)
	}
	// Equal nodes: a free slot beats a queue.
	nodes4 := makeNodes(2)
	nodes4[0].Load = f.published(3, 4, 0)
	nodes4[1].Load = f.published(5, 4, 0)
	if c := counts(t, f.s.Build(nodes4), 100); c[a] != 100 {
		t.Fatalf("3 of 4 against 5 of 4: picks %v, want all on %s", c, a)
	}
}

// When the better of the two drawn is full by its figure, more draws find a
// node with a free slot: with two full nodes of three and one free, the free
// one gets the pairs that include it (2/3) and most of the others, where
// plain p2c gives it 2/3. Without slots there are no extra draws.
func TestSharedP2CExtraDrawsFindAFreeSlot(t *testing.T) {
	const picks = 6000
	for _, slots := range []int{4, 0} {
		f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
		nodes := makeNodes(3)
		nodes[0].Load = f.published(9, slots, 0)
		nodes[1].Load = f.published(9, slots, 0)
		nodes[2].Load = f.published(0, slots, 0)
		share := float64(counts(t, f.s.Build(nodes), picks)[nodes[2].Addr]) / picks
		// 2/3 + 1/3·(1-(2/3)²) = 0.85 with two extra draws.
		if slots > 0 && (share < 0.81 || share > 0.89) {
			t.Errorf("with slots: the free node got %.3f of the picks, want about 0.85", share)
		}
		if slots == 0 && (share < 0.63 || share > 0.70) {
			t.Errorf("without slots: the idle node got %.3f of the picks, want about 2/3", share)
		}
	}
}

// When this client's statements are the whole published load (one client),
// its counts are exact and it compares a window of nodes as least_active
// does; when they are a small share, never the least loaded of all.
func TestSharedP2COneClientComparesAWindow(t *testing.T) {
	for _, exact := range []bool{true, false} {
		f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
		nodes := makeNodes(activeWindow)
		for i := range nodes {
			own := 5
			if i == 3 {
				own = 0
			}
			l := f.loads.For(nodes[i].Addr)
			for range own {
				l.Begin()
			}
			published := own
			if !exact {
				published = own * 20 // other clients' statements too
			}
			nodes[i].Load = f.published(published, 4, 0)
		}
		c := counts(t, f.s.Build(nodes), 400)
		least := nodes[3].Addr
		if exact && c[least] != 400 {
			t.Errorf("one client: picks %v, want all on the idle %s", c, least)
		}
		if !exact && (c[least] == 400 || c[least] < 50) {
			t.Errorf("a small share: picks %v, want the idle %s in about a quarter (the pairs with it)", c, least)
		}
	}
}

// One client alone stays exact when some of its statements end after the
// registrar read the figure and before the figure arrived: the figure still
// counts them, this client no longer does, and they are not another
// client's load. When they ended before the read (a build in between saw
// them ended), the figure's rest is another client's.
func TestSharedP2COneClientExactAcrossStatementsEndedInFlight(t *testing.T) {
	for _, alone := range []bool{true, false} {
		f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
		nodes := makeNodes(activeWindow)
		for i := range nodes {
			l := f.loads.For(nodes[i].Addr)
			for range 5 {
				l.Begin()
			}
			nodes[i].Load = f.published(5, 4, 0)
		}
		if !f.s.Build(nodes).(*sharedP2CPicker).exact {
			t.Fatal("figures equal to this client's counts are not taken as exact")
		}
		// Four of this client's statements end on every node but the
		// fourth: 15 ms on, after the registrars read 5 at 10 ms (alone),
		// or 5 ms on, seen by a build, before they read 5 that another
		// client's 4 make up (not alone). The figures arrive at 20 ms.
		end := func() {
			for i := range nodes {
				if i != 3 {
					l := f.loads.For(nodes[i].Addr)
					for range 4 {
						l.End(time.Millisecond, nil)
					}
				}
			}
		}
		f.now = f.now.Add(5 * time.Millisecond)
		if !alone {
			end()
			f.s.Build(nodes)
		}
		f.now = f.now.Add(5 * time.Millisecond)
		for i := range nodes {
			nodes[i].Load = f.published(5, 4, 0)
		}
		f.now = f.now.Add(5 * time.Millisecond)
		if alone {
			end()
		}
		f.now = f.now.Add(5 * time.Millisecond)
		p := f.s.Build(nodes)
		if got := p.(*sharedP2CPicker).exact; got != alone {
			t.Fatalf("alone %v: exact %v", alone, got)
		}
		if !alone {
			continue
		}
		// The window on exact counts: 1 in flight everywhere but the
		// fourth node's 5, which never wins.
		if c := counts(t, p, 400); c[nodes[3].Addr] != 0 {
			t.Errorf("exact window: picks %v, want none on %s, the only node still running 5", c, nodes[3].Addr)
		}
	}
}

// With no figure at all there are only this client's own counts, which no
// other client reads: it compares least_active's window on them.
func TestSharedP2CNoFigureComparesAWindow(t *testing.T) {
	f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	nodes := makeNodes(activeWindow)
	for i := range nodes {
		if i != 3 {
			f.loads.For(nodes[i].Addr).Begin()
		}
	}
	if c := counts(t, f.s.Build(nodes), 400); c[nodes[3].Addr] != 400 {
		t.Errorf("no figures: picks %v, want all on the idle %s", c, nodes[3].Addr)
	}
}

// Figures that all read 0 say nothing of this client's share: the last
// verdict stands, exact or not.
func TestSharedP2CZeroFiguresKeepTheVerdict(t *testing.T) {
	for _, exact := range []bool{true, false} {
		f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
		nodes := makeNodes(4)
		for i := range nodes {
			if exact {
				f.loads.For(nodes[i].Addr).Begin()
			}
			nodes[i].Load = f.published(1, 4, 0)
		}
		if got := f.s.Build(nodes).(*sharedP2CPicker).exact; got != exact {
			t.Fatalf("figures of 1 with this client's %v: exact %v", exact, got)
		}
		f.now = f.now.Add(time.Second)
		for i := range nodes {
			if exact {
				f.loads.For(nodes[i].Addr).End(time.Millisecond, nil)
			}
			nodes[i].Load = f.published(0, 4, 0)
		}
		if got := f.s.Build(nodes).(*sharedP2CPicker).exact; got != exact {
			t.Errorf("then figures of 0: exact %v, want the verdict before, %v", got, exact)
		}
	}
}

// With some nodes unwatched (discovery's load-watch subset), the draws are
// among the watched ones; with fewer than two watched, among all, on local
// counts.
func TestSharedP2CUnwatchedNodes(t *testing.T) {
	f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	nodes := makeNodes(4)
	nodes[0].Load = f.published(3, 4, 0)
	nodes[1].Load = f.published(3, 4, 0)
	nodes[2].Load = discovery.PublishedLoad{Unwatched: true}
	nodes[3].Load = discovery.PublishedLoad{Unwatched: true}
	c := counts(t, f.s.Build(nodes), 400)
	if c[nodes[2].Addr]+c[nodes[3].Addr] != 0 || c[nodes[0].Addr] == 0 || c[nodes[1].Addr] == 0 {
		t.Errorf("two watched of four: picks %v, want both watched and no unwatched", c)
	}
	nodes[1].Load = discovery.PublishedLoad{Unwatched: true}
	c = counts(t, f.s.Build(nodes), 400)
	for i := range nodes {
		if c[nodes[i].Addr] == 0 {
			t.Errorf("one watched of four: picks %v, want every node (local counts)", c)
			break
		}
	}
}

// Pick allocates nothing on any path: fresh figures, extra draws, the
// exact window, local counts, a subset.
func TestSharedP2CPickDoesNotAllocateOnAnyPath(t *testing.T) {
	f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	for name, load := range map[string]func(i int) discovery.PublishedLoad{
		"full":      func(i int) discovery.PublishedLoad { return f.published(9, 4, 0) },
		"free":      func(i int) discovery.PublishedLoad { return f.published(i%5, 4, 0) },
		"stale":     func(i int) discovery.PublishedLoad { return f.published(1, 4, time.Hour) },
		"subset":    func(i int) discovery.PublishedLoad { return discovery.PublishedLoad{Unwatched: i > 3} },
		"no figure": func(i int) discovery.PublishedLoad { return discovery.PublishedLoad{} },
	} {
		nodes := makeNodes(20)
		for i := range nodes {
			nodes[i].Load = load(i)
		}
		p := f.s.Build(nodes)
		if allocs := testing.AllocsPerRun(1000, func() { _, _ = p.Pick(nil) }); allocs != 0 {
			t.Errorf("%s: %v allocations per Pick, want 0", name, allocs)
		}
	}
	// The exact window: this client's statements are the figures. A
	// strategy of its own: the builds above saw figures read at the same
	// moment, and a figure read at the same moment is the same figure
	// (its share of this client's was settled when it first came), so
	// which of them ran last (map order) would decide the verdict.
	f = newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	nodes := makeNodes(20)
	for i := range nodes {
		f.loads.For(nodes[i].Addr).Begin()
		nodes[i].Load = f.published(1, 4, 0)
	}
	p := f.s.Build(nodes)
	if !p.(*sharedP2CPicker).exact {
		t.Fatal("one client's own figures are not taken as exact")
	}
	if allocs := testing.AllocsPerRun(1000, func() { _, _ = p.Pick(nil) }); allocs != 0 {
		t.Errorf("exact window: %v allocations per Pick, want 0", allocs)
	}
}

// A stale or missing figure is never trusted nor mixed with a local count:
// the two nodes are compared by this client's statements in flight.
func TestSharedP2CStaleOrMissingFallsBackToLocal(t *testing.T) {
	for _, tc := range []struct {
		name string
		load func(f *sharedFixture) discovery.PublishedLoad
	}{
		{"stale", func(f *sharedFixture) discovery.PublishedLoad {
			return f.published(0, 0, DefaultPublishedStaleAfter+time.Millisecond)
		}},
		{"from the far future", func(f *sharedFixture) discovery.PublishedLoad {
			return f.published(0, 0, -DefaultPublishedStaleAfter-time.Millisecond)
		}},
		{"missing", func(*sharedFixture) discovery.PublishedLoad { return discovery.PublishedLoad{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
			nodes := makeNodes(2)
			a, b := nodes[0].Addr, nodes[1].Addr
			// a claims to be idle but its figure is not usable; b is fresh
			// and busy. Locally a has 3 in flight, b none.
			nodes[0].Load = tc.load(f)
			nodes[1].Load = f.published(50, 0, 0)
			for range 3 {
				f.loads.For(a).Begin()
			}
			if c := counts(t, f.s.Build(nodes), 100); c[b] != 100 {
				t.Fatalf("picks %v, want all on %s (fewer in flight here)", c, b)
			}
		})
	}
	// A figure that ages past the limit while the picker is in use.
	f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	nodes := makeNodes(2)
	a, b := nodes[0].Addr, nodes[1].Addr
	nodes[0].Load = f.published(0, 0, 0)
	nodes[1].Load = f.published(50, 0, 0)
	f.loads.For(a).Begin()
	p := f.s.Build(nodes)
	if c := counts(t, p, 100); c[a] != 100 {
		t.Fatalf("fresh: picks %v, want all on %s", c, a)
	}
	f.now = f.now.Add(DefaultPublishedStaleAfter + time.Second)
	if c := counts(t, p, 100); c[b] != 100 {
		t.Fatalf("once stale: picks %v, want all on %s", c, b)
	}
}

// Never the least loaded of all: of three nodes, the middle one still wins
// when drawn with the busiest, and the busiest never wins.
func TestSharedP2CNeverLeastOfAll(t *testing.T) {
	f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	nodes := makeNodes(3)
	for i, total := range []int{0, 5, 10} {
		nodes[i].Load = f.published(total, 0, 0)
	}
	c := counts(t, f.s.Build(nodes), 3000)
	if c[nodes[1].Addr] < 600 || c[nodes[2].Addr] != 0 {
		t.Fatalf("picks %v: want the middle node about a third of the time and the busiest never", c)
	}
}

// A node that joins, or comes back after being left out, ramps up over the
// slow-start window; negative SlowStart turns it off.
func TestSharedP2CSlowStart(t *testing.T) {
	f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: 10 * time.Second}})
	old := makeNodes(1)
	f.s.Build(old)
	f.now = f.now.Add(time.Minute)
	both := func() []discovery.Node {
		nodes := makeNodes(2)
		nodes[0].Load = f.published(5, 0, 0) // has been there a minute
		nodes[1].Load = f.published(0, 0, 0) // joins now, idle
		return nodes
	}
	nodes := both()
	a, b := nodes[0].Addr, nodes[1].Addr
	p := f.s.Build(nodes)
	// Just joined: capacity 0.1, cost 1/0.1 = 10 against 6.
	if c := counts(t, p, 100); c[a] != 100 {
		t.Fatalf("just joined: picks %v, want all on %s", c, a)
	}
	f.now = f.now.Add(5 * time.Second) // half way: 1/0.5 = 2 against 6
	if c := counts(t, p, 100); c[b] != 100 {
		t.Fatalf("half way: picks %v, want all on %s", c, b)
	}
	// Ejected (left out of a build), then back: it starts over.
	f.s.Build(old)
	p = f.s.Build(both())
	if c := counts(t, p, 100); c[a] != 100 {
		t.Fatalf("back from ejection: picks %v, want all on %s", c, a)
	}
	// Off.
	f = newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	f.s.Build(old)
	if c := counts(t, f.s.Build(both()), 100); c[b] != 100 {
		t.Fatalf("slow start off: picks %v, want all on %s", c, b)
	}
}

// A pick on published figures allocates nothing either.
func TestSharedP2CPickDoesNotAllocate(t *testing.T) {
	for _, seed := range []uint64{0, 13} {
		f := newSharedFixture(t, Options{Seed: seed})
		f.now = time.Now()
		nodes := makeNodes(50, 1, 2, 3, 4)
		for i := range nodes {
			if i%3 != 0 {
				nodes[i].Load = f.published(i, i%2*8, time.Duration(i)*time.Second)
			}
		}
		p := f.s.Build(nodes)
		if allocs := testing.AllocsPerRun(1000, func() { _, _ = p.Pick(nil) }); allocs != 0 {
			t.Errorf("seed %d: %v allocations per Pick, want 0", seed, allocs)
		}
	}
}

// A figure below what this client alone surely had in flight on the node
// when it was read is a lie (a stuck registrar that publishes 0): the node
// is compared by local counts, and stays so while its figure reads the
// same, until it moves.
func TestSharedP2CDistrustsAFigureBelowItsOwnStatements(t *testing.T) {
	f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	nodes := makeNodes(2)
	a, b := nodes[0].Addr, nodes[1].Addr
	for range 3 {
		f.loads.For(a).Begin()
	}
	nodes[0].Load = f.published(0, 4, time.Second) // read before the 3 started
	nodes[1].Load = f.published(2, 4, time.Second)
	if c := counts(t, f.s.Build(nodes), 100); c[a] != 100 {
		t.Fatalf("a read 0 before this client's 3: picks %v, want all on %s", c, a)
	}
	f.now = f.now.Add(time.Second)
	// a reads 0 again with this client's 3 in flight there since a build
	// before the read: a lie.
	nodes[0].Load = f.published(0, 4, 10*time.Millisecond)
	p := f.s.Build(nodes)
	if c := counts(t, p, 100); c[b] != 100 {
		t.Fatalf("a published 0 under this client's 3: picks %v, want all on %s (by local counts)", c, b)
	}
	// The 3 end; a keeps publishing 0, which no longer contradicts this
	// client, but its registrar is still the one that lied.
	for range 3 {
		f.loads.For(a).End(time.Millisecond, nil)
	}
	f.loads.For(b).Begin()
	f.now = f.now.Add(time.Second)
	nodes[0].Load = f.published(0, 4, 10*time.Millisecond)
	nodes[1].Load = f.published(2, 4, 10*time.Millisecond)
	if c := counts(t, f.s.Build(nodes), 100); c[a] != 100 {
		t.Fatalf("after the lie, local counts 0 against 1: picks %v, want all on %s", c, a)
	}
	// A figure that moves is trusted again: 9 against b's 2.
	f.now = f.now.Add(time.Second)
	nodes[0].Load = f.published(9, 4, 10*time.Millisecond)
	nodes[1].Load = f.published(2, 4, 10*time.Millisecond)
	if c := counts(t, f.s.Build(nodes), 100); c[b] != 100 {
		t.Fatalf("a moved to 9: picks %v, want all on %s", c, b)
	}
}

// A pair with a liar is compared as p2c compares: this client's statements
// there times their latency, over capacity. With many clients this one's
// counts are nearly always 0 on both, and on counts alone the tie went to
// the bigger node: a big coordinator stuck at load=0 took every pair it
// was in, however long its statements took (2.5 times the central queue's
// p99 on 1:1:4, TestSharedP2CWithstandsALiarAndASilentCoordinator).
func TestSharedP2CBigLiarJudgedByItsLatency(t *testing.T) {
	f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	nodes := makeNodes(2, 4, 1)
	a, b := nodes[0].Addr, nodes[1].Addr
	for range 3 {
		f.loads.For(a).Begin()
	}
	nodes[0].Load = f.published(0, 4, time.Second)
	nodes[1].Load = f.published(2, 4, time.Second)
	f.s.Build(nodes)
	f.now = f.now.Add(time.Second)
	nodes[0].Load = f.published(0, 4, 10*time.Millisecond) // under this client's 3: a lie
	nodes[1].Load = f.published(2, 4, 10*time.Millisecond)
	if p := f.s.Build(nodes).(*sharedP2CPicker); !p.cands[0].lying {
		t.Fatalf("%s published 0 under this client's 3, not taken for a lie", a)
	}
	for range 3 {
		f.loads.For(a).End(100*time.Millisecond, nil)
	}
	f.loads.For(b).Begin()
	f.loads.For(b).End(100*time.Millisecond, nil)
	if c := counts(t, f.s.Build(nodes), 100); c[a] != 100 {
		t.Fatalf("the liar, 4 times b's capacity, at b's latency: picks %v, want all on %s", c, a)
	}
	// The liar's statements now take a hundred times b's: it loses.
	for range 20 {
		f.loads.For(a).Begin()
		f.loads.For(a).End(10*time.Second, nil)
	}
	if c := counts(t, f.s.Build(nodes), 100); c[b] != 100 {
		t.Fatalf("the liar's statements take 100 times b's: picks %v, want all on %s", c, b)
	}
}

// A figure is stale once older than its delivery plus the registrar's
// refresh (and a margin), not after a few statements: a live registrar
// rewrites an unchanged figure only every 5 s, so with statements of 100 ms
// a figure 3 s old still says its node has not changed. Past the refresh
// the registrar has stopped, and local counts decide.
func TestSharedP2CStaleAfterTheRefresh(t *testing.T) {
	for _, tc := range []struct{ lag, took time.Duration }{{0, 100 * time.Millisecond}, {time.Second, 10 * time.Second}} {
		lag := tc.lag
		f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
		nodes := makeNodes(2)
		a, b := nodes[0].Addr, nodes[1].Addr
		for _, addr := range []string{a, b} {
			l := f.loads.For(addr)
			l.Begin()
			l.End(tc.took, nil)
		}
		// a looks idle by its figure, b busy; locally a has 2 in flight.
		f.loads.For(a).Begin()
		f.loads.For(a).Begin()
		nodes[0].Load = f.published(0, 0, lag)
		nodes[1].Load = f.published(50, 0, lag)
		p := f.s.Build(nodes)
		start := f.now
		f.now = start.Add(3 * time.Second)
		if c := counts(t, p, 100); c[a] != 100 {
			t.Errorf("delivered %v late, 3 s later: picks %v, want all on %s (figures)", lag, c, a)
		}
		f.now = start.Add(sharedRefresh + sharedRefreshMargin - time.Millisecond)
		if c := counts(t, p, 100); c[a] != 100 {
			t.Errorf("delivered %v late, just within the refresh: picks %v, want all on %s (figures)", lag, c, a)
		}
		f.now = start.Add(sharedRefresh + sharedRefreshMargin + time.Millisecond)
		if c := counts(t, p, 100); c[b] != 100 {
			t.Errorf("delivered %v late, past the refresh: picks %v, want all on %s (local counts)", lag, c, b)
		}
	}
}

// A figure is worth less the later figures arrive, measured in the node's
// statements: delivered 1 s late, with statements of 100 ms, it says little
// and this client's counts decide; with statements of 10 s, it decides.
func TestSharedP2CLateFiguresGiveWayToLocalCounts(t *testing.T) {
	for _, took := range []time.Duration{100 * time.Millisecond, 10 * time.Second} {
		f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
		nodes := makeNodes(2)
		a, b := nodes[0].Addr, nodes[1].Addr
		for _, addr := range []string{a, b} {
			l := f.loads.For(addr)
			l.Begin()
			l.End(took, nil)
		}
		// a looks idle by its figure, b busy; locally a has 2 in flight.
		f.loads.For(a).Begin()
		f.loads.For(a).Begin()
		nodes[0].Load = f.published(0, 0, time.Second)
		nodes[1].Load = f.published(50, 0, time.Second)
		c := counts(t, f.s.Build(nodes), 100)
		if took < time.Second && c[b] != 100 {
			t.Errorf("statements of %v, figures 1 s late: picks %v, want all on %s (local counts)", took, c, b)
		}
		if took > time.Second && c[a] != 100 {
			t.Errorf("statements of %v, figures 1 s late: picks %v, want all on %s (figures)", took, c, a)
		}
	}
}

// A node whose figure goes stale is estimated alone, from this client's
// statements there times the load per statement its figures showed while
// fresh; the other node of the pair keeps its fresh figure. Compared pair
// by pair on local counts, b (none of this client's) would win.
func TestSharedP2CStaleNodeEstimatedAlone(t *testing.T) {
	f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	nodes := makeNodes(2)
	a, b := nodes[0].Addr, nodes[1].Addr
	// a's figure of 20 counted 2 of this client's: 10 per statement.
	f.loads.For(a).Begin()
	f.loads.For(a).Begin()
	nodes[0].Load = f.published(20, 0, 0)
	nodes[1].Load = f.published(50, 0, 0)
	f.s.Build(nodes)
	// a's registrar stops; b's goes on. a is now 10 × 3 = 30, b 51.
	f.now = f.now.Add(sharedRefresh + sharedRefreshMargin + time.Second)
	nodes[1].Load = f.published(50, 0, 0)
	if c := counts(t, f.s.Build(nodes), 100); c[a] != 100 {
		t.Fatalf("a stale at 10 per statement of 2, b fresh at 50: picks %v, want all on %s", c, a)
	}
	// Six more of this client's on a: 10 × 9 = 90 is more than b's 51.
	for range 6 {
		f.loads.For(a).Begin()
	}
	if c := counts(t, f.s.Build(nodes), 100); c[b] != 100 {
		t.Fatalf("a stale with 8 of this client's: picks %v, want all on %s", c, b)
	}
}

// Figures that arrive late are worth less, and when both of a pair are
// worth little (here 2 s late, with statements of 1 s and 100 ms), the
// statement is placed as p2c places it, on this client's statements and
// their latency: a figure that says a is idle, read 2 s ago, does not draw
// it to a whose statements take ten times b's. Every client reads the same
// late figures, and following them herds everyone together (with 50
// clients and figures 2 s late, 1.56 times the central queue's p99 on
// twelve equal coordinators, where least_active's local counts give 1.43).
func TestSharedP2CFiguresWorthLittleLeaveThePickToP2C(t *testing.T) {
	f := newSharedFixture(t, Options{Config: SharedP2CConfig{SlowStart: -1}})
	nodes := makeNodes(2)
	a, b := nodes[0].Addr, nodes[1].Addr
	f.loads.For(a).Begin()
	f.loads.For(a).End(time.Second, nil)
	f.loads.For(b).Begin()
	f.loads.For(b).End(100*time.Millisecond, nil)
	nodes[0].Load = f.published(0, 4, 2*time.Second)
	nodes[1].Load = f.published(3, 4, 2*time.Second)
	p := f.s.Build(nodes).(*sharedP2CPicker)
	for i, c := range p.cands {
		if c.trust >= sharedLocalTrust {
			t.Fatalf("node %d: trust %.2f in a figure 2 s late, want below %.2f", i, c.trust, sharedLocalTrust)
		}
	}
	if c := counts(t, p, 100); c[b] != 100 {
		t.Fatalf("figures 2 s late, a's statements 10 times b's: picks %v, want all on %s", c, b)
	}
	// On time, the figures decide again: a is idle.
	f.now = f.now.Add(time.Second)
	nodes[0].Load = f.published(0, 4, time.Millisecond)
	nodes[1].Load = f.published(3, 4, time.Millisecond)
	if c := counts(t, f.s.Build(nodes), 100); c[a] != 100 {
		t.Fatalf("figures on time, a idle: picks %v, want all on %s", c, a)
	}
}
