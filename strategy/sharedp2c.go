package strategy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
)

// DefaultPublishedStaleAfter is how old a published load may be before
// shared_p2c stops trusting it and compares the two nodes by this client's
// own counts: three times the 5 s a publisher should rewrite an unchanged
// figure at the least, with room for clock skew between hosts.
const DefaultPublishedStaleAfter = 15 * time.Second

// DefaultSlowStart is shared_p2c's slow-start window when
// SharedP2CConfig.SlowStart is 0.
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

// sharedTypicalDrift sets how fast a node's typical statement duration
// follows its latency average up: by 1/64 of the difference a build.
const sharedTypicalDrift = 6

// sharedFactorDecay is the weight of the past in a node's factor (its load
// per statement of this client's there) at each new figure.
const sharedFactorDecay = 0.9

// sharedFactorMin is how many of this client's statements a node's figures
// must have counted, decayed, for the node's own factor to be used.
const sharedFactorMin = 1

// sharedRefresh is the longest a registrar leaves an unchanged figure
// unwritten (zkpresto register's --load-refresh default): a live registrar
// rewrites at least this often, so a figure this old, less its delivery,
// still describes its coordinator as of its delivery.
const sharedRefresh = 5 * time.Second

// sharedRefreshMargin is what a figure may lag its refresh by before it is
// stale: a rewrite's own delay through ZooKeeper, and clock skew.
const sharedRefreshMargin = time.Second

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
// A figure is blended with a local estimate by its trust, e^(-delay /
// (sharedTrustStatements × typical)), where delay is how late the node's
// figures arrive (the least lag of its recent figures) and typical its
// statements' duration (the least of their latency averages): a figure that
// arrives after many statements have turned over says little of now. The
// local estimate is this client's statements there, this one included,
// times the node's factor (its published load per statement of this
// client's it counted, learned while its figures were trusted; the ratio
// over all nodes before that), times their latency over the typical when
// higher (a queue this client's few statements do not show). When both
// nodes of a pair trust their figures less than sharedLocalTrust, the
// figures are left out and the statement is placed as p2c places it. A node whose
// figure is missing or stale is estimated locally alone, whatever the other
// node of the pair: the fallback is per node, not per pair. A figure is stale once
// older than its delivery (from its read to the build that first had it)
// plus sharedRefresh and sharedRefreshMargin, at most StaleAfter: a live
// registrar rewrites even an unchanged figure that often, so a figure
// younger than that still describes its node as of its delivery. A
// figure below what this client alone surely had in flight on the node when
// it was read is a lie (a stuck registrar publishing 0), and the node's
// figures are not trusted while they read the same; a pair with a liar is
// compared as p2c compares (this client's statements there times their
// latency, over capacity), and one drawn among unwatched nodes on this
// client's counts alone.
// When this client's own
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
	fixedNow   func() time.Time // Options.Now; nil for the system clock
	staleAfter time.Duration
	slowStart  time.Duration
	// seen is per node what outlives builds (Build is never concurrent).
	seen map[string]*sharedSeen
	// built says a build has been made: nodes first seen later ramp up.
	built bool
	// exact is the last verdict on whether this client's estimates are
	// exact, kept while every figure reads 0, which says nothing either way.
	exact bool
}

// sharedSeen is what shared_p2c remembers of a node between builds.
type sharedSeen struct {
	since  time.Time // first build that had the node, for slow start
	figure time.Time // ReadAt of the figure base belongs to
	lag    int64     // ns from that figure's read to the build that first had it
	// delay is the node's delivery delay (ns): the least lag of its recent
	// figures, drifting slowly up. A figure that arrives later than that
	// was held back by the registrar's write rules (unchanged, or the
	// write budget) or read late, not delayed on the way.
	delay int64
	base  int64 // the node's Load.InFlight when that figure arrived
	// ownAtRead bounds from above this client's statements the figure
	// counted: base plus those that ended since the last build before the
	// figure was read. A figure is read before it arrives, so statements
	// that ended in between are in the figure and no longer in base; taken
	// as another client's load, they made one client alone look like one
	// of many.
	ownAtRead int64
	// lie is the figure (running plus queued) that this client proved
	// false: below its own statements surely in flight there when it was
	// read. The node's figures are not trusted while they read the same,
	// as a stuck registrar's do; one that moves is a registrar that works.
	lie   int64
	lying bool
	// typical is a robust typical statement duration on the node (ns): the
	// least of the latency averages seen at builds, drifting slowly up, so
	// that queueing, which the average includes, does not inflate it.
	typical int64
	// pub and own are decayed sums of the trusted figures and of this
	// client's statements they counted: pub/own is how much more load the
	// node carries than this client's own, for when its figure goes stale.
	pub, own float64
	marks    [sharedBuildMarks]sharedMark // recent builds, a ring
	nextMark int
}

// sharedMark is one build as one node saw it.
type sharedMark struct {
	at      int64 // Unix ns; 0 for none
	ended   int64 // this client's statements ended on the node by then
	started int64 // and started there
}

// by returns the last remembered build at or before at, and whether there
// is one.
func (seen *sharedSeen) by(at int64) (sharedMark, bool) {
	var best sharedMark
	for _, m := range seen.marks {
		if m.at != 0 && m.at <= at && m.at > best.at {
			best = m
		}
	}
	return best, best.at != 0
}

// mark remembers this build.
func (seen *sharedSeen) mark(at, ended, started int64) {
	seen.marks[seen.nextMark] = sharedMark{at: at, ended: ended, started: started}
	seen.nextMark = (seen.nextMark + 1) % sharedBuildMarks
}

// SharedP2CConfig is shared_p2c's Config: what it takes beyond Options.
type SharedP2CConfig struct {
	// SlowStart is the slow-start window: a node that joins, or comes
	// back after an ejection, ramps up from a tenth of its capacity to all
	// of it over this long. 0 means DefaultSlowStart; negative turns it off.
	SlowStart time.Duration
	// PublishedStaleAfter is the age beyond which a coordinator's
	// published load is ignored; 0 means DefaultPublishedStaleAfter.
	PublishedStaleAfter time.Duration
	// WatchSubset, when positive, is how many coordinators' published load
	// discovery watches, chosen at random; 0 means every coordinator's.
	// The strategy sends to the watched ones (see LoadWatchConfig).
	WatchSubset int
}

// LoadWatchConfig is a Config whose strategy reads the load coordinators
// publish and can make do with watching some of them: discovery watches
// LoadWatchSubset coordinators' data (discovery.ZooKeeperConfig's field of
// that name; 0 means all).
type LoadWatchConfig interface {
	Config
	// LoadWatchSubset is how many coordinators' published load to watch;
	// 0 means all.
	LoadWatchSubset() int
}

// LoadWatchSubset returns WatchSubset.
func (cfg SharedP2CConfig) LoadWatchSubset() int { return cfg.WatchSubset }

// shared_p2c's option keys.
const (
	keySlowStart       = "slowStart"
	keyLoadWatchSubset = "loadWatchSubset"
)

// Format returns cfg as shared_p2c's option keys, those that differ from
// the defaults (PublishedStaleAfter has no key).
func (cfg SharedP2CConfig) Format() map[string]string {
	m := make(map[string]string)
	switch {
	case cfg.SlowStart < 0:
		m[keySlowStart] = "off"
	case cfg.SlowStart > 0:
		m[keySlowStart] = cfg.SlowStart.String()
	}
	if cfg.WatchSubset > 0 {
		m[keyLoadWatchSubset] = strconv.Itoa(cfg.WatchSubset)
	}
	return m
}

// errWatchSubset is the reason a loadWatchSubset is refused.
var errWatchSubset = fmt.Errorf("want all or a whole number from 2 to %d", discovery.MaxLoadWatchSubset)

// sharedP2CParser reads shared_p2c's options.
var sharedP2CParser = ConfigParser{
	Keys: []ConfigKey{
		{Name: keySlowStart, Default: "`30s` with `shared_p2c`",
			Doc: "`shared_p2c` only: a coordinator that joins or comes back from ejection ramps up from a tenth of its share over this long (e.g. `1m`); `off` turns it off"},
		{Name: keyLoadWatchSubset, Default: "`all`",
			Doc: "`shared_p2c` with ZooKeeper only: watch the published load of this many coordinators (a whole number from 2, e.g. `2`), chosen at random and replaced when one leaves, and send to those; the others are left for when fewer than two are watched. It bounds the ZooKeeper notifications each client gets in a large fleet (see [load balancing](load-balancing.md)); `all` watches every coordinator"},
	},
	Parse: func(values map[string]string, env ConfigEnv) (Config, error) {
		var cfg SharedP2CConfig
		if v, ok := values[keySlowStart]; ok {
			if strings.EqualFold(v, "off") {
				cfg.SlowStart = -1
			} else {
				d, err := parseDuration(v)
				if err != nil {
					return nil, BadOption(keySlowStart, v, err)
				}
				cfg.SlowStart = d
			}
		}
		if v, ok := values[keyLoadWatchSubset]; ok && !strings.EqualFold(v, "all") {
			n, err := strconv.Atoi(v)
			if err != nil || n < 2 || n > discovery.MaxLoadWatchSubset {
				return nil, BadOption(keyLoadWatchSubset, v, errWatchSubset)
			}
			if !env.PublishedLoad {
				return nil, BadOption(keyLoadWatchSubset, v,
					errors.New("applies with serviceDiscoveryMode=zooKeeper only, which carries published load"))
			}
			cfg.WatchSubset = n
		}
		return cfg, nil
	},
}

// parseDuration reads a positive Go duration.
func parseDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as \"10s\": %w", err)
	}
	if d <= 0 {
		return 0, errors.New("must be positive")
	}
	return d, nil
}

func newSharedP2C(opts Options) Strategy {
	cfg, _ := opts.Config.(SharedP2CConfig)
	s := &sharedP2CStrategy{
		loadAware:  newLoadAware(opts),
		now:        opts.Now,
		fixedNow:   opts.Now,
		staleAfter: cfg.PublishedStaleAfter,
		slowStart:  cfg.SlowStart,
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
		fixedNow:   s.fixedNow,
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
			if !s.built {
				// The first build's nodes are the cluster as found, all
				// equally warm or cold: none ramps against the others.
				seen.since = now.Add(-s.slowStart)
			}
			s.seen[n.Addr] = seen
		}
		inFlight := loads[i].InFlight()
		started := int64(loads[i].Started())
		ended := started - inFlight
		fresh := !seen.figure.Equal(n.Load.ReadAt)
		if fresh {
			// A new figure counts this client's statements up to now; only
			// the change after it is added to it.
			seen.figure, seen.base = n.Load.ReadAt, inFlight
			seen.lag = max(now.Sub(n.Load.ReadAt).Nanoseconds(), 0)
			if seen.delay == 0 || seen.lag < seen.delay {
				seen.delay = seen.lag
			} else {
				seen.delay += (seen.lag - seen.delay) >> sharedTypicalDrift
			}
			read := n.Load.ReadAt.UnixNano()
			m, ok := seen.by(read)
			endedByRead := ended
			if ok {
				endedByRead = m.ended
			}
			seen.ownAtRead = inFlight + ended - endedByRead
			if total := int64(n.Load.Total()); n.Load.Known() {
				// Surely in flight at the read: those in flight now less
				// those started since the last build before it.
				if ok && total < inFlight-(started-m.started) {
					seen.lie, seen.lying = total, true
				} else if seen.lying && total != seen.lie {
					seen.lying = false
				}
			}
		}
		seen.mark(now.UnixNano(), ended, started)
		if lat := int64(loads[i].Latency()); lat > 0 {
			if seen.typical == 0 || lat < seen.typical {
				seen.typical = lat
			} else {
				seen.typical += (lat - seen.typical) >> sharedTypicalDrift
			}
		}
		c := &p.cands[i]
		c.node, c.load, c.weight, c.iweight = n, loads[i], float64(nodeWeight(n)), int64(nodeWeight(n))
		c.base = seen.base
		c.typical = float64(seen.typical)
		c.lying = seen.lying && n.Load.Known()
		if p.slowStart > 0 {
			c.rampFrom, c.rampTo = seen.since.UnixNano(), seen.since.UnixNano()+p.slowStart
			p.rampsEnd = max(p.rampsEnd, c.rampTo)
		}
		if n.Load.Known() {
			c.published = float64(n.Load.Total())
			c.slots = float64(n.Load.Slots)
			if !seen.lying {
				if fresh {
					counted := min(float64(max(seen.ownAtRead, 0)), c.published)
					seen.pub = seen.pub*sharedFactorDecay + c.published
					seen.own = seen.own*sharedFactorDecay + counted
				}
				c.readAt = n.Load.ReadAt.UnixNano()
				c.trust = 1
				if seen.typical > 0 {
					// Worth less the later figures arrive, measured in the
					// node's own statements: by then that many of those it
					// counted have ended and others started.
					c.trust = math.Exp(-float64(seen.delay) / float64(sharedTrustStatements*seen.typical))
				}
				// A live registrar rewrites even an unchanged figure every
				// sharedRefresh: one older than that, past its delivery, is
				// from a registrar that stopped.
				c.staleAt = c.readAt + min(p.staleAfter, seen.lag+int64(sharedRefresh+sharedRefreshMargin))
			}
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
	p.local = watched < 2 && watched < len(nodes)
	// A node without a factor of its own (no trusted figure that counted
	// this client's statements) takes the ratio over all nodes now.
	shared := max(published, 1) / max(own, 1)
	for i := range nodes {
		c := &p.cands[i]
		c.factor = shared
		if seen := s.seen[nodes[i].Addr]; seen.own >= sharedFactorMin {
			c.factor = seen.pub / seen.own
		}
	}
	p.cachedNow.Store(now.UnixNano())
	s.built = true
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
	iweight   int64   // weight, for the window's integer comparisons
	slots     float64 // published concurrency; 0 unknown
	published float64 // published running+queued
	readAt    int64   // Unix ns of the figure; 0 none, or not trusted
	trust     float64 // the figure's weight against the local estimate, (0, 1]
	factor    float64 // the node's load per statement of this client's there
	typical   float64 // the node's typical statement duration, ns; 0 unknown
	lying     bool    // the node's figure is a lie
	staleAt   int64   // Unix ns when the figure goes stale
	base      int64   // load.InFlight() when the figure arrived
	// The slow-start window, Unix ns: from the node's first build to the
	// end of its ramp; both 0 when off.
	rampFrom, rampTo int64
}

type sharedP2CPicker struct {
	cands []sharedCandidate
	// pool holds the indices into cands the draws are among: every node,
	// or the watched ones when there are two or more and some are not.
	pool       []int32
	draw       *weightedPicker // over pool
	exact      bool            // this client's estimates are exact: compare a window
	local      bool            // the draws include unwatched nodes: compare local counts
	rng        *rng
	fixedNow   func() time.Time // Options.Now, read on every pick; nil: cachedNow
	staleAfter int64            // ns
	slowStart  int64            // ns; 0 off
	rampsEnd   int64            // Unix ns when the last node's ramp ends
	// cachedNow is the system clock as of the last pick that read it (Unix
	// ns): reading it costs more than the rest of a pick, so one pick in
	// sharedClockEvery does, for all. Between two reads a figure ages by
	// picks: at a rate of statements too low for that to matter, balance
	// hardly does.
	cachedNow atomic.Int64
}

// sharedClockEvery is how many picks share one reading of the system clock,
// on average; a power of two.
const sharedClockEvery = 16

// unit returns x as a uniform float64 in [0, 1).
func unit(x uint32) float64 { return float64(x) * 0x1p-32 }

func (p *sharedP2CPicker) Pick(*Request) (*discovery.Node, error) {
	n := len(p.pool)
	switch n {
	case 0:
		return nil, ErrNoNodes
	case 1:
		return p.cands[p.pool[0]].node, nil
	}
	// One random word serves both draws (and the window's start).
	r := p.rng.uint64()
	now := p.clock(r)
	if p.exact {
		return p.window(r, now), nil
	}
	i, j := p.draw.index(unit(uint32(r>>32))), p.draw.index(unit(uint32(r)))
	if j == i {
		// Another node, uniformly: redrawing by weight could repeat a
		// dominant node many times over.
		j = p.rng.intN(n - 1)
		if j >= i {
			j++
		}
	}
	a, b := &p.cands[p.pool[i]], &p.cands[p.pool[j]]
	if a.trust < sharedLocalTrust && b.trust < sharedLocalTrust {
		return p.pickLocal(a, b, now), nil
	}
	best := a
	if p.cheaper(b, a, now) {
		best = b
	}
	if best.slots > 0 && p.estimate(best, now) > best.slots {
		// Full by its figure: a few more draws for a better one.
		for range sharedExtraDraws {
			if c := &p.cands[p.pool[p.draw.index(p.rng.float64())]]; p.cheaper(c, best, now) {
				return c.node, nil
			}
		}
	}
	return best.node, nil
}

// sharedLocalTrust is the trust below which, on both nodes of a pair, the
// figures are left out of the pick: they arrive so late (more than about
// 1.6 typical statements) that every client reading the same ones herds
// more than they inform, and the statement is placed as p2c places it.
const sharedLocalTrust = 0.45

// pickLocal places the statement as p2c does, for a pair a, b whose figures
// are worth too little: on this client's statements in flight times their
// latency, over capacity; among every node when there are no more than
// p2c's few, else the better of a and b, or the first of up to
// sharedExtraDraws more draws that is better still.
func (p *sharedP2CPicker) pickLocal(a, b *sharedCandidate, now int64) *discovery.Node {
	if n := len(p.pool); n <= p2cScanAll && n == len(p.cands) {
		orders := scanOrders[n]
		order := &orders[p.rng.intN(len(orders))]
		best := &p.cands[order[0]]
		bestCost := p.costOf(best, now)
		for _, k := range order[1:n] {
			c := &p.cands[k]
			if cost := p.costOf(c, now); cost.below(bestCost) {
				best, bestCost = c, cost
			}
		}
		return best.node
	}
	best := a
	if p.costOf(b, now).below(p.costOf(a, now)) {
		best = b
	}
	for range sharedExtraDraws {
		if c := &p.cands[p.pool[p.draw.index(p.rng.float64())]]; p.costOf(c, now).below(p.costOf(best, now)) {
			return c.node
		}
	}
	return best.node
}

// clock returns now in Unix ns: Options.Now's on every pick, else the
// system clock read on one pick in sharedClockEvery (chosen by r's low bits).
func (p *sharedP2CPicker) clock(r uint64) int64 {
	if p.fixedNow != nil {
		return p.fixedNow().UnixNano()
	}
	if r&(sharedClockEvery-1) == 0 {
		now := time.Now().UnixNano()
		p.cachedNow.Store(now)
		return now
	}
	return p.cachedNow.Load()
}

// window returns the best of activeWindow nodes of the pool from a random
// start, for when this client's estimates are exact.
func (p *sharedP2CPicker) window(r uint64, now int64) *discovery.Node {
	n := len(p.pool)
	w := min(n, activeWindow)
	start := int((r >> 32) * uint64(n) >> 32)
	if now >= p.rampsEnd && n == len(p.cands) {
		// No node ramping and every node drawn: least_active's loop, in
		// integers over two plain ranges.
		best := &p.cands[start]
		bestLoad := max(best.load.InFlight(), 0) + 1
		first, wrapped := p.cands[start+1:min(start+w, n)], p.cands[:max(start+w-n, 0)]
		for _, window := range [2][]sharedCandidate{first, wrapped} {
			for k := range window {
				c := &window[k]
				if load := max(c.load.InFlight(), 0) + 1; load*best.iweight < bestLoad*c.iweight {
					best, bestLoad = c, load
				}
			}
		}
		return best.node
	}
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

// fresh reports whether c's figure is trusted and not stale (a figure from
// the future, a registrar's clock ahead of ours, counts as fresh within
// staleAfter).
func (p *sharedP2CPicker) fresh(c *sharedCandidate, now int64) bool {
	return c.readAt != 0 && now <= c.staleAt && c.readAt-now <= p.staleAfter
}

// estimate returns c's load, all clients together: its published load plus
// the change in this client's statements there since the figure arrived,
// blended by the figure's trust with the local estimate (this client's
// statements there times the node's factor); the local estimate alone when
// the figure is missing, not trusted or stale.
func (p *sharedP2CPicker) estimate(c *sharedCandidate, now int64) float64 {
	inFlight := c.load.InFlight()
	local := c.factor * float64(max(inFlight, 0)+1)
	if c.typical > 0 {
		// Queueing there, which this client's few statements hardly show,
		// shows in their latency over the node's typical.
		local *= max(float64(c.load.Latency())/c.typical, 1)
	}
	if !p.fresh(c, now) {
		return local
	}
	figure := max(c.published+float64(inFlight-c.base), 0) + 1
	return c.trust*figure + (1-c.trust)*local
}

// capacity returns c's weight, ramped over its slow-start window: from
// slowStartFloor of it to all of it in proportion to the time since.
func (p *sharedP2CPicker) capacity(c *sharedCandidate, now int64) float64 {
	if now >= c.rampTo {
		return c.weight
	}
	return c.weight * max(slowStartFloor, float64(now-c.rampFrom)/float64(p.slowStart))
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
	if x.lying || y.lying {
		// A liar's own load is unknown, and its factor with it: the pair
		// is compared as p2c compares, on this client's statements there
		// times their latency, alike on both sides. Counts alone tie
		// nearly always with many clients, and a tie goes to the bigger
		// node: a big liar took every pair it was in.
		return p.costOf(x, now).below(p.costOf(y, now))
	}
	if p.local {
		return p.better(x, y, localLoad(x), localLoad(y), false, now)
	}
	return p.better(x, y, p.estimate(x, now), p.estimate(y, now), true, now)
}

// costOf returns what p2c compares of c: this client's statements in
// flight there, this one included, their latency, and c's capacity.
func (p *sharedP2CPicker) costOf(c *sharedCandidate, now int64) p2cCost {
	return p2cCost{inFlight: localLoad(c), weight: p.capacity(c, now), latency: float64(c.load.Latency())}
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
	cx, cy := p.capacity(x, now), p.capacity(y, now)
	if a, b := kx*cy, ky*cx; a != b {
		return a < b
	}
	return lx*cy < ly*cx
}

// sharedTrustStatements is how many typical statements of delivery delay
// take a figure's trust down to 1/e.
const sharedTrustStatements = 2
