// Package protocol holds what zkpresto knows of the Presto/Trino client
// protocol on the wire, for the driver's transport and the gateway alike:
// which requests submit a statement, whether a submission may have reached
// the coordinator (a byte of it may have been written), what a 503
// before acceptance means, which follow-up requests may be retried, how to
// tell from a response body that a query is still running, how to cancel a
// query, and what a coordinator's GET /v1/info says about it.
//
// Nothing here picks coordinators or keeps health: that is package
// routing. The rules are the protocol's, not a client's: what only
// presto-go-client needs stays in package driver.
package protocol
