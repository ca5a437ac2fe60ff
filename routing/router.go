package routing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/strategy"
)

// DefaultRetries is how many other coordinators a statement may fail over
// to when Config.Retries is 0.
const DefaultRetries = 3

// Config says where a Router finds its coordinators and how it picks them.
// Exactly one of ZooKeeper and Discoverer is set.
type Config struct {
	// ZooKeeper, when set, is the ZooKeeper namespace to watch: the
	// Router joins (or opens) the process's shared session for it on first
	// use.
	ZooKeeper *discovery.ZooKeeperConfig
	// Discoverer, when set, is the discovery source instead: a static list
	// (discovery.NewStatic) or one of the caller's. The Router closes it.
	Discoverer discovery.Discoverer

	// Strategy creates the strategy: strategy.Named("poll") for a
	// registered one (random when unknown, with a warning), or a Factory
	// of the caller's. Nil means strategy.Named(strategy.Default).
	Strategy strategy.Factory
	// StrategyOptions are passed to the strategy; the Router fills Logger,
	// Loads and (with ZooKeeper) Counter itself.
	StrategyOptions strategy.Options

	// Weights overrides node weights by address; nil for none.
	Weights map[string]int
	// Retries is how many other coordinators a statement may fail over to;
	// 0 means DefaultRetries, a negative value none.
	Retries int

	// Health says when a failing coordinator is ejected; the zero value is
	// the default policy.
	Health health.Policy
	// HealthCheckInterval, when positive, turns on active health checks of
	// every listed coordinator with Probe at this interval.
	HealthCheckInterval time.Duration
	// Probe checks one coordinator (httpprobe.New, in package
	// health/httpprobe, asks for GET /v1/info);
	// required when HealthCheckInterval is positive. The Router knows
	// nothing of HTTP: how a coordinator is asked is the caller's.
	Probe health.Probe

	// Logger receives the Router's logs; nil means none.
	Logger *slog.Logger
}

// Router picks coordinators for statements and keeps what it learns of
// them. Create it with New; it is safe for concurrent use.
type Router struct {
	cfg          Config
	log          *slog.Logger
	strategy     strategy.Strategy
	strategyName string
	loads        *strategy.Loads
	health       *health.Tracker
	retries      int

	discMu  sync.Mutex
	disc    atomic.Pointer[opened]
	checker *health.Checker // guarded by discMu

	buildMu sync.Mutex
	picked  atomic.Pointer[pickerState]

	failovers sync.Map // addr → *atomic.Uint64

	bgMu    sync.Mutex     // orders Go against Close
	bg      sync.WaitGroup // background work Close waits for
	closing chan struct{}  // closed by Close, for the background work
	closed  atomic.Bool
}

// opened is the open discovery source.
type opened struct {
	discovery.Discoverer
	zk *discovery.ZooKeeper // nil unless ZooKeeper discovery, for global_poll's counter
}

// pickerState is a picker built for one snapshot and one health state.
type pickerState struct {
	snap   *discovery.Snapshot
	health uint64
	nodes  []discovery.Node // the candidates the picker was built from
	// ready are the listed coordinators whose registrations say they take
	// new statements (all of them when none does): the only ones a
	// statement is sent to, also when every usable one has failed it.
	ready  []discovery.Node
	picker strategy.Picker
	// ctxPicker is picker when it may wait on I/O (global_poll), nil
	// otherwise: decided once per build, so other pickers' picks stay a
	// plain call.
	ctxPicker strategy.ContextPicker
}

// pick asks the picker, bounding a pick that may wait on I/O by ctx.
func (ps *pickerState) pick(ctx context.Context, req *strategy.Request) (*discovery.Node, error) {
	if ps.ctxPicker != nil {
		return ps.ctxPicker.PickContext(ctx, req)
	}
	return ps.picker.Pick(req)
}

// New returns a Router for cfg. It does no network I/O: discovery opens on
// first use.
func New(cfg Config) (*Router, error) {
	if (cfg.ZooKeeper == nil) == (cfg.Discoverer == nil) {
		return nil, errors.New("routing: exactly one of ZooKeeper and Discoverer must be set")
	}
	if cfg.HealthCheckInterval > 0 && cfg.Probe == nil {
		return nil, errors.New("routing: HealthCheckInterval is set but Probe is not: active health checks need a probe")
	}
	r := &Router{cfg: cfg, log: cfg.Logger, loads: strategy.NewLoads(), closing: make(chan struct{})}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	switch {
	case cfg.Retries < 0:
		r.retries = 0
	case cfg.Retries == 0:
		r.retries = DefaultRetries
	default:
		r.retries = cfg.Retries
	}
	healthLog := r.log
	if cfg.ZooKeeper != nil {
		// Discovery's lines say where they looked; ejections say it too.
		healthLog = r.log.With("ensemble", cfg.ZooKeeper.Ensemble(), "path", cfg.ZooKeeper.Path)
	}
	r.health = health.NewTracker(cfg.Health, health.WithLogger(healthLog))
	opts := cfg.StrategyOptions
	opts.Logger, opts.Loads = r.log, r.loads
	if cfg.ZooKeeper != nil {
		opts.Counter = &sharedCounter{r: r}
	}
	factory := cfg.Strategy
	if factory == nil {
		factory = strategy.Named(strategy.Default)
	}
	r.strategy = factory(opts)
	if r.strategy == nil {
		return nil, errors.New("routing: the strategy factory returned nil")
	}
	r.strategyName = strategy.NameOf(r.strategy)
	return r, nil
}

// ZooKeeper is the ZooKeeper namespace the Router watches (Config.ZooKeeper),
// nil when its coordinators come from another source. It is shared and
// must not be modified.
func (r *Router) ZooKeeper() *discovery.ZooKeeperConfig { return r.cfg.ZooKeeper }

// StrategyName is the name of the strategy in use (strategy.NameOf).
func (r *Router) StrategyName() string { return r.strategyName }

// Loads is the per-coordinator load table the Router reports into.
func (r *Router) Loads() *strategy.Loads { return r.loads }

// Health is the Router's health tracker.
func (r *Router) Health() *health.Tracker { return r.health }

// Open opens discovery if it is not open yet (for ZooKeeper: joins or opens
// the shared session, bounded by its connect timeout) and returns an error
// when it lists no coordinator. A failure to open is returned and the next
// call tries again.
func (r *Router) Open(ctx context.Context) error {
	d, err := r.discoverer(ctx)
	if err != nil {
		return err
	}
	if snap := d.Snapshot(); len(snap.Nodes) == 0 {
		return r.noNodesError(d, snap)
	}
	return nil
}

// Snapshot returns the coordinators discovery lists now, opening discovery
// first if needed. The snapshot is shared and must not be modified.
func (r *Router) Snapshot(ctx context.Context) (*discovery.Snapshot, error) {
	d, err := r.discoverer(ctx)
	if err != nil {
		return nil, err
	}
	return d.Snapshot(), nil
}

// OpenSnapshot returns the coordinators discovery lists now, if discovery
// is open; it never opens it, so it never waits. The snapshot is shared and
// must not be modified.
func (r *Router) OpenSnapshot() (*discovery.Snapshot, bool) {
	if d := r.disc.Load(); d != nil {
		return d.Snapshot(), true
	}
	return nil, false
}

// Pick returns the strategy's choice for req among the usable coordinators
// that are not in tried, or req.Prefer where it is one of them and ready. When every usable coordinator was tried, it tries
// the listed ones that are not (an ejected coordinator may have recovered);
// when none is left it fails.
func (r *Router) Pick(ctx context.Context, req *strategy.Request, tried []NodeFailure) (*discovery.Node, error) {
	d, err := r.discoverer(ctx)
	if err != nil {
		return nil, err
	}
	snap := d.Snapshot()
	if len(snap.Nodes) == 0 {
		return nil, r.noNodesError(d, snap)
	}
	ps := r.pickerFor(snap)
	if req != nil && req.Prefer != "" && !wasTried(tried, req.Prefer) {
		for i := range ps.nodes {
			if ps.nodes[i].Addr == req.Prefer && ps.nodes[i].Ready() {
				return &ps.nodes[i], nil
			}
		}
	}
	// A few picks skip tried nodes without knowing the strategy; then any
	// untried candidate will do.
	for range 2*len(tried) + 1 {
		node, err := ps.pick(ctx, req)
		if err != nil {
			return nil, &pickError{fmt.Errorf("strategy %s over %s: %w", r.strategyName, snap.Source, err)}
		}
		if !wasTried(tried, node.Addr) {
			return node, nil
		}
	}
	for i := range ps.nodes {
		if !wasTried(tried, ps.nodes[i].Addr) {
			return &ps.nodes[i], nil
		}
	}
	// Every usable coordinator failed this statement. An ejected one may
	// have recovered since (the ejection cap can also leave only failing
	// nodes usable): better to try it than to fail with retries left.
	for i := range ps.ready {
		if !wasTried(tried, ps.ready[i].Addr) {
			return &ps.ready[i], nil
		}
	}
	return nil, &noUntriedError{source: snap.Source}
}

func wasTried(tried []NodeFailure, addr string) bool {
	for _, t := range tried {
		if t.Node == addr {
			return true
		}
	}
	return false
}

// Outcome is how one attempt of a statement on one coordinator ended, as
// the caller of Run saw it on the wire.
type Outcome int

const (
	// Answered: the coordinator answered, with a result or a query error.
	// It is healthy.
	Answered Outcome = iota
	// NotSent: the attempt failed before the statement could have reached
	// the coordinator (connection refused, a 503 before acceptance). The
	// coordinator is ejected and the statement goes to another one.
	NotSent
	// MaybeSent: the attempt failed after the statement may have reached
	// the coordinator. It counts toward ejection and is never sent again.
	MaybeSent
	// Abandoned: the caller gave up. It proves nothing about the
	// coordinator.
	Abandoned
	// Invalid: the statement could not be sent at all (a request the HTTP
	// client refuses to send, or one whose head the coordinator refused).
	// It proves nothing about the coordinator, which is charged neither a
	// failure nor the attempt's time, and no other coordinator is tried: it
	// would fail there the same way.
	Invalid
	// Unreached: the coordinator did not take the statement in time (no
	// connection within the dial race's delay, or a write that had not
	// delivered it by half the caller's remaining time), and nothing was
	// sent. The statement goes to another coordinator, as for NotSent, but
	// the slow one is charged a failure (three in a row eject it) rather
	// than ejected at once: a coordinator whose dials are merely slow gets
	// its connection in the background and serves the next statement on
	// it.
	Unreached
	// Unanswered: the caller's deadline passed after the statement may
	// have reached the coordinator and before any answer. Presto answers
	// a submission at once (queued), so a silent coordinator is sick: it
	// is charged a failure (three in a row eject it), and the caller gets
	// its error; the statement is not sent again.
	Unanswered
	// Returned: the statement was not sent here: the coordinator tried
	// just before, given up as Unreached, got its connection first after
	// all (the dial race), and the statement goes back to it. Neither
	// this coordinator nor the retries are charged.
	Returned
)

// Attempt is one try of one statement on one coordinator.
type Attempt struct {
	// Node is the coordinator. It is shared and must not be modified.
	Node *discovery.Node

	router *Router
	load   *strategy.Load
	start  time.Time
	ended  atomic.Bool
}

// End reports the statement's end, with its error if any, to the
// coordinator's load figures. Only the first call counts.
func (a *Attempt) End(err error) {
	if a.ended.CompareAndSwap(false, true) {
		a.load.End(time.Since(a.start), err)
	}
}

// Failed reports that the coordinator failed with err after it had
// accepted the statement (for example while its results were read), ends
// the attempt and returns the StatementError to give the caller.
func (a *Attempt) Failed(err error) *StatementError {
	return a.fail(&StatementError{Node: a.Node.Addr, Err: err})
}

// FailedWhileRunning is Failed for a statement the coordinator had
// accepted as query id, of whose result pagesRead pages had been read when
// the next one failed with err.
func (a *Attempt) FailedWhileRunning(err error, id string, pagesRead int) *StatementError {
	return a.fail(&StatementError{Node: a.Node.Addr, QueryID: id, PagesRead: pagesRead, Err: err})
}

func (a *Attempt) fail(se *StatementError) *StatementError {
	a.router.health.Failure(a.Node.Addr, se.Err)
	a.End(se)
	return se
}

// Run runs one statement: it picks a coordinator (pinned, when not nil, is
// the only one: a transaction's), calls try with an attempt on it, and acts
// on the outcome try reports. try's error is the answer's error for
// Answered (nil on success), the failure for NotSent and MaybeSent, and the
// caller's for Abandoned.
//
// NotSent ejects the coordinator and tries another one, up to the retries
// (Unreached charges it a failure instead of ejecting it; Returned sends
// the statement back to the coordinator of the Unreached attempt just
// before, charging nothing); when none accepts the statement Run returns a *NoCoordinatorError and no
// attempt. MaybeSent returns a *StatementError. Otherwise Run returns try's
// error. The attempt returned with a nil error is still open (the
// statement may stream results): the caller calls End. Every other attempt
// is ended.
func (r *Router) Run(ctx context.Context, req *strategy.Request, pinned *discovery.Node, try func(*Attempt) (Outcome, error)) (*Attempt, error) {
	var tried []NodeFailure
	// unreached is the coordinator of the latest Unreached attempt, which
	// a Returned attempt hands the statement back to.
	var unreached, back *discovery.Node
	for {
		node := pinned
		if back != nil {
			node, back = back, nil
		} else if node == nil {
			var err error
			node, err = r.Pick(ctx, req, tried)
			if err != nil {
				if len(tried) > 0 {
					return nil, &NoCoordinatorError{Tried: tried, Err: err}
				}
				return nil, err
			}
		}
		a := &Attempt{Node: node, router: r, load: r.loads.For(node.Addr), start: time.Now()}
		a.load.Begin()
		outcome, err := try(a)
		switch outcome {
		case Answered:
			r.health.Success(node.Addr)
			if err != nil {
				a.End(err)
			}
			return a, err
		case Abandoned:
			a.End(err)
			return a, err
		case Invalid:
			// The request's fault: no figure of the coordinator's.
			if a.ended.CompareAndSwap(false, true) {
				a.load.Drop()
			}
			return a, err
		case Unanswered:
			a.End(err)
			r.health.Failure(node.Addr, err)
			return a, err
		case MaybeSent:
			return a, a.Failed(err)
		}
		a.End(err)
		switch outcome {
		case Returned:
			if unreached != nil {
				back, unreached = unreached, nil
				continue
			}
		case Unreached:
			unreached = node
			r.health.Failure(node.Addr, err)
		default:
			r.health.Eject(node.Addr, err)
		}
		tried = append(tried, NodeFailure{Node: node.Addr, Err: err})
		if pinned != nil || len(tried) > r.retries {
			return nil, &NoCoordinatorError{Tried: tried}
		}
		r.noteFailover(node.Addr)
		r.log.Warn("coordinator failed before accepting the statement; trying another",
			"node", node.Addr, "err", err, "attempt", len(tried))
	}
}

func (r *Router) noteFailover(addr string) {
	v, _ := r.failovers.LoadOrStore(addr, new(atomic.Uint64))
	v.(*atomic.Uint64).Add(1)
}

// Go runs fn in the background unless the Router is closed, and reports
// whether it did; Close waits for it. fn must bound itself: closing is
// closed when Close starts waiting, for work that should then stop soon
// (waiting for a slow answer, say), while short work (a bounded cancel)
// may finish.
func (r *Router) Go(fn func(closing <-chan struct{})) bool {
	r.bgMu.Lock()
	defer r.bgMu.Unlock()
	if r.closed.Load() {
		return false
	}
	r.bg.Go(func() { fn(r.closing) })
	return true
}

// Closed reports whether Close was called.
func (r *Router) Closed() bool { return r.closed.Load() }

// Close stops the health checker, releases discovery and waits for the
// background work started with Go. Statements still running are not
// affected. Only the first call does anything.
func (r *Router) Close() error {
	r.bgMu.Lock()
	already := r.closed.Swap(true)
	r.bgMu.Unlock()
	if already {
		return nil
	}
	close(r.closing)
	r.discMu.Lock()
	d, checker := r.disc.Load(), r.checker
	r.discMu.Unlock()
	if checker != nil {
		checker.Close()
	}
	var err error
	if d != nil {
		err = d.Close()
	} else if r.cfg.Discoverer != nil {
		err = r.cfg.Discoverer.Close()
	}
	r.bg.Wait()
	return err
}

func (r *Router) noNodesError(d *opened, snap *discovery.Snapshot) error {
	if r.cfg.ZooKeeper == nil {
		return &pickError{fmt.Errorf("no coordinators in %s", snap.Source)}
	}
	why := "no coordinators registered"
	if st := d.Status(); st.Problem != "" {
		why = st.Problem
	}
	return &pickError{fmt.Errorf("ZooKeeper ensemble %s: %s", r.cfg.ZooKeeper.Ensemble(), why)}
}

// discoverer opens discovery once; a failure is returned to the caller and
// the next call tries again.
func (r *Router) discoverer(ctx context.Context) (*opened, error) {
	if d := r.disc.Load(); d != nil {
		return d, nil
	}
	r.discMu.Lock()
	defer r.discMu.Unlock()
	if r.closed.Load() {
		return nil, &pickError{errors.New("connector is closed")}
	}
	if d := r.disc.Load(); d != nil {
		return d, nil
	}
	d, err := r.openDiscovery(ctx)
	if err != nil {
		return nil, err
	}
	if r.cfg.HealthCheckInterval > 0 {
		r.checker = health.StartChecker(r.cfg.HealthCheckInterval, r.cfg.Probe, func() []discovery.Node {
			return d.Snapshot().Nodes
		}, r.health, r.log)
	}
	r.disc.Store(d)
	return d, nil
}

func (r *Router) openDiscovery(ctx context.Context) (*opened, error) {
	if r.cfg.Discoverer != nil {
		return &opened{Discoverer: r.cfg.Discoverer}, nil
	}
	zkCfg := *r.cfg.ZooKeeper
	if zkCfg.Logger == nil {
		zkCfg.Logger = r.log
	}
	zk, err := discovery.OpenZooKeeper(ctx, zkCfg)
	if err != nil {
		return nil, err
	}
	return &opened{Discoverer: zk, zk: zk}, nil
}

// pickerFor returns the picker for snap and the current health, building it
// when either changed. The common case is two atomic loads.
func (r *Router) pickerFor(snap *discovery.Snapshot) *pickerState {
	hv := r.health.Version()
	if ps := r.picked.Load(); ps != nil && ps.snap == snap && ps.health == hv {
		return ps
	}
	r.buildMu.Lock()
	defer r.buildMu.Unlock()
	hv = r.health.Version()
	ps := r.picked.Load()
	if ps != nil && ps.snap == snap && ps.health == hv {
		return ps
	}
	if ps == nil || ps.snap != snap {
		r.loads.Retain(snap.Nodes)
		r.health.Forget(snap.Nodes)
	}
	ready := readyNodes(r.applyWeights(snap.Nodes))
	nodes := r.health.Usable(ready)
	next := &pickerState{snap: snap, health: hv, nodes: nodes, ready: ready, picker: r.strategy.Build(nodes)}
	next.ctxPicker, _ = next.picker.(strategy.ContextPicker)
	r.picked.Store(next)
	r.log.Debug("coordinators for picking", "source", snap.Source, "generation", snap.Generation,
		"listed", len(snap.Nodes), "ready", len(ready), "usable", len(nodes), "strategy", r.strategyName)
	return next
}

// readyNodes returns the nodes whose registrations carry no not-ready mark
// (discovery.Node.NotReady: starting, shutting down, too few workers,
// drained by an operator), before any strategy or health rule sees them, so
// that no statement goes to a coordinator that would queue or refuse it
// while another takes it. Registrations that carry no mark (every foreign
// layout) are ready. When no node is ready, all of them are returned: a
// statement then goes where it would have gone without the marks, and the
// coordinator's own answer reaches the client, rather than an error of
// ours.
func readyNodes(nodes []discovery.Node) []discovery.Node {
	out := 0
	for i := range nodes {
		if !nodes[i].Ready() {
			out++
		}
	}
	if out == 0 || out == len(nodes) {
		return nodes
	}
	ready := make([]discovery.Node, 0, len(nodes)-out)
	for i := range nodes {
		if nodes[i].Ready() {
			ready = append(ready, nodes[i])
		}
	}
	return ready
}

// applyWeights returns nodes with the weight overrides applied.
func (r *Router) applyWeights(nodes []discovery.Node) []discovery.Node {
	if len(r.cfg.Weights) == 0 {
		return nodes
	}
	out := slices.Clone(nodes)
	for i := range out {
		if w, ok := r.cfg.Weights[out[i].Addr]; ok {
			out[i].Weight = w
		}
	}
	return out
}

// sharedCounter gives global_poll the counter znode /<namespace>-counter in
// the Router's ZooKeeper session, the znode Kyuubi's polling strategy uses,
// so that both kinds of client share one rotation.
type sharedCounter struct {
	r       *Router
	once    sync.Once
	counter *discovery.ZKCounter
}

func (s *sharedCounter) Next(ctx context.Context) (uint64, error) {
	d := s.r.disc.Load()
	if d == nil || d.zk == nil {
		return 0, errors.New("routing: discovery is not open")
	}
	s.once.Do(func() { s.counter = d.zk.Counter(s.r.cfg.ZooKeeper.Path + "-counter") })
	return s.counter.Next(ctx)
}
