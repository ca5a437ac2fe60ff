package gateway

import (
	"context"
	"net/http"
	"net/url"
	"sync"
)

// running is the set of queries this gateway relayed an answer of that
// names a next page: those whose clients will come back for it. A drain
// waits for it to empty.
type running struct {
	mu      sync.Mutex
	ids     map[string]struct{}
	waiters []chan struct{}
}

// answered records a relayed answer to a request about query id (empty for
// a submission) with status, whose nextUri (empty when none) names the
// query's next page.
func (q *running) answered(id string, status int, nextURI string) {
	next := ""
	if nextURI != "" {
		if u, err := url.Parse(nextURI); err == nil {
			next = queryIDOf(u.Path, u.RawQuery)
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ids == nil {
		q.ids = map[string]struct{}{}
	}
	switch {
	case next != "":
		if len(q.ids) < rememberedQueries {
			q.ids[next] = struct{}{}
		}
	case id != "" && (status < 300 || status == http.StatusNotFound || status == http.StatusGone):
		// The last page, a cancel, or a query the coordinator no longer
		// has; a refusal to retry (503, 429) leaves the query running.
		delete(q.ids, id)
	}
	if len(q.ids) == 0 {
		for _, w := range q.waiters {
			close(w)
		}
		q.waiters = nil
	}
}

// wait returns nil once no query awaits its next page, or ctx's error.
func (q *running) wait(ctx context.Context) error {
	q.mu.Lock()
	if len(q.ids) == 0 {
		q.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	q.waiters = append(q.waiters, w)
	q.mu.Unlock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitQueries returns once no query whose answer this gateway relayed
// awaits its next page (each finished, was cancelled, or is unknown to its
// coordinator), or when ctx ends, with ctx's error. After Drain no new
// query starts, so a server that keeps serving until WaitQueries returns
// loses none of them; a client that abandoned its query without
// cancelling it keeps it waiting until ctx ends.
func (g *Gateway) WaitQueries(ctx context.Context) error { return g.running.wait(ctx) }
