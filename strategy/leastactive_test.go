package strategy

import (
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
)

// setInFlight makes the Load of each node report the given statements in
// flight.
func setInFlight(loads *Loads, nodes []discovery.Node, inFlight ...int) {
	for i, k := range inFlight {
		l := loads.For(nodes[i].Addr)
		for l.InFlight() < int64(k) {
			l.Begin()
		}
		for l.InFlight() > int64(k) {
			l.End(time.Millisecond, nil)
		}
	}
}

// Without load and with equal weights, the load-aware strategies spread
// picks evenly.
func TestLoadAwareIdleDistribution(t *testing.T) {
	for _, name := range loadAwareNames {
		nodes := makeNodes(5)
		s, _ := New(name, Options{Seed: 21})
		checkFit(t, countPicks(t, s.Build(nodes), nodes, nil, 50_000), ones(5))
	}
}

func TestLeastActivePrefersLessLoaded(t *testing.T) {
	nodes := makeNodes(4)
	loads := NewLoads()
	p := newLeastActive(Options{Loads: loads, Seed: 1}).Build(nodes)
	setInFlight(loads, nodes, 3, 1, 3, 2)
	for range 1000 {
		if got := indexOf(t, nodes, mustPick(t, p, nil)); got != 1 {
			t.Fatalf("picked node %d, want the least loaded node 1", got)
		}
	}
	// Relative to weight: 4 in flight on weight 8 beats 1 on weight 1.
	weighted := makeNodes(2, 8, 1)
	wp := newLeastActive(Options{Loads: loads, Seed: 1}).Build(weighted)
	setInFlight(loads, weighted, 4, 1)
	for range 100 {
		if got := indexOf(t, weighted, mustPick(t, wp, nil)); got != 0 {
			t.Fatalf("picked node %d, want node 0: (4+1)/8 < (1+1)/1", got)
		}
	}
}

// Beyond activeWindow nodes a pick looks at a window from a random start, so
// the one idle node among busy ones wins exactly when it is in the window.
func TestLeastActiveWindowIsBounded(t *testing.T) {
	const n = 4 * activeWindow
	nodes := makeNodes(n)
	loads := NewLoads()
	inFlight := make([]int, n)
	for i := range inFlight {
		inFlight[i] = 5
	}
	inFlight[n/2] = 0
	setInFlight(loads, nodes, inFlight...)
	p := newLeastActive(Options{Loads: loads, Seed: 4}).Build(nodes)
	const picks = 40_000
	counts := countPicks(t, p, nodes, nil, picks)
	// The idle node is in the window for activeWindow of the n starts; the
	// other starts pick their first node.
	idle := counts[n/2]
	checkFit(t, []int{idle, picks - idle}, []float64{activeWindow, n - activeWindow})
}

func TestP2CPrefersLessLoaded(t *testing.T) {
	nodes := makeNodes(3)
	loads := NewLoads()
	p := newP2C(Options{Loads: loads, Seed: 2}).Build(nodes)
	setInFlight(loads, nodes, 9, 0, 0)
	counts := countPicks(t, p, nodes, nil, 30_000)
	// With three nodes p2c compares all three, in a random order: node 0
	// always loses, and nodes 1 and 2, equally cheap, share the picks.
	if counts[0] != 0 {
		t.Errorf("the loaded node was picked %d times", counts[0])
	}
	checkFit(t, counts[1:], ones(2))
}

func TestP2CWeighsLatencyAndWeight(t *testing.T) {
	loads := NewLoads()
	nodes := makeNodes(2)
	p := newP2C(Options{Loads: loads, Seed: 2}).Build(nodes)
	// Equal in-flight; node 1 has no latency yet, so latency is left out
	// and the two tie: the first candidate, a random one, wins.
	loads.For(nodes[0].Addr).End(100*time.Millisecond, nil) // ewma 100ms, in-flight -1 ...
	loads.For(nodes[0].Addr).Begin()                        // ... back to 0
	checkFit(t, countPicks(t, p, nodes, nil, 20_000), ones(2))
	// Node 1 gets a latency ten times lower: with equal in-flight it wins.
	loads.For(nodes[1].Addr).Begin()
	loads.For(nodes[1].Addr).End(10*time.Millisecond, nil)
	for range 1000 {
		if got := indexOf(t, nodes, mustPick(t, p, nil)); got != 1 {
			t.Fatalf("picked node %d, want the faster node 1", got)
		}
	}
	// Five in flight on the fast node costs 6·10ms = 60ms < 100ms: it still wins;
	// twelve cost 130ms: it loses.
	setInFlight(loads, nodes, 0, 5)
	if got := indexOf(t, nodes, mustPick(t, p, nil)); got != 1 {
		t.Errorf("5 in flight at 10ms: picked node %d, want 1", got)
	}
	setInFlight(loads, nodes, 0, 12)
	if got := indexOf(t, nodes, mustPick(t, p, nil)); got != 0 {
		t.Errorf("12 in flight at 10ms: picked node %d, want 0", got)
	}
	// Weight divides the cost: node 1 with weight 4 and 12 in flight costs
	// 13·10ms/4 = 32.5ms.
	heavy := makeNodes(2, 1, 4)
	hp := newP2C(Options{Loads: loads, Seed: 2}).Build(heavy)
	if got := indexOf(t, heavy, mustPick(t, hp, nil)); got != 1 {
		t.Errorf("weight 4: picked node %d, want 1", got)
	}
}

// Beyond p2cScanAll nodes the two candidates are drawn by weight. With
// equal costs the first drawn wins, so picks follow the weights.
func TestP2CDrawsByWeight(t *testing.T) {
	weights := []int{1, 2, 4, 1, 2, 4}
	nodes := makeNodes(len(weights), weights...)
	loads := NewLoads()
	// (in-flight+1)/weight is 1 on every node.
	setInFlight(loads, nodes, 0, 1, 3, 0, 1, 3)
	p := newP2C(Options{Loads: loads, Seed: 6}).Build(nodes)
	expected := make([]float64, len(weights))
	for i, w := range weights {
		expected[i] = float64(w)
	}
	checkFit(t, countPicks(t, p, nodes, nil, 60_000), expected)
}

// The weakness that drawing by weight fixes: with five small nodes and one
// ten times their size, uniformly drawn pairs leave the big node out two
// times in three, and the small nodes get that share whatever their load.
// Drawn by weight, a pair of small nodes is rare.
func TestP2CRarelyPairsSmallNodes(t *testing.T) {
	nodes := makeNodes(6, 1, 1, 1, 1, 1, 10)
	loads := NewLoads()
	p := newP2C(Options{Loads: loads, Seed: 7}).Build(nodes)
	// All idle: the big node costs 1/10, a small one 1, so a small node wins
	// only when both candidates are small. A small first draw has
	// probability 5/15; the second is then another small node with
	// probability 4/15, or repeats the first (1/15) and is replaced by one
	// of the other five, four of them small: 5/15 × (4/15 + 1/15 × 4/5) =
	// 0.10667.
	const picks = 60_000
	counts := countPicks(t, p, nodes, nil, picks)
	big := counts[5]
	checkFit(t, []int{picks - big, big}, []float64{0.10667, 1 - 0.10667})
}

// With at most p2cScanAll nodes every node is compared: the cheapest wins
// every time, not only when it is drawn.
func TestP2CComparesAllWhenFew(t *testing.T) {
	nodes := makeNodes(p2cScanAll)
	loads := NewLoads()
	p := newP2C(Options{Loads: loads, Seed: 9}).Build(nodes)
	setInFlight(loads, nodes, 2, 2, 1, 2)
	for range 1000 {
		if got := indexOf(t, nodes, mustPick(t, p, nil)); got != 2 {
			t.Fatalf("picked node %d, want node 2, the least loaded", got)
		}
	}
	// Give every node a latency; node 0 is four times faster, so with two
	// more in flight it is still the cheapest: 3 × 10ms < 2 × 40ms.
	for i := range nodes {
		lat := 40 * time.Millisecond
		if i == 0 {
			lat = 10 * time.Millisecond
		}
		l := loads.For(nodes[i].Addr)
		l.Begin()
		l.End(lat, nil)
	}
	setInFlight(loads, nodes, 2, 2, 1, 2)
	for range 1000 {
		if got := indexOf(t, nodes, mustPick(t, p, nil)); got != 0 {
			t.Fatalf("picked node %d, want node 0, the fastest", got)
		}
	}
	// Equally cheap nodes share the picks evenly, whatever their position.
	fresh := NewLoads()
	for i := range nodes {
		l := fresh.For(nodes[i].Addr)
		l.Begin()
		l.End(40*time.Millisecond, nil) // the first sample is the average
	}
	setInFlight(fresh, nodes, 5, 0, 0, 0)
	p = newP2C(Options{Loads: fresh, Seed: 10}).Build(nodes)
	counts := countPicks(t, p, nodes, nil, 30_000)
	if counts[0] != 0 {
		t.Errorf("the loaded node was picked %d times", counts[0])
	}
	checkFit(t, counts[1:], ones(3))
}

// scanOrders lists every order of n nodes exactly once, so that a scan in a
// random order leaves no node favoured.
func TestScanOrdersArePermutations(t *testing.T) {
	factorial := 1
	for n := 1; n <= p2cScanAll; n++ {
		factorial *= n
		if got := len(scanOrders[n]); got != factorial {
			t.Errorf("%d orders of %d nodes, want %d", got, n, factorial)
		}
		seen := map[[p2cScanAll]uint8]bool{}
		for _, order := range scanOrders[n] {
			var used [p2cScanAll]bool
			for _, k := range order[:n] {
				if int(k) >= n || used[k] {
					t.Fatalf("order %v of %d nodes is not a permutation", order[:n], n)
				}
				used[k] = true
			}
			if seen[order] {
				t.Errorf("order %v of %d nodes listed twice", order[:n], n)
			}
			seen[order] = true
		}
	}
}

// Load state belongs to the address, so it survives a rebuild for the nodes
// that stay.
func TestLoadsSurviveRebuild(t *testing.T) {
	loads := NewLoads()
	s := newLeastActive(Options{Loads: loads, Seed: 3})
	all := makeNodes(3)
	s.Build(all)
	setInFlight(loads, all, 4, 4, 0)
	p := s.Build(all[1:]) // node 0 leaves; node 2 is still idle
	for range 100 {
		if got := mustPick(t, p, nil); got != &all[2] {
			t.Fatalf("picked %s, want the idle %s", got.Addr, all[2].Addr)
		}
	}
}

func zoneNodes(zones ...string) []discovery.Node {
	nodes := makeNodes(len(zones))
	for i := range nodes {
		nodes[i].Zone = zones[i]
	}
	return nodes
}

func TestLocalFirstPrefersZone(t *testing.T) {
	nodes := zoneNodes("a", "b", "B", "c", "b")
	loads := NewLoads()
	p := newLocalFirst(Options{Zone: "b", Loads: loads, Seed: 8}).Build(nodes)
	counts := countPicks(t, p, nodes, nil, 30_000)
	if counts[0] != 0 || counts[3] != 0 {
		t.Errorf("counts %v: picked nodes outside zone b", counts)
	}
	checkFit(t, []int{counts[1], counts[2], counts[4]}, ones(3))
	// least_active among them: the idle zone node wins, however idle the
	// nodes outside the zone are.
	setInFlight(loads, nodes, 0, 2, 0, 0, 3)
	for range 100 {
		if got := indexOf(t, nodes, mustPick(t, p, nil)); got != 2 {
			t.Fatalf("picked node %d, want node 2, the least loaded in zone b", got)
		}
	}
}

func TestLocalFirstFallsBackToAllNodes(t *testing.T) {
	nodes := zoneNodes("a", "b", "c")
	for _, zone := range []string{"x", ""} {
		t.Setenv(ZoneEnv, "")
		p := newLocalFirst(Options{Zone: zone, Seed: 5}).Build(nodes)
		checkFit(t, countPicks(t, p, nodes, nil, 30_000), ones(3))
	}
}

func TestLocalFirstZoneFromEnvironment(t *testing.T) {
	nodes := zoneNodes("a", "b", "c")
	t.Setenv(ZoneEnv, " c ")
	p := newLocalFirst(Options{Seed: 5}).Build(nodes)
	if got := indexOf(t, nodes, mustPick(t, p, nil)); got != 2 {
		t.Errorf("ZKPRESTO_ZONE=c: picked node %d, want 2", got)
	}
	// Options.Zone wins over the environment.
	p = newLocalFirst(Options{Zone: "a", Seed: 5}).Build(nodes)
	if got := indexOf(t, nodes, mustPick(t, p, nil)); got != 0 {
		t.Errorf("Zone a with ZKPRESTO_ZONE=c: picked node %d, want 0", got)
	}
}
