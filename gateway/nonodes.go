package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/internal/protocol"
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
func (g *Gateway) noCoordinator(w http.ResponseWriter, group *Group, err error) bool {
	var se *routing.StatementError
	var re *protocol.RequestError
	if errors.As(err, &se) || errors.As(err, &re) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // it may have run, the request was bad, or the client left: no outage
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
		group.Name, lasting, where, strings.TrimPrefix(err.Error(), "zkpresto: "))
	id := fmt.Sprintf("%s_%05d_zkgw0", now.UTC().Format("20060102_150405"), g.outages.seq.Add(1)%100000)
	body := prestoError{
		ID:    id,
		Stats: errorStats{State: "FAILED"},
		Error: errorDetail{
			Message:     msg,
			ErrorCode:   noNodesErrorCode,
			ErrorName:   errNoCoordinator,
			ErrorType:   noNodesErrorType,
			FailureInfo: failureInfo{Type: "com.zkpresto.gateway." + errNoCoordinator, Message: msg},
		},
	}
	g.stats.add("submit", http.StatusOK)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(body)
	return true
}
