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

// sharedExtraDraws is how many more nodes shared_p2c draws, by weight, when
// the better of its two is full by its figure: the first of them that is
// better still wins, typically one with a free slot (join-idle-queue on the
// published figures, without a list of idle nodes). Bounded, so that
// clients reading the same figures still spread rather than herd onto one.
const sharedExtraDraws = 2

// sharedExactShare is the share of the published load this client's own
// statements must be for shared_p2c to take its estimates as exact: then
// nobody else moves the figures and it compares a window of activeWindow
// nodes, as least_active does, instead of two.
const sharedExactShare = 0.9

// sharedBuildMarks is how many recent builds shared_p2c remembers per node
// (when, and how many of this client's statements had ended there), to
// bound from above how many of its statements a figure read between two
// builds counted.
const sharedBuildMarks = 4

// sharedP2CStrategy is shared_p2c, the power of two choices on load the
// coordinators publish: two distinct nodes drawn with probability
// proportional to weight, and the better wins. A node's estimated load is
// what it published (running plus queued queries, all clients together)
// plus the change in this client's statements in flight there since it
// received that figure (those it started since, less those of its own that
// ended since, which the figure counted). A node with a free slot by that
// estimate (below the slots it published) beats one without; otherwise the
// lower estimate relative to the node's weight (its relative capacity) wins.
// When the winner is full and a node published its slots, up to
// sharedExtraDraws more nodes are drawn by weight and the first with a free
// slot takes the statement.
//
// When either node's figure is missing or older than StaleAfter, both are
// compared by this client's statements in flight per weight, as least_active
// does: a figure is never mixed with a local count. When this client's own
// statements are nearly all the published load (one client: its estimates
// are exact), or no node published a figure at all, it compares a window of
// activeWindow nodes from a random start on its own counts, as least_active
// does. Its own statements are bounded as of when each figure was read, not
// when it arrived, so that its statements that ended in between do not pass
// for another client's. Otherwise never the least loaded of all
// nodes, even with few: on figures every client reads at the same time, that
// herds everyone onto one node (Mitzenmacher, "How useful is old
// information?", 2000), where the better of two degrades gracefully.
//
// When some nodes are unwatched (discovery's load-watch subset) and at
// least two are watched, the draws are among the watched nodes; the
// unwatched ones take statements, on local counts, only when fewer than two
// are watched.
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
	// exact is the last verdict on whether this client's estimates are
	// exact, kept while every figure reads 0, which says nothing either way.
	exact bool
}

// sharedSeen is what shared_p2c remembers of a node between builds.
type sharedSeen struct {
	since  time.Time // first build that had the node, for slow start
	figure time.Time // ReadAt of the figure base belongs to
	base   int64     // the node's Load.InFlight when that figure arrived
	// ownAtRead bounds from above this client's statements the figure
	// counted: base plus those that ended since the last build before the
	// figure was read. A figure is read before it arrives, so statements
	// that ended in between are in the figure and no longer in base; taken
	// as another client's load, they made one client alone look like one
	// of many.
	ownAtRead int64
	marks     [sharedBuildMarks]sharedMark // recent builds, a ring
	nextMark  int
}

// sharedMark is one build as one node saw it.
type sharedMark struct {
	at    int64 // Unix ns; 0 for none
	ended int64 // this client's statements ended on the node by then
}

// endedBy returns how many of this client's statements had ended on the node
// by the last remembered build at or before at, or ended when none was.
func (seen *sharedSeen) endedBy(at int64, ended int64) int64 {
	best, by := int64(0), ended
	for _, m := range seen.marks {
		if m.at != 0 && m.at <= at && m.at > best {
			best, by = m.at, m.ended
		}
	}
	return by
}

// mark remembers this build.
func (seen *sharedSeen) mark(at, ended int64) {
	seen.marks[seen.nextMark] = sharedMark{at: at, ended: ended}
	seen.nextMark = (seen.nextMark + 1) % sharedBuildMarks
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
		rng:        s.rng,
		now:        s.now,
		staleAfter: int64(s.staleAfter),
		slowStart:  int64(s.slowStart),
	}
	present := make(map[string]bool, len(nodes))
	watched, known := 0, 0
	var own, published float64
	for i := range nodes {
		n := &nodes[i]
		present[n.Addr] = true
		seen := s.seen[n.Addr]
		if seen == nil {
			seen = &sharedSeen{since: now}
			s.seen[n.Addr] = seen
		}
		inFlight := loads[i].InFlight()
		ended := int64(loads[i].Started()) - inFlight
		if !seen.figure.Equal(n.Load.ReadAt) {
			// A new figure counts this client's statements up to now; only
			// the change after it is added to it.
			seen.figure, seen.base = n.Load.ReadAt, inFlight
			seen.ownAtRead = inFlight + ended - seen.endedBy(n.Load.ReadAt.UnixNano(), ended)
		}
		seen.mark(now.UnixNano(), ended)
		c := &p.cands[i]
		c.node, c.load, c.weight = n, loads[i], float64(nodeWeight(n))
		c.since, c.base = seen.since.UnixNano(), seen.base
		if n.Load.Known() {
			c.readAt = n.Load.ReadAt.UnixNano()
			c.published = float64(n.Load.Total())
			c.slots = float64(n.Load.Slots)
			own += min(float64(max(seen.ownAtRead, 0)), c.published)
			published += c.published
			known++
		}
		if !n.Load.Unwatched {
			watched++
		}
	}
	for addr := range s.seen {
		if !present[addr] {
			delete(s.seen, addr) // back later means a fresh slow start
		}
	}
	// The exact case: no node unwatched, and this client's statements were
	// (nearly) all the published load when the figures were read. The
	// window then compares local counts, so a figure that goes stale
	// meanwhile changes nothing. With no figure at all there are only local
	// counts, which no other client reads, so nothing to herd on either.
	// Figures that all read 0 keep the last verdict: an idle cluster shows
	// nobody's share.
	switch {
	case watched < len(nodes):
		s.exact = false
	case known == 0:
		s.exact = true
	case published >= 1:
		s.exact = own >= sharedExactShare*published
	}
	p.exact = s.exact
	for i := range nodes {
		if watched < 2 || watched == len(nodes) || !nodes[i].Load.Unwatched {
			p.pool = append(p.pool, int32(i))
		}
	}
	drawn := nodes
	if len(p.pool) < len(nodes) {
		drawn = make([]discovery.Node, len(p.pool))
		for k, i := range p.pool {
			drawn[k] = nodes[i]
		}
	}
	p.draw = newWeightedPicker(drawn, s.rng)
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
	cands []sharedCandidate
	// pool holds the indices into cands the draws are among: every node,
	// or the watched ones when there are two or more and some are not.
	pool       []int32
	draw       *weightedPicker // over pool
	exact      bool            // this client's estimates are exact: compare a window
	rng        *rng
	now        func() time.Time
	staleAfter int64 // ns
	slowStart  int64 // ns; 0 off
}

func (p *sharedP2CPicker) Pick(*Request) (*discovery.Node, error) {
	n := len(p.pool)
	switch n {
	case 0:
		return nil, ErrNoNodes
	case 1:
		return p.cands[p.pool[0]].node, nil
	}
	now := p.now().UnixNano()
	if p.exact {
		return p.window(now), nil
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
	a, b := &p.cands[p.pool[i]], &p.cands[p.pool[j]]
	best := a
	if p.cheaper(b, a, now) {
		best = b
	}
	if best.slots > 0 && p.fresh(best, now) && p.estimate(best) >= best.slots {
		// Full by its figure: a few more draws for a better one.
		for range sharedExtraDraws {
			if c := &p.cands[p.pool[p.draw.index(p.rng.float64())]]; p.cheaper(c, best, now) {
				return c.node, nil
			}
		}
	}
	return best.node, nil
}

// window returns the best of activeWindow nodes of the pool from a random
// start, for when this client's estimates are exact.
func (p *sharedP2CPicker) window(now int64) *discovery.Node {
	n := len(p.pool)
	w := min(n, activeWindow)
	start := p.rng.intN(n)
	best := &p.cands[p.pool[start]]
	for k := 1; k < w; k++ {
		at := start + k
		if at >= n {
			at -= n
		}
		// This client's counts are exact here: compared as they are, as
		// least_active does.
		c := &p.cands[p.pool[at]]
		if p.better(c, best, localLoad(c), localLoad(best), false, now) {
			best = c
		}
	}
	return best.node
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

// estimate returns c's published load plus the change in this client's
// statements there since the figure arrived.
func (p *sharedP2CPicker) estimate(c *sharedCandidate) float64 {
	return max(c.published+float64(c.load.InFlight()-c.base), 0)
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

// cheaper reports whether x is the better node for this statement than y:
// the lower load relative to weight (the node's relative throughput), with
// this statement added. On fresh figures with slots known, a node's load
// counts as at least its slots: the statement's expected time there is its
// service time while a slot is free, at 1/speed ∝ slots/weight, and grows
// with the queue once none is, (load+1)/weight. So a free slot beats a
// queue on equal nodes, yet a fast node's short queue can beat a slow
// node's free slot, as in a central queue. Ties go to the lower load. It
// cross-multiplies rather than divides.
func (p *sharedP2CPicker) cheaper(x, y *sharedCandidate, now int64) bool {
	if p.fresh(x, now) && p.fresh(y, now) {
		return p.better(x, y, p.estimate(x)+1, p.estimate(y)+1, true, now)
	}
	return p.better(x, y, localLoad(x), localLoad(y), false, now)
}

// localLoad returns this client's statements in flight on c, this one
// included.
func localLoad(c *sharedCandidate) float64 {
	return float64(max(c.load.InFlight(), 0) + 1)
}

// better compares loads lx and ly of x and y (this statement included)
// relative to their weights, floored at their slots when slotted and both
// published theirs, as cheaper says.
func (p *sharedP2CPicker) better(x, y *sharedCandidate, lx, ly float64, slotted bool, now int64) bool {
	kx, ky := lx, ly
	if slotted && x.slots > 0 && y.slots > 0 {
		kx, ky = max(lx, x.slots), max(ly, y.slots)
	}
	cx := x.weight * p.ramp(x, now)
	cy := y.weight * p.ramp(y, now)
	if a, b := kx*cy, ky*cx; a != b {
		return a < b
	}
	return lx*cy < ly*cx
}
