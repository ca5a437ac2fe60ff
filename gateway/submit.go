package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/zkpresto/zkpresto/internal/pool"
	"github.com/zkpresto/zkpresto/internal/verdict"
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
	req, group, groups, d, ok := g.route(w, header, body, "submit")
	if !ok {
		return
	}
	defer groups.release()
	if pinned != nil {
		req.Prefer = "" // the transaction's coordinator, whatever a cookie says
	}
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
		// A Negotiate token is good for one request: the first GET is the
		// client's, with a token of its own.
		check := !negotiates(header) && g.checks.needed(base, ra.Node, router.Health())
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
		err := outcome.Err
		if outcome.Kind == verdict.Unanswered {
			// It may be running: the client gets the 500 of a statement
			// that may have run, which it does not send again.
			err = &routing.StatementError{Node: ra.Node.Addr, Err: err}
		}
		return outcome.routing(), err
	})
	g.noteStatement(r, group.Name, chosenBy(d, req, pinned, a, router), base, resp, err)
	if err != nil {
		if !g.noCoordinator(w, r, group, err) {
			g.submitFailed(w, r, err)
		}
		return
	}
	g.outages.ended(group.Name)
	defer a.End(nil)
	g.noteListed(base, rc)
	g.affinityAnswer(r, req, resp, a.Node.Addr, group.Name)
	if r.Context().Err() != nil {
		// The client went away while the coordinator answered: cancel
		// what it accepted, and cut the connection rather than answer an
		// empty 200 (a client that only half-closed still reads).
		g.cancelAnswered(router, resp, base, rc, header)
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
		g.cancelQuery(router, nextURI, base, rc, header)
		panic(http.ErrAbortHandler)
	case !written:
		// The coordinator's answer broke (cut, or not JSON) before any of
		// it reached the client: a failure of the coordinator, after the
		// statement was sent.
		unsent(w)
		g.cancelQuery(router, nextURI, base, rc, header)
		g.submitFailed(w, r, a.Failed(err))
	default:
		a.Failed(err)
		g.stats.add("submit", resp.StatusCode)
		g.cancelQuery(router, nextURI, base, rc, header)
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
	attempt.headBytes = verdict.HeadBytes(out)
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

// submitOutcome is what an attempt of a submission means (the verdict
// on its facts, see submitFacts) and the gateway's own kind on top: a
// coordinator's 4xx, which refused the client's own request (a head too
// large, 431; a body too large, 413; 400, 401), relayed as it came and
// never counted against the coordinator.
type submitOutcome struct {
	verdict.Verdict
	clientError bool
}

// answered reports whether the attempt has an answer to relay.
func (o submitOutcome) answered() bool { return o.Kind == verdict.Answered }

// routing is the outcome the Router acts on.
func (o submitOutcome) routing() routing.Outcome { return o.Kind.Routing() }

// classifySubmission says what an attempt of a submission means: the
// verdict on its facts (verdict.Of), and a coordinator's 4xx answer
// marked as the client's.
func classifySubmission(a submitAttempt) submitOutcome {
	return decideSubmission(submitFacts(a))
}

// decideSubmission is classifySubmission on the facts gathered.
func decideSubmission(f verdict.Facts) submitOutcome {
	v := verdict.Of(f)
	return submitOutcome{Verdict: v, clientError: v.Kind == verdict.Answered && f.Status/100 == 4}
}

// submitFacts gathers what an attempt of a submission left for the
// verdict. The POST answered means the coordinator answered; an error of
// the first GET comes after that answer, so the statement may have run
// (a failure after the answer), unless the coordinator said it is not
// ready (a query failed on the queued resource). A failure of the
// submission the exchange did not record is the submission's timeout.
// The client leaving aborts the submission only before the statement was
// whole: after, it runs on, and its answer tells which query to cancel.
func submitFacts(a submitAttempt) verdict.Facts {
	f := verdict.Facts{
		Err:       a.submitErr,
		Answered:  a.submitErr == nil,
		Invalid:   a.invalid,
		Failure:   a.failure,
		Sent:      a.sent,
		Written:   a.written,
		Aborted:   a.submitErr != nil && a.clientGone && !a.written,
		HeadBytes: a.headBytes,
	}
	if a.resp != nil {
		f.Status = a.resp.StatusCode
	}
	if a.dispatchErr != nil {
		f.Err, f.Answered, f.Aborted = a.dispatchErr, true, false
		var notReady *notReadyError
		if errors.As(a.dispatchErr, &notReady) {
			f.ErrorName, f.Queued, f.Failure, f.Sent = notReady.ErrorName, true, nil, false
		} else {
			f.Failure, f.Sent = a.dispatchErr, true
		}
	}
	return f
}

// submitFailed answers a statement no coordinator took, or one that may
// have reached one that then failed.
func (g *Gateway) submitFailed(w http.ResponseWriter, r *http.Request, err error) {
	var se *routing.StatementError
	var re *wire.RequestError
	var hr *verdict.HeadRefusedError
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
		writeError(w, http.StatusServiceUnavailable, errNoCoordinator, "", "zkpresto gateway: "+err.Error())
	}
}

// cancelAnswered cancels, in the background, the query a coordinator
// accepted for a client that is gone.
func (g *Gateway) cancelAnswered(router *routing.Router, resp *http.Response, base string, rc reach, header http.Header) {
	defer resp.Body.Close()
	var answer wire.Answer
	if err := decodeHead(resp.Body, &answer); err != nil {
		return
	}
	g.cancelQuery(router, answer.NextURI, base, rc, header)
}

// cancelQuery cancels, in the background, the query whose next URI on the
// coordinator at base is nextURI (nothing when it is empty: the answer
// ended the query, or none was read). A DELETE of a queued nextUri
// cancels the query before it is dispatched: it never starts. The DELETE
// carries what the client's own GET would (getHeader of the submission's
// header): its user and its credentials, which a coordinator that
// authenticates every request (PrestoDB) checks on a DELETE too, but never
// a Negotiate token.
func (g *Gateway) cancelQuery(router *routing.Router, nextURI, base string, rc reach, header http.Header) {
	if nextURI == "" {
		return
	}
	u, err := url.Parse(nextURI)
	if err != nil {
		return
	}
	target, _ := url.Parse(base)
	u.Scheme, u.Host = target.Scheme, target.Host
	header = getHeader(header)
	header.Del("Accept-Encoding")
	router.Go(func(<-chan struct{}) {
		if err := wire.CancelQuery(withFlavour(context.Background(), rc.flavour), &http.Client{Transport: rc.transport}, u, header); err != nil {
			g.log.Debug("cancelling the query of a client that left failed", "node", target.Host, "err", err)
		}
	})
}
