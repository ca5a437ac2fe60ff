package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/internal/verdict"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/routing"
)

// DefaultNoCoordinatorGrace is Config.NoCoordinatorGrace's default: long
// enough for a coordinator's restart or a ZooKeeper blip, short enough
// that a user waiting on a client that retries 503 learns why.
const DefaultNoCoordinatorGrace = 5 * time.Second

// Presto's NO_NODES_AVAILABLE (StandardErrorCode.java of presto-common:
// 0x0001_0005, an internal error), which every client shows as a query
// failure.
const (
	noNodesErrorCode = 0x0001_0005
	noNodesErrorType = "INTERNAL_ERROR"
)

// outages remembers, per group, since when no coordinator has taken a
// statement: within the grace a statement gets a 503, which clients send
// again, after it a failed query, which they show. It is safe for
// concurrent use.
type outages struct {
	grace time.Duration // negative: none
	seq   atomic.Uint64 // for the failed queries' ids

	mu    sync.Mutex
	since map[string]time.Time // by group name
}

func newOutages(grace time.Duration) *outages {
	if grace == 0 {
		grace = DefaultNoCoordinatorGrace
	}
	return &outages{grace: grace, since: map[string]time.Time{}}
}

// failing records that group had no coordinator for a statement now and
// reports whether the grace is over.
func (o *outages) failing(group string, now time.Time) (since time.Time, over bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	since, ok := o.since[group]
	if !ok {
		since = now
		o.since[group] = now
	}
	return since, o.grace < 0 || now.Sub(since) >= o.grace
}

// ended records that a coordinator of group took a statement.
func (o *outages) ended(group string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.since, group)
}

// noCoordinator answers a statement no coordinator of group took (none
// listed, or every one tried refused it before it had it) and reports
// whether it did: within the grace it leaves the answer to submitFailed's
// 503; after, it answers a query that failed with NO_NODES_AVAILABLE,
// naming the group and where it looked.
func (g *Gateway) noCoordinator(w http.ResponseWriter, r *http.Request, group *Group, err error) bool {
	var se *routing.StatementError
	var re *wire.RequestError
	var hr *verdict.HeadRefusedError
	if errors.As(err, &se) || errors.As(err, &re) || errors.As(err, &hr) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // it may have run, the request was bad or its head too large, or the client left: no outage
	}
	now := time.Now()
	since, over := g.outages.failing(group.Name, now)
	if !over {
		return false
	}
	where := group.Router.Stats().Discovery.Source
	lasting := ""
	if d := now.Sub(since); d >= time.Second {
		lasting = fmt.Sprintf(" for %s", d.Round(time.Second))
	}
	msg := fmt.Sprintf("zkpresto gateway: no coordinator of group %q takes statements%s (looking in %s): %s",
		group.Name, lasting, where, err)
	id := g.newFailedQueryID(now)
	return g.answerFailedQuery(w, r, id, msg, false)
}

// answerFailedQuery answers a submission with a query that fails at its
// first GET with msg, and reports whether it could (false when the URI
// could not be signed).
func (g *Gateway) answerFailedQuery(w http.ResponseWriter, r *http.Request, id, msg string, mayHaveRun bool) bool {
	next, err := g.failedQueryURI(r, id, msg, mayHaveRun)
	if err != nil {
		return false
	}
	// As a real coordinator answers a submission: queued, with the
	// failure one GET later (QueuedStatementResource.java). trino-client
	// (npm) shows only the pages after the POST's, and would show a
	// failure in the POST's answer to no one.
	g.stats.add("submit", http.StatusOK)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	// The infoUri, which clients require of a submission's answer
	// (presto-client fails without one), is the failure itself: there is
	// no coordinator's web UI to send anyone to.
	_ = json.NewEncoder(w).Encode(queuedQuery{ID: id, InfoURI: next, NextURI: next, Stats: errorStats{State: "QUEUED"}})
	return true
}

// newFailedQueryID is the id of a query the gateway itself fails.
func (g *Gateway) newFailedQueryID(now time.Time) string {
	return fmt.Sprintf("%s_%05d_zkgw0", now.UTC().Format("20060102_150405"), g.outages.seq.Add(1)%100000)
}

// queuedQuery is a submission's answer before its query has run.
type queuedQuery struct {
	ID      string     `json:"id"`
	InfoURI string     `json:"infoUri"`
	NextURI string     `json:"nextUri"`
	Stats   errorStats `json:"stats"`
}

// failedQueryPrefix is where the gateway's own failed queries are read.
// The URI carries the failure, signed with the routing keys, so that any
// replica answers it, as for every other URI the gateway hands out.
const failedQueryPrefix = "/v1/statement/zkgw/failed/"

// failedQuerySigner is the "coordinator" a failed query's token names: no
// coordinator's base URL can be spelt so.
const failedQuerySigner = "zkpresto-gateway:failed-query"

// maxFailedQueryMessage bounds the message a failed query's URI carries,
// so that the URI stays within the request lines proxies accept (nginx's
// large_client_header_buffers take 8 KiB by default) however many
// coordinators the message lists.
const maxFailedQueryMessage = 2048

// failedQueryURI is the URI at which the failed query id, with msg, is
// read: a NO_NODES_AVAILABLE failure, or with mayHaveRun one of a statement
// whose coordinator failed after it may have reached it.
func (g *Gateway) failedQueryURI(r *http.Request, id, msg string, mayHaveRun bool) (string, error) {
	if len(msg) > maxFailedQueryMessage {
		msg = cutText(msg, maxFailedQueryMessage-len(" …"), " …")
	}
	encoded := base64.RawURLEncoding.EncodeToString([]byte(msg))
	kind := ""
	if mayHaveRun {
		kind = failedMayHaveRun
	}
	tok, err := g.keys.Sign(failedQuerySigner, failedQuerySigned(id, kind, encoded))
	if err != nil {
		return "", err
	}
	uri := g.publicBase(r) + failedQueryPrefix + id + "/" + tok + "?m=" + encoded
	if kind != "" {
		uri += "&k=" + kind
	}
	return uri, nil
}

// failedMayHaveRun is the kind of a failed query whose statement may have
// run (the k parameter of its URI); without one it is NO_NODES_AVAILABLE.
const failedMayHaveRun = "r"

// failedQuerySigned is what a failed query's token signs. The kind is
// signed too, but left out when empty so that the URIs of an earlier
// version still verify.
func failedQuerySigned(id, kind, encoded string) string {
	if kind == "" {
		return id + "\n" + encoded
	}
	return id + "\n" + kind + "\n" + encoded
}

// serveFailedQuery answers a failed query's URI: GET (or HEAD) gives the
// final page with the failure, DELETE has nothing left to cancel (204, as
// a coordinator answers a DELETE). A URI whose token does not verify is
// 404: the gateway answers only what it signed.
func (g *Gateway) serveFailedQuery(w http.ResponseWriter, r *http.Request) {
	id, tok, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, failedQueryPrefix), "/")
	encoded, kind := r.URL.Query().Get("m"), r.URL.Query().Get("k")
	signer, err := g.keys.Verify(tok, failedQuerySigned(id, kind, encoded))
	raw, decodeErr := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil || signer != failedQuerySigner || decodeErr != nil {
		g.stats.add("followup", http.StatusNotFound)
		writeError(w, http.StatusNotFound, errGatewayName, "", "zkpresto gateway: no such query: "+id)
		return
	}
	switch r.Method {
	case http.MethodDelete:
		g.stats.add("followup", http.StatusNoContent)
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet, http.MethodHead:
	default:
		g.stats.add("followup", http.StatusMethodNotAllowed)
		writeError(w, http.StatusMethodNotAllowed, errGatewayName, id, "zkpresto gateway: "+r.Method+" on a query's URI")
		return
	}
	msg := string(raw)
	g.stats.add("followup", http.StatusOK)
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		return
	}
	detail := errorDetail{
		Message:     msg,
		ErrorCode:   noNodesErrorCode,
		ErrorName:   errNoCoordinator,
		ErrorType:   noNodesErrorType,
		FailureInfo: gatewayFailureInfo(errNoCoordinator, msg),
	}
	if kind == failedMayHaveRun {
		detail = gatewayErrorDetail(http.StatusInternalServerError, errStatementFailure, msg)
	}
	writeFailedPage(w, id, g.publicBase(r)+r.URL.RequestURI(), detail)
}
