package coordinator

import (
	"context"
	"crypto/rand"
	"crypto/tls"
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
	DefaultTrinoVersion = "476-zkpresto-sim"
	DefaultBatchRows    = 100
	DefaultAbandonAfter = time.Minute
	DefaultRecordLimit  = 10000
)

// finishedLimit bounds how many final answers are kept for replay after a query ends.
const finishedLimit = 1024

// maxHeaderBytes is how much request header a coordinator reads. Prepared statements travel
// in headers and Presto and Trino servers accept about 2 MB of them; Go's default of 1 MB
// would refuse what a real coordinator takes, so a gateway test could not send it through.
const maxHeaderBytes = 4 << 20

// ErrClosed is returned by Restart after Close.
var ErrClosed = errors.New("coordinator: closed")

// Flavour is the server a coordinator stands in for: it decides the prefix of the headers it
// reads and of those it answers with.
type Flavour string

// The flavours. PrestoDB speaks X-Presto-* headers, Trino X-Trino-* ones.
const (
	Presto Flavour = "presto"
	Trino  Flavour = "trino"
)

// HeaderPrefix is the flavour's spelling of the protocol's headers,
// "X-Presto-" or "X-Trino-".
func (f Flavour) HeaderPrefix() string {
	if f == Trino {
		return "X-Trino-"
	}
	return "X-Presto-"
}

// Options configures a simulated coordinator. The zero value is usable.
type Options struct {
	// Name is reported in the coordinator column of results; default "coordinator".
	Name string
	// Addr is the listen address; default "127.0.0.1:0" (a free loopback port).
	Addr string
	// Latency is the server-side time a statement takes before its results are final,
	// counted from dispatch (the first GET of its queued nextUri; with MaxRunning, from
	// when it gets a slot) and spent across polls. See also SetLatency.
	Latency time.Duration
	// Version is reported as nodeVersion.version by /v1/info; default "0.289-zkpresto-sim",
	// or "476-zkpresto-sim" for Trino.
	Version string
	// Flavour is the server simulated; default Presto. A Presto coordinator answers with
	// X-Presto-* headers and reads X-Presto-* and, unless StrictPrefix is set, X-Trino-*
	// session headers; a Trino coordinator answers with X-Trino-* headers and ignores
	// X-Presto-* ones, as Trino does, so a test sees whether a proxy translated them.
	Flavour Flavour
	// StrictPrefix makes a Presto coordinator ignore X-Trino-* headers, as PrestoDB does.
	StrictPrefix bool
	// HonourForwarded makes the coordinator build nextUri, partialCancelUri and infoUri from
	// the forwarding headers of each request, like Trino with
	// http-server.process-forwarded=true: X-Forwarded-Proto, -Host, -Port and -Prefix for
	// Trino; X-Forwarded-Proto and X-Presto-Prefix-Url for Presto. Without it they are
	// recorded and otherwise ignored.
	HonourForwarded bool
	// NoGzip turns off compressing statement answers for clients that accept gzip.
	NoGzip bool
	// PageDelay is how long each poll waits before answering once the statement is ready:
	// slow pages. The slow(ms) marker sets it for one statement. See also SetPageDelay.
	PageDelay time.Duration
	// Starting makes the node start in the starting state; see SetStarting.
	Starting bool
	// BatchRows is the number of rows(N) rows sent per poll; default 100.
	BatchRows int
	// AbandonAfter is how long a query may go unpolled before it is dropped; default 1m.
	AbandonAfter time.Duration
	// RecordLimit is how many recent submissions Requests keeps; default 10000.
	RecordLimit int
	// TLS, when set, makes the coordinator serve https with it (its
	// links, URL and registrations then say https).
	TLS *tls.Config
	// Spooling makes a Trino coordinator answer clients that send
	// X-Trino-Query-Data-Encoding with "json" among its encodings with spooled segments
	// instead of inline rows; see SpoolingMode. Off by default.
	Spooling SpoolingMode
	// NoInlining makes a spooling coordinator spool every page, however small, as Trino
	// does with protocol.spooling.inlining.enabled=false; by default a page of at most
	// 1000 rows and 128 kB goes inline, in a segment of type "inline" (SpoolingConfig's
	// inlining defaults).
	NoInlining bool
	// MaxRunning, when positive, runs at most this many statements at once,
	// as a Presto resource group's hard concurrency limit does: the others
	// wait on the queued resource, QUEUED, until one finishes.
	// 0 runs every statement at once.
	MaxRunning int
	// RequiredWorkersMaxWait is how long a statement waits on the queued resource for a
	// worker while the coordinator has none (SetNoWorkers), as the servers'
	// query-manager.required-workers-max-wait; default 5 minutes, theirs.
	RequiredWorkersMaxWait time.Duration
	// MaxQueued, with MaxRunning, is how many statements may wait for a
	// slot, as a resource group's maxQueued: the next one fails at its
	// dispatch (the first GET) with QUERY_QUEUE_FULL ("Too many queued
	// queries for \"global\""), never having run. 0 lets any number wait.
	MaxQueued int
	// QueuedPolls is how many GETs of a query's queued nextUri answer QUEUED before its
	// links move to /v1/statement/executing, as under a busy dispatcher (trino:
	// dispatcher/QueuedStatementResource.java answers QUEUED until the query is
	// dispatched). 0: the first GET dispatches the query and points to executing token 0;
	// on PrestoDB it answers the executing resource's first page itself, rows included,
	// pointing to executing token 1 (see the package doc).
	QueuedPolls int
	// RequireAuthorization makes the coordinator authenticate every request to the
	// statement and query resources, submissions, polls and cancellations alike, as a
	// PrestoDB with http-server.authentication.type set does on https (its
	// com.facebook.presto.server.security.AuthenticationFilter is a servlet filter on every
	// request). Trino 476 authenticates the submission and leaves a statement's follow-ups
	// public, their slug guarding them (a DELETE without credentials cancels its query
	// there; seen with JWT authentication). A request without
	// an Authorization header is answered 401 with a WWW-Authenticate challenge, and so is
	// a Negotiate (Kerberos SPNEGO) token the coordinator has seen before, which the
	// servers' Kerberos authenticator refuses as a replay (the JDK's GSS acceptor keeps a
	// replay cache: a token is good for one request). Any other Authorization is accepted
	// as it is: the simulator checks no password and no signature.
	RequireAuthorization bool
	// OAuth2, when set, makes the coordinator authenticate statements and
	// queries with OAuth2 external authentication, as Trino does (and
	// PrestoDB, which took it from Trino); see OAuth2.
	OAuth2 *OAuth2
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Flavour == "" {
		o.Flavour = Presto
	}
	if o.Version == "" {
		o.Version = DefaultVersion
		if o.Flavour == Trino {
			o.Version = DefaultTrinoVersion
		}
	}
	if o.PageDelay < 0 {
		o.PageDelay = 0
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
	// Path, Role and OriginalUser are the X-*-Path, X-*-Role and
	// X-*-Original-User headers as sent: what SET PATH, SET ROLE and SET
	// SESSION AUTHORIZATION made the client send ("" when absent).
	Path, Role, OriginalUser string
	// Password is the password of HTTP basic authentication ("" without).
	Password string
	// Trino reports that the session headers used the X-Trino- prefix.
	Trino bool
	// TransactionID is the transaction the statement ran in, from X-*-Transaction-Id
	// (empty outside a transaction; "NONE", which Java clients send, counts as none).
	TransactionID string
	// TransactionSupport reports that the client sent X-*-Transaction-Id at all
	// ("NONE" included): the servers start a transaction only for such a client
	// (Trino's HttpRequestSessionContextFactory sets clientTransactionSupport
	// from the header's presence, and StartTransactionTask refuses without it;
	// PrestoDB's HttpRequestSessionContext and StartTransactionTask agree).
	TransactionSupport bool
	// PreparedStatements names the statements of the X-*-Prepared-Statement headers, in
	// the order they came.
	PreparedStatements []string
	// QueryDataEncoding is the X-*-Query-Data-Encoding header: the spooling encodings the
	// client accepts.
	QueryDataEncoding string
	// Wire tells how the HTTP request arrived.
	Wire
	// Rejected reports that the statement was refused or never ran: empty SQL, a bad or
	// duplicate pre-minted query id, or a submission dispatched by a starting coordinator
	// or one without workers (answered 200, failed at dispatch; see SetStarting).
	Rejected bool
	// Reset reports that the statement was read whole and its connection then reset,
	// unanswered (see SetResetting): it reached the coordinator, and may have run.
	Reset bool
	// Time is when the submission was received.
	Time time.Time
}

func (r Request) clone() Request {
	r.SessionProperties = maps.Clone(r.SessionProperties)
	r.ClientTags = slices.Clone(r.ClientTags)
	r.PreparedStatements = slices.Clone(r.PreparedStatements)
	r.Wire = r.Wire.clone()
	return r
}

// Wire is what a test may check about how an HTTP request reached the coordinator, such as
// whether a proxy translated, compressed or forwarded it.
type Wire struct {
	// PrestoHeaders and TrinoHeaders count the request headers named X-Presto-* and
	// X-Trino-*, whichever the coordinator reads.
	PrestoHeaders, TrinoHeaders int
	// HeaderBytes is the size of the request headers: names, values and separators.
	HeaderBytes int
	// AcceptGzip reports that the client accepts gzip-compressed answers.
	AcceptGzip bool
	// Gzipped reports that the answer was sent gzip-compressed.
	Gzipped bool
	// Forwarded holds the Forwarded, X-Forwarded-* and X-Presto-Prefix-Url headers as
	// received, honoured or not; nil when there were none.
	Forwarded http.Header
	// Identity holds the Authorization header and the X-Presto- and X-Trino- Role,
	// Extra-Credential, Trace-Token and Resource-Estimate headers as received, for tests
	// of what a client sends; nil when there were none.
	Identity http.Header
}

func (w Wire) clone() Wire {
	w.Forwarded = w.Forwarded.Clone()
	w.Identity = w.Identity.Clone()
	return w
}

// Call is one HTTP request to the statement or query resources (/v1/statement/...,
// /v1/query/...): submissions, polls, HEADs and cancellations alike.
type Call struct {
	// Method and Path are the request's method and URL path.
	Method, Path string
	// QueryID is the query the request was about (empty for a refused submission).
	QueryID string
	// Status is the status answered; 0 when the connection was broken instead.
	Status int
	// Time is when the request was received.
	Time time.Time
	// Wire tells how the request arrived.
	Wire
}

// Coordinator is a simulated Presto coordinator. All methods are safe for concurrent use.
type Coordinator struct {
	name      string
	version   string
	batchRows int
	abandon   time.Duration
	idSuffix  string // distinguishes query ids of different coordinators
	flavour   Flavour
	strict    bool
	forwarded bool // honour forwarding headers
	gzip      bool
	tls       *tls.Config  // serve https with it, when set
	spool     *spooler     // nil unless Options.Spooling
	oauth     *oauth2State // nil unless Options.OAuth2

	latency        atomic.Int64 // nanoseconds
	answerDelay    atomic.Int64 // nanoseconds a submission's answer waits after acceptance
	pageDelay      atomic.Int64 // nanoseconds a poll waits once the statement is ready
	openConns      atomic.Int64 // HTTP connections open now
	starting       atomic.Bool
	noWorkers      atomic.Bool            // see SetNoWorkers
	nodeState      atomic.Pointer[string] // see SetNodeState
	forceQueueFull atomic.Bool            // see SetQueueFull
	resetting      atomic.Bool            // see SetResetting
	statements     atomic.Int64
	querySeq       atomic.Int64
	startedAt      atomic.Int64 // unix nanos of the last (re)start, read by /v1/info without lifeMu

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
	calls     []Call // ring of HTTP requests, oldest at callHead once full
	callHead  int
	users     map[string]int64
	txns      map[string]*txn // open transactions
	lastSweep time.Time
	// With Options.MaxRunning: the slots in use and the queries waiting
	// for one, oldest first (ended ones are skipped when they come up).
	maxRunning int
	maxQueued  int
	// requiredWorkersWait is Options.RequiredWorkersMaxWait, defaulted.
	requiredWorkersWait time.Duration
	slotsUsed           int
	waiting             []*query
	// undispatched counts the queries of active submitted and not yet fetched.
	undispatched  int
	queuedPolls   int             // Options.QueuedPolls
	requireAuth   bool            // Options.RequireAuthorization
	negotiateMu   sync.Mutex      // guards negotiateSeen
	negotiateSeen map[string]bool // the Negotiate tokens seen, for RequireAuthorization
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
	if opts.Flavour != Presto && opts.Flavour != Trino {
		return nil, fmt.Errorf("coordinator: unknown flavour %q (want %q or %q)", opts.Flavour, Presto, Trino)
	}
	c := &Coordinator{
		name:                opts.Name,
		version:             opts.Version,
		batchRows:           opts.BatchRows,
		abandon:             opts.AbandonAfter,
		idSuffix:            strings.ToLower(rand.Text()[:5]),
		addr:                opts.Addr,
		active:              make(map[string]*query),
		finished:            make(map[string]*finishedQuery),
		recLimit:            opts.RecordLimit,
		users:               make(map[string]int64),
		txns:                make(map[string]*txn),
		flavour:             opts.Flavour,
		strict:              opts.StrictPrefix,
		forwarded:           opts.HonourForwarded,
		gzip:                !opts.NoGzip,
		tls:                 opts.TLS,
		maxRunning:          max(opts.MaxRunning, 0),
		maxQueued:           max(opts.MaxQueued, 0),
		requiredWorkersWait: opts.RequiredWorkersMaxWait,
		queuedPolls:         max(opts.QueuedPolls, 0),
		requireAuth:         opts.RequireAuthorization,
		negotiateSeen:       make(map[string]bool),
	}
	if c.requiredWorkersWait <= 0 {
		c.requiredWorkersWait = 5 * time.Minute
	}
	if opts.OAuth2 != nil {
		o, err := newOAuth2State(*opts.OAuth2)
		if err != nil {
			return nil, err
		}
		c.oauth = o
	}
	if opts.Spooling != SpoolingOff {
		c.spool = newSpooler(opts.Spooling)
		c.spool.inline = !opts.NoInlining
	}
	c.latency.Store(int64(opts.Latency))
	c.pageDelay.Store(int64(opts.PageDelay))
	c.starting.Store(opts.Starting)
	if err := c.listen(); err != nil {
		if c.spool != nil {
			c.spool.close()
		}
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
	if c.tls != nil {
		ln = tls.NewListener(ln, c.tls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{serveDone: make(chan struct{}), ctx: ctx, cancel: cancel}
	s.srv = &http.Server{
		Handler:           c.routes(s),
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
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

// URL returns the coordinator's base URL, http://host:port (https:// with
// Options.TLS).
func (c *Coordinator) URL() string { return c.Scheme() + "://" + c.Addr() }

// Scheme returns "https" for a coordinator started with Options.TLS, else
// "http".
func (c *Coordinator) Scheme() string {
	if c.tls != nil {
		return "https"
	}
	return "http"
}

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

// Calls returns the most recent requests to the statement and query resources, oldest
// first (at most Options.RecordLimit).
func (c *Coordinator) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Call, 0, len(c.calls))
	for i := range c.calls {
		call := c.calls[(c.callHead+i)%len(c.calls)]
		call.Wire = call.Wire.clone()
		out = append(out, call)
	}
	return out
}

// Flavour returns the server the coordinator simulates.
func (c *Coordinator) Flavour() Flavour { return c.flavour }

// Transactions returns how many transactions are open: started and neither committed nor
// rolled back. Stop forgets them, as a coordinator that dies loses its transactions.
func (c *Coordinator) Transactions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.txns)
}

// Users returns the number of submissions per user, counted like Statements.
func (c *Coordinator) Users() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.users)
}

// Load returns the statements running and waiting for a slot now, the
// figures the coordinator reports at /v1/cluster (Presto) or through its
// QueryManager mbean (Trino). Without Options.MaxRunning every accepted
// statement runs.
func (c *Coordinator) Load() (running, queued int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dispatched := len(c.active) - c.undispatched
	if c.maxRunning == 0 {
		return int64(dispatched), 0
	}
	return int64(c.slotsUsed), int64(dispatched - c.slotsUsed)
}

// Running returns how many accepted statements have not finished yet, dispatched or not.
func (c *Coordinator) Running() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(len(c.active))
}

// SetLatency changes the latency of statements submitted from now on.
func (c *Coordinator) SetLatency(d time.Duration) { c.latency.Store(int64(max(d, 0))) }

// SetPageDelay changes Options.PageDelay for polls from now on.
func (c *Coordinator) SetPageDelay(d time.Duration) { c.pageDelay.Store(int64(max(d, 0))) }

// SetAnswerDelay makes each submission wait d after the query was accepted
// (it runs, and Running counts it) before its answer is written: a
// coordinator slow to answer POST /v1/statement. The wait ends early only
// when the coordinator stops, not when the client goes away.
func (c *Coordinator) SetAnswerDelay(d time.Duration) { c.answerDelay.Store(int64(max(d, 0))) }

// SetResetting switches the resetting fault: while on, a statement submission is read
// whole, recorded with Request.Reset, and its connection reset (SO_LINGER 0, then close:
// an RST) without a byte of an answer, as when a coordinator's process dies the moment a
// statement arrived. Statements counts it; other requests are served as usual.
func (c *Coordinator) SetResetting(on bool) { c.resetting.Store(on) }

// OpenConns returns how many HTTP connections clients hold open to the
// coordinator now.
func (c *Coordinator) OpenConns() int64 { return c.openConns.Load() }

// SetNoWorkers switches the state of a coordinator whose workers are all gone: a statement
// dispatched meanwhile stays on the queued resource, QUEUED, until a worker comes back or
// Options.RequiredWorkersMaxWait has passed, when it fails there with
// GENERIC_INSUFFICIENT_RESOURCES, never planned; /v1/info does not say so, as on the servers.
// Its active workers, in /v1/cluster's activeWorkers (PrestoDB) or the node manager mbean's
// ActiveNodeCount (Trino, where the coordinator counts too), fall from 1 to 0.
func (c *Coordinator) SetNoWorkers(on bool) { c.noWorkers.Store(on) }

// SetNodeState makes GET /v1/info/state answer state ("SHUTTING_DOWN" as a server whose
// graceful shutdown was asked for; Trino's "DRAINING", "DRAINED"); "" goes back to ACTIVE
// (INACTIVE while starting). Statements are served as before: the simulator does not shut
// down.
func (c *Coordinator) SetNodeState(state string) {
	if state == "" {
		c.nodeState.Store(nil)
		return
	}
	c.nodeState.Store(&state)
}

// activeWorkers is what the servers report as the active workers, the coordinator left out.
func (c *Coordinator) activeWorkers() int64 {
	if c.noWorkers.Load() {
		return 0
	}
	return 1
}

// SetQueueFull switches the state of a coordinator whose resource group can neither run nor
// queue another statement, as Options.MaxQueued reached does: statements dispatched meanwhile
// fail with QUERY_QUEUE_FULL, never having run.
func (c *Coordinator) SetQueueFull(on bool) { c.forceQueueFull.Store(on) }

// SetStarting switches the starting state: while starting, /v1/info says "starting": true,
// /v1/info/state INACTIVE, and a statement dispatched meanwhile (answered 200 and QUEUED
// like any other, then the first GET of its nextUri) fails there with SERVER_STARTING_UP,
// never having run, as on Trino and PrestoDB; nothing answers 503.
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
	clear(c.txns)
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
	err := c.stopLocked()
	if c.spool != nil {
		c.spool.close()
	}
	return err
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

// markNeverRan sets Rejected on the record of the submission of query id: it failed at
// dispatch and never ran.
func (c *Coordinator) markNeverRan(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.records {
		if c.records[i].QueryID == id {
			c.records[i].Rejected = true
		}
	}
}

// recordCall stores an HTTP request to the statement or query resources.
func (c *Coordinator) recordCall(call Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) < c.recLimit {
		c.calls = append(c.calls, call)
		return
	}
	c.calls[c.callHead] = call
	c.callHead = (c.callHead + 1) % len(c.calls)
}

// txn is an open transaction.
type txn struct {
	// aborted is set when a statement in the transaction failed or was
	// cancelled after its dispatch: the servers then refuse every statement
	// of it but ROLLBACK and COMMIT, and COMMIT fails (trino:
	// transaction/InMemoryTransactionManager.java, TransactionMetadata.abort
	// and checkOpenTransaction, called by QueryStateMachine on failure;
	// prestodb: presto-main transaction/InMemoryTransactionManager.java).
	aborted bool
}

// transactionState reports whether id names an open transaction, and
// whether it is aborted.
func (c *Coordinator) transactionState(id string) (open, aborted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.txns[id]
	return ok, ok && t.aborted
}

// register records a new query at its submission, dropping abandoned ones first. It reports
// false when the id is already taken (possible with pre-minted ids). The query is not
// dispatched yet: it takes no slot and starts no transaction until its queued nextUri is
// fetched (trino: dispatcher/QueuedStatementResource.java, Query.submitIfNeeded; prestodb:
// server/protocol/QueuedStatementResource.java, Query.waitForDispatched).
func (c *Coordinator) register(q *query, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, taken := c.active[q.id]; taken {
		return false
	}
	if _, taken := c.finished[q.id]; taken {
		return false
	}
	// Sweeping at most once a second keeps submission cheap with many queries open. A
	// query submitted and never fetched is dropped as well, as Trino's QueryManager purges
	// a submission older than the client timeout.
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
	c.undispatched++
	return true
}

// dispatch creates the query registered by register, at the first GET of its queued nextUri:
// it takes a slot (or waits for one, Options.MaxRunning) and opens or closes the transaction
// the statement starts or ends, so the next statement of the client sees the change. It
// reports false when the query ended before (canceled or abandoned).
func (c *Coordinator) dispatch(q *query, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active[q.id] != q {
		return false
	}
	if q.dispatched.Swap(true) {
		return true
	}
	c.undispatched--
	// Its latency counts from dispatch, as a real query's does.
	q.ready.Store(now.Add(q.runFor).UnixNano())
	if c.maxRunning > 0 {
		if c.slotsUsed < c.maxRunning {
			c.slotsUsed++
			q.started = true
		} else {
			q.ready.Store(queuedNanos)
			c.waiting = append(c.waiting, q)
		}
	}
	if id := q.plan.beginTxn; id != "" {
		c.txns[id] = &txn{}
	}
	if id := q.plan.endTxn; id != "" {
		delete(c.txns, id)
	}
	return true
}

// queueFull reports whether a statement dispatched now would find every
// slot taken and the queue at Options.MaxQueued.
func (c *Coordinator) queueFull() bool {
	if c.forceQueueFull.Load() {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.maxRunning == 0 || c.maxQueued == 0 || c.slotsUsed < c.maxRunning {
		return false
	}
	waiting := 0
	for _, w := range c.waiting {
		if c.active[w.id] == w {
			waiting++
		}
	}
	return waiting >= c.maxQueued
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
func (c *Coordinator) end(q *query, final *answer, token int64, anyToken bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endLocked(q, final, token, anyToken)
}

func (c *Coordinator) endLocked(q *query, final *answer, token int64, anyToken bool) bool {
	if c.active[q.id] != q {
		return false
	}
	delete(c.active, q.id)
	if !q.dispatched.Load() {
		c.undispatched--
	} else if t := c.txns[q.req.TransactionID]; t != nil && final != nil && final.err != nil {
		t.aborted = true
	}
	if anyToken {
		q.cancel()
	}
	if q.started {
		q.started = false
		c.slotsUsed--
		c.startWaitingLocked(time.Now())
	}
	phase := phaseQueued
	if q.executing.Load() {
		phase = phaseExecuting
	}
	f := &finishedQuery{
		slug: q.slug, flavour: q.flavour, phase: phase, final: final, token: token, anyToken: anyToken,
		queuedTok: q.queuedTokNow.Load(), queuedLast: q.queuedLastNow.Load(), req: q.req, created: q.created, ended: time.Now(), rows: q.sent.Load(),
	}
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

// startWaitingLocked gives the free slots to the queries that waited
// longest; a query's latency counts from then.
func (c *Coordinator) startWaitingLocked(now time.Time) {
	for c.slotsUsed < c.maxRunning && len(c.waiting) > 0 {
		q := c.waiting[0]
		c.waiting[0] = nil
		c.waiting = c.waiting[1:]
		if c.active[q.id] != q {
			continue // canceled or abandoned while it waited
		}
		c.slotsUsed++
		q.started = true
		q.ready.Store(now.Add(q.runFor).UnixNano())
	}
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
