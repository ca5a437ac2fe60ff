// Package routing is zkpresto's routing core: the part of the driver that
// the gateway shares. A Router opens and closes discovery (a ZooKeeper
// namespace or a static list), runs the health tracker and the optional
// active checker, builds a picker per (snapshot, health version) with the
// weight overrides, picks a coordinator per statement with the tried-nodes
// fallback, takes the statements' start, end and latency reports, counts
// failovers, and returns Stats without I/O.
//
// Run is the failover loop both the driver and the gateway use: it picks,
// lets the caller try the statement, and from the Outcome the caller
// reports decides whether to try another coordinator (the statement
// provably never reached this one), to report a StatementError (it may
// have), or to return the coordinator's answer.
//
// A Router is safe for concurrent use. It knows nothing of HTTP or of
// database/sql: the driver is a Router plus the Presto client, the gateway
// a Router plus an HTTP handler.
package routing
