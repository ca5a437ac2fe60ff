package discovery

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/internal/zkconn"
)

// ZooKeeperConfig names an ensemble and the namespace whose children are the
// coordinators.
type ZooKeeperConfig struct {
	// Servers are the ensemble's "host:port" addresses; a host without a
	// port gets 2181, and IPv6 addresses go in brackets ("[::1]:2181").
	Servers []string
	// Path is the namespace znode, e.g. "/presto"; surrounding slashes do
	// not matter, and a path ZooKeeper would reject is an error of
	// OpenZooKeeper.
	Path string
	// SessionTimeout is the ZooKeeper session timeout; 0 means 15s.
	SessionTimeout time.Duration
	// ConnectTimeout bounds the wait for the first session and listing; 0 means 10s.
	ConnectTimeout time.Duration
	// Logger receives discovery logs; nil means none.
	Logger *slog.Logger

	// AuthScheme and Auth, when AuthScheme is set, are sent to ZooKeeper as
	// with zkCli's addauth (for example "digest" and "user:password") before
	// the namespace is read. go-zookeeper sends them again on every
	// reconnection, the new session after an expiry included. They never
	// appear in errors or logs, and handles with different credentials never
	// share a session.
	AuthScheme string
	Auth       []byte

	// TLS, when set, connects to every server over TLS.
	TLS *ZooKeeperTLS

	// LoadWatchSubset, when positive and the namespace has more children,
	// is how many children's data the session watches, chosen at random:
	// the others are read once, when they join, without a watch, and their
	// nodes carry PublishedLoad{Unwatched: true} instead of their load, so
	// that their load= writes cost this client no notification. The
	// children list is always watched; when a watched child leaves, a
	// random unwatched one takes its place, and so does a new child while
	// fewer than LoadWatchSubset are watched. 0 watches every child.
	LoadWatchSubset int
}

// MaxLoadWatchSubset bounds ZooKeeperConfig.LoadWatchSubset.
const MaxLoadWatchSubset = 100_000

// ZooKeeperTLS configures TLS to ZooKeeper's secure client port. The files
// hold PEM; they are read once, when the session is opened.
type ZooKeeperTLS struct {
	// CAFile holds the CA certificates to trust; empty means the system's.
	CAFile string
	// CertFile and KeyFile hold a client certificate and its private key.
	// ZooKeeper asks for one by default (ssl.clientAuth=need); both or
	// neither must be set.
	CertFile, KeyFile string
	// ServerName is the name to verify the servers' certificates against;
	// empty means the host of each server address.
	ServerName string
}

// TLSConfig loads the files into a tls.Config, for any ZooKeeper client
// of the same settings (the registrar's too).
func (t *ZooKeeperTLS) TLSConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pemCerts, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemCerts) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, errors.New("a client certificate needs both a certificate file and a key file")
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			// The key file's content never reaches the error: the tls
			// package names only what is wrong with it.
			return nil, fmt.Errorf("loading client certificate %s and key %s: %w", t.CertFile, t.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Ensemble returns the servers as one comma-separated string, for messages.
func (c *ZooKeeperConfig) Ensemble() string { return strings.Join(c.Servers, ",") }

// zkKeySalt makes the credential digests in shared-session keys useless
// outside this process.
var zkKeySalt = func() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b
}()

// key identifies a shared watch: the same servers (in any order), path,
// credentials and TLS settings share one session. The credentials enter the
// key only as a salted digest, so the map of shared sessions holds no secret.
func (c *ZooKeeperConfig) key() string {
	servers := slices.Clone(c.Servers)
	slices.Sort(servers)
	k := strings.Join(servers, ",") + "|" + c.Path
	if c.AuthScheme != "" {
		h := sha256.New()
		h.Write(zkKeySalt)
		h.Write([]byte(c.AuthScheme))
		h.Write([]byte{0})
		h.Write(c.Auth)
		k += "|auth=" + hex.EncodeToString(h.Sum(nil))
	}
	if c.TLS != nil {
		k += fmt.Sprintf("|tls=%q,%q,%q,%q", c.TLS.CAFile, c.TLS.CertFile, c.TLS.KeyFile, c.TLS.ServerName)
	}
	if c.LoadWatchSubset > 0 {
		k += fmt.Sprintf("|loadWatchSubset=%d", c.LoadWatchSubset)
	}
	return k
}

// ZooKeeper is a Discoverer that watches the children of one namespace. All
// handles opened for the same ensemble and path share one session and one
// cache; the session closes when the last handle is closed.
type ZooKeeper struct {
	w         *zkWatch
	closeOnce sync.Once

	mu      sync.Mutex
	cancels []func()
	closed  bool
}

var (
	zkSharedMu sync.Mutex
	zkShared   = map[string]*zkWatch{}
)

// OpenZooKeeper connects to the ensemble (or joins an open shared session)
// and waits until the namespace has been listed once, for at most
// cfg.ConnectTimeout or until ctx is done. A missing or empty namespace is
// not an error here: the discoverer keeps watching, its snapshot is empty and
// Status says why. A namespace the session may not read is an error that
// names the ensemble and path.
func OpenZooKeeper(ctx context.Context, cfg ZooKeeperConfig) (*ZooKeeper, error) {
	// A new slice, so that a caller reusing its own cannot change a session.
	servers, err := zkconn.Servers(cfg.Servers)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	cfg.Servers = servers
	if cfg.AuthScheme == "" && len(cfg.Auth) > 0 {
		return nil, fmt.Errorf("discovery: ZooKeeper ensemble %s: credentials given without an auth scheme", cfg.Ensemble())
	}
	path, err := zkconn.Path(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("discovery: ZooKeeper ensemble %s: path %q: %w", cfg.Ensemble(), cfg.Path, err)
	}
	cfg.Path = path
	if cfg.LoadWatchSubset < 0 || cfg.LoadWatchSubset > MaxLoadWatchSubset {
		return nil, fmt.Errorf("discovery: ZooKeeper ensemble %s: load watch subset %d: want 0 (every child) to %d",
			cfg.Ensemble(), cfg.LoadWatchSubset, MaxLoadWatchSubset)
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 15 * time.Second
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// Copies, so that a caller reusing its slices cannot change a session.
	cfg.Auth = bytes.Clone(cfg.Auth)
	if cfg.TLS != nil {
		t := *cfg.TLS
		cfg.TLS = &t
	}
	key := cfg.key()

	zkSharedMu.Lock()
	w := zkShared[key]
	if w != nil {
		w.refs++
		zkSharedMu.Unlock()
		select {
		case <-w.ready:
		case <-ctx.Done():
			w.release()
			return nil, fmt.Errorf("discovery: ZooKeeper ensemble %s: %w", cfg.Ensemble(), ctx.Err())
		}
		if w.startErr != nil {
			return nil, w.startErr
		}
		return &ZooKeeper{w: w}, nil
	}
	w = newZKWatch(key, cfg)
	zkShared[key] = w
	zkSharedMu.Unlock()

	if err := w.start(ctx); err != nil {
		zkSharedMu.Lock()
		delete(zkShared, key)
		zkSharedMu.Unlock()
		w.startErr = err
		close(w.ready)
		return nil, err
	}
	close(w.ready)
	return &ZooKeeper{w: w}, nil
}

// Snapshot returns the latest snapshot without I/O.
func (z *ZooKeeper) Snapshot() *Snapshot { return z.w.pub.Snapshot() }

// Subscribe calls fn with every later snapshot until cancel is called or the
// handle is closed. fn must not call Subscribe.
func (z *ZooKeeper) Subscribe(fn func(*Snapshot)) (cancel func()) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.closed {
		return func() {}
	}
	c := z.w.pub.Subscribe(fn)
	z.cancels = append(z.cancels, c)
	return c
}

// Status reports the connection state and why a snapshot may be empty.
func (z *ZooKeeper) Status() Status { return z.w.status() }

// Close releases this handle; the shared session closes with the last one.
func (z *ZooKeeper) Close() error {
	z.closeOnce.Do(func() {
		z.mu.Lock()
		for _, c := range z.cancels {
			c()
		}
		z.cancels, z.closed = nil, true
		z.mu.Unlock()
		z.w.release()
	})
	return nil
}

var _ Discoverer = (*ZooKeeper)(nil)

const (
	// zkReadParallelism bounds the concurrent reads of children when many
	// are new at once; go-zookeeper pipelines them on the one connection.
	zkReadParallelism = 16
	// zkMinBackoff and zkMaxBackoff pace the retries after a failed read.
	zkMinBackoff = 50 * time.Millisecond
	zkMaxBackoff = 2 * time.Second
	// zkMaxLoggedName bounds how much of a child name a log line quotes.
	zkMaxLoggedName = 100
)

// zkWatch is the shared state behind every handle of one ensemble and path:
// one session, one goroutine keeping the snapshot current.
type zkWatch struct {
	key    string
	cfg    ZooKeeperConfig
	log    *slog.Logger
	source string

	refs     int // guarded by zkSharedMu
	ready    chan struct{}
	startErr error // set before ready is closed

	pub       publisher
	conn      *zk.Conn
	sessionCh chan struct{} // a session state changed (buffered, 1)
	dataCh    chan string   // a child's data watch fired (child name)
	quit      chan struct{}
	done      chan struct{}

	expired  atomic.Bool                 // a session expired; the loop re-reads every child
	lastDial atomic.Pointer[dialFailure] // the latest failed dial, for the connect error
	// unreachable is set by the first failed dial of an outage, which is
	// logged, and cleared by the next session (see changelog.go).
	unreachable  atomic.Bool
	dialFailures atomic.Int64 // failed dials since the last session
	// changes limits the membership lines logged.
	changes *logLimiter

	// Loop-owned state.
	children   map[string]*zkChild
	generation uint64

	stateMu sync.Mutex
	st      Status
}

type dialFailure struct{ msg string }

type zkChild struct {
	node     Node
	ok       bool  // parsed
	version  int32 // data version read
	watching bool  // a data watch is set
	plain    bool  // read without a watch (not in the load-watch subset)
	dirty    bool  // data changed since read
	selected bool  // in the load-watch subset (every child without one)
	unread   bool  // listed, not read yet: no node to publish
}

func newZKWatch(key string, cfg ZooKeeperConfig) *zkWatch {
	w := &zkWatch{
		key:       key,
		cfg:       cfg,
		log:       cfg.Logger.With("ensemble", cfg.Ensemble(), "path", cfg.Path),
		source:    cfg.Ensemble() + cfg.Path,
		refs:      1,
		ready:     make(chan struct{}),
		sessionCh: make(chan struct{}, 1),
		dataCh:    make(chan string, 64),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
		children:  map[string]*zkChild{},
		changes:   newLogLimiter(changeLimit, changeLimitWindow),
	}
	w.pub.current.Store(NewSnapshot(w.source, 0, nil))
	return w
}

// errorf returns an error naming the ensemble.
func (w *zkWatch) errorf(format string, args ...any) error {
	return fmt.Errorf("discovery: ZooKeeper ensemble %s: "+format, append([]any{w.cfg.Ensemble()}, args...)...)
}

func (w *zkWatch) start(parent context.Context) (err error) {
	ctx, cancel := context.WithTimeout(parent, w.cfg.ConnectTimeout)
	defer cancel()

	var refused atomic.Int64
	allRefused := make(chan struct{})
	zcfg := zkconn.Config{
		Servers:        w.cfg.Servers,
		SessionTimeout: w.cfg.SessionTimeout,
		ConnectTimeout: w.cfg.ConnectTimeout,
		AuthScheme:     w.cfg.AuthScheme,
		Auth:           w.cfg.Auth,
		Logger:         w.log,
		// Remembered for the error of a connect that times out, which
		// would otherwise only say that no session came.
		OnDialError: func(err error) {
			w.lastDial.Store(&dialFailure{msg: err.Error()})
			w.onDialError(err)
			// go-zookeeper dials the servers in turn: as many refusals (or
			// answers that are not ZooKeeper's) in a row as there are
			// servers means every one of them is hopeless.
			var foreign *zkconn.NotZooKeeperError
			if !errors.Is(err, syscall.ECONNREFUSED) && !errors.As(err, &foreign) {
				refused.Store(0)
			} else if refused.Add(1) == int64(len(w.cfg.Servers)) {
				close(allRefused)
			}
		},
	}
	if w.cfg.TLS != nil {
		if zcfg.TLS, err = w.cfg.TLS.TLSConfig(); err != nil {
			return w.errorf("TLS: %w", err)
		}
	}
	conn, err := zkconn.Connect(zcfg, w.onEvent)
	if err != nil {
		return w.errorf("%w", err)
	}
	w.conn = conn
	defer func() {
		if err != nil {
			conn.Close()
			close(w.quit) // ends the data-watch forwarders of the first listing
		}
	}()

	for conn.State() != zk.StateHasSession {
		select {
		case <-w.sessionCh:
		case <-allRefused:
			msg := "every server refused the connection (nothing listens on the port) or answered as no ZooKeeper does"
			if f := w.lastDial.Load(); f != nil {
				msg += "; last connection error: " + f.msg
			}
			return w.errorf("%s", msg)
		case <-ctx.Done():
			msg := fmt.Sprintf("no session within %s (state %s)", w.cfg.ConnectTimeout, conn.State())
			if parent.Err() != nil {
				// The caller's deadline came first; say so rather than blame the timeout.
				msg = fmt.Sprintf("no session before the caller gave up: %v (state %s)", parent.Err(), conn.State())
			}
			if f := w.lastDial.Load(); f != nil {
				msg += "; last connection error: " + f.msg
			} else if conn.State() == zk.StateConnected {
				// Connected, and no answer to the connect request.
				msg += "; a server accepted the connection but never answered ZooKeeper's handshake: " +
					"is this ZooKeeper's client port (2181 by default), and does it want TLS (zooKeeperSSLEnabled)?"
			}
			return w.errorf("%s", msg)
		}
	}

	if err := zkconn.AddAuth(ctx, conn, zcfg); err != nil {
		return w.errorf("adding %s credentials: %w", w.cfg.AuthScheme, err)
	}

	// The first listing happens here so that a new connector sees nodes at once.
	var wake <-chan zk.Event
	err = w.bounded(ctx, parent, func() error {
		var err error
		wake, err = w.refresh()
		return err
	})
	if err != nil {
		if errors.Is(err, zk.ErrNoAuth) {
			w.setProblem(w.noAuthProblem())
			return w.errorf("listing %s: %s: %w", w.cfg.Path, w.noAuthProblem(), err)
		}
		return w.errorf("listing %s: %w", w.cfg.Path, err)
	}
	go w.loop(wake)
	return nil
}

func (w *zkWatch) noAuthProblem() string {
	return fmt.Sprintf("permission denied: the ACL of %s does not let this session read it (wrong or missing credentials)", w.cfg.Path)
}

// bounded runs fn, closing the connection when ctx ends first so that fn
// returns; it then returns ctx's error, naming the deadline that fired:
// the caller's (parent) or the connect timeout.
func (w *zkWatch) bounded(ctx, parent context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		w.conn.Close()
		<-done
		if parent.Err() != nil {
			return fmt.Errorf("no answer before the caller gave up: %w", parent.Err())
		}
		return fmt.Errorf("no answer within %s (zooKeeperConnectTimeout): %w", w.cfg.ConnectTimeout, ctx.Err())
	}
}

// onEvent runs on go-zookeeper's goroutines; it must not block.
func (w *zkWatch) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		w.setConnected(true, ev.Server)
	case zk.StateExpired:
		w.expired.Store(true)
		w.stateMu.Lock()
		w.st.SessionsExpired++
		w.stateMu.Unlock()
		w.log.Warn("ZooKeeper session expired; opening a new session, the namespace will be read again")
		w.setConnected(false, "")
	case zk.StateDisconnected:
		w.setConnected(false, "")
	}
	select {
	case w.sessionCh <- struct{}{}:
	default:
	}
}

func (w *zkWatch) setConnected(connected bool, server string) {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	w.st.Server = server
	if w.st.Connected == connected {
		return
	}
	w.st.Connected = connected
	if connected {
		w.onSession()
		if !w.st.StaleSince.IsZero() {
			w.log.Info("ZooKeeper session restored", "server", server, "stale_for", time.Since(w.st.StaleSince).Round(time.Millisecond))
		}
		w.st.StaleSince = time.Time{}
	} else {
		w.st.StaleSince = time.Now()
		if w.closing() {
			// Our own Close: not news.
			w.log.Debug("ZooKeeper connection closed")
		} else {
			w.log.Warn("ZooKeeper connection lost; serving the last known coordinators", "nodes", len(w.pub.Snapshot().Nodes))
		}
	}
}

func (w *zkWatch) status() Status {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	st := w.st
	st.Nodes = len(w.pub.Snapshot().Nodes)
	if st.Connected {
		st.SessionID = w.conn.SessionID()
	}
	return st
}

// release drops one reference; the last one stops the watch.
func (w *zkWatch) release() {
	zkSharedMu.Lock()
	w.refs--
	last := w.refs == 0
	if last && zkShared[w.key] == w {
		delete(zkShared, w.key)
	}
	zkSharedMu.Unlock()
	if !last {
		return
	}
	<-w.ready
	if w.startErr != nil {
		return
	}
	close(w.quit)
	w.conn.Close()
	<-w.done
}

// loop keeps the snapshot current until quit. wake fires when the namespace
// (or, while it is missing, its existence) changes. Every read that fails
// is retried after a backoff or when the session state changes, so an
// outage costs a few attempts per second, never a busy loop.
func (w *zkWatch) loop(wake <-chan zk.Event) {
	defer close(w.done)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	backoff := zkMinBackoff

	for {
		if wake != nil {
			select {
			case <-w.quit:
				return
			case <-wake:
				// A change, or the watch was lost with an expired session.
				wake = nil
			case name := <-w.dataCh:
				// A child's data changed (or its watch was lost): read the
				// dirty children again without listing the namespace.
				w.markDirty(name)
				w.drainData()
				if err := w.readChildren(nil); err != nil {
					if w.closing() {
						return
					}
					w.readFailed(err)
					wake = nil
					continue
				}
				w.publish()
				continue
			case <-w.sessionCh:
				// Reconnected after an outage or an expiry: list again so that
				// changes made meanwhile are seen, whatever the watches did.
				if w.conn.State() != zk.StateHasSession {
					continue
				}
			}
		} else {
			// A failed read: wait for the session to change or a backoff.
			retry.Reset(backoff)
			select {
			case <-w.quit:
				return
			case <-w.sessionCh:
			case <-retry.C:
			}
		}
		w.drainData()
		afterExpiry := w.expired.Swap(false)
		if afterExpiry {
			// The old session's data watches are gone: read every child
			// again, with new watches.
			for _, c := range w.children {
				c.watching = false
			}
		}
		next, err := w.refresh()
		if err != nil {
			if w.closing() {
				return
			}
			if afterExpiry {
				w.expired.Store(true)
			}
			w.readFailed(err)
			backoff = min(backoff*2, zkMaxBackoff)
			wake = nil
			continue
		}
		if afterExpiry {
			w.log.Info("namespace read again in a new ZooKeeper session", "nodes", len(w.pub.Snapshot().Nodes))
		}
		backoff = zkMinBackoff
		wake = next
	}
}

// closing reports whether the watch is being closed, which makes every
// request fail.
func (w *zkWatch) closing() bool {
	select {
	case <-w.quit:
		return true
	default:
		return false
	}
}

// readFailed records a failed read. A permission error is a problem worth a
// warning (once); anything else is an outage already reported by the
// session state.
func (w *zkWatch) readFailed(err error) {
	if errors.Is(err, zk.ErrNoAuth) {
		if w.setProblem(w.noAuthProblem()) {
			w.log.Warn("cannot read the namespace; serving the last known coordinators", "err", err)
		}
		return
	}
	w.log.Debug("reading the namespace failed; retrying", "err", err)
}

// drainData marks every child whose data watch fired as dirty.
func (w *zkWatch) drainData() {
	for {
		select {
		case name := <-w.dataCh:
			w.markDirty(name)
		default:
			return
		}
	}
}

func (w *zkWatch) markDirty(name string) {
	if c := w.children[name]; c != nil {
		c.watching, c.dirty = false, true
	}
}

// refresh lists the namespace with a watch, reads new or changed children,
// and publishes a new snapshot when the node set changed. It returns the
// channel that fires on the next change of the namespace.
func (w *zkWatch) refresh() (<-chan zk.Event, error) {
	names, _, childCh, err := w.conn.ChildrenW(w.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		exists, _, existCh, err := w.conn.ExistsW(w.cfg.Path)
		if err != nil {
			return nil, err
		}
		if exists { // created between the two calls
			return w.refresh()
		}
		w.setProblem(fmt.Sprintf("namespace %s does not exist", w.cfg.Path))
		clear(w.children)
		w.publish()
		return existCh, nil
	}
	if err != nil {
		return nil, err
	}

	seen := make(map[string]bool, len(names))
	for _, name := range names {
		seen[name] = true
	}
	for name := range w.children {
		if !seen[name] {
			delete(w.children, name)
		}
	}
	w.selectSubset(names)
	if err := w.readChildren(names); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		w.setProblem(fmt.Sprintf("namespace %s has no children", w.cfg.Path))
	} else {
		w.setProblem("")
	}
	w.publish()
	return childCh, nil
}

// selectSubset decides which of names the session watches the data of:
// all without a load-watch subset; else the ones already chosen that remain,
// and random others until there are LoadWatchSubset. A child not yet read
// is created here, unread, to carry its choice.
func (w *zkWatch) selectSubset(names []string) {
	limit := w.cfg.LoadWatchSubset
	chosen := 0
	var free []string
	for _, name := range names {
		c := w.children[name]
		switch {
		case limit <= 0 || (c != nil && c.selected):
			if c != nil {
				c.selected = true
			}
			chosen++
		default:
			free = append(free, name)
		}
	}
	if limit <= 0 {
		return
	}
	for chosen < limit && len(free) > 0 {
		k := mrand.IntN(len(free)) // seeded by the process from the OS: every client draws its own
		name := free[k]
		free[k] = free[len(free)-1]
		free = free[:len(free)-1]
		if c := w.children[name]; c != nil {
			c.selected = true
		} else {
			w.pending(name).selected = true
		}
		chosen++
	}
	for _, name := range free {
		w.pending(name)
	}
}

// pending returns the child name, creating an unread one.
func (w *zkWatch) pending(name string) *zkChild {
	c := w.children[name]
	if c == nil {
		c = &zkChild{unread: true}
		w.children[name] = c
	}
	return c
}

// selected reports whether the session watches c's data: every child
// without a load-watch subset.
func (w *zkWatch) selected(c *zkChild) bool {
	return w.cfg.LoadWatchSubset <= 0 || (c != nil && c.selected)
}

// zkRead is the result of reading one child.
type zkRead struct {
	data  []byte
	stat  *zk.Stat
	watch <-chan zk.Event
	err   error
}

// readChildren reads, with a data watch, every child in names (nil: every
// known child) that is new, dirty or unwatched, several at a time. Children
// read successfully are applied even when others fail, so that no data
// watch is set twice.
func (w *zkWatch) readChildren(names []string) error {
	if names == nil {
		for name := range w.children {
			names = append(names, name)
		}
	}
	var todo []string
	for _, name := range names {
		if c := w.children[name]; c != nil && !c.unread && !c.dirty && (c.watching || (c.plain && !w.selected(c))) {
			continue
		}
		todo = append(todo, name)
	}
	watch := make([]bool, len(todo))
	for i, name := range todo {
		watch[i] = w.selected(w.children[name])
	}
	reads := make([]zkRead, len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(todo), zkReadParallelism) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(todo) {
					return
				}
				r := &reads[i]
				if watch[i] {
					r.data, r.stat, r.watch, r.err = w.conn.GetW(w.cfg.Path + "/" + todo[i])
				} else {
					// Outside the load-watch subset: its registration, once.
					r.data, r.stat, r.err = w.conn.Get(w.cfg.Path + "/" + todo[i])
				}
			}
		})
	}
	wg.Wait()

	var firstErr error
	for i, name := range todo {
		r, c := reads[i], w.children[name]
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			delete(w.children, name) // gone since the listing; the child watch fires too
			continue
		case errors.Is(r.err, zk.ErrNoAuth):
			// A child this session may not read is skipped like a malformed
			// one. Without a watch it is read again with the next session.
			if c == nil || c.ok {
				w.log.Warn("skipping a child this session may not read", "child", zkTruncate(name, zkMaxLoggedName), "err", r.err)
			}
			w.children[name] = &zkChild{watching: true, selected: watch[i]}
			continue
		case r.err != nil:
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		if watch[i] {
			go w.forward(name, r.watch)
		}
		node, perr := ParseZnode(name, r.data)
		// Logged once per child and data version, not on every re-read.
		if perr != nil && (c == nil || c.unread || c.ok || c.version != r.stat.Version) {
			w.log.Warn("skipping a child that is not a coordinator registration", "child", zkTruncate(name, zkMaxLoggedName), "err", perr)
		}
		if !watch[i] {
			// Its load= is not followed here: no figure rather than a stale one.
			node.Load = PublishedLoad{Unwatched: true}
		}
		w.children[name] = &zkChild{node: node, ok: perr == nil, version: r.stat.Version, watching: watch[i], plain: !watch[i], selected: watch[i]}
	}
	return firstErr
}

// forward turns one data watch into a message for the loop.
func (w *zkWatch) forward(name string, ch <-chan zk.Event) {
	select {
	case <-ch:
	case <-w.quit:
		return
	}
	select {
	case w.dataCh <- name:
	case <-w.quit:
	}
}

// setProblem sets Status.Problem and reports whether it changed.
func (w *zkWatch) setProblem(p string) bool {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	changed := w.st.Problem != p
	w.st.Problem = p
	return changed
}

// publish builds a snapshot from the children and publishes it if the node
// set differs from the current one.
func (w *zkWatch) publish() {
	nodes := make([]Node, 0, len(w.children))
	skipped := 0
	for _, c := range w.children {
		switch {
		case c.ok:
			nodes = append(nodes, c.node)
		case !c.unread:
			skipped++
		}
	}
	next := NewSnapshot(w.source, w.generation+1, nodes)
	cur := w.pub.Snapshot()
	w.stateMu.Lock()
	w.st.Skipped = skipped
	w.stateMu.Unlock()
	if cur.Generation > 0 && sameNodes(cur.Nodes, next.Nodes) {
		return
	}
	w.generation++
	w.stateMu.Lock()
	w.st.LastChange = time.Now()
	w.stateMu.Unlock()
	w.log.Debug("coordinators changed", "nodes", len(next.Nodes), "skipped", skipped, "generation", next.Generation)
	w.logMembership(cur, next)
	w.pub.publish(next)
}

func sameNodes(a, b []Node) bool {
	return slices.EqualFunc(a, b, func(x, y Node) bool {
		return x.Addr == y.Addr && x.Scheme == y.Scheme && x.Weight == y.Weight && x.Zone == y.Zone &&
			x.Version == y.Version && x.ID == y.ID && x.Format == y.Format && x.Load.Equal(y.Load) && x.NotReady == y.NotReady
	})
}

func zkTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
