// Package gateway is zkpresto's HTTP gateway: one address in front of the
// coordinators that discovery lists, for every Presto and Trino client (BI
// tools, the CLIs, JDBC, the Python, Node and Go clients), on the same
// routing core as the driver (package routing): the same discovery,
// strategies, health, ejection and failure rules.
//
// A statement (POST /v1/statement) is picked a coordinator, forwarded, and
// its answer streamed back with every URI the coordinator handed out
// (nextUri, partialCancelUri, infoUri, spooled segment URIs) rewritten to
// point at the gateway and carry a routing token: the coordinator's base
// URL and the query id, authenticated with an HMAC. Any replica that has
// the key routes a follow-up by verifying its token, so replicas share
// nothing: no database, no cookies, no query table.
//
// Failures follow the driver's rules. A submission that provably never
// reached a coordinator goes to another one; one that may have is never
// sent again, and the client gets an error it does not retry (a Presto
// error with status 500, never 502, 503 or 504, which every client retries
// even for a POST). A tampered token gets 403 and is never forwarded; a
// token naming a coordinator that is gone gets 410; no request ever goes
// to a host of the client's choosing.
package gateway
