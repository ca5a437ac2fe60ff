package driver

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
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

// WithHTTPClient makes every coordinator connection use client instead of the
// driver's own. The DSN's ssl_* keys are then not applied to it.
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
	httpClient   *http.Client
	ownHTTP      bool
	request      strategy.Request // what Pick sees; read-only after NewConnector

	discMu sync.Mutex
	disc   atomic.Pointer[discoveryHandle]

	buildMu sync.Mutex
	picked  atomic.Pointer[pickerState]

	nodesMu sync.Mutex
	nodes   atomic.Pointer[map[string]driver.Connector] // copy-on-write, by node URL

	closed atomic.Bool
}

// discoveryHandle pairs a discoverer with its status report, when it has one.
type discoveryHandle struct {
	discovery.Discoverer
	status func() discovery.Status
}

// pickerState is a picker built for one snapshot.
type pickerState struct {
	snap    *discovery.Snapshot
	picker  strategy.Picker
	members map[string]struct{}
}

var (
	_ driver.Connector = (*Connector)(nil)
)

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
	c := &Connector{cfg: cfg.Clone(), log: o.logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if o.strategy != nil {
		c.strategy, c.strategyName = o.strategy, fmt.Sprintf("%T", o.strategy)
	} else {
		c.strategy, c.strategyName = strategy.New(c.cfg.Strategy, strategy.Options{Logger: c.log})
	}
	if o.httpClient != nil {
		c.httpClient = o.httpClient
	} else {
		client, err := newHTTPClient(c.cfg)
		if err != nil {
			return nil, err
		}
		c.httpClient, c.ownHTTP = client, true
	}
	c.request = strategy.Request{User: c.cfg.User, Source: c.cfg.Source}
	empty := map[string]driver.Connector{}
	c.nodes.Store(&empty)
	return c, nil
}

// Config returns a copy of the connector's configuration.
func (c *Connector) Config() *Config { return c.cfg.Clone() }

// Driver returns the zkpresto Driver.
func (c *Connector) Driver() driver.Driver { return &Driver{} }

// Connect picks a coordinator and returns a connection bound to it. The
// first call opens discovery (for ZooKeeper: joins or opens the shared
// session, bounded by zooKeeperConnectTimeout).
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	node, err := c.pick(ctx)
	if err != nil {
		return nil, err
	}
	pc, err := c.nodeConnector(node)
	if err != nil {
		return nil, err
	}
	conn, err := pc.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("zkpresto: coordinator %s: %w", node.Addr, err)
	}
	return &Conn{conn: conn, node: node, connector: c}, nil
}

// Nodes returns the coordinators the connector currently picks from, opening
// discovery first if no connection has yet. The snapshot is shared and must
// not be modified.
func (c *Connector) Nodes(ctx context.Context) (*discovery.Snapshot, error) {
	d, err := c.discoverer(ctx)
	if err != nil {
		return nil, err
	}
	return d.Snapshot(), nil
}

// pick returns the node the strategy chooses from the current snapshot.
func (c *Connector) pick(ctx context.Context) (*discovery.Node, error) {
	d, err := c.discoverer(ctx)
	if err != nil {
		return nil, err
	}
	snap := d.Snapshot()
	if len(snap.Nodes) == 0 {
		return nil, c.noNodesError(d, snap)
	}
	node, err := c.pickerFor(snap).picker.Pick(&c.request)
	if err != nil {
		return nil, fmt.Errorf("zkpresto: strategy %s over %s: %w", c.strategyName, snap.Source, err)
	}
	return node, nil
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

// pickerFor returns the picker for snap, building it the first time a
// connection sees a new snapshot. The common case is one atomic load.
func (c *Connector) pickerFor(snap *discovery.Snapshot) *pickerState {
	if ps := c.picked.Load(); ps != nil && ps.snap == snap {
		return ps
	}
	c.buildMu.Lock()
	defer c.buildMu.Unlock()
	if ps := c.picked.Load(); ps != nil && ps.snap == snap {
		return ps
	}
	nodes := c.applyWeights(snap.Nodes)
	ps := &pickerState{snap: snap, picker: c.strategy.Build(nodes), members: make(map[string]struct{}, len(nodes))}
	for _, n := range nodes {
		ps.members[n.URL()] = struct{}{}
	}
	c.picked.Store(ps)
	c.log.Debug("coordinators for picking", "source", snap.Source, "generation", snap.Generation, "nodes", len(nodes), "strategy", c.strategyName)
	return ps
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

// stillListed reports whether node is in the latest snapshot, so that
// pooled connections to coordinators that left are dropped.
func (c *Connector) stillListed(node *discovery.Node) bool {
	d := c.disc.Load()
	if d == nil {
		return false
	}
	snap := d.Snapshot()
	if len(snap.Nodes) == 0 {
		return true // keep serving what we have while discovery has nothing better
	}
	_, ok := c.pickerFor(snap).members[node.URL()]
	return ok
}

// nodeConnector returns the Presto client connector for node, creating it
// once per coordinator URL.
func (c *Connector) nodeConnector(node *discovery.Node) (driver.Connector, error) {
	key := node.URL()
	if pc, ok := (*c.nodes.Load())[key]; ok {
		return pc, nil
	}
	c.nodesMu.Lock()
	defer c.nodesMu.Unlock()
	current := *c.nodes.Load()
	if pc, ok := current[key]; ok {
		return pc, nil
	}
	client := c.httpClient
	if node.Scheme == "https" && !c.cfg.hasTLS() {
		// The Presto client chooses https only when ssl_* keys are set; a
		// node registered as https is upgraded here instead.
		client = &http.Client{Transport: httpsUpgrade{next: transportOf(client)}, Timeout: client.Timeout, Jar: client.Jar}
	}
	pc, err := presto.NewConnector(c.prestoDSN(node), presto.WithHTTPClient(client))
	if err != nil {
		return nil, fmt.Errorf("zkpresto: coordinator %s: %w", node.Addr, err)
	}
	next := make(map[string]driver.Connector, len(current)+1)
	for k, v := range current {
		next[k] = v
	}
	next[key] = pc
	c.nodes.Store(&next)
	return pc, nil
}

// prestoDSN is the Presto Go client's DSN for one coordinator.
func (c *Connector) prestoDSN(node *discovery.Node) string {
	u := url.URL{Scheme: "presto", Host: node.Addr}
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
	set("ssl_cert", c.cfg.SSLCert)
	set("ssl_key", c.cfg.SSLKey)
	set("ssl_ca", c.cfg.SSLCA)
	if c.cfg.SSLSkipVerify {
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

// Close releases the discovery session and idle HTTP connections. Open
// connections keep working against their coordinators until closed.
func (c *Connector) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.discMu.Lock()
	d := c.disc.Load()
	c.discMu.Unlock()
	var err error
	if d != nil {
		err = d.Close()
	}
	if c.ownHTTP {
		c.httpClient.CloseIdleConnections()
	}
	return err
}

// newHTTPClient builds the client the driver owns, with the DSN's TLS keys.
func newHTTPClient(cfg *Config) (*http.Client, error) {
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
	return &http.Client{Transport: t}, nil
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

// httpsUpgrade sends a coordinator's plain-http requests over https.
type httpsUpgrade struct{ next http.RoundTripper }

func (h httpsUpgrade) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" {
		r := req.Clone(req.Context())
		r.URL.Scheme = "https"
		req = r
	}
	return h.next.RoundTrip(req)
}
