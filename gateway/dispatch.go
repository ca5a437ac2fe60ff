package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/internal/wire"
)

// maxQueuedAnswer bounds the answers dispatchFirst reads whole: the POST's
// and the queued resource's, which carry no rows but on PrestoDB, whose
// queued resource may answer the first page of rows (dispatchFirst): a
// larger one is left for the client's own GET of the same token, which the
// coordinator answers again.
const maxQueuedAnswer = 1 << 20

// notReadyError reports a coordinator that accepted a statement and failed
// it on its queued resource: starting (SERVER_STARTING_UP), without
// workers (GENERIC_INSUFFICIENT_RESOURCES, NO_NODES_AVAILABLE) or with its
// resource group's queue full (QUERY_QUEUE_FULL). The query never ran.
type notReadyError struct {
	Node      string // host:port of the coordinator
	ErrorName string
	Message   string
}

func (e *notReadyError) Error() string {
	return fmt.Sprintf("coordinator %s refused the statement at dispatch (%s: %s); it never ran there", e.Node, e.ErrorName, e.Message)
}

// dispatchGets bounds the GETs dispatchFirst makes of the queued
// resource: Trino fails a statement it cannot dispatch at the first,
// PrestoDB 0.287 at the second (its first answers QUEUED or
// WAITING_FOR_PREREQUISITES while the dispatch runs; seen with a full
// resource-group queue, interop/realservers
// TestQueueFullGoesToAnotherCoordinator); one more for a busy machine.
const dispatchGets = 3

// dispatchMaxWait is the maxWait of the gateway's GETs of the queued
// resource: a query waiting for a slot or a worker is answered QUEUED
// after it, not after the servers' default of 1 s, so that the client
// waits for its own GETs, not for the gateway's.
const dispatchMaxWait = "100ms"

// dispatchTimeout bounds the gateway's GETs of a submission together:
// with SubmitTimeout, the whole submission stays well under a client's
// request timeout (trino-python-client's 30 s), after which it sends its
// POST again.
const dispatchTimeout = 5 * time.Second

// dispatchFirst makes the first GETs of a submission's queued nextUri, at
// which Trino and PrestoDB create and dispatch the query
// (dispatcher/QueuedStatementResource.java and
// server/protocol/QueuedStatementResource.java), before the client gets
// an answer. A coordinator that is starting, has no workers or has its
// queue full accepts every POST and fails the query only there; the
// gateway is stateless and cannot send a statement elsewhere from a
// client's follow-up, so it looks first: a *notReadyError means the query
// provably never ran and the statement may go to another coordinator.
// Otherwise the client gets the last GET's answer in place of the POST's
// (the POST's headers, then the GETs'), and its own next GET is the one
// after; the coordinator sees the requests it would see anyway. An answer
// that ends the query, or carries rows, is never the POST's: the client
// gets the one before and repeats its GET. A later
// GET is made only while the query is still on the queued resource, which
// answers a query waiting for its slot after up to its maxWait (1 s), as
// it would answer the client's.
//
// When the POST's answer is not a queued one on base, or the first GET
// fails or is not answered 200, the POST's answer is returned as it came,
// for the client to follow as it would without the gateway; when a later
// GET does, the answer before it. dispatched reports that an answer came
// from beyond the queued resource, or ended the query without an error:
// the coordinator dispatched the query.
//
// The gateway makes these GETs only where dispatchChecks says they can
// change the statement's way: they dispatch a query before its client
// asked for it. They carry only what a client's GET carries (getHeader),
// an explicit short maxWait, and are bounded by dispatchTimeout.
func dispatchFirst(ctx, client context.Context, transport http.RoundTripper, header http.Header, base string, post *http.Response) (resp *http.Response, dispatched bool, err error) {
	if post.StatusCode != http.StatusOK || strings.EqualFold(post.Header.Get("Content-Encoding"), "gzip") {
		return post, false, nil // asked for identity: a compressed answer goes to the client as it is
	}
	body, whole, err := peekAnswer(post)
	if err != nil {
		return nil, false, err
	}
	if !whole {
		return post, false, nil // rows in the POST's answer
	}
	ans, err := wire.DecodeAnswer(body)
	if err != nil {
		return post, false, nil // not a statement answer: the client judges it
	}
	ctx, cancel := context.WithTimeout(ctx, dispatchTimeout)
	defer cancel()
	header = getHeader(header)
	out, outBody := post, body
	merged := post.Header.Clone()
	for range dispatchGets {
		req := queuedGet(ctx, client, header, base, ans.NextURI)
		if req == nil {
			break
		}
		// On any trouble the client gets the answer before: its own GET of
		// the same token is a repeat, which the queued resource answers
		// again (trino: QueuedStatementResource.Query.getQueryResults takes
		// the last token or the next).
		get, err := transport.RoundTrip(req)
		if err != nil {
			break
		}
		got, whole, err := peekAnswer(get)
		get.Body.Close()
		if err != nil || !whole || get.StatusCode != http.StatusOK {
			break
		}
		next, err := wire.DecodeAnswer(got)
		if err != nil {
			break
		}
		if next.Ended() && next.Error != nil && wire.NeverRan(next.ErrorName(), true) {
			post.Body.Close()
			return nil, false, &notReadyError{Node: hostOf(base), ErrorName: next.Error.ErrorName, Message: next.Error.Message}
		}
		if next.Ended() || next.HasRows() {
			// The query ended on the queued resource (a statement that does not
			// parse, a missing table), or, on PrestoDB, whose queued resource
			// answers the executing resource's first page once the query is
			// dispatched, rows included, it ran there: to its end, or on. The
			// client gets the answer before, and this page from its own GET of
			// the same token, which the coordinator answers again until the
			// executing resource has answered (prestodb:
			// QueuedStatementResource.Query.toResponse; interop/realservers
			// TestDifferentialFirstGetCarriesRows), as without the gateway. In
			// place of the POST's, a last answer is lost on trino-client, whose
			// iterator drops a first answer without a nextUri, presto-client
			// wraps it as a failed request, and trino-go-client, which reads
			// only the id and nextUri of the POST's answer, loses its rows.
			// Rows, or an end without an error, are the coordinator's proof
			// that it dispatches.
			dispatched = next.Error == nil
			break
		}
		copyAnswerHeader(merged, get.Header)
		out, outBody, ans = get, got, next
		if !strings.Contains(next.NextURI, "/v1/statement/queued/") {
			dispatched = true
		}
	}
	if out == post {
		return post, dispatched, nil
	}
	post.Body.Close()
	answer := *out
	answer.Header = merged
	answer.Header.Set("Content-Length", strconv.Itoa(len(outBody)))
	answer.ContentLength = int64(len(outBody))
	answer.Body = io.NopCloser(bytes.NewReader(outBody))
	return &answer, dispatched, nil
}

// queuedGet is the GET of nextURI when it is on base's queued resource
// and the client is still there (else its query is cancelled queued,
// never dispatched), nil otherwise. The GET goes to nextURI's path on
// base: the scheme a coordinator writes is not trusted (behind a proxy
// that ends TLS it may write http), lest the client's credentials go out
// in plaintext.
func queuedGet(ctx, client context.Context, header http.Header, base, nextURI string) *http.Request {
	if client.Err() != nil || !strings.Contains(nextURI, "/v1/statement/queued/") {
		return nil
	}
	next, err := url.Parse(nextURI)
	if err != nil || !strings.EqualFold(next.Host, hostOf(base)) {
		return nil // not here
	}
	q := next.Query()
	q.Set("maxWait", dispatchMaxWait)
	next.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+next.RequestURI(), nil)
	if err != nil {
		return nil
	}
	req.Header = header.Clone()
	return req
}

// peekAnswer reads up to maxQueuedAnswer bytes of an uncompressed answer
// and puts them back in front of the rest of its body; whole reports that
// they are all of it.
func peekAnswer(resp *http.Response) (b []byte, whole bool, err error) {
	b, err = io.ReadAll(io.LimitReader(resp.Body, maxQueuedAnswer+1))
	if err != nil {
		resp.Body.Close()
		return nil, false, fmt.Errorf("reading a coordinator's answer: %w", err)
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	return b, len(b) <= maxQueuedAnswer, nil
}
