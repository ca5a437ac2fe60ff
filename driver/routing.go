package driver

import (
	"net/http"

	"github.com/zkpresto/zkpresto/routing"
)

// Routing is what a DSN describes for a caller that sends Presto requests
// itself instead of through database/sql: the routing core, and the HTTP
// client for the coordinators, with the DSN's TLS keys applied and no
// statement routing on top. It is dsn.Open's result, kept for callers of
// OpenRouting.
type Routing struct {
	// Router picks coordinators as the driver would for this DSN.
	Router *routing.Router
	// Client sends requests to the coordinators.
	Client *http.Client
	// TLS is true when the DSN's ssl_* keys ask for https to every
	// coordinator.
	TLS bool

	close func() error
}

// OpenRouting returns the routing core and coordinator client cfg
// describes, as NewConnector builds them, with the same checks and errors;
// dsn.Open does the same without the driver. It does no network I/O;
// close the result to release discovery.
func OpenRouting(cfg *Config, opts ...Option) (*Routing, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	o := optionsOf(opts)
	r, err := o.open(cfg)
	if err != nil {
		return nil, err
	}
	return &Routing{Router: r.Router, Client: r.Client, TLS: r.TLS, close: r.Close}, nil
}

// Close releases discovery, the health checker and idle connections.
func (r *Routing) Close() error { return r.close() }
