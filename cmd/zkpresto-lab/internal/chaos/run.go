package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// Class is the outcome of one statement.
type Class string

// The outcomes of a statement.
const (
	// OK: the statement returned its row, with its own text.
	OK Class = "ok"
	// NoCoordinator: a *driver.NoCoordinatorError; the statement was sent
	// nowhere.
	NoCoordinator Class = "no coordinator"
	// SentThenFailed: a *driver.StatementError; the coordinator failed
	// after the statement may have reached it, and the driver did not send
	// it again.
	SentThenFailed Class = "sent, then the coordinator failed"
	// Deadline: the statement's context ran out.
	Deadline Class = "deadline"
	// Other: any other error, or a wrong answer.
	Other Class = "other"
)

// Classes lists every Class in report order.
var Classes = []Class{OK, NoCoordinator, SentThenFailed, Deadline, Other}

// classify maps a statement's error to its Class.
func classify(err error) Class {
	var noCoord *driver.NoCoordinatorError
	var sent *driver.StatementError
	switch {
	case err == nil:
		return OK
	case errors.As(err, &noCoord):
		return NoCoordinator
	case errors.As(err, &sent):
		return SentThenFailed
	case errors.Is(err, context.DeadlineExceeded):
		return Deadline
	}
	return Other
}

// statement is what one client saw of one statement.
type statement struct {
	text    string
	start   time.Time
	latency time.Duration
	class   Class
	err     string
}

// fixedLayout is what a run sets up before the clock starts.
type fixedLayout struct {
	ensemble *zkserver.Ensemble
	fleet    *fleet.Fleet
	coords   []*coordinator.Coordinator
}

// runner carries one run's state.
type runner struct {
	opts     Options
	progress io.Writer
	layout   fixedLayout
	rec      *recorder
	conn     *driver.Connector
	db       *sql.DB
	start    time.Time
	avail    *availability
	ejects   *ejectionCounter
	regs     *registrations

	mu          sync.Mutex
	faults      FaultCounts
	elections   []time.Duration
	killedZK    int // index of the ZooKeeper server down now, or -1
	faultErrors []string
	crashed     map[int]bool
	startingNow map[int]bool
	resetNow    map[int]bool
}

// Run starts a ZooKeeper ensemble and coordinators, runs the clients'
// statements through one *sql.DB while the fault schedule (Plan) plays, and
// reports what the clients and the coordinators saw. progress, when not
// nil, gets a line per fault as it happens. It returns an error only when
// the run could not be set up; what went wrong during the run is in the
// report.
func Run(ctx context.Context, opts Options, progress io.Writer) (*Report, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if progress == nil {
		progress = io.Discard
	}
	r := &runner{opts: opts, progress: &lockedWriter{w: progress}, killedZK: -1, crashed: map[int]bool{}, startingNow: map[int]bool{}, resetNow: map[int]bool{}}
	setupStart := time.Now()
	if err := r.setUp(); err != nil {
		r.tearDown()
		return nil, err
	}
	defer r.tearDown()
	fmt.Fprintf(progress, "set up %d ZooKeeper servers and %d coordinators in %s\n",
		opts.ZooKeeperServers, opts.Coordinators, time.Since(setupStart).Round(time.Millisecond))

	r.start = time.Now()
	r.avail = newAvailability(opts.Coordinators)
	deadline := r.start.Add(opts.Duration)
	if opts.FinishAll {
		deadline = time.Time{} // none
	}
	faultCtx, stopFaults := context.WithCancel(ctx)
	var faults sync.WaitGroup
	var coordEvents, zkEvents []Event
	for _, e := range Plan(opts) {
		if e.Coordinator >= 0 {
			coordEvents = append(coordEvents, e)
		} else {
			zkEvents = append(zkEvents, e)
		}
	}
	faults.Go(func() { r.play(faultCtx, coordEvents) })
	faults.Go(func() { r.play(faultCtx, zkEvents) })
	faults.Go(func() { r.ejects.sample(faultCtx, r.conn) })

	results := make([][]statement, opts.Clients)
	var clients sync.WaitGroup
	for i := range opts.Clients {
		clients.Go(func() { results[i] = r.client(ctx, i, deadline) })
	}
	clients.Wait()
	clientsDone := time.Since(r.start)
	stopFaults()
	faults.Wait()
	r.restore()
	r.regs.wait()
	r.ejects.take(r.conn.Stats())

	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("chaos: run interrupted: %w", err)
	}
	return r.report(results, clientsDone), nil
}

// setUp starts ZooKeeper and the coordinators, registers them, and opens the
// pool.
func (r *runner) setUp() error {
	o := r.opts
	e, err := zkserver.StartEnsemble(o.ZooKeeperServers, zkserver.Options{})
	if err != nil {
		return fmt.Errorf("chaos: starting ZooKeeper: %w", err)
	}
	r.layout.ensemble = e
	f, err := fleet.Start(fleet.Options{
		Ensemble:     e.Connect(),
		Namespace:    "zkpresto-chaos",
		Coordinators: o.Coordinators,
		// Keep every submission: duplicates are counted from these records.
		Coordinator: coordinator.Options{RecordLimit: 2*o.Clients*o.Statements + 1000},
	})
	if err != nil {
		return fmt.Errorf("chaos: starting coordinators: %w", err)
	}
	r.layout.fleet, r.layout.coords = f, f.Coordinators
	for i, c := range r.layout.coords {
		c.SetLatency(spread(o.MinLatency, o.MaxLatency, i, len(r.layout.coords)))
	}
	r.regs = newRegistrations(f, r.noteFaultError)
	for i := range r.layout.coords {
		if err := r.regs.registerNow(i); err != nil {
			return err
		}
	}

	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	r.rec = newRecorder(transport)
	dsn := f.DSN(fmt.Sprintf(";zooKeeperStrategy=%s;zooKeeperSessionTimeout=%s;retries=%d?user=chaos&source=zkpresto-chaos",
		o.Strategy, o.SessionTimeout, o.Retries))
	if o.HealthCheckInterval > 0 {
		dsn = strings.Replace(dsn, "?", fmt.Sprintf(";healthCheckInterval=%s?", o.HealthCheckInterval), 1)
	}
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("chaos: DSN: %w", err)
	}
	driverOpts := []driver.Option{driver.WithHTTPClient(&http.Client{Transport: r.rec})}
	if o.Logger != nil {
		driverOpts = append(driverOpts, driver.WithLogger(o.Logger))
	}
	r.conn, err = driver.NewConnector(cfg, driverOpts...)
	if err != nil {
		return fmt.Errorf("chaos: connector: %w", err)
	}
	r.db = sql.OpenDB(r.conn)
	r.ejects = newEjectionCounter()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return waitListed(ctx, r.conn, o.Coordinators)
}

// waitListed waits until discovery lists n coordinators.
func waitListed(ctx context.Context, conn *driver.Connector, n int) error {
	for {
		snap, err := conn.Nodes(ctx)
		if err == nil && len(snap.Nodes) == n {
			return nil
		}
		select {
		case <-ctx.Done():
			listed := 0
			if snap != nil {
				listed = len(snap.Nodes)
			}
			return fmt.Errorf("chaos: discovery lists %d of %d coordinators (%v): %w", listed, n, err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// spread returns the i-th of n values spread evenly from lo to hi.
func spread(lo, hi time.Duration, i, n int) time.Duration {
	if n <= 1 {
		return lo
	}
	return lo + (hi-lo)*time.Duration(i)/time.Duration(n-1)
}

// tearDown releases everything setUp started, in reverse order.
func (r *runner) tearDown() {
	if r.db != nil {
		r.db.Close()
	}
	if r.rec != nil {
		r.rec.next.(*http.Transport).CloseIdleConnections()
	}
	if r.regs != nil {
		r.regs.close()
	}
	if r.layout.fleet != nil {
		r.layout.fleet.Close()
	}
	if r.layout.ensemble != nil {
		r.layout.ensemble.Close()
	}
}

// client runs one client's statements until they are done, the deadline
// (zero: none) passes, or ctx ends.
func (r *runner) client(ctx context.Context, id int, deadline time.Time) []statement {
	out := make([]statement, 0, r.opts.Statements)
	for seq := range r.opts.Statements {
		if ctx.Err() != nil || !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		out = append(out, r.runStatement(ctx, fmt.Sprintf("SELECT 'chaos c%d s%d'", id+1, seq+1)))
		select {
		case <-ctx.Done():
		case <-time.After(r.opts.Think):
		}
	}
	return out
}

func (r *runner) runStatement(ctx context.Context, text string) statement {
	ctx, cancel := context.WithTimeout(ctx, r.opts.StatementTimeout)
	defer cancel()
	s := statement{text: text, start: time.Now()}
	var coord, user, catalog, schema, source, query string
	err := r.db.QueryRowContext(ctx, text).Scan(&coord, &user, &catalog, &schema, &source, &query)
	s.latency = time.Since(s.start)
	if err == nil && query != text {
		err = fmt.Errorf("chaos: %s answered %q for %q", coord, query, text)
	}
	s.class = classify(err)
	if err != nil {
		s.err = err.Error()
	}
	return s
}

// play carries out events at their times, one at a time, until ctx ends.
func (r *runner) play(ctx context.Context, events []Event) {
	for _, e := range events {
		wait := time.Until(r.start.Add(e.At))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		r.apply(e)
	}
}

// apply carries out one event and logs it.
func (r *runner) apply(e Event) {
	var err error
	note := ""
	switch e.Action {
	case Crash:
		c := r.layout.coords[e.Coordinator]
		r.avail.begin(e.Coordinator)
		err = c.Stop()
		r.mu.Lock()
		r.faults.Crashes++
		r.crashed[e.Coordinator] = true
		r.mu.Unlock()
	case Deregister:
		r.regs.deregister(e.Coordinator)
		r.mu.Lock()
		r.faults.Deregistrations++
		r.mu.Unlock()
	case Recover:
		err = r.recover(e.Coordinator)
	case StartingOn:
		r.beginPhase(e.Coordinator, r.layout.coords[e.Coordinator].SetStarting, r.startingNow, &r.faults.StartingPhases)
	case StartingOff:
		r.endPhase(e.Coordinator, r.layout.coords[e.Coordinator].SetStarting, r.startingNow)
	case ResetOn:
		r.beginPhase(e.Coordinator, r.layout.coords[e.Coordinator].SetResetting, r.resetNow, &r.faults.ResetPhases)
	case ResetOff:
		r.endPhase(e.Coordinator, r.layout.coords[e.Coordinator].SetResetting, r.resetNow)
	case KillLeader:
		note, err = r.killLeader()
	case RestartZooKeeper:
		note, err = r.restartZooKeeper()
	}
	line := fmt.Sprintf("%9s  %-14s %s", "+"+time.Since(r.start).Round(time.Millisecond).String(), e.Action, e.target())
	if note != "" {
		line += "  " + note
	}
	if err != nil {
		line += "  error: " + err.Error()
		r.noteFaultError(fmt.Sprintf("%s: %v", e, err))
	}
	fmt.Fprintln(r.progress, line)
}

func (r *runner) noteFaultError(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faultErrors = append(r.faultErrors, msg)
}

// recover restarts a crashed coordinator and registers it again if its
// registration was removed.
func (r *runner) recover(i int) error {
	r.mu.Lock()
	wasDown := r.crashed[i]
	delete(r.crashed, i)
	r.mu.Unlock()
	if !wasDown {
		return nil
	}
	err := r.layout.coords[i].Restart()
	// It serves again once discovery can list it.
	r.regs.ensureRegistered(i, func() { r.avail.end(i) })
	r.mu.Lock()
	r.faults.Recoveries++
	r.mu.Unlock()
	return err
}

// beginPhase puts coordinator i into a phase (starting, resetting): set
// switches it on the coordinator, now holds the coordinators in it, and
// count counts the phases begun.
func (r *runner) beginPhase(i int, set func(bool), now map[int]bool, count *int) {
	r.avail.begin(i)
	set(true)
	r.mu.Lock()
	*count++
	now[i] = true
	r.mu.Unlock()
}

// endPhase takes coordinator i out of the phase beginPhase put it in, if
// it is in it.
func (r *runner) endPhase(i int, set func(bool), now map[int]bool) {
	r.mu.Lock()
	was := now[i]
	delete(now, i)
	r.mu.Unlock()
	if !was {
		return
	}
	set(false)
	r.avail.end(i)
}

// killLeader kills the ZooKeeper leader and waits for the others to elect
// a new one.
func (r *runner) killLeader() (string, error) {
	e := r.layout.ensemble
	leader, err := e.Leader()
	if err != nil {
		return "", err
	}
	killed := time.Now()
	if err := e.Servers[leader].Kill(); err != nil {
		return "", err
	}
	r.mu.Lock()
	r.faults.LeaderKills++
	r.killedZK = leader
	r.mu.Unlock()
	next, err := e.WaitLeader(30 * time.Second)
	if err != nil {
		return fmt.Sprintf("killed server %d", leader+1), err
	}
	took := time.Since(killed)
	r.mu.Lock()
	r.elections = append(r.elections, took)
	r.mu.Unlock()
	return fmt.Sprintf("killed server %d; server %d leads after %s", leader+1, next+1, took.Round(time.Millisecond)), nil
}

// restartZooKeeper brings the killed ZooKeeper server back.
func (r *runner) restartZooKeeper() (string, error) {
	r.mu.Lock()
	i := r.killedZK
	r.killedZK = -1
	r.mu.Unlock()
	if i < 0 {
		return "", nil
	}
	e := r.layout.ensemble
	if err := e.Servers[i].Restart(); err != nil {
		return "", err
	}
	if _, err := e.WaitLeader(30 * time.Second); err != nil {
		return "", err
	}
	return fmt.Sprintf("server %d back", i+1), nil
}

// restore ends every fault still running, so the final figures and the
// shutdown see a healthy system.
func (r *runner) restore() {
	for i := range r.layout.coords {
		if err := r.recover(i); err != nil {
			r.noteFaultError(fmt.Sprintf("restoring c%d: %v", i+1, err))
		}
		r.endPhase(i, r.layout.coords[i].SetStarting, r.startingNow)
		r.endPhase(i, r.layout.coords[i].SetResetting, r.resetNow)
	}
	if _, err := r.restartZooKeeper(); err != nil {
		r.noteFaultError(fmt.Sprintf("restoring ZooKeeper: %v", err))
	}
}

// lockedWriter serialises the writes of the fault players.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// availability records when each coordinator could not serve (crashed or
// starting), to tell whether a statement that found no coordinator had one
// serving all along.
type availability struct {
	mu   sync.Mutex
	down [][]interval // per coordinator
}

type interval struct{ from, to time.Time } // to is zero while open

func newAvailability(n int) *availability { return &availability{down: make([][]interval, n)} }

// begin is called before a coordinator stops serving.
func (a *availability) begin(i int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.down[i] = append(a.down[i], interval{from: time.Now()})
}

// end is called after a coordinator serves again.
func (a *availability) end(i int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.down[i]); n > 0 && a.down[i][n-1].to.IsZero() {
		a.down[i][n-1].to = time.Now()
	}
}

// servingThroughout reports whether some coordinator served during all of
// [from, to].
func (a *availability) servingThroughout(from, to time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
next:
	for _, ivs := range a.down {
		for _, iv := range ivs {
			if iv.from.Before(to) && (iv.to.IsZero() || iv.to.After(from)) {
				continue next
			}
		}
		return true
	}
	return false
}

// registrations writes and removes the coordinators' znodes in order, on
// one goroutine, retrying while ZooKeeper is unavailable (a leader kill),
// so a slow write never delays the fault schedule.
type registrations struct {
	f      *fleet.Fleet
	onErr  func(string)
	ops    chan func()
	done   chan struct{}
	closed sync.Once

	mu      sync.Mutex
	paths   map[int]string // coordinator index → znode, when registered
	pending sync.WaitGroup
}

// opRetryFor bounds the retries of one registration change.
const opRetryFor = 20 * time.Second

func newRegistrations(f *fleet.Fleet, onErr func(string)) *registrations {
	g := &registrations{f: f, onErr: onErr, ops: make(chan func(), 64), done: make(chan struct{}), paths: map[int]string{}}
	go func() {
		defer close(g.done)
		for op := range g.ops {
			op()
		}
	}()
	return g
}

func (g *registrations) registerNow(i int) error {
	path, err := g.f.Register(g.f.Coordinators[i], discovery.FormatZkpresto, 1)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	g.mu.Lock()
	g.paths[i] = path
	g.mu.Unlock()
	return nil
}

func (g *registrations) enqueue(op func()) {
	g.pending.Add(1)
	g.ops <- func() { defer g.pending.Done(); op() }
}

// deregister removes coordinator i's znode.
func (g *registrations) deregister(i int) {
	g.enqueue(func() {
		g.mu.Lock()
		path, ok := g.paths[i]
		g.mu.Unlock()
		if !ok {
			return
		}
		err := retry(func() error {
			err := g.f.Conn().Delete(path, -1)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			return err
		})
		if err != nil {
			g.onErr(fmt.Sprintf("deregistering c%d: %v", i+1, err))
			return
		}
		g.mu.Lock()
		delete(g.paths, i)
		g.mu.Unlock()
	})
}

// ensureRegistered registers coordinator i again if it has no znode, then
// calls done.
func (g *registrations) ensureRegistered(i int, done func()) {
	g.enqueue(func() {
		defer done()
		g.mu.Lock()
		_, ok := g.paths[i]
		g.mu.Unlock()
		if ok {
			return
		}
		c := g.f.Coordinators[i]
		err := retry(func() error {
			// A create cut off by a lost connection may have happened:
			// look before writing a second registration.
			if path, found := g.find(c.Addr()); found {
				g.mu.Lock()
				g.paths[i] = path
				g.mu.Unlock()
				return nil
			}
			return g.registerNow(i)
		})
		if err != nil {
			g.onErr(fmt.Sprintf("registering c%d again: %v", i+1, err))
		}
	})
}

// find looks for a registration of addr in the namespace.
func (g *registrations) find(addr string) (string, bool) {
	children, _, err := g.f.Conn().Children("/" + g.f.Namespace)
	if err != nil {
		return "", false
	}
	prefix := discovery.ZnodeName(discovery.Node{Addr: addr, Version: "0.289"})
	for _, child := range children {
		if strings.HasPrefix(child, prefix) {
			return "/" + g.f.Namespace + "/" + child, true
		}
	}
	return "", false
}

// wait waits until every queued change is done.
func (g *registrations) wait() { g.pending.Wait() }

// close stops the worker after the queued changes.
func (g *registrations) close() {
	g.closed.Do(func() {
		close(g.ops)
		<-g.done
	})
}

// retry calls op until it succeeds or opRetryFor has passed.
func retry(op func() error) error {
	deadline := time.Now().Add(opRetryFor)
	for {
		err := op()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ejectionCounter adds up the driver's per-node ejection counts over the
// run. The driver forgets a node's health state when the node leaves
// discovery (a deregistered coordinator), so the counts are sampled and a
// drop starts a new tally on top of the old one.
type ejectionCounter struct {
	mu    sync.Mutex
	base  map[string]uint64
	last  map[string]uint64
	fails map[string]uint64 // the driver's failover counts, which it never forgets
}

func newEjectionCounter() *ejectionCounter {
	return &ejectionCounter{base: map[string]uint64{}, last: map[string]uint64{}, fails: map[string]uint64{}}
}

func (c *ejectionCounter) take(st driver.Stats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range st.Nodes {
		addr := n.Node.Addr
		if last := c.last[addr]; n.Ejections < last {
			c.base[addr] += last
		}
		c.last[addr] = n.Ejections
		c.fails[addr] = max(c.fails[addr], n.Failovers)
	}
}

func (c *ejectionCounter) sample(ctx context.Context, conn *driver.Connector) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			c.take(conn.Stats())
		}
	}
}

// counts returns the ejections and the driver's failovers of addr.
func (c *ejectionCounter) counts(addr string) (ejections, failovers uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base[addr] + c.last[addr], c.fails[addr]
}
