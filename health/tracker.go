package health

import (
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/cowmap"
)

// Policy says when a node is ejected and for how long. Zero or negative
// fields take their defaults, so Policy{} is the default policy.
type Policy struct {
	// ConsecutiveFailures is the number of failures in a row that eject a
	// node; default 3.
	ConsecutiveFailures int
	// BaseEjection is how long the first ejection lasts; the n-th ejection
	// in a row lasts n × BaseEjection; default 2s.
	BaseEjection time.Duration
	// MaxEjection caps the length of one ejection; default 1m. A value
	// below BaseEjection is raised to it.
	MaxEjection time.Duration
	// MaxEjectedPercent is the largest share of the known nodes that may be
	// ejected at once, in percent (at most 100); default 50. One node may
	// always be ejected, whatever the share.
	MaxEjectedPercent int
}

// Policy defaults.
const (
	DefaultConsecutiveFailures = 3
	DefaultBaseEjection        = 2 * time.Second
	DefaultMaxEjection         = time.Minute
	DefaultMaxEjectedPercent   = 50
)

func (p Policy) withDefaults() Policy {
	if p.ConsecutiveFailures <= 0 {
		p.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if p.BaseEjection <= 0 {
		p.BaseEjection = DefaultBaseEjection
	}
	if p.MaxEjection <= 0 {
		p.MaxEjection = DefaultMaxEjection
	}
	p.MaxEjection = max(p.MaxEjection, p.BaseEjection)
	if p.MaxEjectedPercent <= 0 {
		p.MaxEjectedPercent = DefaultMaxEjectedPercent
	}
	p.MaxEjectedPercent = min(p.MaxEjectedPercent, 100)
	return p
}

// NodeState is what the tracker knows about one node, for stats and
// operators.
type NodeState struct {
	// Ejected is true while the node is ejected by passive outlier detection.
	Ejected bool
	// Unhealthy is true while an active check says the node must get no work.
	Unhealthy bool
	// Until is when the current ejection ends; zero when not ejected.
	Until time.Time
	// Ejections counts the node's ejections since the tracker first saw it.
	Ejections uint64
	// ConsecutiveFailures is the number of failures since the last success
	// or ejection.
	ConsecutiveFailures int
	// LastError is the last failure or failed check reported; empty if none.
	LastError string
	// LastFailure is when LastError was reported; zero if never.
	LastFailure time.Time
}

// Option configures a Tracker.
type Option func(*Tracker)

// WithClock makes the tracker read the time from now instead of time.Now;
// for tests. now must be safe for concurrent use.
func WithClock(now func() time.Time) Option {
	return func(t *Tracker) {
		if now != nil {
			t.now = now
		}
	}
}

// WithLogger sends ejections, their ends and health changes to logger.
// Without it the tracker logs nothing.
func WithLogger(logger *slog.Logger) Option {
	return func(t *Tracker) {
		if logger != nil {
			t.log = logger
		}
	}
}

// noExpiry is nextExpiry's value while no node is ejected.
const noExpiry = math.MaxInt64

// Tracker holds the ejection and health state of the nodes one connector
// uses. It is safe for concurrent use. Success and Version take no lock and
// allocate nothing unless something changes; the failure and check paths
// take one mutex.
type Tracker struct {
	policy    Policy
	maxFactor int32 // the multiplier at which an ejection reaches MaxEjection
	now       func() time.Time
	epoch     time.Time // times are kept as nanoseconds since epoch
	log       *slog.Logger

	nodes      cowmap.Map[*node] // written under mu
	excluded   atomic.Pointer[map[string]struct{}]
	version    atomic.Uint64
	nextExpiry atomic.Int64 // earliest ejection end since epoch; noExpiry when none
	population atomic.Int64 // nodes in the last list given to Usable or Forget

	mu      sync.Mutex
	ejected int // nodes ejected now
}

// node is one node's state. The atomics are read without the tracker's
// lock by Success; everything is written under the lock except the resets
// Success makes.
type node struct {
	consecutive atomic.Int32
	// multiplier is the number of ejections in a row; non-zero while the
	// node is not ejected means probation.
	multiplier atomic.Int32
	ejected    atomic.Bool

	// Guarded by Tracker.mu.
	until       int64 // ejection end since epoch; 0 when not ejected
	unhealthy   bool
	ejections   uint64
	lastError   string
	lastFailure time.Time
}

// NewTracker returns a tracker with policy p (zero fields take defaults).
func NewTracker(p Policy, opts ...Option) *Tracker {
	t := &Tracker{policy: p.withDefaults(), now: time.Now, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(t)
	}
	t.maxFactor = int32(min((t.policy.MaxEjection+t.policy.BaseEjection-1)/t.policy.BaseEjection, math.MaxInt32))
	t.epoch = t.now()
	excluded := map[string]struct{}{}
	t.excluded.Store(&excluded)
	t.nextExpiry.Store(noExpiry)
	return t
}

// Policy returns the tracker's policy with the defaults filled in.
func (t *Tracker) Policy() Policy { return t.policy }

// since returns the time since the tracker's epoch; time.Time's monotonic
// reading keeps it immune to wall-clock steps.
func (t *Tracker) since() int64 { return int64(t.now().Sub(t.epoch)) }

// Success records that a statement on addr succeeded: the failure count
// starts over and, if the node is on probation after an ejection, the
// ejection multiplier resets. It takes no lock and allocates nothing.
func (t *Tracker) Success(addr string) {
	n := t.nodes.All()[addr]
	if n == nil {
		return
	}
	if n.consecutive.Load() != 0 {
		n.consecutive.Store(0)
	}
	m := n.multiplier.Load()
	if m == 0 {
		return
	}
	if n.ejected.Load() {
		// The ejection may have run out without anyone noticing yet.
		t.expireDue()
		if n.ejected.Load() {
			return
		}
	}
	// Compare-and-swap so that a concurrent ejection's increment is not lost.
	n.multiplier.CompareAndSwap(m, 0)
}

// Failure records a failed statement on addr and ejects the node when it
// reaches ConsecutiveFailures failures in a row, or at once when it is on
// probation after an ejection, unless MaxEjectedPercent forbids it. It
// returns whether the node is now out of rotation: ejected, or marked
// unhealthy by a check.
func (t *Tracker) Failure(addr string, reason error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, now := t.failedLocked(addr, reason)
	if n.ejected.Load() {
		return true
	}
	count := n.consecutive.Load()
	if count < math.MaxInt32 { // a node the cap keeps in rotation may fail for ever
		count = n.consecutive.Add(1)
	}
	probation := n.multiplier.Load() != 0
	if count >= int32(t.policy.ConsecutiveFailures) || probation {
		why := "consecutive failures"
		if probation && count < int32(t.policy.ConsecutiveFailures) {
			why = "failure on probation"
		}
		t.ejectLocked(addr, n, now, why)
	}
	return n.ejected.Load() || n.unhealthy
}

// Eject ejects addr at once, for a strong signal such as a refused
// connection, unless MaxEjectedPercent forbids it. An ejected node stays
// ejected until its current ejection ends. It returns whether the node is
// ejected.
func (t *Tracker) Eject(addr string, reason error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, now := t.failedLocked(addr, reason)
	t.ejectLocked(addr, n, now, "ejected")
	return n.ejected.Load()
}

// SetUnhealthy marks addr as getting no new work until SetHealthy, whatever
// the time. It is meant for active checks: it is not limited by
// MaxEjectedPercent, and Usable still returns every node when none is
// usable.
func (t *Tracker) SetUnhealthy(addr string, reason error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, _ := t.failedLocked(addr, reason)
	if n.unhealthy {
		return
	}
	n.unhealthy = true
	t.log.Warn("coordinator unhealthy", "addr", addr, "reason", n.lastError)
	t.publishLocked()
}

// SetHealthy clears an unhealthy mark on addr and ends a running ejection
// early, leaving the node on probation: a check that passes shows the node
// accepts work again.
func (t *Tracker) SetHealthy(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.nodes.All()[addr]
	if n == nil || (!n.unhealthy && !n.ejected.Load()) {
		return
	}
	if n.unhealthy {
		n.unhealthy = false
		t.log.Info("coordinator healthy again", "addr", addr)
	}
	if n.ejected.Load() {
		t.endEjectionLocked(n)
		t.log.Info("coordinator ejection ended by a passing check", "addr", addr)
		t.recomputeExpiryLocked()
	}
	t.publishLocked()
}

// Version returns a number that changes whenever the result of Usable may
// change, including when an ejection runs out. It is lock-free while no
// ejection is due; with ejections running it also reads the clock once.
func (t *Tracker) Version() uint64 {
	t.expireDue()
	return t.version.Load()
}

// expireDue ends the ejections whose time is up. The common case is one
// atomic load, plus one clock read while any node is ejected.
func (t *Tracker) expireDue() {
	next := t.nextExpiry.Load()
	if next == noExpiry {
		return
	}
	now := t.since()
	if now < next {
		return
	}
	t.mu.Lock()
	t.expireLocked(now)
	t.mu.Unlock()
}

// Usable returns the nodes that are neither ejected nor unhealthy. It
// returns nodes itself, not a copy, when none of them is excluded, and all of
// nodes when none is usable. The result must be treated as read-only. The
// length of nodes becomes the known node count for MaxEjectedPercent.
func (t *Tracker) Usable(nodes []discovery.Node) []discovery.Node {
	if n := int64(len(nodes)); t.population.Load() != n {
		t.population.Store(n)
	}
	t.expireDue()
	excluded := *t.excluded.Load()
	if len(excluded) == 0 {
		return nodes
	}
	out := 0
	for i := range nodes {
		if _, ok := excluded[nodes[i].Addr]; ok {
			out++
		}
	}
	if out == 0 {
		return nodes
	}
	if out == len(nodes) {
		t.log.Debug("every coordinator is ejected or unhealthy; using them all", "nodes", len(nodes))
		return nodes
	}
	usable := make([]discovery.Node, 0, len(nodes)-out)
	for i := range nodes {
		if _, ok := excluded[nodes[i].Addr]; !ok {
			usable = append(usable, nodes[i])
		}
	}
	return usable
}

// State returns what the tracker knows about addr; the zero NodeState for a
// node it has no record of.
func (t *Tracker) State(addr string) NodeState {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked(t.since())
	n := t.nodes.All()[addr]
	if n == nil {
		return NodeState{}
	}
	s := NodeState{
		Ejected:             n.ejected.Load(),
		Unhealthy:           n.unhealthy,
		Ejections:           n.ejections,
		ConsecutiveFailures: int(n.consecutive.Load()),
		LastError:           n.lastError,
		LastFailure:         n.lastFailure,
	}
	if s.Ejected {
		s.Until = t.epoch.Add(time.Duration(n.until))
	}
	return s
}

// Forget drops the state of every node not in keep, such as nodes that left
// discovery, and takes len(keep) as the known node count.
func (t *Tracker) Forget(keep []discovery.Node) {
	t.population.Store(int64(len(keep)))
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.nodes.All()
	kept := make(map[string]bool, min(len(cur), len(keep)))
	for i := range keep {
		if _, ok := cur[keep[i].Addr]; ok {
			kept[keep[i].Addr] = true
		}
	}
	if len(kept) == len(cur) {
		return
	}
	changed := false
	for addr, n := range cur {
		if kept[addr] {
			continue
		}
		if n.ejected.Load() {
			t.ejected--
		}
		if n.ejected.Load() || n.unhealthy {
			changed = true
		}
	}
	t.nodes.Retain(func(addr string) bool { return kept[addr] })
	if changed {
		t.recomputeExpiryLocked()
		t.publishLocked()
	}
}

// failedLocked is the start of every report of a failure on addr: it ends
// the ejections that are due, so the report sees the current state, and
// records reason against addr's node. It returns the node and the time.
func (t *Tracker) failedLocked(addr string, reason error) (n *node, now int64) {
	now = t.since()
	t.expireLocked(now)
	n = t.nodeLocked(addr)
	t.noteLocked(n, now, reason)
	return n, now
}

// nodeLocked returns addr's state, creating it on first use.
func (t *Tracker) nodeLocked(addr string) *node {
	return t.nodes.GetOrCreate(addr, func() *node { return &node{} })
}

// noteLocked records reason as the node's last failure.
func (t *Tracker) noteLocked(n *node, now int64, reason error) {
	n.lastError = ""
	if reason != nil {
		n.lastError = reason.Error()
	}
	n.lastFailure = t.epoch.Add(time.Duration(now))
}

// maxEjectedLocked is the number of nodes that may be ejected at once.
func (t *Tracker) maxEjectedLocked() int {
	known := int(t.population.Load())
	if known == 0 {
		known = len(t.nodes.All())
	}
	return max(1, known*t.policy.MaxEjectedPercent/100)
}

// ejectLocked ejects n unless it is ejected already or the cap is reached.
func (t *Tracker) ejectLocked(addr string, n *node, now int64, why string) {
	if n.ejected.Load() {
		return
	}
	if limit := t.maxEjectedLocked(); t.ejected >= limit {
		t.log.Debug("coordinator not ejected: too many ejected already", "addr", addr, "ejected", t.ejected, "limit", limit, "reason", n.lastError)
		return
	}
	factor := n.multiplier.Add(1)
	if factor > t.maxFactor {
		factor = t.maxFactor
		n.multiplier.Store(factor)
	}
	d := min(time.Duration(factor)*t.policy.BaseEjection, t.policy.MaxEjection)
	n.until = now + int64(d)
	n.ejected.Store(true)
	n.ejections++
	n.consecutive.Store(0)
	t.ejected++
	if n.until < t.nextExpiry.Load() {
		t.nextExpiry.Store(n.until)
	}
	t.log.Warn("coordinator ejected", "addr", addr, "for", d, "why", why, "reason", n.lastError, "ejections", n.ejections)
	t.publishLocked()
}

// endEjectionLocked ends n's ejection. The multiplier stays, which puts the
// node on probation until its next success.
func (t *Tracker) endEjectionLocked(n *node) {
	n.until = 0
	n.ejected.Store(false)
	n.consecutive.Store(0)
	t.ejected--
}

// expireLocked ends the ejections that are due at now.
func (t *Tracker) expireLocked(now int64) {
	if now < t.nextExpiry.Load() {
		return
	}
	for addr, n := range t.nodes.All() {
		if n.ejected.Load() && n.until <= now {
			t.endEjectionLocked(n)
			t.log.Info("coordinator ejection ended", "addr", addr)
		}
	}
	t.recomputeExpiryLocked()
	t.publishLocked()
}

// recomputeExpiryLocked sets nextExpiry to the earliest running ejection's end.
func (t *Tracker) recomputeExpiryLocked() {
	next := int64(noExpiry)
	for _, n := range t.nodes.All() {
		if n.ejected.Load() {
			next = min(next, n.until)
		}
	}
	t.nextExpiry.Store(next)
}

// publishLocked rebuilds the excluded set and bumps the version. The set is
// stored before the version so that a reader that sees the new version also
// sees the new set.
func (t *Tracker) publishLocked() {
	excluded := make(map[string]struct{})
	for addr, n := range t.nodes.All() {
		if n.ejected.Load() || n.unhealthy {
			excluded[addr] = struct{}{}
		}
	}
	t.excluded.Store(&excluded)
	t.version.Add(1)
}
