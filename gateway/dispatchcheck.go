package gateway

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
)

// dispatchChecks decides, per coordinator, whether the gateway makes a
// submission's first GET itself (dispatchFirst) or leaves it to the
// client, as lazy submission means it: a query whose POST answer the
// client never read is never dispatched, and one it cancels before its
// first GET never starts.
//
// The gateway's own GET is kept only where its answer can change where
// the statement goes, which is where the query may fail at dispatch
// without having run:
//
//   - a coordinator this replica has not seen dispatch a statement since it
//     was listed (a new registration) or since it last failed anything (a
//     failure, an ejection or a failed health check: a restart, a
//     readmission): it may be starting, or without workers;
//   - a coordinator whose published load says statements wait for a slot
//     (queued, or as many running as its slots): its queue may be full.
//
// Elsewhere the POST's answer goes to the client as it came.
type dispatchChecks struct {
	mu     sync.Mutex
	proven map[string]proof // base URL → the proof it dispatches
	// always makes the old rule: every submission's first GET is the
	// gateway's; for the benchmark that compares the two.
	always bool
}

// proof is a coordinator seen dispatching a statement: which registration
// it was, and when.
type proof struct {
	id string
	at time.Time
}

// needed reports whether the gateway makes the first GET of a statement
// sent to node at base, whose health tracker is t.
func (d *dispatchChecks) needed(base string, node *discovery.Node, t *health.Tracker) bool {
	if d.always {
		return true
	}
	if l := node.Load; l.Queued > 0 || (l.Slots > 0 && l.Running >= l.Slots) {
		return true
	}
	d.mu.Lock()
	p, ok := d.proven[base]
	d.mu.Unlock()
	if !ok {
		return true
	}
	st := t.State(node.Addr)
	if p.id == node.ID && !st.Ejected && !st.Unhealthy && !st.LastFailure.After(p.at) {
		return false
	}
	d.forget(base)
	return true
}

// prove records that the coordinator node at base dispatched a statement
// sent to it at sent (a failure reported after that unproves it).
func (d *dispatchChecks) prove(base string, node *discovery.Node, sent time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proven == nil {
		d.proven = map[string]proof{}
	}
	d.proven[base] = proof{id: node.ID, at: sent}
}

// forget drops base's proof: its next statement is checked again.
func (d *dispatchChecks) forget(base string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.proven, base)
}

// getHeader is the part of a submission's header a client sends on a GET
// of a nextUri (trino-client's StatementClientV1 and PrestoDB's: the user,
// the original user, the credentials, the user agent), with the
// forwarding headers the coordinator writes its links from. Neither the
// session nor prepared statements, which may be megabytes. Nor a
// Negotiate token (Kerberos SPNEGO): it is good for one request, the one
// the client made it for, and a coordinator that authenticates every
// request (PrestoDB's AuthenticationFilter) refuses it again as a replay; the gateway's own requests go without it (see
// negotiates).
func getHeader(h http.Header) http.Header {
	out := make(http.Header, 8)
	for k, v := range h {
		switch {
		case k == "Authorization" && negotiates(h):
			continue
		case k == "Authorization", k == "User-Agent", k == "Accept-Encoding", k == "Cookie", k == "Forwarded",
			strings.HasPrefix(k, "X-Forwarded-"), k == "X-Presto-Prefix-Url":
		case (strings.HasPrefix(k, "X-Presto-") || strings.HasPrefix(k, "X-Trino-")) && strings.HasSuffix(k, "-User"):
			// X-*-User and X-*-Original-User.
		default:
			continue
		}
		out[k] = v
	}
	return out
}

// negotiates reports whether h carries a client's Negotiate (SPNEGO)
// token in Authorization. Such a token authenticates one request: the
// gateway never makes a request of its own with it, not the first GET of
// a statement (the client makes it, with a fresh token) nor the cancel of
// a client that left (sent without it, refused by a coordinator that
// authenticates; the query is then abandoned when nobody polls it).
func negotiates(h http.Header) bool {
	for _, v := range h.Values("Authorization") {
		scheme, _, _ := strings.Cut(strings.TrimSpace(v), " ")
		if strings.EqualFold(scheme, "Negotiate") {
			return true
		}
	}
	return false
}
