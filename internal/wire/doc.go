// Package wire holds what zkpresto knows of the Presto/Trino client
// protocol on the wire, for the driver's transport and the gateway alike:
// what a refusal (503, 429, 502, 504) and a redirect of a statement mean,
// which follow-up URIs may be requested, how a page is read whole and
// checked, how a compressed page is decoded, how a query is cancelled,
// what a coordinator's GET /v1/info says about it, and how a duration is
// written.
//
// Connections are not its business: dialing, pooling, the peek before a
// connection is reused and the bookkeeping of what a submission wrote are
// package pool's, which applies these rules. Nothing here picks
// coordinators or keeps health: that is package routing. The rules are the
// protocol's, not a client's: what only presto-go-client needs stays in
// package driver. It imports nothing of this module but leaf helpers, so
// that the rules can be read, and tested, alone.
package wire
