// Package registrar keeps a Presto coordinator registered in ZooKeeper while
// it is healthy. Presto coordinators do not register themselves (HiveServer2
// and Kyuubi do), so a registrar runs beside each one: it polls the
// coordinator's GET /v1/info, holds an ephemeral-sequential znode in the
// format the driver reads while the coordinator is ready, removes it when it
// is not, and on shutdown removes it before closing its session so that
// clients stop picking the coordinator at once.
//
// The znode is named like Hive's and Kyuubi's
// (serverUri=host:port;version=V;sequence=N) and carries zkpresto's data
// (uri=...;weight=W;zone=Z;version=V;), as written by discovery.ZnodeName and
// discovery.FormatZnodeData.
package registrar

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/internal/zkconn"
)

// Defaults for the zero values of Config.
const (
	// DefaultNamespace is the namespace znode, as in the driver's DSN.
	DefaultNamespace = "presto"
	// DefaultInterval is the time between health checks.
	DefaultInterval = 5 * time.Second
	// DefaultSessionTimeout is the ZooKeeper session timeout.
	DefaultSessionTimeout = 15 * time.Second
	// DefaultFailureThreshold is how many failed checks in a row deregister.
	DefaultFailureThreshold = 2
	// drainTimeout bounds the wait for the session and the deletes on
	// shutdown; closing the session removes the ephemeral znodes anyway,
	// only later for watchers, and not at all while ZooKeeper cannot hear
	// the close: then they stay until the session expires.
	drainTimeout = 5 * time.Second
)

// Auth is ZooKeeper authentication information, as for zk.Conn.AddAuth.
type Auth struct {
	// Scheme is the authentication scheme, e.g. "digest".
	Scheme string
	// Credentials are the scheme's credentials, e.g. "user:password" for
	// digest. They are never logged.
	Credentials []byte
}

// Config configures a Registrar.
type Config struct {
	// Servers are the ZooKeeper ensemble's "host:port" addresses, read as
	// the driver's discovery reads them: a host without a port gets 2181,
	// and IPv6 addresses go in brackets ("[::1]:2181").
	Servers []string
	// Namespace is the znode under which coordinators register, without
	// slashes around it ("a/b" for nested paths); default "presto". New
	// rejects one ZooKeeper would refuse to create.
	Namespace string
	// AdvertiseURI is the address clients use for this coordinator:
	// http://host:port or https://host:port. A bare host:port is refused:
	// whether clients should speak TLS to it is not ours to guess.
	AdvertiseURI string
	// CoordinatorURL is where the health check polls /v1/info; default
	// AdvertiseURI. Set it when the coordinator is reachable from the
	// registrar under another address (e.g. http://127.0.0.1:8080).
	CoordinatorURL string
	// Weight is the node's weight for the weighted strategies; default 1.
	Weight int
	// Zone is an optional zone label.
	Zone string
	// Version is the registered Presto version; default the coordinator's
	// nodeVersion.version from /v1/info.
	Version string
	// WebUI, when set, is where users reach the coordinator's web UI,
	// http[s]://host[:port][/prefix], when not at AdvertiseURI: it is
	// registered as the discovery.MetadataWebUI entry, and the gateway
	// sends a query's infoUri there.
	WebUI string
	// Interval is the time between health checks; default 5s. It also
	// bounds each check and how soon a znode deleted by someone else is
	// noticed if its watch was missed.
	Interval time.Duration
	// FailureThreshold is how many consecutive failed health checks
	// (errors, timeouts, non-200 answers) deregister the coordinator;
	// default 2. A coordinator that answers but says it takes no work is
	// not ready at once, because that answer is not noise: "starting": true
	// in /v1/info, a GET /v1/info/state of SHUTTING_DOWN (or Trino's
	// DRAINING or DRAINED), fewer active workers than MinWorkers, or a drain
	// mark (SetDrained). Its registration is then marked notready=REASON
	// (discovery.Node.NotReady), which zkpresto's clients skip while another
	// coordinator is ready, or removed with UnlistNotReady.
	FailureThreshold int
	// MinWorkers is how many active workers the coordinator needs to be
	// ready (at each health check, read as WorkersSource says); 0 reads
	// none. `zkpresto register` defaults it to 1: a coordinator without
	// workers keeps every statement queued for
	// query-manager.required-workers-max-wait (5 minutes) and then fails
	// it. Trino's count leaves the coordinator out: with
	// node-scheduler.include-coordinator=true, use 0. A failed read does
	// not make the coordinator not ready; it is logged.
	MinWorkers int
	// WorkersSource says which server the coordinator is, for MinWorkers:
	// LoadFromTrino reads the node manager mbean's ActiveNodeCount,
	// LoadFromPresto GET /v1/cluster's activeWorkers. Empty takes Load's
	// source, or without Load tries each and keeps to the one that answers.
	// The reads are sent as Load's User and Password, or DefaultLoadUser.
	WorkersSource LoadSource
	// UnlistNotReady removes the registration of a coordinator that is not
	// ready instead of marking it, as registrars before the mark did: for a
	// namespace also read by clients that know no notready= (Hive or Kyuubi
	// readers, older zkpresto releases).
	UnlistNotReady bool
	// SessionTimeout is the ZooKeeper session timeout; default 15s.
	SessionTimeout time.Duration
	// Auth, when set, is added to the session (and again after every
	// reconnect). The znodes the registrar creates then get the ACL
	// "auth:all plus world:read": anyone may discover the coordinator, only
	// the registrar's identity may change or remove its registration.
	// Without Auth they are open to all (world:anyone, all permissions).
	Auth *Auth
	// TLS, when set, makes the registrar talk to ZooKeeper over TLS (the
	// server's secureClientPort). An empty ServerName is set to each
	// server's host.
	TLS *tls.Config
	// HTTPClient polls the coordinator; default a client of its own that
	// follows no redirects. Each check is bounded by Interval.
	HTTPClient *http.Client
	// Logger receives the registrar's logs; nil means none. Every failed
	// health check and every ZooKeeper problem is logged at WARN (the
	// first at once, repeats as set by RepeatLogInterval) and each
	// recovery at INFO, so that a registrar that logs nothing at INFO is
	// one with nothing wrong.
	Logger *slog.Logger
	// RepeatLogInterval is how often a problem that keeps happening is
	// logged again, with the number of repeats in between; default 30s.
	RepeatLogInterval time.Duration
	// Load, when set, publishes the coordinator's running and queued
	// queries in the znode's data, read from CoordinatorURL with
	// HTTPClient, for clients that balance on them (shared_p2c). Nil
	// publishes nothing: clients then balance the coordinator on what
	// they know themselves.
	Load *LoadPublishing
}

// Status is a point-in-time view of a Registrar, for metrics and operators.
type Status struct {
	// Registered is true while the registrar holds its znode.
	Registered bool
	// Path is the registered znode's full path; empty while unregistered.
	Path string
	// Healthy is the coordinator's readiness after the failure threshold:
	// it answers and is ready (NotReady is empty).
	Healthy bool
	// NotReady is why a coordinator that answers is not ready ("starting",
	// "SHUTTING_DOWN", "workers:0/1", "drained"), as written in its
	// registration (or why it is unlisted, with Config.UnlistNotReady);
	// empty when ready or not answering.
	NotReady string
	// Connected is true while the registrar has a live ZooKeeper session.
	Connected bool
	// LastCheck is when the last health check finished; zero before the first.
	LastCheck time.Time
	// LastError explains why the last health check or registration step
	// failed; empty after success.
	LastError string
	// Registrations counts znodes created, the first one included.
	Registrations uint64
	// HealthCheckFailures counts failed health checks ("starting" included).
	HealthCheckFailures uint64
	// SessionReRegistrations counts registrations made again because the
	// ZooKeeper session that held the previous znode expired.
	SessionReRegistrations uint64
	// LoadWrites counts writes of the load figures (Config.Load).
	LoadWrites uint64
	// ReadinessWrites counts readiness changes (NotReady) written, each by
	// a new znode that replaces the registered one, created first.
	ReadinessWrites uint64
	// Load is the figure last written; the zero value when none is (not
	// publishing, or the last read failed).
	Load discovery.PublishedLoad
}

// Registrar registers one coordinator. Create it with New and call Run once;
// Status is safe to call from any goroutine.
type Registrar struct {
	cfg     Config
	path    string // namespace path, "/presto"
	node    discovery.Node
	infoURL string
	acl     []zk.ACL
	http    *http.Client
	log     *slog.Logger
	// problems rate-limits the lines about what keeps going wrong.
	problems *problemLog

	wake chan struct{} // session events and watches nudge the loop

	// quietMu and quiet stop go-zookeeper's callbacks from logging once
	// the registrar closes its session: the close is no problem to report,
	// and Run must not write to the log after it returns.
	quietMu sync.RWMutex
	quiet   bool

	mu      sync.Mutex
	status  Status
	running bool

	// Owned by the Run goroutine.
	conn           *zk.Conn
	znode          string // our znode's path; "" while unregistered
	znodeData      []byte // what znode holds
	znodeSession   int64  // the session that created znode
	unsureSession  int64  // the session of a create whose answer was lost; 0 when none
	lostToExpiry   bool   // the last znode went with an expired session
	authAdded      bool
	failures       int  // consecutive failed checks
	stepFailed     bool // a ZooKeeper step failed in this reconcile
	watchers       sync.WaitGroup
	stopWatches    chan struct{}
	coordinatorVer string // version reported by /v1/info
	load           LoadPublishing
	loadReader     *loadReader // nil: not publishing
	loadGate       LoadGate
	watchArmed     atomic.Bool // the znode's watch is set
	down           bool        // the coordinator does not answer, after the threshold
	notReady       string      // why the answering coordinator is not ready, by its last check
	marked         string      // the not-ready reason the registration is built with
	workers        *workersReader
	drainPath      string
	drainMark      atomic.Bool // the drain mark exists, as last read
	// drainWatchArmed: the drain mark's watch is set and drainMark is its
	// answer.
	drainWatchArmed atomic.Bool
}

// New validates cfg and returns a Registrar. It does no I/O.
func New(cfg Config) (*Registrar, error) {
	servers, err := zkconn.Servers(cfg.Servers)
	if err != nil {
		return nil, fmt.Errorf("registrar: %w", err)
	}
	cfg.Servers = servers
	if strings.Trim(cfg.Namespace, "/") == "" {
		cfg.Namespace = DefaultNamespace
	}
	path, err := zkconn.Path(cfg.Namespace)
	if err != nil {
		return nil, fmt.Errorf("registrar: namespace %q: %w", cfg.Namespace, err)
	}
	cfg.Namespace = path[1:]
	scheme, addr, err := parseAdvertise(cfg.AdvertiseURI)
	if err != nil {
		return nil, fmt.Errorf("registrar: advertised URI: %w", err)
	}
	if cfg.CoordinatorURL == "" {
		cfg.CoordinatorURL = scheme + "://" + addr
	}
	base, err := url.Parse(strings.TrimRight(cfg.CoordinatorURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("registrar: coordinator URL %q: want http(s)://host:port", cfg.CoordinatorURL)
	}
	if cfg.Weight == 0 {
		cfg.Weight = 1
	}
	if cfg.Weight < 1 || cfg.Weight > 1_000_000 {
		return nil, fmt.Errorf("registrar: weight %d: want 1..1000000", cfg.Weight)
	}
	if strings.ContainsAny(cfg.Zone, ";=") || strings.TrimSpace(cfg.Zone) != cfg.Zone {
		return nil, fmt.Errorf("registrar: zone %q: must not contain ';', '=' or surrounding spaces", cfg.Zone)
	}
	if err := checkVersion(cfg.Version); err != nil {
		return nil, fmt.Errorf("registrar: version %q: %w", cfg.Version, err)
	}
	if cfg.WebUI != "" {
		u, err := url.Parse(cfg.WebUI)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(cfg.WebUI, "; ") {
			return nil, fmt.Errorf("registrar: web UI %q: want http[s]://host[:port][/prefix], without user info, query, ';' or spaces", cfg.WebUI)
		}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.FailureThreshold <= 0 {
		cfg.FailureThreshold = DefaultFailureThreshold
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.Auth != nil && (cfg.Auth.Scheme == "" || len(cfg.Auth.Credentials) == 0) {
		return nil, errors.New("registrar: ZooKeeper auth needs a scheme and credentials")
	}
	r := &Registrar{
		cfg:     cfg,
		path:    path,
		node:    discovery.Node{Addr: addr, Scheme: scheme, Weight: cfg.Weight, Zone: cfg.Zone, Version: cfg.Version, Metadata: webUIMetadata(cfg.WebUI)},
		infoURL: base.String() + "/v1/info",
		http:    cfg.HTTPClient,
		log:     cfg.Logger,
		wake:    make(chan struct{}, 1),
		acl:     zk.WorldACL(zk.PermAll),
		down:    true, // until the first check says otherwise
	}
	if cfg.Auth != nil {
		r.acl = append(zk.WorldACL(zk.PermRead), zk.AuthACL(zk.PermAll)...)
	}
	if r.http == nil {
		r.http = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if cfg.RepeatLogInterval <= 0 {
		r.cfg.RepeatLogInterval = DefaultRepeatLogInterval
	}
	r.problems = newProblemLog(r.log, r.cfg.RepeatLogInterval)
	if cfg.Load != nil {
		if r.load, err = cfg.Load.withDefaults(); err != nil {
			return nil, fmt.Errorf("registrar: %w", err)
		}
		r.loadReader = newLoadReader(r.http, cfg.CoordinatorURL, r.load)
	}
	switch {
	case cfg.MinWorkers < 0 || cfg.MinWorkers > 1_000_000:
		return nil, fmt.Errorf("registrar: minimum workers %d: want 0..1000000", cfg.MinWorkers)
	case cfg.WorkersSource != "" && cfg.WorkersSource != LoadFromPresto && cfg.WorkersSource != LoadFromTrino:
		return nil, fmt.Errorf("registrar: workers source %q: want %q or %q", cfg.WorkersSource, LoadFromPresto, LoadFromTrino)
	}
	if cfg.MinWorkers > 0 {
		source, user, pass := cfg.WorkersSource, "", ""
		if cfg.Load != nil {
			user, pass = r.load.User, r.load.Password
			if source == "" {
				source = r.load.Source
			}
		}
		r.workers = newWorkersReader(r.http, cfg.CoordinatorURL, source, user, pass)
	}
	if canon, err := discovery.CanonicalAddr(addr); err == nil {
		addr = canon // as SetDrained writes it
	}
	r.drainPath = DrainPath(cfg.Namespace, addr)
	// What we write must read back as the same node, or clients would
	// never see this coordinator.
	if _, err := r.desired(); err != nil {
		return nil, err
	}
	return r, nil
}

// parseAdvertise accepts http(s)://host:port. Without a scheme it refuses
// and says what to write: clients would otherwise get http for a
// coordinator that may only speak https.
func parseAdvertise(s string) (scheme, addr string, err error) {
	if s == "" {
		return "", "", errors.New("empty; want http(s)://host:port")
	}
	i := strings.Index(s, "://")
	if i < 0 {
		return "", "", fmt.Errorf("%q has no scheme: write http://%s (or https://%s for TLS)", s, s, s)
	}
	scheme, rest := strings.ToLower(s[:i]), s[i+3:]
	if scheme != "http" && scheme != "https" {
		return "", "", fmt.Errorf("%q: scheme must be http or https", s)
	}
	rest = strings.TrimSuffix(rest, "/")
	if strings.ContainsAny(rest, "/?#@;") {
		return "", "", fmt.Errorf("%q: want http(s)://host:port without path, user or parameters", s)
	}
	host, port, err := net.SplitHostPort(rest)
	if err != nil || host == "" || port == "" {
		return "", "", fmt.Errorf("%q: want http(s)://host:port", s)
	}
	return scheme, net.JoinHostPort(host, port), nil
}

func checkVersion(v string) error {
	if strings.ContainsAny(v, ";/=") || strings.TrimSpace(v) != v {
		return errors.New("must not contain ';', '/', '=' or surrounding spaces")
	}
	return nil
}

// desired returns the node to register: the configured one, with the
// coordinator's version when none was configured. It checks that the name
// and data read back as this node.
func (r *Registrar) desired() (discovery.Node, error) {
	n := r.node
	if n.Version == "" && checkVersion(r.coordinatorVer) == nil {
		n.Version = r.coordinatorVer
	}
	n.NotReady = r.marked
	got, err := discovery.ParseZnode(discovery.ZnodeName(n)+"0000000000", discovery.FormatZnodeData(n))
	if err != nil {
		return n, fmt.Errorf("registrar: the registration would not read back: %w", err)
	}
	if got.Addr != n.Addr || got.Scheme != n.Scheme || got.Weight != n.Weight || got.Zone != n.Zone {
		return n, fmt.Errorf("registrar: the registration reads back as %s weight %d zone %q, not %s weight %d zone %q",
			got.URL(), got.Weight, got.Zone, n.URL(), n.Weight, n.Zone)
	}
	return n, nil
}

// Node returns the coordinator as it is registered (or will be): address,
// scheme, weight, zone and the configured version.
func (r *Registrar) Node() discovery.Node { return r.node }

// Status returns the registrar's current state.
func (r *Registrar) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status
	if r.conn != nil {
		s.Connected = r.conn.State() == zk.StateHasSession
	}
	return s
}

func (r *Registrar) update(fn func(*Status)) {
	r.mu.Lock()
	fn(&r.status)
	r.mu.Unlock()
}

// fatalZKErrors are ZooKeeper errors that retrying cannot fix.
var fatalZKErrors = []error{zk.ErrNoAuth, zk.ErrAuthFailed, zk.ErrInvalidACL, zk.ErrBadArguments, zk.ErrNoChildrenForEphemerals}

func isFatal(err error) bool {
	for _, f := range fatalZKErrors {
		if errors.Is(err, f) {
			return true
		}
	}
	return false
}

// Run registers the coordinator while it is healthy until ctx is done, then
// deletes the znode, closes the session and returns nil. It returns an error
// at once when the ensemble cannot be used at all (a host that does not
// resolve) and when ZooKeeper refuses the registration in a way retrying
// cannot fix (no permission, failed authentication, a bad ACL). Losing
// ZooKeeper or the coordinator is not an error: Run keeps trying. Run may be
// called once.
func (r *Registrar) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return errors.New("registrar: Run called twice")
	}
	r.running = true
	r.mu.Unlock()

	conn, err := zkconn.Connect(r.zkConfig(), r.onEvent)
	if err != nil {
		return fmt.Errorf("registrar: ZooKeeper %s: %w", strings.Join(r.cfg.Servers, ","), err)
	}
	r.mu.Lock()
	r.conn = conn
	r.mu.Unlock()
	r.stopWatches = make(chan struct{})
	defer func() {
		close(r.stopWatches)
		r.watchers.Wait()
	}()
	r.log.Info("registrar started", "coordinator", r.infoURL, "advertise", r.node.URL(),
		"zookeeper", strings.Join(r.cfg.Servers, ","), "namespace", r.path)

	ticker := time.NewTicker(r.cfg.Interval)
	defer ticker.Stop()
	var loadTick <-chan time.Time // nil, never ready, when not publishing
	if r.loadReader != nil {
		t := time.NewTicker(r.load.Interval)
		defer t.Stop()
		loadTick = t.C
	}
	check := true // the first check runs at once
	for {
		if check {
			r.check(ctx)
		}
		if ctx.Err() == nil {
			r.stepFailed = false
			if err := r.reconcile(); err != nil {
				r.drain(conn)
				return err
			}
			if !r.stepFailed && conn.State() == zk.StateHasSession {
				r.problems.recover(groupStep, "ZooKeeper steps succeed again", "namespace", r.path)
			}
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				r.drain(conn)
				return nil
			case <-ticker.C:
				check = true
			case <-r.wake:
				check = false
			case <-loadTick:
				// A figure changes nothing reconcile looks at: wait on.
				r.publishLoad(ctx)
				continue
			}
			break wait
		}
	}
}

// onEvent runs on go-zookeeper's goroutine and must not block: it only
// logs and wakes the loop, which compares session IDs to notice expiry.
func (r *Registrar) onEvent(ev zk.Event) {
	r.quietMu.RLock()
	defer r.quietMu.RUnlock()
	if ev.Type == zk.EventSession && r.quiet {
		r.nudge()
		return
	}
	if ev.Type == zk.EventSession {
		switch ev.State {
		case zk.StateExpired:
			r.problems.warn(groupSession, "expired", true,
				"ZooKeeper session expired; the registration will be made again in a new session")
		case zk.StateDisconnected:
			r.problems.warn(groupSession, "disconnected", false, "ZooKeeper connection lost; reconnecting", "server", ev.Server)
		case zk.StateAuthFailed:
			r.problems.warn(groupSession, "auth", false, "ZooKeeper authentication failed", "server", ev.Server)
		case zk.StateHasSession:
			r.problems.recover(groupSession, "ZooKeeper session established", "server", ev.Server)
		}
		r.nudge()
	}
}

// onDialError reports a ZooKeeper server that cannot be reached; without
// it an ensemble that is down would leave the registrar waiting in
// silence. One problem per error text: each server's is its own.
func (r *Registrar) onDialError(err error) {
	r.quietMu.RLock()
	defer r.quietMu.RUnlock()
	if r.quiet {
		return
	}
	msg := zkconn.Redact(r.zkConfig(), err.Error())
	r.problems.warn(groupSession, "dial "+msg, false, "cannot reach ZooKeeper; retrying", "err", msg)
}

func (r *Registrar) nudge() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// check polls /v1/info once (and, when the coordinator answers ready, its
// node state and workers) and updates the health state. Readiness by
// /v1/info is wire.ProbeInfo's verdict, the one the driver's health checker
// and the CLI reach for the same answer.
func (r *Registrar) check(ctx context.Context) {
	probeCtx, cancel := context.WithTimeout(ctx, r.cfg.Interval)
	info := wire.ProbeInfo(probeCtx, r.http, r.cfg.CoordinatorURL)
	err := info.Err
	notReady := ""
	if info.Verdict == wire.Starting {
		notReady = NotReadyStarting
	}
	if info.Verdict == wire.Up {
		if state, leaving := r.leaving(probeCtx); leaving != nil {
			notReady, err = state, leaving
		} else if r.workers != nil {
			n, werr := r.workers.read(probeCtx)
			switch {
			case werr != nil && ctx.Err() == nil:
				// Not the coordinator's fault as far as we know: judged
				// by /v1/info and its state alone, as without MinWorkers.
				r.problems.warn(groupWorkers, werr.Error(), false, "cannot read the coordinator's active workers; taking it as ready",
					"coordinator", r.cfg.CoordinatorURL, "err", werr)
			case werr == nil && n < r.cfg.MinWorkers:
				notReady = fmt.Sprintf("%s%d/%d", notReadyWorkers, n, r.cfg.MinWorkers)
				err = fmt.Errorf("%s: %d active workers, fewer than the %d required", r.cfg.CoordinatorURL, n, r.cfg.MinWorkers)
				r.problems.resolve(groupWorkers)
			default:
				r.problems.resolve(groupWorkers)
			}
		}
	}
	cancel()
	if ctx.Err() != nil {
		return // shutting down; the answer does not matter
	}
	if info.Verdict != wire.Down {
		r.coordinatorVer = info.Version // desired checks it before use
	}
	healthyBefore := r.Status().Healthy
	if info.Verdict == wire.Down {
		r.failures++
		if r.failures >= r.cfg.FailureThreshold {
			r.down, r.notReady = true, ""
		}
	} else {
		r.failures = 0
		r.down, r.notReady = false, notReady
	}
	r.readiness(nil)
	now := time.Now()
	r.update(func(s *Status) {
		s.LastCheck = now
		if err != nil {
			s.HealthCheckFailures++
			s.LastError = err.Error()
		} else {
			s.LastError = ""
		}
	})
	switch {
	case err == nil && !healthyBefore:
		r.problems.resolve(groupCoordinator) // readiness logs the news
	case err == nil:
		r.problems.recover(groupCoordinator, "health checks pass again", "coordinator", r.infoURL)
	case !r.down && info.Verdict == wire.Down:
		r.problems.warn(groupCoordinator, err.Error(), false, "health check failed; still registered",
			"coordinator", r.infoURL, "reason", err, "consecutive", r.failures, "threshold", r.cfg.FailureThreshold)
	default:
		// Becoming not ready is always logged; staying so, rate-limited.
		r.problems.warn(groupCoordinator, err.Error(), healthyBefore, "coordinator is not ready",
			"coordinator", r.infoURL, "reason", err, "consecutive", r.failures)
	}
}

// readiness decides, from the last check and the drain mark (read again
// first, with a session), whether the coordinator is to be listed and with
// which not-ready reason, and publishes both in Status.
func (r *Registrar) readiness(conn *zk.Conn) (listed bool, reason string) {
	if conn != nil && conn.State() == zk.StateHasSession {
		r.drainMarked(conn)
	}
	reason = r.notReady
	if r.drainMark.Load() {
		reason = NotReadyDrained
	}
	if r.down {
		reason = ""
	}
	listed = !r.down && (reason == "" || !r.cfg.UnlistNotReady)
	if (reason == NotReadyDrained) != (r.marked == NotReadyDrained) {
		if reason == NotReadyDrained {
			r.log.Info("coordinator drained by an operator: marked not ready", "coordinator", r.infoURL, "mark", r.drainPath)
		} else {
			r.log.Info("drain mark removed", "coordinator", r.infoURL, "mark", r.drainPath)
		}
	}
	if healthy := !r.down && reason == ""; healthy && !r.Status().Healthy {
		r.log.Info("coordinator is ready", "coordinator", r.infoURL)
	}
	r.marked = reason
	r.update(func(s *Status) { s.Healthy, s.NotReady = !r.down && reason == "", reason })
	return listed, reason
}

// reconcile makes ZooKeeper match the health state: registered while
// healthy, not registered otherwise. Transient ZooKeeper errors are logged
// and left to the next round; fatal ones are returned.
func (r *Registrar) reconcile() error {
	conn := r.conn
	if conn.State() != zk.StateHasSession {
		return nil
	}
	session := conn.SessionID()
	if r.znode != "" && r.znodeSession != session {
		// An ephemeral znode lives and dies with its session.
		r.log.Warn("the registration went with the expired ZooKeeper session", "znode", r.znode)
		r.forget()
		r.lostToExpiry = true
	}
	if r.unsureSession != 0 && r.unsureSession != session {
		// Whatever a lost create left went with its session too.
		r.unsureSession = 0
	}
	if err := r.ensureAuth(conn); err != nil {
		return r.fail(err, "adding ZooKeeper credentials")
	}
	if listed, _ := r.readiness(conn); !listed {
		if r.znode != "" {
			if err := conn.Delete(r.znode, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return r.fail(err, "deregistering "+r.znode)
			}
			r.log.Info("deregistered", "znode", r.znode, "reason", r.Status().LastError)
			r.forget()
		}
		// Not ready means not listed, by a znode the registrar knows of
		// or by one a lost create left.
		return r.sweep(conn, session)
	}
	want, err := r.desired()
	if err != nil {
		return r.fail(err, "building the registration")
	}
	data := discovery.FormatZnodeData(want)
	if r.znode != "" {
		exists, _, err := conn.Exists(r.znode)
		if err != nil {
			return r.fail(err, "checking "+r.znode)
		}
		switch {
		case !exists:
			r.log.Warn("the registration was deleted by someone else; registering again", "znode", r.znode)
			r.forget()
		case string(data) != string(r.znodeData):
			// Readiness changed, or the coordinator's version (and with it
			// the name).
			if err := r.replace(conn, session, want, data); err != nil {
				return err
			}
			return r.sweep(conn, session)
		default:
			if !r.watchArmed.Load() {
				// A data change (our own load writes) used the watch up.
				r.watch(conn, r.znode)
			}
			return r.sweep(conn, session)
		}
	}
	return r.register(conn, session, want, data)
}

// replace writes a readiness change (or a new version) by a new znode created before the old
// one is deleted, so that a watcher of the children never sees the
// coordinator unlisted, as it did between a delete and a create. A Set of
// the same znode's data would be one write, but a client that watches the
// data of only some children (ZooKeeperConfig.LoadWatchSubset) would never
// see it; a new child reaches every client's children watch. While both
// are listed, clients take the older, the one whose name sorts first
// (discovery.NewSnapshot), so the change shows at the delete. The load
// figure last published goes into the new znode, and each of the two
// writes takes its place in the load's write budget (LoadGate.Spend).
func (r *Registrar) replace(conn *zk.Conn, session int64, want discovery.Node, data []byte) error {
	node := want
	node.Load = r.Status().Load
	created, err := conn.Create(r.path+"/"+discovery.ZnodeName(want), discovery.FormatZnodeData(node), zk.FlagEphemeral|zk.FlagSequence, r.acl)
	if err != nil {
		if !isFatal(err) && !errors.Is(err, zk.ErrNoNode) {
			r.unsureSession = session // as in register: the create may have been applied
		}
		return r.fail(err, "writing the readiness under "+r.path)
	}
	old := r.znode
	r.znode, r.znodeData = created, data
	r.loadGate.Spend(time.Now())
	r.update(func(s *Status) { s.Path = created; s.ReadinessWrites++ })
	r.log.Info("readiness written", "znode", created, "replacing", old, "not_ready", want.NotReady)
	if err := conn.Delete(old, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		// Ours and no longer known: the sweep removes it.
		r.unsureSession = session
		return r.fail(err, "removing the replaced "+old)
	}
	r.loadGate.Spend(time.Now())
	// The old znode's watch ended with it; the next round watches the new one.
	r.watchArmed.Store(false)
	r.nudge()
	return nil
}

// register creates the namespace if missing and the ephemeral-sequential
// znode, and watches the znode so that a deletion is noticed at once.
func (r *Registrar) register(conn *zk.Conn, session int64, node discovery.Node, data []byte) error {
	if err := r.createNamespace(conn); err != nil {
		return r.fail(err, "creating namespace "+r.path)
	}
	if err := r.removeOrphans(conn, session); err != nil {
		return r.fail(err, "listing "+r.path)
	}
	path, err := conn.Create(r.path+"/"+discovery.ZnodeName(node), data, zk.FlagEphemeral|zk.FlagSequence, r.acl)
	if err != nil {
		if !isFatal(err) && !errors.Is(err, zk.ErrNoNode) {
			// Not a refusal from ZooKeeper: the connection may have been
			// lost after the server applied the create, and the znode
			// then lists the coordinator in this session whatever the
			// registrar does next. Every path sweeps until it is gone.
			r.unsureSession = session
		}
		return r.fail(err, "registering under "+r.path)
	}
	r.znode, r.znodeData, r.znodeSession = path, data, session
	// A new znode carries no figure yet.
	r.loadGate = LoadGate{Threshold: r.load.Threshold, MinGap: r.load.MinGap, Burst: r.load.Burst,
		Refresh: r.load.Refresh, Slots: r.load.Slots}
	again := r.lostToExpiry
	r.lostToExpiry = false
	r.update(func(s *Status) {
		s.Registered, s.Path = true, path
		s.Registrations++
		if again {
			s.SessionReRegistrations++
		}
	})
	r.log.Info("registered", "znode", path, "uri", node.URL(), "weight", node.Weight, "zone", node.Zone, "version", node.Version)
	r.watch(conn, path)
	return nil
}

// sweep removes the orphans a lost create may have left in this session,
// whatever the coordinator's health: one that is not ready must not stay
// listed through them.
func (r *Registrar) sweep(conn *zk.Conn, session int64) error {
	if r.unsureSession != session {
		return nil
	}
	if err := r.removeOrphans(conn, session); err != nil {
		return r.fail(err, "removing orphaned registrations under "+r.path)
	}
	return nil
}

// removeOrphans deletes children that this session owns but the registrar
// does not know about: a create whose answer was lost with the connection
// may have succeeded, and the coordinator must not be listed twice, nor at
// all while it is not ready. After a full sweep no create is in doubt.
func (r *Registrar) removeOrphans(conn *zk.Conn, session int64) error {
	children, _, err := conn.Children(r.path)
	if errors.Is(err, zk.ErrNoNode) {
		children, err = nil, nil // no namespace, no orphans
	}
	if err != nil {
		return err
	}
	prefix := discovery.ZnodeName(discovery.Node{Addr: r.node.Addr})
	prefix = prefix[:strings.Index(prefix, ";")] // serverUri=host:port
	for _, child := range children {
		if !strings.HasPrefix(child, prefix+";") || r.path+"/"+child == r.znode {
			continue
		}
		_, stat, err := conn.Get(r.path + "/" + child)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		if stat.EphemeralOwner == session {
			if err := conn.Delete(r.path+"/"+child, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			r.log.Warn("removed an orphaned registration left by a lost create", "znode", r.path+"/"+child)
		}
	}
	if r.unsureSession == session {
		r.unsureSession = 0
	}
	return nil
}

func (r *Registrar) createNamespace(conn *zk.Conn) error {
	if exists, _, err := conn.Exists(r.path); err == nil && exists {
		return nil
	}
	cur := ""
	for _, part := range strings.Split(r.cfg.Namespace, "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, r.acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// watch nudges the loop when the znode is deleted (or the watch ends for
// another reason, such as the session expiring). A change of its data (the
// load figures the registrar writes) only sets the watch again.
func (r *Registrar) watch(conn *zk.Conn, path string) {
	exists, _, events, err := conn.ExistsW(path)
	if err != nil || !exists {
		r.nudge() // look again at once
		return
	}
	r.watchArmed.Store(true)
	r.watchers.Add(1)
	go func() {
		defer r.watchers.Done()
		for {
			select {
			case ev := <-events:
				if ev.Type == zk.EventNodeDataChanged {
					if exists, _, next, err := conn.ExistsW(path); err == nil && exists {
						events = next
						continue
					}
				}
				r.watchArmed.Store(false)
				r.nudge()
				return
			case <-r.stopWatches:
				return
			}
		}
	}()
}

func (r *Registrar) forget() {
	r.znode, r.znodeData, r.znodeSession = "", nil, 0
	r.update(func(s *Status) { s.Registered, s.Path, s.Load = false, "", discovery.PublishedLoad{} })
}

// zkConfig is the session's configuration. The registrar sets no connect
// timeout: it waits for ZooKeeper as long as it runs, and go-zookeeper
// bounds each dial itself.
func (r *Registrar) zkConfig() zkconn.Config {
	c := zkconn.Config{
		Servers:        r.cfg.Servers,
		SessionTimeout: r.cfg.SessionTimeout,
		TLS:            r.cfg.TLS,
		Logger:         r.log,
		OnDialError:    r.onDialError,
	}
	if r.cfg.Auth != nil {
		c.AuthScheme, c.Auth = r.cfg.Auth.Scheme, r.cfg.Auth.Credentials
	}
	return c
}

// ensureAuth adds the credentials once per Run; go-zookeeper sends them
// again after every reconnection, a new session included.
func (r *Registrar) ensureAuth(conn *zk.Conn) error {
	if r.cfg.Auth == nil || r.authAdded {
		return nil
	}
	// No deadline: as before, the request ends with its answer or when the
	// connection is lost, and the registrar has nothing better to do.
	if err := zkconn.AddAuth(context.Background(), conn, r.zkConfig()); err != nil {
		return err
	}
	r.authAdded = true
	return nil
}

// fail records a ZooKeeper error; fatal ones end Run.
func (r *Registrar) fail(err error, doing string) error {
	err = fmt.Errorf("registrar: %s in ZooKeeper %s: %w", doing, strings.Join(r.cfg.Servers, ","), err)
	r.update(func(s *Status) { s.LastError = err.Error() })
	if isFatal(err) {
		r.log.Error("giving up", "err", err)
		return err
	}
	r.stepFailed = true
	r.problems.warn(groupStep, err.Error(), false, "ZooKeeper step failed; retrying", "err", err)
	return nil
}

// drain deletes the znode and any orphan of a lost create, then closes the
// session. When there is something to delete it waits for the session,
// bounded by drainTimeout: a close ZooKeeper cannot hear leaves the
// ephemeral znodes listed until the session expires, and shutdown often
// follows the very connection loss that orphaned a create.
func (r *Registrar) drain(conn *zk.Conn) {
	timeout := time.NewTimer(drainTimeout)
	defer timeout.Stop()
	if r.znode != "" || r.unsureSession != 0 {
		if r.awaitSession(conn, timeout.C) {
			done := make(chan error, 1)
			go func() { done <- r.deregisterAll(conn) }()
			select {
			case err := <-done:
				if err != nil {
					r.log.Warn("deregistering on shutdown failed; closing the session removes the registration", "namespace", r.path, "err", err)
				} else if r.znode != "" {
					r.log.Info("drained: deregistered before shutdown", "znode", r.znode)
				} else {
					r.log.Info("drained: no registration left before shutdown", "namespace", r.path)
				}
			case <-timeout.C:
				r.log.Warn("deregistering on shutdown timed out; closing the session removes the registration", "namespace", r.path, "znode", r.znode)
				r.silence()
				conn.Close()
				<-done // Close fails the pending request at once
			}
		} else {
			r.log.Warn("ZooKeeper unreachable on shutdown; the registration stays until the session expires",
				"namespace", r.path, "znode", r.znode, "session_timeout", r.cfg.SessionTimeout)
		}
	}
	r.silence()
	conn.Close()
	r.forget()
	r.log.Info("registrar stopped")
}

// silence ends the logging of session events and dial errors; when it
// returns, no callback is logging any more.
func (r *Registrar) silence() {
	r.quietMu.Lock()
	r.quiet = true
	r.quietMu.Unlock()
}

// awaitSession waits until conn has a session or timeout fires, and says
// which. Session events nudge r.wake after the state has changed.
func (r *Registrar) awaitSession(conn *zk.Conn, timeout <-chan time.Time) bool {
	for conn.State() != zk.StateHasSession {
		select {
		case <-r.wake:
		case <-timeout:
			return false
		}
	}
	return true
}

// deregisterAll deletes, in the current session, the znode the registrar
// holds and the orphans of a lost create. drain runs it on a goroutine of
// its own while it waits.
func (r *Registrar) deregisterAll(conn *zk.Conn) error {
	session := conn.SessionID()
	var errs []error
	if r.znode != "" && r.znodeSession == session {
		if err := conn.Delete(r.znode, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", r.znode, err))
		}
	}
	if r.unsureSession == session {
		if err := r.removeOrphans(conn, session); err != nil {
			errs = append(errs, fmt.Errorf("removing orphaned registrations under %s: %w", r.path, err))
		}
	}
	return errors.Join(errs...)
}

// webUIMetadata is the registration's metadata for a web UI address; nil
// without one.
func webUIMetadata(ui string) map[string]string {
	if ui == "" {
		return nil
	}
	return map[string]string{discovery.MetadataWebUI: strings.TrimSuffix(ui, "/")}
}
