package coordinator

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults applied by Start to zero Options fields.
const (
	DefaultName         = "coordinator"
	DefaultAddr         = "127.0.0.1:0"
	DefaultVersion      = "0.289-zkpresto-sim"
	DefaultBatchRows    = 100
	DefaultAbandonAfter = time.Minute
	DefaultRecordLimit  = 10000
)

// finishedLimit bounds how many final answers are kept for replay after a query ends.
const finishedLimit = 1024

// ErrClosed is returned by Restart after Close.
var ErrClosed = errors.New("coordinator: closed")

// Options configures a simulated coordinator. The zero value is usable.
type Options struct {
	// Name is reported in the coordinator column of results; default "coordinator".
	Name string
	// Addr is the listen address; default "127.0.0.1:0" (a free loopback port).
	Addr string
	// Latency is the server-side time a statement takes before its results are final,
	// counted from submission and spent across polls. See also SetLatency.
	Latency time.Duration
	// Version is reported as nodeVersion.version by /v1/info; default "0.289-zkpresto-sim".
	Version string
	// Starting makes the node start in the starting state; see SetStarting.
	Starting bool
	// BatchRows is the number of rows(N) rows sent per poll; default 100.
	BatchRows int
	// AbandonAfter is how long a query may go unpolled before it is dropped; default 1m.
	AbandonAfter time.Duration
	// RecordLimit is how many recent submissions Requests keeps; default 10000.
	RecordLimit int
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if o.Latency < 0 {
		o.Latency = 0
	}
	if o.BatchRows <= 0 {
		o.BatchRows = DefaultBatchRows
	}
	if o.AbandonAfter <= 0 {
		o.AbandonAfter = DefaultAbandonAfter
	}
	if o.RecordLimit <= 0 {
		o.RecordLimit = DefaultRecordLimit
	}
	return o
}

// Request is one statement submission as the coordinator received it.
type Request struct {
	// QueryID is the id the coordinator gave the statement (empty when it was rejected).
	QueryID string
	// SQL is the statement text.
	SQL string
	// User, Catalog, Schema, Source, ClientInfo and TimeZone come from the session headers.
	User, Catalog, Schema, Source, ClientInfo, TimeZone string
	// SessionProperties holds the decoded X-Presto-Session properties.
	SessionProperties map[string]string
	// ClientTags holds the X-Presto-Client-Tags values.
	ClientTags []string
	// Trino reports that the session headers used the X-Trino- prefix.
	Trino bool
	// Rejected reports that the statement was refused: 503 while starting, empty SQL, or a
	// bad or duplicate pre-minted query id.
	Rejected bool
	// Time is when the submission was received.
	Time time.Time
}

func (r Request) clone() Request {
	r.SessionProperties = maps.Clone(r.SessionProperties)
	r.ClientTags = slices.Clone(r.ClientTags)
	return r
}

// Coordinator is a simulated Presto coordinator. All methods are safe for concurrent use.
type Coordinator struct {
	name      string
	version   string
	batchRows int
	abandon   time.Duration
	idSuffix  string // distinguishes query ids of different coordinators

	latency     atomic.Int64 // nanoseconds
	answerDelay atomic.Int64 // nanoseconds a submission's answer waits after acceptance
	openConns   atomic.Int64 // HTTP connections open now
	starting    atomic.Bool
	statements  atomic.Int64
	querySeq    atomic.Int64
	startedAt   atomic.Int64 // unix nanos of the last (re)start, read by /v1/info without lifeMu

	// lifeMu serialises Stop, Restart and Close and guards the fields below it.
	lifeMu sync.Mutex
	addr   string // fixed after the first listen, so Restart reuses the port
	closed bool
	life   *serving

	// mu guards the query tables and the request records.
	mu        sync.Mutex
	active    map[string]*query
	finished  map[string]*finishedQuery
	finOrder  []string // ring of finished ids, oldest at finHead once full
	finHead   int
	records   []Request // ring of submissions, oldest at recHead once full
	recHead   int
	recLimit  int
	users     map[string]int64
	lastSweep time.Time
}

// serving is one listen generation: everything Stop must tear down.
type serving struct {
	srv       *http.Server
	serveDone chan struct{}
	ctx       context.Context // cancelled by Stop, wakes handlers that are waiting
	cancel    context.CancelFunc

	gateMu   sync.Mutex
	stopping bool
	inFlight sync.WaitGroup
}

// enter admits a handler unless the generation is stopping; the gate keeps WaitGroup.Add
// from racing with Stop's Wait.
func (s *serving) enter() bool {
	s.gateMu.Lock()
	defer s.gateMu.Unlock()
	if s.stopping {
		return false
	}
	s.inFlight.Add(1)
	return true
}

// Start starts a coordinator listening on opts.Addr.
func Start(opts Options) (*Coordinator, error) {
	opts = opts.withDefaults()
	c := &Coordinator{
		name:      opts.Name,
		version:   opts.Version,
		batchRows: opts.BatchRows,
		abandon:   opts.AbandonAfter,
		idSuffix:  strings.ToLower(rand.Text()[:5]),
		addr:      opts.Addr,
		active:    make(map[string]*query),
		finished:  make(map[string]*finishedQuery),
		recLimit:  opts.RecordLimit,
		users:     make(map[string]int64),
	}
	c.latency.Store(int64(opts.Latency))
	c.starting.Store(opts.Starting)
	if err := c.listen(); err != nil {
		return nil, err
	}
	return c, nil
}

// StartFleet starts n coordinators with the same options, named "c1".."cn" (or opts.Name
// followed by the number when opts.Name is set). opts.Addr must leave the port to the system.
// On error the coordinators already started are closed.
func StartFleet(n int, opts Options) ([]*Coordinator, error) {
	if n < 0 {
		return nil, fmt.Errorf("coordinator: fleet size %d is negative", n)
	}
	prefix := opts.Name
	if prefix == "" {
		prefix = "c"
	}
	fleet := make([]*Coordinator, 0, n)
	for i := 1; i <= n; i++ {
		o := opts
		o.Name = prefix + strconv.Itoa(i)
		c, err := Start(o)
		if err != nil {
			for _, started := range fleet {
				_ = started.Close()
			}
			return nil, fmt.Errorf("coordinator: start fleet member %d of %d: %w", i, n, err)
		}
		fleet = append(fleet, c)
	}
	return fleet, nil
}

// listen starts a listen generation on c.addr; the caller holds lifeMu or owns c exclusively.
func (c *Coordinator) listen() error {
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("coordinator %s: listen on %s: %w", c.name, c.addr, err)
	}
	c.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{serveDone: make(chan struct{}), ctx: ctx, cancel: cancel}
	s.srv = &http.Server{
		Handler:           c.routes(s),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, state http.ConnState) {
			switch state {
			case http.StateNew:
				c.openConns.Add(1)
			case http.StateClosed, http.StateHijacked:
				c.openConns.Add(-1)
			}
		},
		// Aborted connections are the point of Stop; keep them out of the test output.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	c.life = s
	c.startedAt.Store(time.Now().UnixNano())
	go func() {
		defer close(s.serveDone)
		_ = s.srv.Serve(ln) // always returns http.ErrServerClosed after Stop
	}()
	return nil
}

// Name returns the coordinator's name.
func (c *Coordinator) Name() string { return c.name }

// Addr returns the host:port the coordinator listens on (also while stopped).
func (c *Coordinator) Addr() string {
	c.lifeMu.Lock()
	defer c.lifeMu.Unlock()
	return c.addr
}

// URL returns the coordinator's base URL, http://host:port.
func (c *Coordinator) URL() string { return "http://" + c.Addr() }

// Statements returns how many statement submissions were received in full, including
// rejected ones. It never decreases, also across Stop and Restart.
func (c *Coordinator) Statements() int64 { return c.statements.Load() }

// Requests returns the most recent submissions, oldest first (at most Options.RecordLimit).
func (c *Coordinator) Requests() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Request, 0, len(c.records))
	for i := range c.records {
		out = append(out, c.records[(c.recHead+i)%len(c.records)].clone())
	}
	return out
}

// Users returns the number of submissions per user, counted like Statements.
func (c *Coordinator) Users() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.users)
}

// Running returns how many accepted statements have not finished yet.
func (c *Coordinator) Running() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(len(c.active))
}

// SetLatency changes the latency of statements submitted from now on.
func (c *Coordinator) SetLatency(d time.Duration) { c.latency.Store(int64(max(d, 0))) }

// SetAnswerDelay makes each submission wait d after the query was accepted
// (it runs, and Running counts it) before its answer is written: a
// coordinator slow to answer POST /v1/statement. The wait ends early only
// when the coordinator stops, not when the client goes away.
func (c *Coordinator) SetAnswerDelay(d time.Duration) { c.answerDelay.Store(int64(max(d, 0))) }

// OpenConns returns how many HTTP connections clients hold open to the
// coordinator now.
func (c *Coordinator) OpenConns() int64 { return c.openConns.Load() }

// SetStarting switches the starting state: while starting, /v1/info says so and statement
// submissions are answered 503.
func (c *Coordinator) SetStarting(starting bool) { c.starting.Store(starting) }

// Stop closes the listener and every connection and forgets all queries, as if the node
// died. It waits for in-flight handlers to return. Stop is idempotent.
func (c *Coordinator) Stop() error {
	c.lifeMu.Lock()
	defer c.lifeMu.Unlock()
	return c.stopLocked()
}

func (c *Coordinator) stopLocked() error {
	s := c.life
	if s == nil {
		return nil
	}
	c.life = nil
	s.gateMu.Lock()
	s.stopping = true
	s.gateMu.Unlock()
	// Close connections before waking handlers, so a woken handler cannot still answer.
	err := s.srv.Close()
	s.cancel()
	s.inFlight.Wait()
	<-s.serveDone

	c.mu.Lock()
	for _, q := range c.active {
		q.cancel()
	}
	clear(c.active)
	clear(c.finished)
	c.finOrder = c.finOrder[:0]
	c.finHead = 0
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("coordinator %s: stop: %w", c.name, err)
	}
	return nil
}

// Restart listens again on the same port after Stop. It does nothing when the coordinator
// is running and returns ErrClosed after Close.
func (c *Coordinator) Restart() error {
	c.lifeMu.Lock()
	defer c.lifeMu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.life != nil {
		return nil
	}
	return c.listen()
}

// Close stops the coordinator for good. It is idempotent.
func (c *Coordinator) Close() error {
	c.lifeMu.Lock()
	defer c.lifeMu.Unlock()
	c.closed = true
	return c.stopLocked()
}

// record stores a submission and counts it for its user.
func (c *Coordinator) record(r Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users[r.User]++
	if len(c.records) < c.recLimit {
		c.records = append(c.records, r)
		return
	}
	c.records[c.recHead] = r
	c.recHead = (c.recHead + 1) % len(c.records)
}

// admit registers a new query, dropping abandoned ones first. It reports false when the id
// is already taken (possible with pre-minted ids).
func (c *Coordinator) admit(q *query, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, taken := c.active[q.id]; taken {
		return false
	}
	if _, taken := c.finished[q.id]; taken {
		return false
	}
	// Sweeping at most once a second keeps submission cheap with many queries open.
	if now.Sub(c.lastSweep) >= min(time.Second, c.abandon) {
		c.lastSweep = now
		limit := now.Add(-c.abandon).UnixNano()
		for _, old := range c.active {
			if old.touched.Load() < limit {
				c.endLocked(old, old.abandonedAnswer(), 0, true)
			}
		}
	}
	c.active[q.id] = q
	return true
}

// lookup returns the active query with the id, or the record of a finished one.
func (c *Coordinator) lookup(id string) (*query, *finishedQuery) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if q, ok := c.active[id]; ok {
		return q, nil
	}
	return nil, c.finished[id]
}

// end retires q with its final answer unless it ended already; it reports whether it did.
// token is the poll the final answer belongs to; anyToken marks a canceled or abandoned query,
// whose final answer goes to every later poll.
func (c *Coordinator) end(q *query, final answer, token int64, anyToken bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endLocked(q, final, token, anyToken)
}

func (c *Coordinator) endLocked(q *query, final answer, token int64, anyToken bool) bool {
	if c.active[q.id] != q {
		return false
	}
	delete(c.active, q.id)
	if anyToken {
		q.cancel()
	}
	f := &finishedQuery{slug: q.slug, final: final, token: token, anyToken: anyToken}
	if len(c.finOrder) < finishedLimit {
		c.finOrder = append(c.finOrder, q.id)
	} else {
		delete(c.finished, c.finOrder[c.finHead])
		c.finOrder[c.finHead] = q.id
		c.finHead = (c.finHead + 1) % len(c.finOrder)
	}
	c.finished[q.id] = f
	return true
}

// uptime formats the time since the last (re)start the way Presto's Duration does.
func (c *Coordinator) uptime(now time.Time) string {
	return formatDuration(now.Sub(time.Unix(0, c.startedAt.Load())))
}

func formatDuration(d time.Duration) string {
	units := []struct {
		name string
		size time.Duration
	}{
		{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second},
		{"ms", time.Millisecond}, {"us", time.Microsecond},
	}
	for _, u := range units {
		if d >= u.size {
			return strconv.FormatFloat(float64(d)/float64(u.size), 'f', 2, 64) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + ".00ns"
}
