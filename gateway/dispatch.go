package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/zkpresto/zkpresto/internal/wire"
)

// maxQueuedAnswer bounds the answers dispatchFirst reads whole: the POST's
// and the queued resource's, which carry no rows.
const maxQueuedAnswer = 1 << 20

// queuedAnswer is what dispatchFirst reads of an answer.
type queuedAnswer struct {
	NextURI string `json:"nextUri"`
	Error   *struct {
		ErrorName string `json:"errorName"`
		Message   string `json:"message"`
	} `json:"error"`
}

// notReadyError reports a coordinator that accepted a statement and failed
// it at dispatch because it is not ready: starting (SERVER_STARTING_UP) or
// without workers (NO_NODES_AVAILABLE). The query never ran.
type notReadyError struct {
	Node      string // host:port of the coordinator
	ErrorName string
	Message   string
}

func (e *notReadyError) Error() string {
	return fmt.Sprintf("coordinator %s is not ready (%s: %s); the statement never ran there", e.Node, e.ErrorName, e.Message)
}

// dispatchFirst makes the first GET of a submission's queued nextUri, the
// one at which Trino and PrestoDB create and dispatch the query
// (dispatcher/QueuedStatementResource.java and
// server/protocol/QueuedStatementResource.java), before the client gets
// an answer. A coordinator that is starting, or has no workers, accepts
// every POST and fails the query only there; the gateway is stateless and
// cannot send a statement elsewhere from a client's follow-up, so it looks
// first: a *notReadyError means the query provably never ran and the
// statement may go to another coordinator. Otherwise the client gets the
// first GET's answer in place of the POST's (the POST's headers, then the
// GET's), and its own next GET is the one after; the coordinator sees the
// requests it would see anyway.
//
// When the POST's answer is not a queued one on base, or the GET fails or
// is not answered 200, the POST's answer is returned as it came, for the
// client to follow as it would without the gateway.
func dispatchFirst(ctx, client context.Context, transport http.RoundTripper, header http.Header, base string, post *http.Response) (*http.Response, error) {
	if post.StatusCode != http.StatusOK || strings.EqualFold(post.Header.Get("Content-Encoding"), "gzip") {
		return post, nil // asked for identity: a compressed answer goes to the client as it is
	}
	body, whole, err := peekAnswer(post)
	if err != nil {
		return nil, err
	}
	var first queuedAnswer
	if !whole || client.Err() != nil || json.Unmarshal(body, &first) != nil ||
		!strings.Contains(first.NextURI, "/v1/statement/queued/") {
		// Rows in the POST's answer, a client that left (its query is
		// cancelled queued, never dispatched), or no queued nextUri.
		return post, nil
	}
	next, err := url.Parse(first.NextURI)
	if err != nil || !strings.EqualFold(next.Host, hostOf(base)) {
		return post, nil // not here
	}
	// Its path on base: the scheme a coordinator writes is not trusted
	// (behind a proxy that ends TLS it may write http), lest the client's
	// credentials go out in plaintext.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+next.RequestURI(), nil)
	if err != nil {
		return post, nil
	}
	req.Header = header.Clone()
	for _, name := range []string{"Content-Type", "Content-Length"} {
		req.Header.Del(name)
	}
	// On any trouble the client gets the POST's answer: its own GET of the
	// same token is a repeat, which the queued resource answers again
	// (trino: QueuedStatementResource.Query.getQueryResults takes the last
	// token or the next).
	get, err := transport.RoundTrip(req)
	if err != nil {
		return post, nil
	}
	got, whole, err := peekAnswer(get)
	get.Body.Close()
	var dispatched queuedAnswer
	if err != nil || !whole || get.StatusCode != http.StatusOK || json.Unmarshal(got, &dispatched) != nil {
		return post, nil
	}
	if dispatched.NextURI == "" && dispatched.Error != nil && wire.NeverDispatched(dispatched.Error.ErrorName) {
		post.Body.Close()
		return nil, &notReadyError{Node: hostOf(base), ErrorName: dispatched.Error.ErrorName, Message: dispatched.Error.Message}
	}
	post.Body.Close()
	out := *get
	out.Header = post.Header.Clone()
	copyAnswerHeader(out.Header, get.Header)
	out.Header.Set("Content-Length", strconv.Itoa(len(got)))
	out.ContentLength = int64(len(got))
	out.Body = io.NopCloser(bytes.NewReader(got))
	return &out, nil
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
