// Package dsn reads and writes zkpresto DSNs (presto:// and trino://, with
// the Presto JDBC driver's and Kyuubi's spellings), checks them, and turns
// one into what reaching its coordinators takes: the routing core's
// configuration (discovery, strategy, health checks, slow start) and the
// HTTP transport (TLS keys, dial, write and response time limits).
//
// The database/sql driver (package driver) and the gateway both build on
// it; driver.Config is this package's Config. ParseDSN and Validate do no
// I/O; Open reads the TLS files only, and returns a routing.Router whose
// discovery opens on first use.
package dsn
