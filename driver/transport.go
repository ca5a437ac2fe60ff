package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/internal/pool"
	"github.com/zkpresto/zkpresto/internal/verdict"
	"github.com/zkpresto/zkpresto/internal/wire"
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
var errFailover = fmt.Errorf("driver: coordinator failed; handled by the driver: %w", context.Canceled)

// attempt is one try of one statement on one coordinator: the routing
// core's attempt, the protocol's record of the wire, and the caller's
// context.
type attempt struct {
	*routing.Attempt
	pool.Exchange
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
	// splitPages makes the transport take each page's rows out for the
	// driver's rows (see page.go).
	splitPages bool
	// unanswered is set when the caller's deadline passed after the
	// submission's last bytes were released and before its answer.
	unanswered atomic.Bool
	// headBytes is about the size of the submission's head
	// (verdict.HeadBytes), for the verdict on a coordinator that hangs up
	// on a large one.
	headBytes int
	attemptPages
	attemptTxn
	// session is the connection's session (see session.go): the
	// submission carries it, every answer may change it. nil for none.
	session *clientSession
	// tls is set when the DSN asks for https to every coordinator, for
	// naming the coordinator in errors.
	tls bool
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
	switch key {
	case attemptKey{}:
		return c.a
	case pool.ExchangeKey{}:
		return &c.a.Exchange // the Dialer's dial race
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
	// dialRace is the DSN's dialRaceDelay, 0 when the race is off.
	dialRace time.Duration
	// background runs work that outlives a request (the connector's
	// Router.Go); cancel sends the DELETEs.
	background func(func(closing <-chan struct{})) bool
	cancel     *http.Client
	// closed reports whether the connector was closed; closeIdle then
	// closes the connections that requests of running statements return
	// to the pool.
	closed    func() bool
	closeIdle func()
	log       *slog.Logger
	// headers are what the DSN and the options add to requests (see
	// auth.go); nil for nothing.
	headers *clientHeaders
	// cancelAuth authenticates the cancel of an abandoned submission.
	cancelAuth *cancelAuth
	// releasedFn is released as a func value, made once: a method value
	// made per request would be an allocation per request.
	releasedFn func()
}

// abandonTimeout bounds how long the answer of a submission whose caller
// gave up is awaited in the background, to learn the query and cancel it.
const abandonTimeout = 30 * time.Second

// minStallCheck is the shortest half of a caller's remaining time after
// which a write not yet complete counts as stalled: a small statement is
// in the kernel within microseconds, and 100 ms leaves room for a process
// paused by its scheduler or its collector.
const minStallCheck = 100 * time.Millisecond

// errAbandoned ends the wait for such an answer.
var errAbandoned = errors.New("driver: no answer to an abandoned submission in time")

// roundTrip is RoundTrip (see progress.go) without the progress reports.
func (t *routingTransport) roundTrip(req *http.Request) (*http.Response, error) {
	a := attemptFrom(req.Context())
	if a == nil {
		return nil, errors.New("driver: internal error: a request without a coordinator")
	}
	submission := pool.IsSubmission(req)
	orig := req
	req, err := t.target(req, a, submission)
	if err != nil {
		return nil, t.failed(a, err)
	}
	if t.headers != nil {
		if req, err = t.headers.apply(req, orig, a, submission); err != nil {
			// The client's failure: no coordinator is charged.
			var tokenErr *AccessTokenError
			errors.As(err, &tokenErr)
			a.SetInvalid(tokenErr)
			return nil, err
		}
	}
	if submission && a.caller.Done() != nil {
		return t.submitCancellable(req, a)
	}
	if a.caller.Err() != nil {
		// The caller gave up already: AfterFunc below would abort the
		// request only from another goroutine, after it may have left.
		return nil, t.failed(a, a.caller.Err())
	}
	release := t.releasedFn
	if a.caller.Done() != nil {
		// Abort the request when the caller gives up, with the caller's
		// reason (a deadline stays a deadline), which the Presto client
		// returns at once.
		ctx, cancel := context.WithCancelCause(req.Context())
		stop := context.AfterFunc(a.caller, func() { cancel(context.Cause(a.caller)) })
		release = func() { stop(); cancel(nil); t.released() }
		req = req.WithContext(ctx)
	}
	var resp *http.Response
	if submission {
		resp, err = pool.Submit(t.next, req, &a.Exchange, release)
	} else {
		resp, err = pool.FollowUp(t.next, req, &a.Exchange, release)
	}
	if err != nil {
		release()
		return nil, t.failed(a, err)
	}
	if a.session != nil {
		a.session.apply(resp.Header)
	}
	return resp, nil
}

// failed is the error the Presto client gets for a request that failed.
func (t *routingTransport) failed(a *attempt, err error) error {
	switch {
	case a.caller.Err() != nil:
		return fmt.Errorf("driver: statement on %s: %w", a.Node.Addr, a.caller.Err())
	case a.Invalid() != nil:
		return err
	}
	if failure, _ := a.Failure(); failure != nil {
		return errFailover
	}
	return err
}

// released runs when a response body is closed: once the connector is
// closed, the connection that request returned to the pool is closed too,
// so that no connection outlives the statements running at Close.
func (t *routingTransport) released() {
	if t.closed != nil && t.closed() {
		t.closeIdle()
	}
}

// target returns the request to send: on the statement's coordinator, and
// for a submission with the trace that records whether it was written. A
// URI that names another host, or plain http where https is required, is
// never requested.
func (t *routingTransport) target(req *http.Request, a *attempt, submission bool) (*http.Request, error) {
	placeholder := req.URL.Hostname() == placeholderHost
	if !placeholder {
		if err := t.checkTarget(req.URL, a.Node.Addr, a.Node.Scheme); err != nil {
			a.Fail(err, true)
			return nil, err
		}
		if !submission {
			return req, nil
		}
	}
	// A RoundTripper must not modify the request it was given: work on a
	// shallow copy, made once for the host and the trace.
	ctx := req.Context()
	if submission {
		ctx = a.Trace(ctx)
		if t.dialRace > 0 {
			// Armed in the Dialer, which finds the exchange in the dial's
			// context (attemptContext answers for it): only a try that
			// dials pays for the race.
			a.ArmDialRace(t.dialRace)
		}
	}
	r := req.WithContext(ctx)
	if submission && a.session != nil {
		r.Header = a.session.headers(req.Header)
	}
	if submission {
		r.Header = withClientSupport(r.Header)
	}
	if placeholder {
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
	if submission {
		a.headBytes = verdict.HeadBytes(r)
	}
	// The Presto client asks for gzip and decodes it itself; the header
	// stays, so that Go neither adds its own nor decodes.
	return r, nil
}

// checkTarget returns a *wire.ForeignURIError unless u is on the
// coordinator addr with a scheme the DSN allows.
func (t *routingTransport) checkTarget(u *url.URL, addr, scheme string) error {
	return wire.CheckTarget(u, addr, t.forceTLS || scheme == "https")
}

// submitCancellable sends a submission whose caller may give up at any
// moment. Before the statement was written the request is simply aborted:
// the coordinator never saw it. After, the caller gets its error at once,
// and the answer is awaited in the background (bounded) to learn the
// query's nextUri and cancel it there: every query a coordinator accepted
// gets its DELETE.
func (t *routingTransport) submitCancellable(req *http.Request, a *attempt) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	req = req.WithContext(ctx)
	a.GateBody(req)
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	release := func() { cancel(nil); t.released() }
	go func() {
		resp, err := pool.Submit(t.next, req, &a.Exchange, release)
		done <- result{resp, err}
	}()
	answered := func(r result) (*http.Response, error) {
		if r.err != nil {
			release()
			return nil, t.failed(a, r.err)
		}
		if a.session != nil {
			a.session.apply(r.resp.Header)
		}
		// Follow-ups carry the caller's cancellation themselves; the
		// answer is whole already.
		return r.resp, nil
	}
	// A write that has not delivered the statement by half the caller's
	// remaining time is stalled (a coordinator that stopped reading):
	// while the gate still holds its last bytes it is provably unsent,
	// and the other half is left for another coordinator.
	var stalled <-chan time.Time
	var half time.Duration
	if dl, ok := a.caller.Deadline(); ok {
		if half = time.Until(dl) / 2; half >= minStallCheck {
			timer := time.NewTimer(half)
			defer timer.Stop()
			stalled = timer.C
		}
	}
	select {
	case r := <-done:
		return answered(r)
	case <-stalled:
		if a.Connected() && a.AbortSubmission() {
			err := &verdict.WriteStallError{Node: a.Node.Addr, After: half}
			a.Fail(err, false)
			cancel(err)
			<-done
			release()
			return nil, t.failed(a, err)
		}
		select {
		case r := <-done:
			return answered(r)
		case <-a.caller.Done():
		}
	case <-a.caller.Done():
	}
	if a.AbortSubmission() {
		cancel(context.Cause(a.caller))
	} else if errors.Is(a.caller.Err(), context.DeadlineExceeded) {
		a.unanswered.Store(true)
	}
	abandon := func(closing <-chan struct{}) {
		timer := time.NewTimer(abandonTimeout)
		defer timer.Stop()
		var r result
		select {
		case r = <-done:
		case <-timer.C:
			cancel(errAbandoned)
			r = <-done
		case <-closing:
			// The connector closes: a little longer, then give up.
			timer.Reset(wire.CancelTimeout)
			select {
			case r = <-done:
			case <-timer.C:
				cancel(errAbandoned)
				r = <-done
			}
		}
		if r.err != nil {
			return // not accepted, or no answer to learn the query from
		}
		r.resp.Body.Close()
		if u := a.LastURL(); u != nil && t.checkTarget(u, a.Node.Addr, a.Node.Scheme) == nil {
			if err := wire.CancelQuery(context.Background(), t.cancel, u, t.cancelAuth.header(a)); err != nil {
				t.log.Debug("cancelling an abandoned query failed", "node", a.Node.Addr, "err", err)
			}
		}
	}
	if !t.background(abandon) {
		cancel(errAbandoned)
		go func() {
			if r := <-done; r.err == nil {
				r.resp.Body.Close()
			}
		}()
	}
	return nil, fmt.Errorf("driver: statement on %s: %w", a.Node.Addr, a.caller.Err())
}

// withClientSupport returns h with what the driver supports and the
// Presto client does not announce, on a copy made once:
//
//   - X-*-Transaction-Id: NONE, in h's own spelling, when h names no
//     transaction. The servers start a transaction only for a client that
//     sends the header at all (Trino's HttpRequestSessionContextFactory
//     and PrestoDB's HttpRequestSessionContext read its presence as
//     transaction support; StartTransactionTask fails with
//     INCOMPATIBLE_CLIENT without it); JDBC sends NONE on every submission
//     outside a transaction.
//   - X-Trino-Client-Capabilities: PARAMETRIC_DATETIME on a Trino
//     submission that names no capabilities. Without it Trino rounds
//     timestamp(p), time(p) and their zoned forms to milliseconds (Trino's
//     server/protocol/ProtocolUtil.java, supportsParametricDateTime; seen
//     on Trino 476). The driver reads up to twelve digits of fraction, as
//     JDBC and trino-python-client, which send it, do. PrestoDB 0.287 has
//     no timestamp(p) and gets nothing.
//
// The Presto client always sends its user, in the spelling of the DSN, so
// X-Trino-User tells the flavour.
func withClientSupport(h http.Header) http.Header {
	trino := h.Get("X-Trino-User") != ""
	needTxn := h.Get("X-Presto-Transaction-Id") == "" && h.Get("X-Trino-Transaction-Id") == ""
	needCaps := trino && h.Get("X-Trino-Client-Capabilities") == ""
	if !needTxn && !needCaps {
		return h
	}
	out := h.Clone()
	switch {
	case needTxn && trino:
		out.Set("X-Trino-Transaction-Id", "NONE")
	case needTxn:
		out.Set("X-Presto-Transaction-Id", "NONE")
	}
	if needCaps {
		out.Set("X-Trino-Client-Capabilities", "PARAMETRIC_DATETIME")
	}
	return out
}
