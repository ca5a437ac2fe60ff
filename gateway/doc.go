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
// nothing: no database, no query table. OAuth2 external authentication
// goes through any replica the same way (oauth2.go): the challenge's token
// URIs carry routing tokens bound to their paths, and the identity
// provider's callback to the gateway's fixed /oauth2/callback is routed by
// a short-lived cookie that holds one.
//
// Failures follow the driver's rules. A submission that provably never
// reached a coordinator goes to another one; one that may have is never
// sent again, and the client gets an error it does not retry (a Presto
// error with status 500, never 502, 503 or 504, which every client retries
// even for a POST). A tampered token gets 403 and is never forwarded; a
// token naming a coordinator that is gone gets 410; no request ever goes
// to a host of the client's choosing.
//
// The files follow the stages of a request. ServeHTTP (gateway.go) sends
// each to its stage: a submission (submit.go: pick, send, classify, act;
// dispatch.go: the first GET, where a coordinator that is not ready shows
// it; nonodes.go: the answer when no coordinator takes statements), the
// relay of an answer with its URIs rewritten (relay.go), the follow-ups a
// token routes (followup.go) and /v1/query/{id} (query.go), transactions
// (transaction.go: the wrapped ids and the coordinator they pin), the
// credential check HEAD /v1/statement (statementhead.go), the opt-in
// affinity cookie that keeps a client's statements on one coordinator
// (affinity.go), OAuth2's token exchange and callback (oauth2.go). What the
// replica knows of the coordinators is in members.go; the status page,
// /v1/info and the request figures in status.go, statementlog.go,
// queryend.go and latency.go; the HTTP server, its limits and the drain
// in server.go, headbudget.go and drain.go.
package gateway
