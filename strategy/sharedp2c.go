package strategy

import (
	"time"

	"github.com/zkpresto/zkpresto/discovery"
)

// DefaultPublishedStaleAfter is how old a published load may be before
// shared_p2c stops trusting it and compares the two nodes by this client's
// own counts: three times the 5 s a publisher should rewrite an unchanged
// figure at the least, with room for clock skew between hosts.
const DefaultPublishedStaleAfter = 15 * time.Second

// DefaultSlowStart is shared_p2c's slow-start window when Options.SlowStart
// is 0.
const DefaultSlowStart = 30 * time.Second

// slowStartFloor is the share of its capacity a node gets at the start of
// its slow-start window, so that it is tried at once and its caches warm.
const slowStartFloor = 0.1

// sharedP2CStrategy is shared_p2c, the power of two choices on load the
// coordinators publish: two distinct nodes drawn with probability
// proportional to weight, and the one with the lower load relative to its
// capacity wins. A node's load is what it published (running plus queued
// queries, all clients together) plus the change in this client's
// statements in flight there since it received that figure (those it
// started since, less those of its own that ended since, which the figure
// counted); its capacity is the concurrency it published when both nodes
// published one, its weight otherwise.
//
// When either node's figure is missing or older than StaleAfter, both are
// compared by this client's statements in flight per weight, as least_active
// does: a figure is never mixed with a local count. Never the least loaded
// of all nodes, even with few: on figures every client reads at the same
// time, that herds everyone onto one node (Mitzenmacher, "How useful is old
// information?", 2000), where the better of two degrades gracefully.
//
// A node that joins, or comes back after being left out of a build (an
// ejection), ramps up over the slow-start window: its capacity counts from
// slowStartFloor to all of it in proportion to the time since.
type sharedP2CStrategy struct {
	loadAware
	now        func() time.Time
	staleAfter time.Duration
	slowStart  time.Duration
	// seen is per node what outlives builds (Build is never concurrent).
	seen map[string]*sharedSeen
}

// sharedSeen is what shared_p2c remembers of a node between builds.
type sharedSeen struct {
	since  time.Time // first build that had the node, for slow start
	figure time.Time // ReadAt of the figure base belongs to
	base   int64     // the node's Load.InFlight when that figure arrived
}

func newSharedP2C(opts Options) Strategy {
	s := &sharedP2CStrategy{
		loadAware:  newLoadAware(opts),
		now:        opts.Now,
		staleAfter: opts.PublishedStaleAfter,
		slowStart:  opts.SlowStart,
		seen:       make(map[string]*sharedSeen),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.staleAfter <= 0 {
		s.staleAfter = DefaultPublishedStaleAfter
	}
	switch {
	case s.slowStart == 0:
		s.slowStart = DefaultSlowStart
	case s.slowStart < 0:
		s.slowStart = 0
	}
	return s
}

func (s *sharedP2CStrategy) Build(nodes []discovery.Node) Picker {
	now := s.now()
	loads := s.loadsFor(nodes)
	p := &sharedP2CPicker{
		cands:      make([]sharedCandidate, len(nodes)),
		draw:       newWeightedPicker(nodes, s.rng),
		rng:        s.rng,
		now:        s.now,
		staleAfter: int64(s.staleAfter),
		slowStart:  int64(s.slowStart),
	}
	present := make(map[string]bool, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		present[n.Addr] = true
		seen := s.seen[n.Addr]
		if seen == nil {
			seen = &sharedSeen{since: now}
			s.seen[n.Addr] = seen
		}
		if !seen.figure.Equal(n.Load.ReadAt) {
			// A new figure counts this client's statements up to now; only
			// the change after it is added to it.
			seen.figure, seen.base = n.Load.ReadAt, loads[i].InFlight()
		}
		c := &p.cands[i]
		c.node, c.load, c.weight = n, loads[i], float64(nodeWeight(n))
		c.since, c.base = seen.since.UnixNano(), seen.base
		if n.Load.Known() {
			c.readAt = n.Load.ReadAt.UnixNano()
			c.published = float64(n.Load.Total())
			c.slots = float64(n.Load.Slots)
		}
	}
	for addr := range s.seen {
		if !present[addr] {
			delete(s.seen, addr) // back later means a fresh slow start
		}
	}
	return p
}

// sharedCandidate is a node with what shared_p2c reads on every pick.
type sharedCandidate struct {
	node      *discovery.Node
	load      *Load
	weight    float64
	slots     float64 // published concurrency; 0 unknown
	published float64 // published running+queued
	readAt    int64   // Unix ns of the figure; 0 none
	base      int64   // load.InFlight() when the figure arrived
	since     int64   // Unix ns of the node's first build, for slow start
}

type sharedP2CPicker struct {
	cands      []sharedCandidate
	draw       *weightedPicker
	rng        *rng
	now        func() time.Time
	staleAfter int64 // ns
	slowStart  int64 // ns; 0 off
}

func (p *sharedP2CPicker) Pick(*Request) (*discovery.Node, error) {
	n := len(p.cands)
	switch n {
	case 0:
		return nil, ErrNoNodes
	case 1:
		return p.cands[0].node, nil
	}
	i, j := p.draw.index(p.rng.float64()), p.draw.index(p.rng.float64())
	if j == i {
		// Another node, uniformly: redrawing by weight could repeat a
		// dominant node many times over.
		j = p.rng.intN(n - 1)
		if j >= i {
			j++
		}
	}
	a, b := &p.cands[i], &p.cands[j]
	now := p.now().UnixNano()
	if p.cheaper(b, a, now) {
		return b.node, nil
	}
	return a.node, nil
}

// fresh reports whether c's figure is known and not older than staleAfter
// (a figure from the future, a registrar's clock ahead of ours, counts as
// fresh within the same margin).
func (p *sharedP2CPicker) fresh(c *sharedCandidate, now int64) bool {
	if c.readAt == 0 {
		return false
	}
	age := now - c.readAt
	return age <= p.staleAfter && -age <= p.staleAfter
}

// ramp returns the share of its capacity c gets in its slow-start window.
func (p *sharedP2CPicker) ramp(c *sharedCandidate, now int64) float64 {
	if p.slowStart == 0 {
		return 1
	}
	age := now - c.since
	if age >= p.slowStart {
		return 1
	}
	return max(slowStartFloor, float64(age)/float64(p.slowStart))
}

// cheaper reports whether x's load relative to its capacity, with this
// statement added, is lower than y's. It cross-multiplies rather than
// divides.
func (p *sharedP2CPicker) cheaper(x, y *sharedCandidate, now int64) bool {
	var lx, ly, cx, cy float64
	if p.fresh(x, now) && p.fresh(y, now) {
		lx = max(x.published+float64(x.load.InFlight()-x.base), 0) + 1
		ly = max(y.published+float64(y.load.InFlight()-y.base), 0) + 1
		cx, cy = x.weight, y.weight
		if x.slots > 0 && y.slots > 0 {
			cx, cy = x.slots, y.slots
		}
	} else {
		lx = float64(max(x.load.InFlight(), 0) + 1)
		ly = float64(max(y.load.InFlight(), 0) + 1)
		cx, cy = x.weight, y.weight
	}
	cx *= p.ramp(x, now)
	cy *= p.ramp(y, now)
	return lx*cy < ly*cx
}
