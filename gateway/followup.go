package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/gateway/token"
	"github.com/zkpresto/zkpresto/internal/pool"
	"github.com/zkpresto/zkpresto/internal/wire"
)

// serveToken routes a request on a URI the gateway handed out: verify the
// token, check its coordinator may still be used, forward, stream back.
func (g *Gateway) serveToken(w http.ResponseWriter, r *http.Request) {
	tok, rest, ok := token.Split(r.URL.EscapedPath())
	if !ok {
		g.stats.add("followup", http.StatusForbidden)
		writeError(w, http.StatusForbidden, errBadToken, "", "zkpresto gateway: malformed routing token")
		return
	}
	restURL, err := url.Parse(rest)
	if err != nil {
		g.stats.add("followup", http.StatusForbidden)
		writeError(w, http.StatusForbidden, errBadToken, "", "zkpresto gateway: malformed path after the routing token")
		return
	}
	if isOAuth2TokenPath(restURL.Path) {
		g.serveOAuth2Token(w, r, tok, restURL)
		return
	}
	id := queryIDOf(restURL.Path, r.URL.RawQuery)
	base, err := g.keys.Verify(tok, id)
	if err != nil {
		// Never forwarded: whoever made this token has not the key.
		g.stats.add("followup", http.StatusForbidden)
		writeError(w, http.StatusForbidden, errBadToken, id, "zkpresto gateway: routing token refused: "+err.Error())
		return
	}
	if !tokenOpens(restURL.Path, id) {
		// A token opens the URIs it was made for: a query's, or a spooled
		// segment's; not the rest of the coordinator's API.
		g.stats.add("followup", http.StatusForbidden)
		writeError(w, http.StatusForbidden, errBadToken, id, "zkpresto gateway: a routing token opens only the URIs of its query")
		return
	}
	state, rc := g.stateOf(r.Context(), base)
	if (state == memberUnknown || state == memberGone) && r.Method == http.MethodDelete {
		// Listed by no group now (by the replica that signed the token
		// once), or failed since it left: it may still be finishing its
		// queries (a graceful shutdown unlists first), so the cancel is
		// tried, and only a refused connection says nothing is left.
		g.forward(w, r, "followup", base+rest+queryPart(r), base, id, rc, true)
		return
	}
	if state == memberUnknown || state == memberGone {
		g.followupFailed(w, r, "followup", restURL.Path, http.StatusGone, errCoordinatorGone, id,
			fmt.Sprintf("zkpresto gateway: query %s ran on coordinator %s, which is gone", id, hostOf(base)))
		return
	}
	if strings.HasPrefix(restURL.Path, "/ui/") {
		// The coordinator's own web UI: the browser goes there itself, at
		// the address the registration gives for it.
		g.stats.add("followup", http.StatusFound)
		http.Redirect(w, r, g.webUIOf(r.Context(), base)+rest+queryPart(r), http.StatusFound)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodDelete:
	default:
		g.stats.add("followup", http.StatusMethodNotAllowed)
		writeError(w, http.StatusMethodNotAllowed, errGatewayName, id, "zkpresto gateway: "+r.Method+" is not a follow-up request")
		return
	}
	g.forward(w, r, "followup", base+rest+queryPart(r), base, id, rc, state == memberDeparted)
}

// forward sends r's method to target on the coordinator at base, reached
// through rc (a GET is
// retried there on transport errors; a redirect is an error, except for a
// spooled segment's download, whose redirect goes to the client) and
// relays the answer. A failure is the coordinator's: counted against it,
// and, for a coordinator that left discovery (departed), the end of it:
// its tokens get 410 from then on.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, kind, target, base, id string, rc reach, departed bool) {
	out, err := http.NewRequestWithContext(withFlavour(r.Context(), rc.flavour), r.Method, target, nil)
	if err != nil {
		g.stats.add(kind, http.StatusBadRequest)
		writeError(w, http.StatusBadRequest, errGatewayName, id, "zkpresto gateway: "+err.Error())
		return
	}
	out.Header = g.outboundHeader(r)
	var resp *http.Response
	if spooled(out.URL.Path) {
		// A segment download may be redirected to object storage (Trino's
		// coordinator_storage_redirect): the client follows that itself.
		// Never a statement's request, so never one sent twice.
		resp, err = rc.transport.RoundTrip(out)
	} else {
		var e pool.Exchange
		resp, err = pool.FollowUp(rc.transport, out, &e, nil)
	}
	if err != nil {
		if r.Context().Err() != nil {
			panic(http.ErrAbortHandler) // the client went away: no empty 200
		}
		var re *wire.RequestError
		if errors.As(err, &re) {
			g.stats.add(kind, http.StatusBadRequest)
			writeError(w, http.StatusBadRequest, errGatewayName, id, "zkpresto gateway: "+re.Error())
			return
		}
		g.reportFailure(r.Context(), base, err)
		if r.Method == http.MethodDelete && connectionRefused(err) {
			// A coordinator that refuses connections has no process
			// listening: the query is gone with it.
			if departed {
				g.markGone(base)
			}
			g.queryGoneWithItsCoordinator(w, kind, base, id)
			return
		}
		if departed {
			g.markGone(base)
			g.followupFailed(w, r, kind, out.URL.Path, http.StatusGone, errCoordinatorGone, id,
				fmt.Sprintf("zkpresto gateway: query %s ran on coordinator %s, which left and no longer answers", id, hostOf(base)))
			return
		}
		g.followupFailed(w, r, kind, out.URL.Path, http.StatusInternalServerError, errStatementFailure, id,
			fmt.Sprintf("zkpresto gateway: coordinator %s failed for query %s: %v", hostOf(base), id, err))
		return
	}
	switch {
	case r.Method == http.MethodGet:
		g.watchPage(resp, id)
	case r.Method == http.MethodDelete && resp.StatusCode/100 == 2:
		g.recent.end(id, queryEnd{outcome: outcomeCancelled, at: time.Now()})
	}
	written, err := g.relay(w, r, resp, base, id)
	switch {
	case err == nil:
		g.stats.add(kind, resp.StatusCode)
	case r.Context().Err() != nil:
		panic(http.ErrAbortHandler) // the client went away
	case !written:
		// The coordinator's answer broke (cut, or not JSON) before any of
		// it reached the client, which gets an error instead.
		g.reportFailure(r.Context(), base, err)
		unsent(w)
		g.followupFailed(w, r, kind, out.URL.Path, http.StatusInternalServerError, errStatementFailure, id,
			fmt.Sprintf("zkpresto gateway: coordinator %s sent a broken answer for query %s: %v", hostOf(base), id, err))
	default:
		g.reportFailure(r.Context(), base, err)
		g.stats.add(kind, resp.StatusCode)
		g.log.Warn("relaying an answer failed; cutting the client's connection", "node", hostOf(base), "query", id, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// followupFailed answers a follow-up request the gateway could not relay,
// counted as status: the GET of a statement's page (path, the
// coordinator's) gets the query's last page, failed (writeFailedPage),
// which every client shows as the query's failure; any other request
// status with a Presto error body.
func (g *Gateway) followupFailed(w http.ResponseWriter, r *http.Request, kind, path string, status int, name, id, msg string) {
	g.stats.add(kind, status)
	if r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/statement/") {
		writeFailedPage(w, id, g.publicBase(r)+r.URL.RequestURI(), gatewayErrorDetail(status, name, msg))
		return
	}
	writeError(w, status, name, id, msg)
}

// connectionRefused reports whether err is the coordinator's own address
// refusing the connection (not a proxy's): no process listens there any
// more. A query wrongly taken for gone so is abandoned by its server all
// the same once its client stops asking (query.client.timeout).
func connectionRefused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && errors.Is(err, syscall.ECONNREFUSED)
}

// queryGoneWithItsCoordinator answers a cancel of query id, whose
// coordinator at base is gone, as the servers answer the cancel of a
// query they no longer have: 204, since nothing is left running (clients
// such as trino-python-client raise on any other answer to a cancel).
func (g *Gateway) queryGoneWithItsCoordinator(w http.ResponseWriter, kind, base, id string) {
	g.log.Info("cancel of a query whose coordinator is gone: nothing left to cancel", "node", hostOf(base), "query", id)
	g.recent.end(id, queryEnd{outcome: outcomeCancelled, at: time.Now()})
	g.stats.add(kind, http.StatusNoContent)
	w.WriteHeader(http.StatusNoContent)
}

// webUIOf is the base URL of the web UI of the coordinator at base: what
// its registration says (discovery.MetadataWebUI), else base.
func (g *Gateway) webUIOf(ctx context.Context, base string) string {
	for _, rs := range g.snapshots(ctx, false) {
		for i := range rs.snap.Nodes {
			if n := &rs.snap.Nodes[i]; rs.reach.base(n) == base {
				if _, ok := n.Metadata[discovery.MetadataWebUI]; ok {
					return n.WebUI()
				}
				return base
			}
		}
	}
	return base
}

// tokenOpens reports whether a token bound to query id (empty for a
// spooled segment's) may open path on its coordinator: the protocol's
// URIs of that query, a spooled segment, or the query's page of the web UI;
// never a path with dot segments, which the coordinator would resolve
// elsewhere.
func tokenOpens(p, id string) bool {
	if p == "" || path.Clean(p) != p || strings.Contains(p, "//") {
		return false
	}
	if id == "" {
		return strings.HasPrefix(p, "/v1/spooled/")
	}
	return strings.HasPrefix(p, "/v1/statement/") || p == "/v1/query/"+id || strings.HasPrefix(p, "/ui/")
}

// queryPart is r's query string with its "?", or nothing.
func queryPart(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return "?" + r.URL.RawQuery
}

// hostOf is a base URL's host:port.
func hostOf(base string) string {
	if u, err := url.Parse(base); err == nil {
		return u.Host
	}
	return base
}
