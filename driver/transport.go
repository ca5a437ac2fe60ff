package driver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/internal/protocol"
	"github.com/zkpresto/zkpresto/routing"
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

// attempt is one try of one statement on one coordinator: the routing
// core's attempt, the protocol's record of the wire, and the caller's
// context.
type attempt struct {
	*routing.Attempt
	protocol.Exchange
	// caller is the caller's context. The Presto client gets ctx instead,
	// which is never cancelled, so that it neither retries nor logs on
	// cancellation; the transport aborts requests when caller is done, and
	// the driver cancels the query on the coordinator itself.
	caller context.Context
	ctx    attemptContext
	// url holds the coordinator's URL of the attempt's first request sent
	// to placeholderHost (its submission), so that rewriting it costs no
	// allocation of its own; urlUsed says it is taken.
	url     url.URL
	urlUsed atomic.Bool
}

func newAttempt(ra *routing.Attempt, caller context.Context) *attempt {
	a := &attempt{Attempt: ra, caller: caller}
	a.ctx.a = a
	return a
}

// context returns the context the Presto client runs the attempt under.
func (a *attempt) context() context.Context { return &a.ctx }

// attemptContext has the caller's values and the attempt, and is never
// done: context.WithValue(context.WithoutCancel(caller), ...) in one piece
// that lives inside the attempt, since it is built for every statement.
type attemptContext struct{ a *attempt }

type attemptKey struct{}

func (c *attemptContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *attemptContext) Done() <-chan struct{}       { return nil }
func (c *attemptContext) Err() error                  { return nil }
func (c *attemptContext) Value(key any) any {
	if key == (attemptKey{}) {
		return c.a
	}
	return c.a.caller.Value(key)
}

func attemptFrom(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

// routingTransport sends each request of a statement to the statement's
// coordinator and turns transport failures into decisions the routing core
// makes: fail over (the submission never left), or report (it may have
// reached the coordinator, so it is never sent again).
type routingTransport struct {
	next     http.RoundTripper
	forceTLS bool // the DSN's ssl_* keys ask for https everywhere
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
			return nil, fmt.Errorf("zkpresto: statement on %s: %w", a.Node.Addr, a.caller.Err())
		}
		if failure, _ := a.Failure(); failure != nil {
			return nil, errFailover
		}
		return nil, err
	}
	// The body outlives this call: release the context when it is closed.
	protocol.WatchResponse(resp, &a.Exchange, release)
	return resp, nil
}

func (t *routingTransport) route(req *http.Request, a *attempt) (*http.Response, error) {
	submission := protocol.IsSubmission(req)
	if req.URL.Hostname() == placeholderHost || submission {
		// A RoundTripper must not modify the request it was given: work on
		// a shallow copy, made once for the host and the trace.
		ctx := req.Context()
		if submission {
			ctx = a.Trace(ctx)
		}
		r := req.WithContext(ctx)
		if req.URL.Hostname() == placeholderHost {
			u := &a.url
			if !a.urlUsed.CompareAndSwap(false, true) {
				u = new(url.URL) // a later request may still read the first one's
			}
			*u = *req.URL
			u.Host = a.Node.Addr
			if t.forceTLS || a.Node.Scheme == "https" {
				u.Scheme = "https"
			} else {
				u.Scheme = "http"
			}
			r.URL, r.Host = u, a.Node.Addr
		}
		req = r
	}
	// The Presto client asks for gzip and decodes it itself; the header
	// stays, so that Go neither adds its own nor decodes.
	if submission {
		return protocol.Submit(t.next, req, &a.Exchange)
	}
	return protocol.FollowUp(t.next, req, &a.Exchange)
}
