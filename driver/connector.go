package driver

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	presto "github.com/prestodb/presto-go-client/v2"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/strategy"
)

// Option configures a Connector.
type Option func(*connectorOptions)

type connectorOptions struct {
	logger     *slog.Logger
	strategy   strategy.Strategy
	httpClient *http.Client
}

// WithLogger sends the driver's logs to logger. Without it the driver logs
// nothing.
func WithLogger(logger *slog.Logger) Option {
	return func(o *connectorOptions) { o.logger = logger }
}

// WithStrategy uses s instead of the strategy named in the DSN. s must not be
// shared with another Connector.
func WithStrategy(s strategy.Strategy) Option {
	return func(o *connectorOptions) { o.strategy = s }
}

// WithHTTPClient sends coordinator traffic through client's transport
// instead of the driver's own. The DSN's ssl_* keys are then not applied to
// it; the driver still routes and fails over requests on top of it.
func WithHTTPClient(client *http.Client) Option {
	return func(o *connectorOptions) { o.httpClient = client }
}

// Connector is a driver.Connector for sql.OpenDB. It is safe for concurrent
// use. Close it (sql.DB.Close does) to release the discovery session.
type Connector struct {
	cfg          *Config
	log          *slog.Logger
	strategy     strategy.Strategy
	strategyName string
	loads        *strategy.Loads
	health       *health.Tracker
	httpClient   *http.Client // routes every request to its statement's coordinator
	ownTransport *http.Transport
	session      driver.Connector // the Presto client's connector
	request      strategy.Request // what Pick sees without a routing key; read-only

	discMu  sync.Mutex
	disc    atomic.Pointer[discoveryHandle]
	checker *health.Checker // guarded by discMu

	buildMu sync.Mutex
	picked  atomic.Pointer[pickerState]

	failovers sync.Map       // addr → *atomic.Uint64
	cancelMu  sync.Mutex     // orders cancelQuery against Close
	cancels   sync.WaitGroup // queries being cancelled on their coordinators

	closed atomic.Bool
}

// discoveryHandle pairs a discoverer with its status report, when it has one.
type discoveryHandle struct {
	discovery.Discoverer
	status func() discovery.Status
}

// pickerState is a picker built for one snapshot and one health state.
type pickerState struct {
	snap   *discovery.Snapshot
	health uint64
	nodes  []discovery.Node // the candidates the picker was built from
	picker strategy.Picker
}

var _ driver.Connector = (*Connector)(nil)

// NewConnector returns a Connector for cfg. It does no network I/O; the
// first Connect opens discovery. cfg is copied.
func NewConnector(cfg *Config, opts ...Option) (*Connector, error) {
	if cfg == nil {
		return nil, errors.New("zkpresto: NewConnector: nil Config")
	}
	if len(cfg.Hosts) == 0 {
		return nil, errors.New("zkpresto: NewConnector: Config has no hosts")
	}
	var o connectorOptions
	for _, opt := range opts {
		opt(&o)
	}
	c := &Connector{cfg: cfg.Clone(), log: o.logger, loads: strategy.NewLoads()}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.health = health.NewTracker(health.Policy{}, health.WithLogger(c.log))
	if o.strategy != nil {
		c.strategy, c.strategyName = o.strategy, fmt.Sprintf("%T", o.strategy)
	} else {
		hashKey, _ := strategy.ParseHashKey(c.cfg.HashKey) // validated by ParseDSN; empty is by user
		c.strategy, c.strategyName = strategy.New(c.cfg.Strategy, strategy.Options{
			Logger:    c.log,
			Zone:      c.cfg.Zone, // local_first falls back to ZKPRESTO_ZONE itself
			Loads:     c.loads,
			Counter:   &sharedCounter{c: c},
			HashKey:   hashKey,
			LoadBound: c.cfg.HashLoadBound,
		})
	}
	base := o.httpClient
	if base == nil {
		t, err := newTransport(c.cfg)
		if err != nil {
			return nil, err
		}
		c.ownTransport = t
		base = &http.Client{Transport: t}
	}
	c.httpClient = &http.Client{
		Transport:     &routingTransport{next: transportOf(base), forceTLS: c.cfg.hasTLS()},
		CheckRedirect: base.CheckRedirect,
		Jar:           base.Jar,
		Timeout:       base.Timeout,
	}
	session, err := presto.NewConnector(c.prestoDSN(), presto.WithHTTPClient(c.httpClient))
	if err != nil {
		return nil, fmt.Errorf("zkpresto: Presto client: %w", err)
	}
	c.session = session
	c.request = strategy.Request{User: c.cfg.User, Source: c.cfg.Source}
	return c, nil
}

// Config returns a copy of the connector's configuration.
func (c *Connector) Config() *Config { return c.cfg.Clone() }

// Driver returns the zkpresto Driver.
func (c *Connector) Driver() driver.Driver { return &Driver{} }

// Connect returns a new connection. The first call opens discovery (for
// ZooKeeper: joins or opens the shared session, bounded by
// zooKeeperConnectTimeout) and fails when there is no coordinator, so that
// db.Ping checks discovery; statements then pick their coordinators.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	d, err := c.discoverer(ctx)
	if err != nil {
		return nil, err
	}
	if snap := d.Snapshot(); len(snap.Nodes) == 0 {
		return nil, c.noNodesError(d, snap)
	}
	session, err := c.session.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("zkpresto: Presto client: %w", err)
	}
	return &Conn{connector: c, session: session}, nil
}

// Nodes returns the coordinators discovery currently lists, opening
// discovery first if no connection has yet. The snapshot is shared and must
// not be modified.
func (c *Connector) Nodes(ctx context.Context) (*discovery.Snapshot, error) {
	d, err := c.discoverer(ctx)
	if err != nil {
		return nil, err
	}
	return d.Snapshot(), nil
}

type routingKey struct{}

// WithRoutingKey returns a context whose statements hash-based strategies
// (consistent_hash, user_hash) route by key instead of by the user.
func WithRoutingKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, routingKey{}, key)
}

// pick returns the strategy's choice among the usable coordinators that are
// not in tried.
func (c *Connector) pick(ctx context.Context, tried []triedNode) (*discovery.Node, error) {
	d, err := c.discoverer(ctx)
	if err != nil {
		return nil, err
	}
	snap := d.Snapshot()
	if len(snap.Nodes) == 0 {
		return nil, c.noNodesError(d, snap)
	}
	ps := c.pickerFor(snap)
	req := &c.request
	if key, ok := ctx.Value(routingKey{}).(string); ok {
		req = &strategy.Request{User: c.request.User, Source: c.request.Source, Key: key}
	}
	// A few picks skip tried nodes without knowing the strategy; then any
	// untried candidate will do.
	for range 2*len(tried) + 1 {
		node, err := ps.picker.Pick(req)
		if err != nil {
			return nil, fmt.Errorf("zkpresto: strategy %s over %s: %w", c.strategyName, snap.Source, err)
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
	for i := range snap.Nodes {
		if !wasTried(tried, snap.Nodes[i].Addr) {
			return &snap.Nodes[i], nil
		}
	}
	return nil, fmt.Errorf("zkpresto: no untried coordinator left in %s", snap.Source)
}

// retries is how many other coordinators a statement may fail over to.
func (c *Connector) retries() int {
	switch {
	case c.cfg.Retries < 0:
		return 0
	case c.cfg.Retries == 0:
		return dsnDefaultRetries
	}
	return c.cfg.Retries
}

func wasTried(tried []triedNode, addr string) bool {
	for _, t := range tried {
		if t.addr == addr {
			return true
		}
	}
	return false
}

func (c *Connector) noNodesError(d *discoveryHandle, snap *discovery.Snapshot) error {
	if !c.cfg.ZooKeeper {
		return fmt.Errorf("zkpresto: no coordinators in %s", snap.Source)
	}
	why := "no coordinators registered"
	if d.status != nil {
		if st := d.status(); st.Problem != "" {
			why = st.Problem
		}
	}
	return fmt.Errorf("zkpresto: ZooKeeper ensemble %s: %s", c.cfg.Ensemble(), why)
}

// discoverer opens discovery once; a failure is returned to the caller and
// the next Connect tries again.
func (c *Connector) discoverer(ctx context.Context) (*discoveryHandle, error) {
	if d := c.disc.Load(); d != nil {
		return d, nil
	}
	c.discMu.Lock()
	defer c.discMu.Unlock()
	if c.closed.Load() {
		return nil, errors.New("zkpresto: connector is closed")
	}
	if d := c.disc.Load(); d != nil {
		return d, nil
	}
	d, err := c.openDiscovery(ctx)
	if err != nil {
		return nil, err
	}
	if c.cfg.HealthCheckInterval > 0 {
		c.checker = health.StartChecker(c.cfg.HealthCheckInterval, c.checkClient(), func() []discovery.Node {
			return d.Snapshot().Nodes
		}, c.health, c.log)
	}
	c.disc.Store(d)
	return d, nil
}

func (c *Connector) openDiscovery(ctx context.Context) (*discoveryHandle, error) {
	if !c.cfg.ZooKeeper {
		nodes := make([]discovery.Node, len(c.cfg.Hosts))
		for i, h := range c.cfg.Hosts {
			nodes[i] = discovery.Node{Addr: h, Format: discovery.FormatStatic}
		}
		return &discoveryHandle{Discoverer: discovery.NewStatic(c.cfg.Ensemble(), nodes)}, nil
	}
	zkCfg, err := c.cfg.zooKeeperConfig(c.log)
	if err != nil {
		return nil, err
	}
	zk, err := discovery.OpenZooKeeper(ctx, zkCfg)
	if err != nil {
		return nil, err
	}
	return &discoveryHandle{Discoverer: zk, status: zk.Status}, nil
}

// checkClient is the HTTP client for active health checks: the coordinator
// transport without the statement routing.
func (c *Connector) checkClient() *http.Client {
	return &http.Client{Transport: c.httpClient.Transport.(*routingTransport).next}
}

// pickerFor returns the picker for snap and the current health, building it
// when either changed. The common case is two atomic loads.
func (c *Connector) pickerFor(snap *discovery.Snapshot) *pickerState {
	hv := c.health.Version()
	if ps := c.picked.Load(); ps != nil && ps.snap == snap && ps.health == hv {
		return ps
	}
	c.buildMu.Lock()
	defer c.buildMu.Unlock()
	hv = c.health.Version()
	ps := c.picked.Load()
	if ps != nil && ps.snap == snap && ps.health == hv {
		return ps
	}
	if ps == nil || ps.snap != snap {
		c.loads.Retain(snap.Nodes)
		c.health.Forget(snap.Nodes)
	}
	nodes := c.health.Usable(c.applyWeights(snap.Nodes))
	next := &pickerState{snap: snap, health: hv, nodes: nodes, picker: c.strategy.Build(nodes)}
	c.picked.Store(next)
	c.log.Debug("coordinators for picking", "source", snap.Source, "generation", snap.Generation,
		"listed", len(snap.Nodes), "usable", len(nodes), "strategy", c.strategyName)
	return next
}

// applyWeights returns nodes with the DSN's weights= overrides applied.
func (c *Connector) applyWeights(nodes []discovery.Node) []discovery.Node {
	if len(c.cfg.Weights) == 0 {
		return nodes
	}
	out := slices.Clone(nodes)
	for i := range out {
		if w, ok := c.cfg.Weights[out[i].Addr]; ok {
			out[i].Weight = w
		}
	}
	return out
}

func (c *Connector) noteFailover(node *discovery.Node) {
	v, _ := c.failovers.LoadOrStore(node.Addr, new(atomic.Uint64))
	v.(*atomic.Uint64).Add(1)
}

// cancelTimeout bounds the DELETE that cancels an abandoned query.
const cancelTimeout = 2 * time.Second

// cancelQuery asks a's coordinator, in the background, to cancel the query
// whose results nobody will read, as the Presto JDBC driver does on close.
// Best effort: a coordinator also abandons queries nobody polls.
func (c *Connector) cancelQuery(a *attempt) {
	u := a.lastURL.Load()
	if u == nil {
		return
	}
	// Under cancelMu so that Close, which waits for the cancels, never
	// races a new one; after Close the coordinator abandons the query.
	c.cancelMu.Lock()
	defer c.cancelMu.Unlock()
	if c.closed.Load() {
		return
	}
	c.cancels.Add(1)
	go func() {
		defer c.cancels.Done()
		ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u.String(), nil)
		if err != nil {
			return
		}
		resp, err := c.checkClient().Do(req)
		if err != nil {
			c.log.Debug("cancelling a query failed", "node", a.node.Addr, "err", err)
			return
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
	}()
}

// prestoDSN is the Presto Go client's DSN: every setting of ours except the
// host, which the transport fills per statement.
func (c *Connector) prestoDSN() string {
	u := url.URL{Scheme: "presto", Host: placeholderHost}
	if c.cfg.Trino {
		u.Scheme = "trino"
	}
	if c.cfg.User != "" {
		if c.cfg.Password != "" {
			u.User = url.UserPassword(c.cfg.User, c.cfg.Password)
		} else {
			u.User = url.User(c.cfg.User)
		}
	}
	if c.cfg.Catalog != "" {
		u.Path = "/" + c.cfg.Catalog
		if c.cfg.Schema != "" {
			u.Path += "/" + c.cfg.Schema
		}
	}
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("source", c.cfg.Source)
	set("client_tags", strings.Join(c.cfg.ClientTags, ","))
	set("client_info", c.cfg.ClientInfo)
	set("timezone", c.cfg.TimeZone)
	// TLS material is loaded into the driver's transport; the Presto client
	// only needs to know that the scheme is https.
	if c.cfg.hasTLS() {
		q.Set("ssl_skip_verify", "true")
	}
	keys := make([]string, 0, len(c.cfg.SessionProperties))
	for k := range c.cfg.SessionProperties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		q.Set(k, c.cfg.SessionProperties[k])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Close releases the discovery session, the health checker and idle HTTP
// connections. Statements still running finish on their coordinators.
func (c *Connector) Close() error {
	c.cancelMu.Lock()
	already := c.closed.Swap(true)
	c.cancelMu.Unlock()
	if already {
		return nil
	}
	c.discMu.Lock()
	d, checker := c.disc.Load(), c.checker
	c.discMu.Unlock()
	if checker != nil {
		checker.Close()
	}
	var err error
	if d != nil {
		err = d.Close()
	}
	c.cancels.Wait()
	if c.ownTransport != nil {
		c.ownTransport.CloseIdleConnections()
	}
	return err
}

// newTransport builds the transport the driver owns, with the DSN's TLS keys.
func newTransport(cfg *Config) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	t.IdleConnTimeout = 90 * time.Second
	if cfg.hasTLS() {
		tlsCfg, err := presto.BuildTLSConfig(cfg.SSLCA, cfg.SSLCert, cfg.SSLKey, cfg.SSLSkipVerify)
		if err != nil {
			return nil, fmt.Errorf("zkpresto: TLS settings: %w", err)
		}
		t.TLSClientConfig = tlsCfg
	}
	return t, nil
}

// hasTLS mirrors the Presto client's rule: any ssl_* key means https.
func (c *Config) hasTLS() bool {
	return c.SSLCert != "" || c.SSLKey != "" || c.SSLCA != "" || c.SSLSkipVerify
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// sharedCounter gives global_poll the counter znode /<namespace>-counter in
// the connector's ZooKeeper session, the znode Kyuubi's polling strategy
// uses, so that both kinds of client share one rotation. Without ZooKeeper
// it reports an error and global_poll counts locally.
type sharedCounter struct {
	c       *Connector
	once    sync.Once
	counter *discovery.ZKCounter
	err     error
}

func (s *sharedCounter) Next() (uint64, error) {
	d := s.c.disc.Load()
	if d == nil {
		return 0, errors.New("zkpresto: discovery is not open")
	}
	s.once.Do(func() {
		zk, ok := d.Discoverer.(*discovery.ZooKeeper)
		if !ok {
			s.err = errors.New("zkpresto: global_poll needs ZooKeeper discovery")
			return
		}
		s.counter = zk.Counter(s.c.cfg.ZooKeeperPath() + "-counter")
	})
	if s.err != nil {
		return 0, s.err
	}
	return s.counter.Next()
}
