// Package coordinator simulates Presto and Trino coordinators on the loopback interface, so
// that tests of programs that talk to them, through zkpresto's driver or gateway or any other
// client, can run where no Presto or Trino server can be installed.
//
// A Coordinator speaks enough of the client protocol for presto-go-client and for a gateway
// between clients and coordinators: statements are submitted with POST /v1/statement (or
// PUT /v1/statement/{queryId} with a pre-minted id), the SQL text in the body and the
// session in headers. Results come back as JSON QueryResults and are paged through absolute
// nextUri links; DELETE on a nextUri cancels the query. Unlike a generic test double it
// counts statements per node and per user, records what reached it (Requests for
// submissions, Calls for every statement and query request), and lets a test add latency,
// mark the node as starting, or kill it and bring it back on the same port.
//
// # Flavours
//
// Options.Flavour is Presto (the default) or Trino. A coordinator answers with its flavour's
// headers (X-Presto-* or X-Trino-*). A Presto one reads X-Presto-* session headers and also
// X-Trino-* ones, unless StrictPrefix is set; a Trino one ignores X-Presto-* headers, as
// Trino does, so a test sees whether a proxy translated them. Either way Request and Call
// count the headers of each prefix that arrived.
//
// # Statements
//
// The simulator does not parse SQL. These session statements (the whole statement text,
// case-insensitive) answer once, FINISHED: on Trino without columns or data, on PrestoDB with
// the boolean row "result", as those servers answer them; every executing answer, a retry
// included, carries the response header real servers send, named with the flavour's
// prefix (the servers rebuild
// these headers from the query's info on every answer: trino: server/protocol/Query.java,
// getNextResult, and ExecutingStatementResource.toResponse):
//
//   - SET SESSION a.b = 'v' → Set-Session: a.b=v (URL-encoded); RESET SESSION a.b →
//     Clear-Session.
//   - USE catalog.schema → Set-Catalog and Set-Schema; USE schema → Set-Schema.
//   - SET PATH p → Set-Path; SET ROLE r [IN catalog] → Set-Role.
//   - SET SESSION AUTHORIZATION u → Set-Authorization-User; RESET SESSION AUTHORIZATION
//     → Reset-Authorization-User (Trino only; Presto answers NOT_SUPPORTED).
//   - PREPARE name FROM sql → Added-Prepare: name=sql (URL-encoded);
//     DEALLOCATE PREPARE name → Deallocated-Prepare.
//   - EXECUTE name [USING a, b] runs the statement of that name from the client's
//     Prepared-Statement header, with the parameters in place of its ? marks; without
//     the header it fails with NOT_FOUND, as on a real server. Servers accept about 2 MB
//     of headers and so does the simulator (4 MB; Go's default is 1 MB).
//   - START TRANSACTION → Started-Transaction-Id with a fresh UUID; COMMIT and ROLLBACK
//     → Clear-Transaction-Id. A statement carrying an unknown Transaction-Id fails with
//     UNKNOWN_TRANSACTION; Stop forgets every transaction, as a dead node does.
//
// A statement that begins with INSERT, DELETE, UPDATE, MERGE or CREATE TABLE ... AS changes
// data: its executing answers carry updateType (INSERT, CREATE TABLE, ...), its one row (of
// column rows) is the count, N of a rows(N) in it or 0, and from that answer on updateCount
// is the count, the last answer included (trino: Query.getNextResult).
//
// Any other statement is read for markers anywhere in its text (case-insensitive):
//
//   - warn('message') — every answer after dispatch carries a warning with that message
//     and the code TOO_MANY_STAGES (1), as an analyzer's warning is (trino: ProtocolUtil
//     toClientWarning; spi/StandardWarningCode.java on both servers).
//   - syntax(L, C) — the query fails with SYNTAX_ERROR (1), message "line L:C: ...", and
//     error.errorLocation {lineNumber: L, columnNumber: C}, as a parser error does.
//   - fail('message') — the query fails with a Presto query error whose message is the
//     given text (a doubled single quote stands for one), with errorName
//     GENERIC_USER_ERROR and errorType USER_ERROR, as Presto's own fail() function does.
//     It wins over rows(N).
//   - rows(N) — e.g. SELECT * FROM rows(1000): N rows with one bigint column n holding
//     1..N in order, sent in batches of Options.BatchRows rows, one batch per poll.
//   - bigrows(N, BYTES) — N rows of n bigint and s varchar, s being BYTES copies of one
//     letter (see BigrowsValue). Pages are written while they are sent, never held, so
//     BatchRows 10 and bigrows(100, 16777216) make 160 MB pages without holding one in memory.
//   - tstz('zone') — e.g. SELECT * FROM tstz('Europe/Paris'): three rows of n bigint and ts
//     timestamp with time zone (Trino: timestamp(3) with time zone), written as Presto
//     writes them for a session in that zone, "2024-05-06 07:08:09.123 Europe/Paris"; the
//     third is NULL (see TstzValues). The zone may be a zone ID, an offset (+02:00) or UTC.
//   - sleep(ms) — the statement runs ms longer, and every poll answers within 100 ms,
//     RUNNING, with splits completing and processedRows, processedBytes and
//     progressPercentage growing, for progress displays and cancellation.
//   - slow(ms) — each poll waits ms before answering once the statement is ready: slow
//     pages (Options.PageDelay does the same for every statement).
//   - anything else — one row of varchar columns coordinator, user, catalog, schema,
//     source and query, telling which node served the statement and what reached it
//     (for EXECUTE, the prepared statement that ran).
//
// # Life of a query
//
// Submission is lazy, as on Trino and PrestoDB (dispatcher/QueuedStatementResource.java,
// server/protocol/QueuedStatementResource.java): the POST answers at once, QUEUED with a
// nextUri under /v1/statement/queued/ and no data, and the query is created (it takes a
// slot, opens or closes its transaction, its latency starts) only at the first GET of that
// link. Until then GET /v1/query/{queryId} does not know it (410) and DELETE
// /v1/query/{queryId} does nothing to it; a DELETE of the queued nextUri cancels it, and it
// never runs. The queued resource answers QUEUED for Options.QueuedPolls GETs, then points to
// /v1/statement/executing/ with tokens starting again at 0 (server/protocol/
// ExecutingStatementResource.java); PrestoDB's answers the executing resource's page of token
// 0 itself, rows included, pointing to executing token 1 (QueuedStatementResource.getStatus
// and Query.toResponse), so a PrestoDB client's first GET may carry rows. Trino's links are /v1/statement/{phase}/{id}/{slug}/{token}
// with a slug per token and phase ("y" and 40 hex digits, server/protocol/Slug.java);
// PrestoDB's /v1/statement/{phase}/{id}/{token}?slug=..., one slug per query ("x" and 32
// hex digits). A wrong slug, or an unknown query, is 404 text/plain "Query not found"; other
// refusals (a path nothing serves, a token out of turn) are text/plain on Trino and Jetty's
// HTML error page on PrestoDB, as the servers answer them.
//
// With Options.MaxRunning, a dispatched statement without a slot stays on the queued
// resource, each poll waiting up to maxWait for a slot and answering QUEUED with the next
// queued token, as in a resource group's queue. With Options.MaxQueued too, a statement
// that finds that many waiting fails at dispatch with QUERY_QUEUE_FULL (Trino at its first
// GET, PrestoDB at its second, the first answering QUEUED).
//
// Each GET of an executing nextUri then waits until the statement's latency
// (Options.Latency, measured from dispatch) has passed, but at most maxWait (a query
// parameter; 1 s, its default, at most) per poll, and answers RUNNING without data while it
// has not; targetResultSize (a query parameter, such as 16kB) bounds the bytes of rows of a
// page, at least one row, and a page is at most Options.BatchRows rows (an unreadable
// maxWait or targetResultSize is ignored on Trino and 404 on PrestoDB); after that each poll
// returns the next batch, and the last one is FINISHED (or FAILED) without a nextUri. Executing answers carry a
// partialCancelUri (/v1/statement/executing/partialCancel/...); DELETE on it ends the output,
// and the query finishes with the rows sent. The token rules are the servers'
// (server/protocol/Query.java, getNextResult): the last token again replays its answer, so an
// idempotent retry of a page is safe; an older token is 410; one past the next, or past the
// end, is 404. DELETE on a nextUri, queued or executing, cancels the query and answers 204
// without a body. HEAD on a link runs as a GET and drops the body, as on PrestoDB: it
// consumes the page, and a GET of the same token then replays it; Trino 476 answers a HEAD
// of an executing link 404 before the query's first executing GET, then 200, consuming
// nothing. A statement that does not parse (syntax(L, C)) fails at dispatch, on the queued
// resource, without progress or stages. Executing answers carry
// stats.progressPercentage (pages done over pages) and a stats.rootStage (trino:
// client/StageStats.java). A finished query is forgotten, apart from a bounded record of
// recent final answers; a query that nobody polls for Options.AbandonAfter is dropped, as Presto abandons queries
// whose client went away, and so is a submission never fetched.
//
// GET /v1/query/{queryId} answers the query's state (QUEUED, RUNNING, FINISHED or FAILED)
// while it runs and for a while after, 410 for an unknown one; DELETE /v1/query/{queryId}
// cancels it and answers 204, also for unknown queries, as Presto and Trino do.
//
// HEAD /v1/statement, which clients send to check credentials without starting a query,
// answers 200 on a Trino coordinator (as Trino does since 469) and 405 on a Presto one.
//
// # On the wire
//
// Statement answers are gzip-compressed for clients that send Accept-Encoding: gzip, unless
// Options.NoGzip is set. Links are built from the request's Host header. With
// Options.HonourForwarded they are built instead from the forwarding headers, as Trino does
// with http-server.process-forwarded=true: X-Forwarded-Proto, -Host, -Port and -Prefix for
// Trino; for Presto, X-Forwarded-Proto and X-Presto-Prefix-Url, after which PrestoDB puts
// its own URI URL-encoded. Without it they are recorded (Wire.Forwarded) and ignored.
//
// With Options.Spooling, a Trino coordinator answers a client whose
// X-Trino-Query-Data-Encoding lists "json" with Trino's spooling protocol: each page of rows
// becomes one spooled segment ("data": {"encoding": "json", "segments": [...]}, with uri,
// ackUri, metadata and, on storage, the headers a download needs), downloaded as a JSON array
// from the coordinator (SpoolingCoordinator), from object storage through a presigned URI
// (SpoolingStorage: a second loopback server standing in for S3, which refuses a download
// without the segment's headers), or from the coordinator that answers 303 to the storage
// (SpoolingRedirect); GET on ackUri deletes the segment, and the metadata of a spooled
// segment says when it expires (expiresAt). A page of at most 1000 rows and 128 kB goes
// inline instead, a segment of type "inline" with the rows base64 in data, as Trino's
// defaults inline them (server/protocol/spooling/SpoolingConfig.java), unless
// Options.NoInlining is set. Only the json encoding is offered (no zstd or lz4).
//
// # What is not simulated
//
// There is no SQL, no types beyond varchar, bigint and boolean, no authentication, no
// web UI behind infoUri, no resource groups beyond Options.MaxRunning and MaxQueued, and a transaction neither isolates
// nor aborts anything: it is an id the coordinator hands out and checks.
//
// # Failure simulation
//
// SetStarting(true) makes /v1/info report "starting": true, and a statement dispatched
// meanwhile (accepted, 200 QUEUED, then the first GET of its nextUri) fails there with
// SERVER_STARTING_UP ("... server is still initializing"), as on the servers;
// SetQueueFull(true) fails it there with QUERY_QUEUE_FULL; SetNoWorkers(true) keeps it on
// the queued resource for Options.RequiredWorkersMaxWait and then fails it there with
// GENERIC_INSUFFICIENT_RESOURCES. None answers 503. Stop closes the listener and every
// connection and forgets all queries, like a node that died; Restart listens again on the
// same port. /v1/info answers like Presto's NodeInfo resource and /v1/info/state with
// "ACTIVE" (or "INACTIVE" while starting, or what SetNodeState set). /v1/cluster (PrestoDB)
// and the Trino mbeans trino.execution:name=QueryManager and
// trino.metadata:name=DiscoveryNodeManager report its load and its active workers (1, or 0
// with SetNoWorkers), what zkpresto register reads.
package coordinator
