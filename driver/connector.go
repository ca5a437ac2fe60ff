package driver

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	presto "github.com/prestodb/presto-go-client/v2"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/dsn"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
)

// Option configures a Connector.
type Option func(*connectorOptions)

type connectorOptions struct {
	logger     *slog.Logger
	strategy   strategy.Factory
	httpClient *http.Client
	policy     health.Policy
	// tokenSource is WithAccessTokenSource's.
	tokenSource AccessTokenSource
}

// WithLogger sends the driver's logs to logger. Without it the driver logs
// nothing but the warning that the DSN names an unknown strategy, which goes
// to slog.Default().
func WithLogger(logger *slog.Logger) Option {
	return func(o *connectorOptions) { o.logger = logger }
}

// WithStrategy makes the connector's strategy with f instead of taking the
// one the DSN names. f is called once, by NewConnector, so every connector
// has a strategy of its own.
func WithStrategy(f strategy.Factory) Option {
	return func(o *connectorOptions) { o.strategy = f }
}

// WithHealthPolicy sets when a failing coordinator is ejected and for how
// long, instead of health.Policy's defaults (3 failures in a row, 2 s
// growing to 1 min, at most half the coordinators at once).
func WithHealthPolicy(p health.Policy) Option {
	return func(o *connectorOptions) { o.policy = p }
}

// WithHTTPClient sends coordinator traffic through client's transport
// instead of the driver's own. The DSN's ssl_* keys and time limits
// (dialTimeout, writeTimeout, responseTimeout) are then not applied to it,
// and its failed dials are not reported; the driver still routes and fails
// over requests on top of it.
func WithHTTPClient(client *http.Client) Option {
	return func(o *connectorOptions) { o.httpClient = client }
}

// checkConfig makes the checks ParseDSN makes, for a Config built by hand
// too, with NewConnector's name in the errors.
func checkConfig(cfg *Config) error {
	if cfg == nil {
		return errors.New("driver: NewConnector: nil Config")
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("driver: NewConnector: %w", err)
	}
	return nil
}

// optionsOf applies opts.
func optionsOf(opts []Option) connectorOptions {
	var o connectorOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// open returns the routing core and coordinator client of cfg with o's
// choices: the one place where the driver builds them.
func (o *connectorOptions) open(cfg *Config) (*dsn.Routing, error) {
	return dsn.Open(cfg, dsn.Options{Logger: o.logger, Strategy: o.strategy, Health: o.policy, Client: o.httpClient})
}

// Connector is a driver.Connector for sql.OpenDB: a routing.Router, which
// picks a coordinator per statement, plus the Presto client, which runs it.
// It is safe for concurrent use. Close it (sql.DB.Close does) to release the
// discovery session.
type Connector struct {
	cfg *Config
	log *slog.Logger
	// routed is the routing core and, in its Client, the coordinator
	// transport without the statement routing (probes and cancels).
	routed     *dsn.Routing
	httpClient *http.Client     // routes every request to its statement's coordinator
	session    driver.Connector // the Presto client's connector
	request    strategy.Request // what Pick sees without a routing key; read-only
	// connectMu holds Connect's call of the Presto connector, whose session
	// setup hook hands the new session over in connecting.
	connectMu  sync.Mutex
	connecting *presto.Session
	// cancelAuth authenticates the driver's own cancels.
	cancelAuth *cancelAuth
}

var _ driver.Connector = (*Connector)(nil)

// NewConnector returns a Connector for cfg. It does no network I/O; the
// first Connect opens discovery. cfg is copied, after the checks ParseDSN
// makes: a Config built by hand gets the same errors.
func NewConnector(cfg *Config, opts ...Option) (*Connector, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	o := optionsOf(opts)
	if err := checkTokenSource(cfg, o.tokenSource); err != nil {
		return nil, err
	}
	c := &Connector{cfg: cfg.Clone(), log: o.logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	routed, err := o.open(c.cfg)
	if err != nil {
		return nil, err
	}
	c.routed = routed
	next := routed.Client.Transport
	base := o.httpClient
	if base == nil {
		base = &http.Client{}
	}
	rt := &routingTransport{
		next:       next,
		forceTLS:   routed.TLS,
		background: routed.Router.Go,
		cancel:     routed.Client,
		closed:     routed.Router.Closed,
		closeIdle:  routed.CloseIdleConnections,
		log:        c.log,
		headers:    newClientHeaders(c.cfg, o.tokenSource),
	}
	rt.cancelAuth = newCancelAuth(c.cfg, rt.headers)
	c.cancelAuth = rt.cancelAuth
	rt.dialRace = c.cfg.DialRace()
	rt.releasedFn = rt.released
	c.httpClient = &http.Client{
		Transport: rt,
		// Statements are never redirected (the transport reports a
		// redirect as an error before the client could follow it; this is
		// the second lock on that door).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Jar:           base.Jar,
		Timeout:       base.Timeout,
	}
	session, err := presto.NewConnector(c.prestoDSN(), presto.WithHTTPClient(c.httpClient),
		presto.WithSessionSetup(func(s *presto.Session) { c.connecting = s }))
	if err != nil {
		_ = routed.Close()
		return nil, fmt.Errorf("driver: Presto client: %w", err)
	}
	c.session = session
	c.request = strategy.Request{User: c.cfg.User, Source: c.cfg.Source}
	return c, nil
}

// Config returns a copy of the connector's configuration.
func (c *Connector) Config() *Config { return c.cfg.Clone() }

// Driver returns the zkpresto Driver.
func (c *Connector) Driver() driver.Driver { return &Driver{} }

// Router returns the connector's routing core, for callers that want its
// figures or its picks without database/sql.
func (c *Connector) Router() *routing.Router { return c.routed.Router }

// Connect returns a new connection. The first call opens discovery (for
// ZooKeeper: joins or opens the shared session, bounded by
// zooKeeperConnectTimeout) and fails when there is no coordinator, so that
// a pool never holds a connection to nothing; statements then pick their
// coordinators. db.Ping goes further: Conn.Ping asks a coordinator.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := c.routed.Router.Open(ctx); err != nil {
		return nil, err
	}
	// The Presto client's connection configures the session (user,
	// catalog, properties...) and is kept for its Close; the driver runs
	// statements on the session itself and decodes their rows (values.go).
	c.connectMu.Lock()
	session, err := c.session.Connect(ctx)
	ps := c.connecting
	c.connecting = nil
	c.connectMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("driver: Presto client: %w", err)
	}
	if ps == nil {
		session.Close()
		return nil, errors.New("driver: internal error: the Presto client made no session")
	}
	return &Conn{connector: c, session: session, ps: ps, clientSession: newClientSession(c.cfg)}, nil
}

// Nodes returns the coordinators discovery currently lists, opening
// discovery first if no connection has yet. The snapshot is shared and must
// not be modified.
func (c *Connector) Nodes(ctx context.Context) (*discovery.Snapshot, error) {
	return c.routed.Router.Snapshot(ctx)
}

// Stats returns the connector's current figures. It does no I/O and does not
// open discovery.
func (c *Connector) Stats() Stats { return c.routed.Router.Stats() }

type routingKey struct{}

// WithRoutingKey returns a context whose statements hash-based strategies
// (consistent_hash, user_hash) route by key instead of by the user.
func WithRoutingKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, routingKey{}, key)
}

// requestFor returns what the strategy sees for a statement under ctx.
func (c *Connector) requestFor(ctx context.Context) *strategy.Request {
	if key, ok := ctx.Value(routingKey{}).(string); ok {
		return &strategy.Request{User: c.request.User, Source: c.request.Source, Key: key}
	}
	return &c.request
}

// cancelQuery asks a's coordinator, in the background, to cancel the query
// whose results nobody will read, as the Presto JDBC driver does on close.
// Best effort: a coordinator also abandons queries nobody polls; after
// Close nothing is sent.
func (c *Connector) cancelQuery(a *attempt) {
	u := a.LastURL()
	if u == nil || wire.CheckTarget(u, a.Node.Addr, c.cfg.UsesTLS() || a.Node.Scheme == "https") != nil {
		return
	}
	c.routed.Router.Go(func(<-chan struct{}) {
		if err := wire.CancelQuery(context.Background(), c.routed.Client, u, c.cancelAuth.header(a)); err != nil {
			c.log.Debug("cancelling a query failed", "node", a.Node.Addr, "err", err)
		}
	})
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
	if c.cfg.TimeZone != "" {
		q.Set("timezone", c.cfg.TimeZone)
	} else {
		q.Set("timezone", clientTimeZone())
	}
	// TLS material is loaded into the driver's transport; the Presto client
	// only needs to know that the scheme is https.
	if c.cfg.UsesTLS() {
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
	return c.routed.Close()
}
