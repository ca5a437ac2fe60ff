package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/zkpresto/zkpresto/internal/pool"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/routing"
)

// serveSubmit routes POST /v1/statement: pick a coordinator, send the
// statement (sendStatement), classify what came of it
// (classifySubmission), act on that. Until a coordinator may have the
// statement, a failure sends it to another one and the client may get a
// 503 (nothing ran); after, the client gets a 500 it does not retry.
func (g *Gateway) serveSubmit(w http.ResponseWriter, r *http.Request) {
	if g.draining.Load() {
		g.stats.add("submit", http.StatusServiceUnavailable)
		// The client's next statement goes to another replica.
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusServiceUnavailable, errGatewayName, "", "zkpresto gateway is draining; send the statement again")
		return
	}
	body, ok := g.readStatement(w, r)
	if !ok {
		return
	}
	header := g.outboundHeader(r)
	pinned, ok := g.pinTransaction(w, r, header)
	if !ok {
		return
	}
	req, group, groups, ok := g.route(w, header, body, "submit")
	if !ok {
		return
	}
	defer groups.release()
	router, rc := group.Router, g.reachOf(groups, group)
	// The submission outlives the client's request: a client that goes
	// away after the statement may have reached a coordinator must not
	// leave it running unseen (its answer is awaited and the query
	// cancelled).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), g.submitTimeout)
	defer cancel()
	var resp *http.Response
	var base string
	// The answered attempt's context lives until its answer is relayed:
	// cancelling it earlier would cut the answer's body and close the
	// connection to the coordinator instead of reusing it.
	endAnswered := func() {}
	defer func() { endAnswered() }()
	a, err := router.Run(r.Context(), req, pinned, func(ra *routing.Attempt) (routing.Outcome, error) {
		if r.Context().Err() != nil {
			return routing.Abandoned, r.Context().Err() // nothing sent: nothing to cancel
		}
		base = rc.base(ra.Node)
		sent := time.Now()
		check := g.checks.needed(base, ra.Node, router.Health())
		attempt, end := g.sendStatement(ctx, r, rc, base, header, body, check)
		outcome := classifySubmission(attempt)
		if attempt.dispatched {
			g.checks.prove(base, ra.Node, sent)
		}
		if outcome.answered() {
			resp, endAnswered = attempt.resp, end
		} else {
			end()
		}
		return outcome.routing(), outcome.err
	})
	g.noteStatement(r, group.Name, base, resp, err)
	if err != nil {
		if !g.noCoordinator(w, r, group, err) {
			g.submitFailed(w, r, err)
		}
		return
	}
	g.outages.ended(group.Name)
	defer a.End(nil)
	g.noteListed(base, rc)
	if r.Context().Err() != nil {
		// The client went away while the coordinator answered: cancel
		// what it accepted, and cut the connection rather than answer an
		// empty 200 (a client that only half-closed still reads).
		g.cancelAnswered(router, resp, base, rc)
		panic(http.ErrAbortHandler)
	}
	nextURI, written, err := g.relayAnswer(w, r, resp, base, "")
	if err == nil {
		// The answer leaves now, not when the handler returns: a client
		// gone meanwhile shows as a failed write, while its query can
		// still be cancelled.
		err = http.NewResponseController(w).Flush()
	}
	switch {
	case err == nil:
		g.stats.add("submit", resp.StatusCode)
	case r.Context().Err() != nil:
		// The client went away before it had the answer: it cannot follow
		// the query, which is cancelled (on the queued resource, before
		// it was dispatched, unless the gateway made its first GET).
		g.cancelQuery(router, nextURI, base, rc)
		panic(http.ErrAbortHandler)
	case !written:
		// The coordinator's answer broke (cut, or not JSON) before any of
		// it reached the client: a failure of the coordinator, after the
		// statement was sent.
		unsent(w)
		g.cancelQuery(router, nextURI, base, rc)
		g.submitFailed(w, r, a.Failed(err))
	default:
		a.Failed(err)
		g.stats.add("submit", resp.StatusCode)
		g.cancelQuery(router, nextURI, base, rc)
		g.log.Warn("relaying a statement's answer failed; cutting the client's connection and cancelling its query", "node", a.Node.Addr, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// readStatement reads the statement's body, which the gateway holds until
// a coordinator accepted it, to send it elsewhere when one refuses. When
// ok is false the client was answered: 413 for a body over
// MaxStatementBytes, 408 for one that did not come in time, else 400.
func (g *Gateway) readStatement(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxStatementBytes))
	if err != nil {
		status := http.StatusBadRequest
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			status = http.StatusRequestEntityTooLarge
		case bodyTimedOut(err):
			status = http.StatusRequestTimeout
			w.Header().Set("Connection", "close")
		}
		g.stats.add("submit", status)
		writeError(w, status, errGatewayName, "", "zkpresto gateway: reading the statement: "+err.Error())
		return nil, false
	}
	return body, true
}

// sendStatement makes one attempt of a submission on the coordinator at
// base: it sends the statement, then, when check is set, the first GET
// (dispatchFirst; see dispatchChecks), and
// returns what came of them for classifySubmission, with the end of the
// attempt's context, which the caller calls once the answer was relayed,
// or at once when there is none.
func (g *Gateway) sendStatement(ctx context.Context, r *http.Request, rc reach, base string, header http.Header, body []byte, check bool) (submitAttempt, context.CancelFunc) {
	attemptCtx, abort := context.WithCancel(withFlavour(ctx, rc.flavour))
	out, err := http.NewRequestWithContext(attemptCtx, http.MethodPost, base+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return submitAttempt{submitErr: err, invalid: err}, abort
	}
	out.Header = header
	var e pool.Exchange
	// The statement's last bytes pass a gate: a client that leaves
	// before they reached the connection aborts the submission (the
	// coordinator cannot have the statement); after, it runs on and
	// its answer tells which query to cancel.
	e.GateBody(out)
	stop := context.AfterFunc(r.Context(), func() {
		if e.AbortSubmission() {
			abort()
		}
	})
	defer stop()
	var attempt submitAttempt
	attempt.resp, attempt.submitErr = pool.Submit(rc.transport, out, &e, nil)
	if attempt.submitErr == nil && check {
		// The first GET, where the coordinator dispatches the query,
		// before the client is answered: see dispatchFirst.
		attempt.resp, attempt.dispatched, attempt.dispatchErr = dispatchFirst(attemptCtx, r.Context(), rc.transport, header, base, attempt.resp)
	}
	attempt.invalid = e.Invalid()
	attempt.failure, attempt.sent = e.Failure()
	attempt.written = e.Written()
	attempt.clientGone = r.Context().Err() != nil
	attempt.headBytes = requestHeadBytes(out)
	return attempt, abort
}

// submitAttempt is what one attempt of a submission left behind, as
// classifySubmission reads it: the answer or the errors, and what the
// exchange recorded of the statement's way to the coordinator.
type submitAttempt struct {
	resp        *http.Response // the answer for the client; nil when none
	submitErr   error          // the submission's failure (pool.Submit's): no answer
	dispatchErr error          // the first GET's failure (dispatchFirst's), after an answer
	dispatched  bool           // the gateway's first GET saw the query dispatched
	invalid     error          // a request that could not be sent at all (the exchange's Invalid)
	failure     error          // the failure the exchange recorded, if any, and
	sent        bool           // whether the statement may have reached the coordinator then
	written     bool           // whether it may have reached it whole (the exchange's Written)
	clientGone  bool           // the client's request ended
	headBytes   int            // about the size of the request's head
}

// submitKind is what an attempt of a submission means, for the
// coordinator and for the client.
type submitKind int

const (
	// submitAnswered: the coordinator answered (a query, its failure, or
	// a server error that is no refusal): the answer is relayed and the
	// coordinator is healthy.
	submitAnswered submitKind = iota
	// submitClientError: the coordinator refused the client's own request
	// (4xx: a head too large, 431; a body too large, 413; 400, 401): the
	// client's fault, relayed as it came, never counted against the
	// coordinator.
	submitClientError
	// submitNotReady: the coordinator accepted the statement and failed
	// it at its dispatch because it is starting or has no workers
	// (*notReadyError): it never ran, another coordinator gets it.
	submitNotReady
	// submitNotSent: the coordinator failed before it could have the
	// statement (no connection, the statement held at the gate, or a
	// refusal, which by the protocol it did not accept, however much was
	// written): it is ejected and another coordinator gets the statement.
	submitNotSent
	// submitMayHaveRun: the coordinator failed after it may have had the
	// statement (a cut write or answer, a redirect, an answer that could
	// not be read): it is charged a failure, the statement is never sent
	// again, and the client gets a 500 it does not retry.
	submitMayHaveRun
	// submitInvalid: the request could not be sent at all (a header
	// net/http refuses): the client's fault, a 400, and no other
	// coordinator is tried, where it would fail the same way.
	submitInvalid
	// submitAbandoned: the client left before a whole statement could
	// have reached the coordinator: nothing to cancel, no verdict on the
	// coordinator.
	submitAbandoned
	// submitUnanswered: the coordinator may have had the whole statement
	// and gave no answer before the submission's timeout (SubmitTimeout),
	// which ends the attempt without a failure recorded: it may be running
	// the statement, so it is charged a failure, the statement is never
	// sent again, and the client gets a 500 it does not retry.
	submitUnanswered
	// submitTimedOut: the submission's timeout passed before a whole
	// statement could have reached the coordinator: nothing ran, no
	// verdict on the coordinator, and the client gets the 503 of a
	// statement no coordinator took.
	submitTimedOut
	// submitHeadRefused: the coordinator closed or reset the connection,
	// with no answer, on a request whose head is over coordinatorHeadLimit:
	// what Jetty does to a head over its limit. The client's fault: a
	// 431, no other coordinator is tried, and none is charged.
	submitHeadRefused
)

var submitKindNames = [...]string{
	submitAnswered:    "answered",
	submitClientError: "client error",
	submitNotReady:    "not ready",
	submitNotSent:     "not sent",
	submitMayHaveRun:  "may have run",
	submitInvalid:     "invalid",
	submitAbandoned:   "abandoned",
	submitUnanswered:  "unanswered",
	submitTimedOut:    "timed out",
	submitHeadRefused: "head refused",
}

func (k submitKind) String() string { return submitKindNames[k] }

// submitOutcome is an attempt's kind and the error the routing gets for it
// (nil for an answer to relay).
type submitOutcome struct {
	kind submitKind
	err  error
}

// answered reports whether the attempt has an answer to relay.
func (o submitOutcome) answered() bool {
	return o.kind == submitAnswered || o.kind == submitClientError
}

// routing is the outcome the Router acts on.
func (o submitOutcome) routing() routing.Outcome {
	switch o.kind {
	case submitNotReady, submitNotSent:
		return routing.NotSent
	case submitMayHaveRun, submitUnanswered:
		return routing.MaybeSent
	case submitInvalid, submitHeadRefused:
		return routing.Invalid
	case submitAbandoned, submitTimedOut:
		return routing.Abandoned
	}
	return routing.Answered
}

// classifySubmission says what an attempt of a submission means. It reads
// nothing but its argument: the order of its cases is the rule. An error
// of the first GET comes after the coordinator answered the POST, so the
// statement may have run, unless the coordinator said it is not ready; a
// failure of the submission is the client's when the request could not be
// sent or the client left before the statement was whole, else the
// coordinator's, sent or not as the exchange recorded it; one it did not
// record is the submission's timeout, after the statement may have
// reached the coordinator whole or before; one where the coordinator hung
// up without a word on a head larger than a coordinator may refuse is the
// head's, the client's.
func classifySubmission(a submitAttempt) submitOutcome {
	var notReady *notReadyError
	switch {
	case a.dispatchErr != nil && errors.As(a.dispatchErr, &notReady):
		return submitOutcome{submitNotReady, a.dispatchErr}
	case a.dispatchErr != nil:
		return submitOutcome{submitMayHaveRun, a.dispatchErr}
	case a.submitErr == nil && a.resp != nil && a.resp.StatusCode/100 == 4:
		return submitOutcome{submitClientError, nil}
	case a.submitErr == nil:
		return submitOutcome{submitAnswered, nil}
	case a.invalid != nil:
		return submitOutcome{submitInvalid, a.submitErr}
	case a.clientGone && !a.written:
		return submitOutcome{submitAbandoned, a.submitErr}
	case a.failure != nil && a.headBytes > coordinatorHeadLimit && hungUp(a.failure):
		return submitOutcome{submitHeadRefused, &headRefusedError{bytes: a.headBytes, err: a.failure}}
	case a.failure == nil && a.written:
		return submitOutcome{submitUnanswered, fmt.Errorf("no answer to the statement in time: %w", a.submitErr)}
	case a.failure == nil:
		return submitOutcome{submitTimedOut, a.submitErr}
	case a.sent:
		return submitOutcome{submitMayHaveRun, a.failure}
	}
	return submitOutcome{submitNotSent, a.failure}
}

// coordinatorHeadLimit is the smallest request head a coordinator is
// known to refuse: Jetty's default, 8 kB, which PrestoDB keeps (Trino
// takes about 2 MB). Jetty answers a head over its limit with 431 and
// closes the connection with the rest of the head unread, which resets
// it and loses the 431 on the way; a coordinator that hangs up without
// a word on a larger head is taken to have done that. A coordinator that
// really failed just then is charged by the next statement.
const coordinatorHeadLimit = 8 << 10

// headRefusedError is the failure of a submission whose head the
// coordinator refused by hanging up (see coordinatorHeadLimit).
type headRefusedError struct {
	bytes int
	err   error
}

func (e *headRefusedError) Error() string {
	return fmt.Sprintf("the coordinator closed the connection without an answer on a request head of %d bytes, more than coordinators take by default (%d kB); send less in headers: %v",
		e.bytes, coordinatorHeadLimit>>10, e.err)
}

func (e *headRefusedError) Unwrap() error { return e.err }

// hungUp reports whether err is a connection the coordinator closed or
// reset before any answer: not a refusal, a redirect, a cut page or an
// answer's head too long, which are answers.
func hungUp(err error) bool {
	var refused *wire.RefusedError
	var redirect *wire.RedirectError
	var page *wire.PageError
	if errors.As(err, &refused) || errors.As(err, &redirect) || errors.As(err, &page) || errors.Is(err, pool.ErrHeadTooLarge) {
		return false
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// requestHeadBytes is about the size of req's head on the wire: its request
// line, Host and header fields.
func requestHeadBytes(req *http.Request) int {
	n := len(req.Method) + len(req.URL.RequestURI()) + len(req.URL.Host) + len(" HTTP/1.1\r\nHost: \r\n\r\n")
	for k, vs := range req.Header {
		for _, v := range vs {
			n += len(k) + len(v) + len(": \r\n")
		}
	}
	return n
}

// submitFailed answers a statement no coordinator took, or one that may
// have reached one that then failed.
func (g *Gateway) submitFailed(w http.ResponseWriter, r *http.Request, err error) {
	var se *routing.StatementError
	var re *wire.RequestError
	var hr *headRefusedError
	switch {
	case errors.As(err, &hr):
		// The client's head, not the coordinator: no retry helps.
		g.stats.add("submit", http.StatusRequestHeaderFieldsTooLarge)
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestHeaderFieldsTooLarge, errGatewayName, "", "zkpresto gateway: "+hr.Error())
	case errors.As(err, &se):
		// It may be running: never an answer the client retries, and one
		// every client shows as the query's failure.
		msg := fmt.Sprintf("zkpresto gateway: coordinator %s failed after the statement was sent (it may have run; not sent again): %v", se.Node, se.Err)
		if !g.answerFailedQuery(w, r, g.newFailedQueryID(time.Now()), msg, true) {
			g.stats.add("submit", http.StatusInternalServerError)
			writeError(w, http.StatusInternalServerError, errStatementFailure, "", msg)
		}
	case errors.As(err, &re):
		g.stats.add("submit", http.StatusBadRequest)
		writeError(w, http.StatusBadRequest, errGatewayName, "", "zkpresto gateway: "+re.Error())
	default:
		// No coordinator took it (none listed, or every one tried refused
		// before it had the statement): the client may send it again.
		g.stats.add("submit", http.StatusServiceUnavailable)
		writeError(w, http.StatusServiceUnavailable, errNoCoordinator, "", "zkpresto gateway: "+strings.TrimPrefix(err.Error(), "zkpresto: "))
	}
}

// cancelAnswered cancels, in the background, the query a coordinator
// accepted for a client that is gone.
func (g *Gateway) cancelAnswered(router *routing.Router, resp *http.Response, base string, rc reach) {
	defer resp.Body.Close()
	var answer wire.Answer
	if err := decodeHead(resp.Body, &answer); err != nil {
		return
	}
	g.cancelQuery(router, answer.NextURI, base, rc)
}

// cancelQuery cancels, in the background, the query whose next URI on the
// coordinator at base is nextURI (nothing when it is empty: the answer
// ended the query, or none was read). A DELETE of a queued nextUri
// cancels the query before it is dispatched: it never starts.
func (g *Gateway) cancelQuery(router *routing.Router, nextURI, base string, rc reach) {
	if nextURI == "" {
		return
	}
	u, err := url.Parse(nextURI)
	if err != nil {
		return
	}
	target, _ := url.Parse(base)
	u.Scheme, u.Host = target.Scheme, target.Host
	router.Go(func(<-chan struct{}) {
		if err := wire.CancelQuery(withFlavour(context.Background(), rc.flavour), &http.Client{Transport: rc.transport}, u); err != nil {
			g.log.Debug("cancelling the query of a client that left failed", "node", target.Host, "err", err)
		}
	})
}
