package driver

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

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/strategy"
)

// placeholderHost is the server the Presto client is configured with. The
// driver's transport sends each request to the coordinator picked for its
// statement instead, so that one client session, with its session
// properties and transaction state, can run statements on any coordinator.
const placeholderHost = "coordinator.zkpresto.invalid"

// errFailover is what the transport returns to the Presto client when it
// recorded a failure for the driver to handle. It wraps context.Canceled on
// purpose: presto-go-client retries every other transport error ten times
// with back-off up to 30 s (and logs each retry through zerolog), but gives
// up at once on a cancelled context.
var errFailover = fmt.Errorf("zkpresto: coordinator failed; handled by the driver: %w", context.Canceled)

// getRetries is how many times an idempotent follow-up request (GET of a
// nextUri) is retried on the same coordinator after a transport error.
const getRetries = 2

// attempt is one try of one statement on one coordinator. The transport
// records in it what happened on the wire.
type attempt struct {
	node  *discovery.Node
	load  *strategy.Load
	start time.Time
	ended atomic.Bool
	// caller is the caller's context. The Presto client gets one that is
	// never cancelled, so that it neither retries nor logs on cancellation;
	// the transport aborts requests when caller is done instead, and the
	// driver cancels the query on the coordinator itself.
	caller context.Context

	lastURL atomic.Pointer[url.URL] // the latest nextUri requested, to cancel the query
	running atomic.Bool             // the latest response had a nextUri

	written atomic.Bool // the statement's submission was fully written

	mu      sync.Mutex
	failure error // the transport failure, if any; set once
	sent    bool  // whether the submission may have reached the coordinator when it failed
}

type attemptKey struct{}

func withAttempt(ctx context.Context, a *attempt) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

func attemptFrom(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

func (a *attempt) fail(err error, sent bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failure == nil {
		a.failure, a.sent = err, sent
	}
}

// transportFailure returns the recorded failure and whether the submission
// may have reached the coordinator.
func (a *attempt) transportFailure() (error, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failure, a.sent
}

// end reports the statement's end to the node's load, once.
func (a *attempt) end(err error) {
	if a.ended.CompareAndSwap(false, true) {
		a.load.End(time.Since(a.start), err)
	}
}

// routingTransport sends each request of a statement to the statement's
// coordinator and turns transport failures into decisions the driver makes:
// fail over (the submission never left), or report (it may have reached the
// coordinator, so it is never sent again).
type routingTransport struct {
	next     http.RoundTripper
	forceTLS bool // the DSN's ssl_* keys ask for https everywhere
}

func isSubmission(req *http.Request) bool {
	return (req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/v1/statement")) ||
		(req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/v1/statement/"))
}

// RoundTrip implements http.RoundTripper.
func (t *routingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	a := attemptFrom(req.Context())
	if a == nil {
		return nil, errors.New("zkpresto: internal error: a request without a coordinator")
	}
	release := func() {}
	if a.caller.Done() != nil {
		// Abort the request when the caller gives up, with an error the
		// Presto client returns at once.
		ctx, cancel := context.WithCancel(req.Context())
		stop := context.AfterFunc(a.caller, cancel)
		release = func() { stop(); cancel() }
		req = req.WithContext(ctx)
	}
	resp, err := t.route(req, a)
	if err != nil {
		release()
		if a.caller.Err() != nil {
			return nil, fmt.Errorf("zkpresto: statement on %s: %w", a.node.Addr, a.caller.Err())
		}
		return nil, err
	}
	// The body outlives this call: release the context when it is closed.
	resp.Body = &watchedBody{ReadCloser: resp.Body, release: release, a: a}
	return resp, nil
}

// nextURIKey is the JSON key of a response that has more to fetch.
var nextURIKey = []byte(`"nextUri"`)

// nextURIScan bounds how much of a response is searched for nextURIKey:
// coordinators write it before columns and data, so a large page of rows
// costs nothing extra.
const nextURIScan = 1024

// watchedBody releases a request's context when its body is closed, and
// notes whether the response names a nextUri, i.e. whether the query is
// still running (a row value that contains the key only costs an extra
// cancel).
type watchedBody struct {
	io.ReadCloser
	release func()
	a       *attempt
	tail    [16]byte // the end of the previous read, for a key split across reads
	tailLen int
	scanned int
	found   bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
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

func (b *watchedBody) Close() error {
	err := b.ReadCloser.Close()
	b.a.running.Store(b.found)
	b.release()
	return err
}

func (t *routingTransport) route(req *http.Request, a *attempt) (*http.Response, error) {
	// A RoundTripper must not modify the request it was given: work on a
	// shallow copy.
	r := req.WithContext(req.Context())
	if req.URL.Hostname() == placeholderHost {
		u := *req.URL
		u.Host = a.node.Addr
		if t.forceTLS || a.node.Scheme == "https" {
			u.Scheme = "https"
		} else {
			u.Scheme = "http"
		}
		r.URL, r.Host = &u, a.node.Addr
	}
	if req.Header.Get("Accept-Encoding") != "" {
		// The Presto client asks for gzip itself, which turns off Go's
		// transparent decompression; without the header Go asks for gzip and
		// decompresses, so watchedBody sees the JSON and the client gets it
		// as before.
		r.Header = req.Header.Clone()
		r.Header.Del("Accept-Encoding")
	}
	req = r
	if isSubmission(req) {
		return t.submit(req, a)
	}
	return t.followUp(req, a)
}

// submit sends a statement. Until the request is fully written, a failure
// proves the coordinator never saw the statement, and the driver may send it
// elsewhere; after that it may have started, so it must not be sent again.
func (t *routingTransport) submit(req *http.Request, a *attempt) (*http.Response, error) {
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			a.written.Store(true)
		}
	}}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		if a.caller.Err() != nil {
			return nil, err // the caller gave up; not the coordinator's fault
		}
		a.fail(err, a.written.Load())
		return nil, errFailover
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		// Starting or overloaded: the coordinator refused the statement.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		a.fail(fmt.Errorf("HTTP 503 %s", http.StatusText(resp.StatusCode)), false)
		return nil, errFailover
	}
	return resp, nil
}

// followUp sends a request for a statement that is already running: GETs of
// nextUri are idempotent and retried on the same coordinator, after a
// transport error or a 503 (which the Presto client would otherwise retry
// for minutes, deaf to the caller's deadline); anything else is sent once.
func (t *routingTransport) followUp(req *http.Request, a *attempt) (*http.Response, error) {
	retries := 0
	if req.Method == http.MethodGet {
		retries = getRetries
		a.lastURL.Store(req.URL)
	}
	for try := 0; ; try++ {
		resp, err := t.next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			resp, err = nil, fmt.Errorf("HTTP 503 %s", http.StatusText(http.StatusServiceUnavailable))
		}
		if err == nil {
			return resp, nil
		}
		if a.caller.Err() != nil {
			return nil, err
		}
		if try >= retries {
			a.fail(err, true)
			return nil, errFailover
		}
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(time.Duration(try+1) * 50 * time.Millisecond):
		}
	}
}
