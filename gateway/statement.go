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

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/pool"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
)

// serveSubmit routes POST /v1/statement: pick, forward, stream the answer
// back. Until a coordinator may have the statement, a failure sends it to
// another one and the client may get a 503 (nothing ran); after, the client
// gets a 500 it does not retry.
func (g *Gateway) serveSubmit(w http.ResponseWriter, r *http.Request) {
	if g.draining.Load() {
		g.stats.add("submit", http.StatusServiceUnavailable)
		// The client's next statement goes to another replica.
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusServiceUnavailable, errGatewayName, "", "zkpresto gateway is draining; send the statement again")
		return
	}
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
		return
	}
	header := outboundHeader(r)
	var pinned *discovery.Node
	for _, name := range []string{"X-Presto-Transaction-Id", "X-Trino-Transaction-Id"} {
		base, id, wrapped, err := g.unwrapTransaction(header.Get(name))
		if err != nil {
			g.stats.add("submit", http.StatusForbidden)
			writeError(w, http.StatusForbidden, errBadToken, "", "zkpresto gateway: the transaction id was not issued by this gateway's key")
			return
		}
		if wrapped {
			header.Set(name, id)
			if pinned, err = g.pinnedNode(r.Context(), base); err != nil {
				g.stats.add("submit", http.StatusGone)
				writeError(w, http.StatusGone, errCoordinatorGone, "", err.Error())
				return
			}
		}
	}
	req, group, groups := g.route(header)
	defer groups.release()
	router, rc := group.Router, g.reachOf(groups, group)
	// The submission outlives the client's request: a client that goes
	// away after the statement may have reached a coordinator must not
	// leave it running unseen (its answer is awaited and the query
	// cancelled).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), SubmitTimeout)
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
		attemptCtx, abort := context.WithCancel(withFlavour(ctx, rc.flavour))
		answered := false
		defer func() {
			if answered {
				endAnswered = abort
			} else {
				abort()
			}
		}()
		out, err := http.NewRequestWithContext(attemptCtx, http.MethodPost, base+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			return routing.Invalid, err
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
		resp, err = pool.Submit(rc.transport, out, &e, nil)
		if err == nil {
			// The first GET, where the coordinator dispatches the query,
			// before the client is answered: see dispatchFirst.
			resp, err = dispatchFirst(attemptCtx, r.Context(), rc.transport, header, base, resp)
			var notReady *NotReadyError
			switch {
			case errors.As(err, &notReady):
				return routing.NotSent, err // it never ran: another coordinator
			case err != nil:
				return routing.MaybeSent, err
			}
		}
		switch {
		case err == nil:
			answered = true
			return routing.Answered, nil
		case e.Invalid() != nil:
			return routing.Invalid, err
		case r.Context().Err() != nil && !e.Written():
			return routing.Abandoned, err
		}
		failure, sent := e.Failure()
		switch {
		case failure == nil:
			return routing.Answered, err // not reached: Submit records its failures
		case sent:
			return routing.MaybeSent, failure
		}
		return routing.NotSent, failure
	})
	g.noteStatement(r, group.Name, base, resp, err)
	if err != nil {
		if !g.noCoordinator(w, r, group, err) {
			g.submitFailed(w, err)
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
	written, err := g.relay(w, r, resp, base, "")
	switch {
	case err == nil:
		g.stats.add("submit", resp.StatusCode)
	case r.Context().Err() != nil:
		panic(http.ErrAbortHandler) // the client went away
	case !written:
		// The coordinator's answer broke (cut, or not JSON) before any of
		// it reached the client: a failure of the coordinator, after the
		// statement was sent.
		unsent(w)
		g.submitFailed(w, a.Failed(err))
	default:
		a.Failed(err)
		g.stats.add("submit", resp.StatusCode)
		g.log.Warn("relaying a statement's answer failed; cutting the client's connection", "node", a.Node.Addr, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// submitFailed answers a statement no coordinator took, or one that may
// have reached one that then failed.
func (g *Gateway) submitFailed(w http.ResponseWriter, err error) {
	var se *routing.StatementError
	var re *wire.RequestError
	switch {
	case errors.As(err, &se):
		// It may be running: never an answer the client retries.
		g.stats.add("submit", http.StatusInternalServerError)
		writeError(w, http.StatusInternalServerError, errStatementFailure, "",
			fmt.Sprintf("zkpresto gateway: coordinator %s failed after the statement was sent (it may have run; not sent again): %v", se.Node, se.Err))
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

// pinnedNode is the coordinator of a transaction, while it may be used.
func (g *Gateway) pinnedNode(ctx context.Context, base string) (*discovery.Node, error) {
	switch state, _ := g.stateOf(ctx, base); state {
	case memberListed, memberDeparted:
	default:
		return nil, fmt.Errorf("zkpresto gateway: the transaction's coordinator %s is gone", base)
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	return &discovery.Node{Addr: u.Host, Scheme: u.Scheme, ID: u.Host, Weight: 1}, nil
}

// cancelAnswered cancels, in the background, the query a coordinator
// accepted for a client that is gone.
func (g *Gateway) cancelAnswered(router *routing.Router, resp *http.Response, base string, rc reach) {
	defer resp.Body.Close()
	var answer struct {
		NextURI string `json:"nextUri"`
	}
	if err := decodeHead(resp.Body, &answer); err != nil || answer.NextURI == "" {
		return
	}
	u, err := url.Parse(answer.NextURI)
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

// serveStatementHead routes HEAD /v1/statement, which clients send to check
// their credentials without starting a query (trino-go-client's Ping, JDBC's
// validateConnection): the gateway checks none, so a coordinator does, and
// the client gets its status (200 from Trino since 469, 405 from older
// servers and Presto, which clients take as "cannot check", 401 for
// credentials it rejects). Nothing runs, so a coordinator that fails is no
// reason to fail the check: another one is asked.
func (g *Gateway) serveStatementHead(w http.ResponseWriter, r *http.Request) {
	if g.draining.Load() {
		g.stats.add("info", http.StatusServiceUnavailable)
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusServiceUnavailable, errGatewayName, "", "zkpresto gateway is draining")
		return
	}
	header := outboundHeader(r)
	req, group, groups := g.route(header)
	defer groups.release()
	router, rc := group.Router, g.reachOf(groups, group)
	var resp *http.Response
	var base string
	a, err := router.Run(r.Context(), req, nil, func(ra *routing.Attempt) (routing.Outcome, error) {
		base = rc.base(ra.Node)
		out, err := http.NewRequestWithContext(withFlavour(r.Context(), rc.flavour), http.MethodHead, base+"/v1/statement", nil)
		if err != nil {
			return routing.Invalid, err
		}
		out.Header = header
		var e pool.Exchange
		resp, err = pool.FollowUp(rc.transport, out, &e, nil)
		switch {
		case err == nil:
			return routing.Answered, nil
		case e.Invalid() != nil:
			return routing.Invalid, err
		case r.Context().Err() != nil:
			return routing.Abandoned, err
		}
		return routing.NotSent, err
	})
	if err != nil {
		if r.Context().Err() != nil {
			panic(http.ErrAbortHandler) // the client went away: no empty 200
		}
		g.submitFailed(w, err)
		return
	}
	defer a.End(nil)
	g.stats.add("info", resp.StatusCode)
	if _, err := g.relay(w, r, resp, base, ""); err != nil {
		panic(http.ErrAbortHandler)
	}
}

// route returns what the strategy sees of a statement with header, and
// the group its selectors send it to, from the groups in force, which the
// caller releases when the statement is done with them.
func (g *Gateway) route(header http.Header) (*strategy.Request, *Group, *Groups) {
	req := &strategy.Request{User: clientHeader(header, "User"), Source: clientHeader(header, "Source")}
	groups := g.acquire()
	return req, groups.pick(req.User, req.Source, clientTags(header)), groups
}

// clientTags are the statement's client tags (X-Presto-Client-Tags or
// X-Trino-Client-Tags, comma-separated), for the selectors.
func clientTags(h http.Header) []string {
	var tags []string
	for _, t := range strings.Split(clientHeader(h, "Client-Tags"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	return tags
}
