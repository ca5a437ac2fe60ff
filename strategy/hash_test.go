package strategy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
)

// owners maps each of users to the address it is routed to.
func owners(t *testing.T, p Picker, users []string) map[string]string {
	t.Helper()
	m := make(map[string]string, len(users))
	for _, u := range users {
		m[u] = mustPick(t, p, &Request{User: u}).Addr
	}
	return m
}

func testUsers(n int) []string {
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("user%d", i)
	}
	return users
}

// hashNames are the strategies on the shared ring.
var hashNames = []string{"user_hash", "consistent_hash"}

func TestHashSticky(t *testing.T) {
	for _, name := range hashNames {
		s, _ := New(name, Options{})
		p := s.Build(makeNodes(5))
		first := mustPick(t, p, &Request{User: "alice"})
		for range 1000 {
			if got := mustPick(t, p, &Request{User: "alice"}); got != first {
				t.Fatalf("%s: alice moved from %s to %s without a rebuild", name, first.Addr, got.Addr)
			}
		}
		// Key takes precedence over User (and Source).
		byKey := mustPick(t, p, &Request{Key: "alice"})
		for _, u := range testUsers(50) {
			if got := mustPick(t, p, &Request{User: u, Source: u, Key: "alice"}); got != byKey {
				t.Fatalf("%s: key alice with user %s went to %s, want %s", name, u, got.Addr, byKey.Addr)
			}
		}
	}
}

// user_hash and consistent_hash share one ring: a key goes to the same node
// under either, in any process.
func TestHashStrategiesShareTheRing(t *testing.T) {
	nodes := makeNodes(7)
	users := testUsers(2000)
	want := owners(t, newUserHash(Options{}).Build(nodes), users)
	got := owners(t, newConsistentHash(Options{Seed: 9}).Build(nodes), users)
	for _, u := range users {
		if got[u] != want[u] {
			t.Fatalf("%s: consistent_hash %s, user_hash %s", u, got[u], want[u])
		}
	}
}

func TestConsistentHashBySource(t *testing.T) {
	nodes := makeNodes(10)
	bySource := ConsistentHash(ConsistentHashConfig{Key: HashBySource})(Options{}).Build(nodes)
	byUser := newConsistentHash(Options{}).Build(nodes)
	for _, src := range testUsers(200) {
		want := mustPick(t, byUser, &Request{User: src})
		for _, u := range []string{"a", "b", "c"} {
			if got := mustPick(t, bySource, &Request{User: u, Source: src}); got != want {
				t.Fatalf("source %s with user %s went to %s, want %s", src, u, got.Addr, want.Addr)
			}
		}
		// No source: the user decides.
		if got := mustPick(t, bySource, &Request{User: src}); got != want {
			t.Fatalf("user %s without a source went to %s, want %s", src, got.Addr, want.Addr)
		}
	}
}

func TestParseHashKey(t *testing.T) {
	for in, want := range map[string]HashKey{"": HashByUser, "user": HashByUser, " Source ": HashBySource, "SOURCE": HashBySource} {
		got, err := ParseHashKey(in)
		if err != nil || got != want {
			t.Errorf("ParseHashKey(%q) = %v, %v; want %v", in, got, err, want)
		}
		if again, _ := ParseHashKey(got.String()); again != got {
			t.Errorf("%v does not round-trip through String", got)
		}
	}
	if _, err := ParseHashKey("catalog"); err == nil {
		t.Error("ParseHashKey(catalog) succeeded")
	}
}

func TestHashRemovingNodeMovesOnlyItsUsers(t *testing.T) {
	users := testUsers(10000)
	nodes := makeNodes(10)
	for _, name := range hashNames {
		s, _ := New(name, Options{})
		before := owners(t, s.Build(nodes), users)
		for removed := range nodes {
			remaining := slices.Delete(slices.Clone(nodes), removed, removed+1)
			after := owners(t, s.Build(remaining), users)
			moved := 0
			for _, u := range users {
				switch {
				case before[u] != nodes[removed].Addr && after[u] != before[u]:
					t.Fatalf("%s: removing %s moved %s from %s to %s", name, nodes[removed].Addr, u, before[u], after[u])
				case before[u] == nodes[removed].Addr:
					moved++
					if after[u] == nodes[removed].Addr {
						t.Fatalf("%s: %s still routed to removed node %s", name, u, after[u])
					}
				}
			}
			if moved == 0 {
				t.Errorf("%s: removed node %s had no users", name, nodes[removed].Addr)
			}
			s.Build(nodes) // and back
		}
	}
}

func TestHashAddingNodeMovesUsersOnlyToIt(t *testing.T) {
	users := testUsers(10000)
	all := makeNodes(11)
	for _, name := range hashNames {
		s, _ := New(name, Options{})
		before := owners(t, s.Build(all[:10]), users)
		after := owners(t, s.Build(all), users)
		moved := 0
		for _, u := range users {
			if after[u] != before[u] {
				moved++
				if after[u] != all[10].Addr {
					t.Fatalf("%s: adding %s moved %s from %s to %s", name, all[10].Addr, u, before[u], after[u])
				}
			}
		}
		// The new node should take about an eleventh of the users.
		if moved < 500 || moved > 1500 {
			t.Errorf("%s: adding one node to ten moved %d of %d users", name, moved, len(users))
		}
	}
}

func TestHashSpread(t *testing.T) {
	users := testUsers(10000)
	nodes := makeNodes(10)
	perNode := map[string]int{}
	for _, addr := range owners(t, newUserHash(Options{}).Build(nodes), users) {
		perNode[addr]++
	}
	t.Logf("users per node: %v", perNode)
	for i := range nodes {
		// A fair share is 1000; 128 points per node keep every node well
		// within half to one and a half of it.
		if c := perNode[nodes[i].Addr]; c < 500 || c > 1500 {
			t.Errorf("node %s has %d of 10000 users", nodes[i].Addr, c)
		}
	}
}

func TestHashWithoutKeyIsRandom(t *testing.T) {
	nodes := makeNodes(4)
	for _, name := range hashNames {
		s, _ := New(name, Options{Seed: 3})
		p := s.Build(nodes)
		for _, req := range []*Request{nil, {}, {Source: "cli"}} {
			checkFit(t, countPicks(t, p, nodes, req, 40_000), ones(4))
		}
	}
}

// The bucket index finds the same point as a search of the whole ring.
func TestHashRingIndex(t *testing.T) {
	for _, n := range []int{1, 3, 10, 257} {
		r := newHashRing(makeNodes(n), ringPointsPerNode)
		if !slices.IsSorted(r.points) {
			t.Fatalf("n=%d: ring not sorted", n)
		}
		src := rand.New(rand.NewPCG(uint64(n), 1))
		probes := []uint64{0, 1, math.MaxUint64, r.points[0], r.points[len(r.points)-1], r.points[len(r.points)-1] + 1<<32}
		for _, p := range r.points {
			probes = append(probes, p, p-1<<32, p+1<<32, p&^0xffffffff)
		}
		for range 10000 {
			probes = append(probes, src.Uint64())
		}
		for _, h := range probes {
			pos := h &^ 0xffffffff // a key hash compares by its top 32 bits
			want, _ := slices.BinarySearch(r.points, pos)
			if want == len(r.points) {
				want = 0
			}
			if got := r.pointAt(h); got != want {
				t.Fatalf("n=%d: pointAt(%#x) = %d, want %d", n, h, got, want)
			}
		}
	}
}

// A ring rebuilt from the previous one equals a ring built afresh, for
// joins, departures and both at once; a change too large is built afresh.
func TestHashRingRebuildEqualsFreshBuild(t *testing.T) {
	all := makeNodes(60)
	src := rand.New(rand.NewPCG(5, 6))
	subset := func(p float64) []discovery.Node {
		var out []discovery.Node
		for _, n := range all {
			if src.Float64() < p {
				out = append(out, n)
			}
		}
		return out
	}
	prev := subset(0.9)
	ring := newHashRing(prev, ringPointsPerNode)
	rebuilt := 0
	for range 200 {
		next := slices.Clone(prev)
		switch src.IntN(3) {
		case 0: // one leaves
			if len(next) > 1 {
				i := src.IntN(len(next))
				next = slices.Delete(next, i, i+1)
			}
		case 1: // one joins
			for _, n := range all {
				byAddr := func(a discovery.Node, addr string) int { return strings.Compare(a.Addr, addr) }
				if i, found := slices.BinarySearchFunc(next, n.Addr, byAddr); !found {
					next = slices.Insert(next, i, n)
					break
				}
			}
		default: // anything
			next = subset(0.5 + 0.5*src.Float64())
		}
		if len(next) == 0 {
			next = all[:1]
		}
		want := newHashRing(next, ringPointsPerNode)
		got := ring.rebuild(prev, next, ringPointsPerNode)
		if got == nil {
			got = want
		} else {
			rebuilt++
		}
		if !slices.Equal(got.points, want.points) || !slices.Equal(got.starts, want.starts) || got.shift != want.shift {
			t.Fatalf("rebuilt ring for %d nodes (from %d) differs from a fresh one", len(next), len(prev))
		}
		prev, ring = next, got
	}
	if rebuilt < 100 {
		t.Errorf("only %d of 200 rings were rebuilt from the previous one", rebuilt)
	}
}

// With the bound, a key whose node is full goes to the next node on the
// ring that is not; an idle owner is always used.
func TestConsistentHashBoundedLoads(t *testing.T) {
	nodes := makeNodes(4)
	loads := NewLoads()
	s := ConsistentHash(ConsistentHashConfig{LoadBound: 1.25})(Options{Loads: loads})
	p := s.Build(nodes)
	unbounded := newConsistentHash(Options{}).Build(nodes)
	users := testUsers(400)
	// Idle: the bound changes nothing.
	for _, u := range users {
		if got, want := mustPick(t, p, &Request{User: u}), mustPick(t, unbounded, &Request{User: u}); got != want {
			t.Fatalf("idle: %s went to %s, want its own node %s", u, got.Addr, want.Addr)
		}
	}
	// Node 0 has 10 statements in flight, the others 2: the mean with one
	// more is 17/4, the capacity ceil(1.25·17/4) = 6, so node 0 is full.
	for i := range nodes {
		for range map[bool]int{true: 10, false: 2}[i == 0] {
			loads.For(nodes[i].Addr).Begin()
		}
	}
	moved := 0
	for _, u := range users {
		got, own := mustPick(t, p, &Request{User: u}), mustPick(t, unbounded, &Request{User: u})
		switch {
		case own == &nodes[0]:
			moved++
			if got == &nodes[0] {
				t.Fatalf("%s went to full node %s", u, got.Addr)
			}
		case got != own:
			t.Fatalf("%s left its node %s, which is not full, for %s", u, own.Addr, got.Addr)
		}
		// A pick is the same every time while the loads stay.
		if again := mustPick(t, p, &Request{User: u}); again != got {
			t.Fatalf("%s went to %s, then %s", u, got.Addr, again.Addr)
		}
	}
	if moved == 0 {
		t.Error("no user belonged to the full node")
	}
}
