package protocol

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// GetRetries is how many times an idempotent follow-up request (a GET of a
// nextUri) is retried on the same coordinator after a transport error or a
// 503.
const GetRetries = 2

// CancelTimeout bounds the DELETE that cancels an abandoned query.
const CancelTimeout = 2 * time.Second

// drainLimit bounds how much of a refused answer is read so that its
// connection can be reused.
const drainLimit = 4096

// Exchange is the record of one statement's requests to one coordinator:
// whether the submission was fully written, the transport failure if any,
// the latest follow-up URL and whether the query is still running. It is
// safe for concurrent use; the zero value is ready.
type Exchange struct {
	written atomic.Bool             // the submission was fully written
	lastURL atomic.Pointer[url.URL] // the latest nextUri requested, to cancel the query
	running atomic.Bool             // the latest response body named a nextUri

	mu      sync.Mutex
	failure error // the transport failure, if any; set once
	sent    bool  // whether the submission may have reached the coordinator when it failed

	trace httptrace.ClientTrace // notes the end of the submission's write
}

// Fail records a transport failure; sent says whether the statement may
// have reached the coordinator. The first failure recorded wins.
func (e *Exchange) Fail(err error, sent bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failure == nil {
		e.failure, e.sent = err, sent
	}
}

// Failure returns the recorded transport failure (nil if none) and whether
// the statement may have reached the coordinator when it happened.
func (e *Exchange) Failure() (err error, sent bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failure, e.sent
}

// Written reports whether the submission was fully written.
func (e *Exchange) Written() bool { return e.written.Load() }

// Running reports whether the latest response named a nextUri: the query
// may still be running on the coordinator.
func (e *Exchange) Running() bool { return e.running.Load() }

// LastURL returns the latest follow-up URL requested, nil before the first.
func (e *Exchange) LastURL() *url.URL { return e.lastURL.Load() }

// IsSubmission reports whether req submits a statement: a POST to
// /v1/statement, or a PUT on a statement (the protocol's resubmission).
func IsSubmission(req *http.Request) bool {
	return (req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/v1/statement")) ||
		(req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/v1/statement/"))
}

// Trace returns ctx with e's client trace, which notes when a submission
// was fully written and checks a reused connection before the submission
// is written on it (see checkReused): the context for a submission's
// request.
func (e *Exchange) Trace(ctx context.Context) context.Context {
	if e.trace.WroteRequest == nil {
		// The transport tries again (on a fresh connection) only a request
		// of which nothing was written, so each try starts unwritten: a
		// first try that failed in its final flush, after WroteRequest,
		// must not make a retry that could not connect count as sent.
		e.trace.GetConn = func(string) { e.written.Store(false) }
		e.trace.GotConn = checkReused
		e.trace.WroteRequest = func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				e.written.Store(true)
			}
		}
	}
	return httptrace.WithClientTrace(ctx, &e.trace)
}

// ErrRefused is recorded for a coordinator that answered a submission with
// 503: by the protocol it did not accept the statement (starting or
// overloaded), which every official client retries.
var ErrRefused = errors.New("HTTP 503 Service Unavailable")

// Submit sends a submission through rt. Until the request is fully written,
// a failure proves the coordinator never saw the statement, and the caller
// may send it elsewhere; after that it may have started, so it must not be
// sent again. A failure is recorded in e (unless the request's own context
// ended: that is the caller giving up, not the coordinator failing) and
// returned; a 503 is recorded as ErrRefused, not sent.
//
// req must carry e's trace (see Trace) in its context, or Submit adds it,
// at the cost of a copy of req.
func Submit(rt http.RoundTripper, req *http.Request, e *Exchange) (*http.Response, error) {
	if httptrace.ContextClientTrace(req.Context()) != &e.trace {
		req = req.WithContext(e.Trace(req.Context()))
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		if req.Context().Err() == nil {
			e.Fail(err, e.written.Load())
		}
		return nil, err
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		discard(resp)
		e.Fail(ErrRefused, false)
		return nil, ErrRefused
	}
	return resp, nil
}

// FollowUp sends a request of a statement that is already running. GETs of
// a nextUri are idempotent and retried on the same coordinator after a
// transport error or a 503 (which a client would otherwise retry for
// minutes, deaf to its caller's deadline), up to GetRetries times; anything
// else is sent once. A final failure is recorded in e as sent.
func FollowUp(rt http.RoundTripper, req *http.Request, e *Exchange) (*http.Response, error) {
	retries := 0
	if req.Method == http.MethodGet {
		retries = GetRetries
		e.lastURL.Store(req.URL)
	}
	for try := 0; ; try++ {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
			discard(resp)
			resp, err = nil, ErrRefused
		}
		if err == nil {
			return resp, nil
		}
		if req.Context().Err() != nil {
			return nil, err
		}
		if try >= retries {
			e.Fail(err, true)
			return nil, err
		}
		t := time.NewTimer(time.Duration(try+1) * 50 * time.Millisecond)
		select {
		case <-req.Context().Done():
			t.Stop()
			return nil, req.Context().Err()
		case <-t.C:
		}
	}
}

func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	_ = resp.Body.Close()
}

// nextURIKey is the JSON key of a response that has more to fetch.
var nextURIKey = []byte(`"nextUri"`)

// nextURIScan bounds how much of a response is searched for nextURIKey:
// coordinators write it before columns and data, so a large page of rows
// costs nothing extra.
const nextURIScan = 1024

// Body wraps a response body of e's statement: it notes whether the
// response names a nextUri, i.e. whether the query is still running (a row
// value that contains the key only costs an extra cancel), and calls
// release, if not nil, once the body is closed.
type Body struct {
	io.ReadCloser
	e       *Exchange
	release func()
	tail    [16]byte // the end of the previous read, for a key split across reads
	tailLen int
	scanned int
	found   bool
	closed  bool
}

// WatchResponse replaces resp's body with a Body for e. A compressed body
// cannot be scanned without decoding it twice: its query counts as running,
// which at worst costs a cancel of a query that had ended.
func WatchResponse(resp *http.Response, e *Exchange, release func()) {
	b := &Body{ReadCloser: resp.Body, e: e, release: release}
	if resp.Header.Get("Content-Encoding") != "" {
		b.found, b.scanned = true, nextURIScan
	}
	resp.Body = b
}

// Read implements io.Reader.
func (b *Body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.found && n > 0 && b.scanned < nextURIScan {
		b.scanned += n
		if b.tailLen > 0 {
			// The key split across two reads: the previous read's end
			// joined to this read's start.
			var seam [32]byte
			joined := append(append(seam[:0], b.tail[:b.tailLen]...), p[:min(n, len(nextURIKey)-1)]...)
			b.found = bytes.Contains(joined, nextURIKey)
		}
		b.found = b.found || bytes.Contains(p[:n], nextURIKey)
		b.tailLen = copy(b.tail[:], p[max(0, n-len(nextURIKey)+1):n])
	}
	return n, err
}

// Close closes the body, records whether the query is still running, and
// releases the request.
func (b *Body) Close() error {
	err := b.ReadCloser.Close()
	if !b.closed {
		b.closed = true
		b.e.running.Store(b.found)
		if b.release != nil {
			b.release()
		}
	}
	return err
}

// CancelQuery asks the coordinator to cancel the query whose latest
// follow-up URL is u (a DELETE on it, as the Presto clients do), bounded by
// CancelTimeout. Best effort: a coordinator also abandons queries nobody
// polls.
func CancelQuery(ctx context.Context, client *http.Client, u *url.URL) error {
	ctx, cancel := context.WithTimeout(ctx, CancelTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u.String(), nil)
	if err != nil {
		return fmt.Errorf("cancelling query at %s: %w", u.Redacted(), err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err // *url.Error names the URL
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	return nil
}
