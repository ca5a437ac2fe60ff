package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZooKeeperConfig names an ensemble and the namespace whose children are the
// coordinators.
type ZooKeeperConfig struct {
	// Servers are the ensemble's "host:port" addresses.
	Servers []string
	// Path is the namespace znode, e.g. "/presto".
	Path string
	// SessionTimeout is the ZooKeeper session timeout; 0 means 15s.
	SessionTimeout time.Duration
	// ConnectTimeout bounds the wait for the first session and listing; 0 means 10s.
	ConnectTimeout time.Duration
	// Logger receives discovery logs; nil means none.
	Logger *slog.Logger
}

// Ensemble returns the servers as one comma-separated string, for messages.
func (c *ZooKeeperConfig) Ensemble() string { return strings.Join(c.Servers, ",") }

// key identifies a shared watch: the same servers (in any order) and path
// share one session. Credentials join the key when authentication exists.
func (c *ZooKeeperConfig) key() string {
	servers := slices.Clone(c.Servers)
	slices.Sort(servers)
	return strings.Join(servers, ",") + "|" + c.Path
}

// Status describes a discoverer's view of its source, for errors, logs and
// operators.
type Status struct {
	// Connected is true while the discoverer holds a live session.
	Connected bool
	// StaleSince is when the connection was lost; zero while connected.
	StaleSince time.Time
	// LastChange is when the node set last changed.
	LastChange time.Time
	// Nodes is the number of nodes in the current snapshot.
	Nodes int
	// Skipped is the number of children that could not be parsed.
	Skipped int
	// Problem explains an empty snapshot, e.g. a missing namespace; empty otherwise.
	Problem string
}

// ZooKeeper is a Discoverer that watches the children of one namespace. All
// handles opened for the same ensemble and path share one session and one
// cache; the session closes when the last handle is closed.
type ZooKeeper struct {
	w         *zkWatch
	closeOnce sync.Once

	mu      sync.Mutex
	cancels []func()
}

var (
	zkSharedMu sync.Mutex
	zkShared   = map[string]*zkWatch{}
)

// OpenZooKeeper connects to the ensemble (or joins an open shared session)
// and waits until the namespace has been listed once, for at most
// cfg.ConnectTimeout or until ctx is done. A missing or empty namespace is
// not an error here: the discoverer keeps watching, its snapshot is empty and
// Status says why.
func OpenZooKeeper(ctx context.Context, cfg ZooKeeperConfig) (*ZooKeeper, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("zkpresto: discovery: no ZooKeeper servers given")
	}
	cfg.Path = "/" + strings.Trim(cfg.Path, "/")
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 15 * time.Second
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
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
			return nil, fmt.Errorf("zkpresto: discovery: ZooKeeper ensemble %s: %w", cfg.Ensemble(), ctx.Err())
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
	c := z.w.pub.Subscribe(fn)
	z.mu.Lock()
	z.cancels = append(z.cancels, c)
	z.mu.Unlock()
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
		z.cancels = nil
		z.mu.Unlock()
		z.w.release()
	})
	return nil
}

var _ Discoverer = (*ZooKeeper)(nil)

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

	// Loop-owned state.
	children   map[string]*zkChild
	generation uint64

	stateMu sync.Mutex
	st      Status
}

type zkChild struct {
	node     Node
	ok       bool // parsed
	watching bool // a data watch is set
	dirty    bool // data changed since read
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
	}
	w.pub.current.Store(NewSnapshot(w.source, 0, nil))
	return w
}

// zkLogger routes go-zookeeper's own messages to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...))
}

func (w *zkWatch) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.ConnectTimeout)
	defer cancel()

	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		d := net.Dialer{Timeout: min(timeout, w.cfg.ConnectTimeout)}
		return d.Dial(network, address)
	}
	conn, _, err := zk.Connect(w.cfg.Servers, w.cfg.SessionTimeout,
		zk.WithLogger(zkLogger{w.log}),
		zk.WithLogInfo(false),
		zk.WithDialer(dialer),
		zk.WithEventCallback(w.onEvent),
	)
	if err != nil {
		return fmt.Errorf("zkpresto: discovery: ZooKeeper ensemble %s: %w", w.cfg.Ensemble(), err)
	}
	w.conn = conn

	for conn.State() != zk.StateHasSession {
		select {
		case <-w.sessionCh:
		case <-ctx.Done():
			state := conn.State()
			conn.Close()
			return fmt.Errorf("zkpresto: discovery: ZooKeeper ensemble %s: no session within %s (state %s)",
				w.cfg.Ensemble(), w.cfg.ConnectTimeout, state)
		}
	}
	w.setConnected(true)

	// The first listing happens here so that a new connector sees nodes at once.
	wake, err := w.refresh()
	if err != nil {
		conn.Close()
		return fmt.Errorf("zkpresto: discovery: ZooKeeper ensemble %s: listing %s: %w", w.cfg.Ensemble(), w.cfg.Path, err)
	}
	go w.loop(wake)
	return nil
}

// onEvent runs on go-zookeeper's goroutines; it must not block.
func (w *zkWatch) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		w.setConnected(true)
	case zk.StateDisconnected, zk.StateExpired:
		w.setConnected(false)
	}
	select {
	case w.sessionCh <- struct{}{}:
	default:
	}
}

func (w *zkWatch) setConnected(connected bool) {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	if w.st.Connected == connected {
		return
	}
	w.st.Connected = connected
	if connected {
		if !w.st.StaleSince.IsZero() {
			w.log.Info("ZooKeeper session restored", "stale_for", time.Since(w.st.StaleSince).Round(time.Millisecond))
		}
		w.st.StaleSince = time.Time{}
	} else {
		w.st.StaleSince = time.Now()
		w.log.Warn("ZooKeeper connection lost; serving the last known coordinators", "nodes", len(w.pub.Snapshot().Nodes))
	}
}

func (w *zkWatch) status() Status {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	st := w.st
	st.Nodes = len(w.pub.Snapshot().Nodes)
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
// (or, while it is missing, its existence) changes.
func (w *zkWatch) loop(wake <-chan zk.Event) {
	defer close(w.done)
	retry := time.NewTimer(0)
	if !retry.Stop() {
		<-retry.C
	}
	defer retry.Stop()
	backoff := 50 * time.Millisecond

	for {
		if wake != nil {
			select {
			case <-w.quit:
				return
			case <-wake:
				wake = nil
			case name := <-w.dataCh:
				// A child's data changed (or its watch was lost): read the
				// dirty children again without listing the namespace.
				w.markDirty(name)
				w.drainData()
				if err := w.readChildren(nil); err != nil {
					if errors.Is(err, zk.ErrClosing) {
						return
					}
					w.log.Debug("reading changed children failed; retrying", "err", err)
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
			// A failed refresh: wait for the session to come back or a backoff.
			retry.Reset(backoff)
			select {
			case <-w.quit:
				return
			case <-w.sessionCh:
			case <-retry.C:
			}
		}
		w.drainData()
		next, err := w.refresh()
		if err != nil {
			if errors.Is(err, zk.ErrClosing) {
				return
			}
			w.log.Debug("refreshing the namespace failed; retrying", "err", err)
			backoff = min(backoff*2, 2*time.Second)
			wake = nil
			continue
		}
		backoff = 50 * time.Millisecond
		wake = next
	}
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

// readChildren reads, with a data watch, every child in names (nil: every
// known child) that is new, dirty or unwatched.
func (w *zkWatch) readChildren(names []string) error {
	if names == nil {
		for name := range w.children {
			names = append(names, name)
		}
	}
	for _, name := range names {
		c := w.children[name]
		if c != nil && c.watching && !c.dirty {
			continue
		}
		data, _, dataWatch, err := w.conn.GetW(w.cfg.Path + "/" + name)
		if errors.Is(err, zk.ErrNoNode) {
			delete(w.children, name) // gone since the listing; the child watch fires too
			continue
		}
		if err != nil {
			return err
		}
		go w.forward(name, dataWatch)
		node, perr := ParseZnode(name, data)
		if perr != nil && (c == nil || c.ok || c.dirty) {
			w.log.Warn("skipping a child that is not a coordinator registration", "child", zkTruncate(name, 100), "err", perr)
		}
		w.children[name] = &zkChild{node: node, ok: perr == nil, watching: true}
	}
	return nil
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

func (w *zkWatch) setProblem(p string) {
	w.stateMu.Lock()
	w.st.Problem = p
	w.stateMu.Unlock()
}

// publish builds a snapshot from the children and publishes it if the node
// set differs from the current one.
func (w *zkWatch) publish() {
	nodes := make([]Node, 0, len(w.children))
	skipped := 0
	for _, c := range w.children {
		if c.ok {
			nodes = append(nodes, c.node)
		} else {
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
	w.pub.publish(next)
}

func sameNodes(a, b []Node) bool {
	return slices.EqualFunc(a, b, func(x, y Node) bool {
		return x.Addr == y.Addr && x.Scheme == y.Scheme && x.Weight == y.Weight && x.Zone == y.Zone &&
			x.Version == y.Version && x.ID == y.ID && x.Format == y.Format
	})
}

func zkTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
