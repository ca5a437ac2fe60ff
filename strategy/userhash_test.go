package strategy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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

func TestUserHashSticky(t *testing.T) {
	s := newUserHash(Options{})
	nodes := makeNodes(5)
	p := s.Build(nodes)
	first := mustPick(t, p, &Request{User: "alice"})
	for range 1000 {
		if got := mustPick(t, p, &Request{User: "alice"}); got != first {
			t.Fatalf("alice moved from %s to %s without a rebuild", first.Addr, got.Addr)
		}
	}
	// Key takes precedence over User.
	byKey := mustPick(t, p, &Request{Key: "alice"})
	for _, u := range testUsers(50) {
		if got := mustPick(t, p, &Request{User: u, Key: "alice"}); got != byKey {
			t.Fatalf("key alice with user %s went to %s, want %s", u, got.Addr, byKey.Addr)
		}
	}
}

func TestUserHashRemovingNodeMovesOnlyItsUsers(t *testing.T) {
	users := testUsers(10000)
	nodes := makeNodes(10)
	s := newUserHash(Options{})
	before := owners(t, s.Build(nodes), users)
	for removed := range nodes {
		remaining := append(append([]discovery.Node(nil), nodes[:removed]...), nodes[removed+1:]...)
		after := owners(t, s.Build(remaining), users)
		moved := 0
		for _, u := range users {
			switch {
			case before[u] != nodes[removed].Addr && after[u] != before[u]:
				t.Fatalf("removing %s moved %s from %s to %s", nodes[removed].Addr, u, before[u], after[u])
			case before[u] == nodes[removed].Addr:
				moved++
				if after[u] == nodes[removed].Addr {
					t.Fatalf("%s still routed to removed node %s", u, after[u])
				}
			}
		}
		if moved == 0 {
			t.Errorf("removed node %s had no users", nodes[removed].Addr)
		}
	}
}

func TestUserHashAddingNodeMovesUsersOnlyToIt(t *testing.T) {
	users := testUsers(10000)
	s := newUserHash(Options{})
	all := makeNodes(11)
	before := owners(t, s.Build(all[:10]), users)
	after := owners(t, s.Build(all), users)
	moved := 0
	for _, u := range users {
		if after[u] != before[u] {
			moved++
			if after[u] != all[10].Addr {
				t.Fatalf("adding %s moved %s from %s to %s", all[10].Addr, u, before[u], after[u])
			}
		}
	}
	// The new node should take about a tenth of the users.
	if moved < 500 || moved > 1500 {
		t.Errorf("adding one node to ten moved %d of %d users", moved, len(users))
	}
}

func TestUserHashSpread(t *testing.T) {
	users := testUsers(10000)
	nodes := makeNodes(10)
	perNode := map[string]int{}
	for _, addr := range owners(t, newUserHash(Options{}).Build(nodes), users) {
		perNode[addr]++
	}
	t.Logf("users per node: %v", perNode)
	for i := range nodes {
		// A fair share is 1000; 160 points per node keeps every node well
		// within half to one and a half of it.
		if c := perNode[nodes[i].Addr]; c < 500 || c > 1500 {
			t.Errorf("node %s has %d of 10000 users", nodes[i].Addr, c)
		}
	}
}

func TestUserHashEmptyUserIsRandom(t *testing.T) {
	nodes := makeNodes(4)
	p := newUserHash(Options{Seed: 3}).Build(nodes)
	for _, req := range []*Request{nil, {}, {Source: "cli"}} {
		checkFit(t, countPicks(t, p, nodes, req, 40_000), ones(4))
	}
}

// The bucket index finds the same point as a search of the whole ring.
func TestUserHashRingIndex(t *testing.T) {
	for _, n := range []int{1, 3, 10, 257} {
		p := newUserHash(Options{}).Build(makeNodes(n)).(*userHashPicker)
		src := rand.New(rand.NewPCG(uint64(n), 1))
		probes := []uint64{0, 1, math.MaxUint64, p.hashes[0], p.hashes[len(p.hashes)-1], p.hashes[len(p.hashes)-1] + 1}
		for _, h := range p.hashes {
			probes = append(probes, h, h-1, h+1)
		}
		for range 10000 {
			probes = append(probes, src.Uint64())
		}
		for _, h := range probes {
			want, _ := slices.BinarySearch(p.hashes, h)
			if want == len(p.hashes) {
				want = 0
			}
			if got := p.pointAt(h); got != want {
				t.Fatalf("n=%d: pointAt(%#x) = %d, want %d", n, h, got, want)
			}
		}
	}
}
