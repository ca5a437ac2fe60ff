package gateway

import (
	"net/http"

	"github.com/zkpresto/zkpresto/internal/pool"
	"github.com/zkpresto/zkpresto/routing"
)

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
	header := g.outboundHeader(r)
	req, group, groups, _, ok := g.route(w, header, nil, "info")
	if !ok {
		return
	}
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
		g.submitFailed(w, r, err)
		return
	}
	defer a.End(nil)
	g.stats.add("info", resp.StatusCode)
	if _, err := g.relay(w, r, resp, base, ""); err != nil {
		panic(http.ErrAbortHandler)
	}
}
