package driver

import "github.com/zkpresto/zkpresto/dsn"

// Routing is what a DSN describes for a caller that sends Presto requests
// itself instead of through database/sql: the routing core, and the HTTP
// client for the coordinators, with the DSN's TLS keys applied and no
// statement routing on top. See dsn.Routing for its fields.
type Routing = dsn.Routing

// OpenRouting returns the routing core and coordinator client cfg
// describes, as NewConnector builds them, with the same checks and errors;
// dsn.Open does the same without the driver. It does no network I/O;
// close the result to release discovery.
func OpenRouting(cfg *Config, opts ...Option) (*Routing, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	o := optionsOf(opts)
	return o.open(cfg)
}
