package gateway

import (
	"context"
	"sync"

	"github.com/zkpresto/zkpresto/routing"
)

// members tracks, per replica, which coordinators it has seen listed and
// which of those, having left discovery, then failed: a token naming a
// listed coordinator is forwarded; one naming a coordinator that left is
// forwarded while it answers (its running queries finish: a rolling
// restart loses nothing); once it failed, it is gone for good, so that no
// old token ever reaches an unrelated server that later listens there.
//
// A coordinator is reached as the group that listed it last reaches it
// (its transport, TLS and flavour), also once that group is gone: a reload
// that drops a group does not strand the queries running on its
// coordinators.
type members struct {
	mu   sync.Mutex
	gens map[*routing.Router]uint64 // the snapshot generation last read, per group
	seen map[string]reach           // base URL → its group's reach, when it was last listed
	gone map[string]bool
}

func (m *members) init() {
	m.gens = map[*routing.Router]uint64{}
	m.seen = map[string]reach{}
	m.gone = map[string]bool{}
}

// memberState is what a token's coordinator is to this replica.
type memberState int

const (
	memberUnknown  memberState = iota // never listed: refused
	memberListed                      // listed now
	memberDeparted                    // listed once, left, still answering
	memberGone                        // left and failed since: refused
)

// stateOf returns base's state, reading the current snapshots (a
// coordinator is listed when any group lists it), and how its group
// reached it when it was last listed.
//
// Only groups whose discovery is open are read for a coordinator this
// replica has seen listed (one listed by a group not open yet passes for
// departed meanwhile, which is forwarded all the same): a group whose
// ZooKeeper does not answer must not hold up the follow-ups of every
// other group's queries. For one it has not seen, every group is asked.
func (g *Gateway) stateOf(ctx context.Context, base string) (memberState, reach) {
	snaps := g.snapshots(ctx, false)
	listed := listedIn(snaps, base)
	if !listed && !g.seen(base) {
		snaps = g.snapshots(ctx, true)
		listed = listedIn(snaps, base)
	}
	m := &g.members
	m.mu.Lock()
	defer m.mu.Unlock()
	gens := make(map[*routing.Router]uint64, len(snaps))
	for _, rs := range snaps {
		gens[rs.router] = rs.snap.Generation
		if gen, ok := m.gens[rs.router]; ok && gen == rs.snap.Generation {
			continue
		}
		for i := range rs.snap.Nodes {
			b := rs.reach.base(&rs.snap.Nodes[i])
			m.seen[b] = rs.reach
			delete(m.gone, b) // listed again: a new registration
		}
	}
	// Only the current groups' Routers: those of a replaced config go.
	m.gens = gens
	rc, seen := m.seen[base]
	switch {
	case listed:
		return memberListed, rc
	case m.gone[base]:
		return memberGone, rc
	case seen:
		return memberDeparted, rc
	}
	return memberUnknown, g.reach
}

// listedIn reports whether one of snaps lists base.
func listedIn(snaps []routerSnapshot, base string) bool {
	for _, rs := range snaps {
		for i := range rs.snap.Nodes {
			if rs.reach.base(&rs.snap.Nodes[i]) == base {
				return true
			}
		}
	}
	return false
}

// seen reports whether base was listed once.
func (g *Gateway) seen(base string) bool {
	g.members.mu.Lock()
	defer g.members.mu.Unlock()
	_, ok := g.members.seen[base]
	return ok
}

// markGone records that a coordinator that left discovery failed.
func (g *Gateway) markGone(base string) {
	g.members.mu.Lock()
	defer g.members.mu.Unlock()
	g.members.gone[base] = true
}

// noteListed records that base, reached through rc, was listed when a
// token was signed for it.
func (g *Gateway) noteListed(base string, rc reach) {
	g.members.mu.Lock()
	defer g.members.mu.Unlock()
	g.members.seen[base] = rc
}
