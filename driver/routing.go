package driver

import (
	"net/http"

	"github.com/zkpresto/zkpresto/routing"
)

// Routing is what a DSN describes for a caller that sends Presto requests
// itself instead of through database/sql (the gateway): the routing core,
// and the HTTP client for the coordinators, with the DSN's TLS keys applied
// and no statement routing on top.
type Routing struct {
	// Router picks coordinators as the driver would for this DSN.
	Router *routing.Router
	// Client sends requests to the coordinators.
	Client *http.Client
	// TLS is true when the DSN's ssl_* keys ask for https to every
	// coordinator.
	TLS bool

	connector *Connector
}

// OpenRouting returns the routing core and coordinator client cfg
// describes. Like NewConnector it does no network I/O; close the result to
// release discovery.
func OpenRouting(cfg *Config, opts ...Option) (*Routing, error) {
	c, err := NewConnector(cfg, opts...)
	if err != nil {
		return nil, err
	}
	return &Routing{Router: c.router, Client: c.checkClient, TLS: c.cfg.hasTLS(), connector: c}, nil
}

// Close releases discovery, the health checker and idle connections.
func (r *Routing) Close() error { return r.connector.Close() }
