// Package coordinator simulates Presto coordinators on the loopback interface, so the driver's
// tests, benchmarks and demo can run where no Presto server can be installed.
//
// A Coordinator speaks enough of the Presto client protocol for presto-go-client: statements are
// submitted with POST /v1/statement (or PUT /v1/statement/{queryId} with a pre-minted id), the
// SQL text in the body and the session in X-Presto-* headers (X-Trino-* is accepted as well).
// Results come back as JSON QueryResults and are paged through absolute nextUri links built
// from the request's Host header; DELETE on a nextUri cancels the query. Unlike a generic test
// double it counts statements per node and per user, records what reached it, and lets a test
// add latency, mark the node as starting, or kill it and bring it back on the same port.
//
// # Statements
//
// The simulator does not parse SQL; it recognises two markers anywhere in the statement text
// (case-insensitive) and otherwise describes the request:
//
//   - fail('message') — the query fails with a Presto query error whose message is the
//     given text (a doubled single quote stands for one), with errorName
//     GENERIC_USER_ERROR and errorType USER_ERROR, as Presto's own fail() function does.
//     It wins over rows(N).
//   - rows(N) — e.g. SELECT * FROM rows(1000): N rows with one bigint column n holding
//     1..N in order, sent in batches of Options.BatchRows rows, one batch per poll.
//   - anything else — one row of varchar columns coordinator, user, catalog, schema,
//     source and query, telling which node served the statement and what reached it.
//
// # Life of a query
//
// The answer to the submission is always QUEUED with a nextUri and no data, as on a busy
// Presto. Each GET of a nextUri then waits until the statement's latency (Options.Latency,
// measured from submission) has passed, but at most one second per poll, and answers RUNNING
// without data while it has not; after that each poll returns the next batch, and the last
// one is FINISHED (or FAILED) without a nextUri. Re-sending the previous GET replays its
// answer, so an idempotent retry of a page is safe. A finished query is forgotten, apart
// from a bounded record of recent final answers; a query that nobody polls for
// Options.AbandonAfter is dropped, as Presto abandons queries whose client went away.
//
// # Failure simulation
//
// SetStarting(true) makes /v1/info report "starting": true and POST /v1/statement answer 503
// (which presto-go-client retries with back-off). Stop closes the listener and every
// connection and forgets all queries, like a node that died; Restart listens again on the
// same port. /v1/info answers like Presto's NodeInfo resource and /v1/info/state with
// "ACTIVE" (or "INACTIVE" while starting).
package coordinator
