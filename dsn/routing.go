package dsn

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/health/httpprobe"
	"github.com/zkpresto/zkpresto/internal/pool"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
)

// RoutingOptions are what a routing.Config holds besides what a DSN says:
// the caller's choices.
type RoutingOptions struct {
	// Strategy, when set, makes the strategy instead of the one the
	// Config names.
	Strategy strategy.Factory
	// Health says when a failing coordinator is ejected; the zero value is
	// the default policy.
	Health health.Policy
	// Probe runs the active health checks (healthCheckInterval); nil
	// means GET /v1/info with a plain client.
	Probe health.Probe
	// Logger receives the Router's logs, and discovery's; nil means none.
	Logger *slog.Logger
}

// RoutingConfig returns the routing core's configuration that c describes:
// discovery (the ZooKeeper namespace, with its credentials and TLS, or the
// static host list), the strategy and its options, weights, retries and
// health checks. It does not validate c (ParseDSN has, or Validate does).
func (c *Config) RoutingConfig(opts RoutingOptions) routing.Config {
	hashKey, _ := strategy.ParseHashKey(c.HashKey) // validated; empty is by user
	rc := routing.Config{
		Strategy:     opts.Strategy,
		StrategyName: c.Strategy,
		StrategyOptions: strategy.Options{
			Zone:      c.Zone, // local_first falls back to ZKPRESTO_ZONE itself
			HashKey:   hashKey,
			LoadBound: c.HashLoadBound,
			SlowStart: c.SlowStart,
		},
		Weights:             c.Weights,
		Retries:             c.Retries,
		Health:              opts.Health,
		HealthCheckInterval: c.HealthCheckInterval,
		Probe:               opts.Probe,
		Logger:              opts.Logger,
	}
	if rc.Probe == nil {
		rc.Probe = httpprobe.New(&http.Client{})
	}
	if c.ZooKeeper {
		zk := c.zooKeeperConfig(opts.Logger)
		rc.ZooKeeper = &zk
	} else {
		nodes := make([]discovery.Node, len(c.Hosts))
		for i, h := range c.Hosts {
			nodes[i] = discovery.Node{Addr: h, Format: discovery.FormatStatic}
		}
		rc.Discoverer = discovery.NewStatic(c.Ensemble(), nodes)
	}
	return rc
}

// OpenOptions are Open's choices besides the Config.
type OpenOptions struct {
	// Logger receives the Router's logs; nil means none, but for the
	// warning that the Config names an unknown strategy, which then goes
	// to slog.Default().
	Logger *slog.Logger
	// Strategy, when set, makes the strategy instead of the one the
	// Config names.
	Strategy strategy.Factory
	// Health says when a failing coordinator is ejected; the zero value is
	// the default policy.
	Health health.Policy
	// Client, when set, carries the coordinator traffic through its
	// transport instead of one Open makes: the Config's ssl_* keys and
	// time limits are then not applied, and its failed dials are not
	// reported to the Router.
	Client *http.Client
}

// Routing is what a Config describes to a caller that sends Presto
// requests itself (the gateway, and the driver under database/sql): the
// routing core, and the HTTP client for the coordinators.
type Routing struct {
	// Router picks coordinators for this Config.
	Router *routing.Router
	// Client sends requests to the coordinators, with the Config's TLS
	// keys and time limits (or through OpenOptions.Client's transport),
	// and no statement routing on top. It has no Jar and no Timeout.
	Client *http.Client
	// Transport is the transport Open made, under Client; nil with
	// OpenOptions.Client.
	Transport *http.Transport
	// TLS is true when the Config asks for https to every coordinator.
	TLS bool

	dialer *pool.Dialer // Transport's
}

// Open returns the routing core and coordinator client cfg describes. It
// checks cfg as ParseDSN does and copies it; it does no network I/O (the
// Router opens discovery on first use) but reads the TLS files. A failed
// dial of its transport counts against its coordinator in the Router's
// health, even when the request that asked for it has ended: it is the
// only news of a coordinator that drops connections. Close the result to
// release discovery.
func Open(cfg *Config, opts OpenOptions) (*Routing, error) {
	if cfg == nil {
		return nil, errors.New("zkpresto: dsn: Open: nil Config")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("zkpresto: dsn: %w", err)
	}
	cfg = cfg.Clone()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Routing{TLS: cfg.UsesTLS()}
	next := http.RoundTripper(http.DefaultTransport)
	switch {
	case opts.Client != nil:
		if opts.Client.Transport != nil {
			next = opts.Client.Transport
		}
	default:
		// The Router is set below, before any dial.
		t, d, err := cfg.newTransport(func(addr string, err error) {
			log.Debug("dialing a coordinator failed", "node", addr, "err", err)
			r.Router.Health().Failure(addr, err)
		})
		if err != nil {
			return nil, err
		}
		r.Transport, r.dialer, next = t, d, t
	}
	r.Client = &http.Client{Transport: next}
	router, err := routing.New(cfg.RoutingConfig(RoutingOptions{
		Strategy: opts.Strategy, Health: opts.Health, Probe: httpprobe.New(r.Client), Logger: log,
	}))
	if err != nil {
		r.CloseIdleConnections()
		return nil, err
	}
	if opts.Logger == nil && opts.Strategy == nil && cfg.Strategy != "" {
		if _, known := strategy.Lookup(cfg.Strategy); !known {
			// Never silent: without a logger of the caller's, the default one.
			slog.Default().Warn("zkpresto: "+strategy.UnknownMessage(cfg.Strategy),
				"name", cfg.Strategy, "known", strategy.Names())
		}
	}
	r.Router = router
	return r, nil
}

// Close releases discovery, the health checker and the idle connections of
// the transport Open made.
func (r *Routing) Close() error {
	err := r.Router.Close()
	r.CloseIdleConnections()
	return err
}

// CloseIdleConnections closes the idle connections of the transport Open
// made and the spares of its dial race (connections that came up after
// their statement went elsewhere), and stops the dials the race gave up
// on. It does nothing with OpenOptions.Client.
func (r *Routing) CloseIdleConnections() {
	if r.Transport != nil {
		r.Transport.CloseIdleConnections()
	}
	if r.dialer != nil {
		r.dialer.CloseIdleConnections()
	}
}
