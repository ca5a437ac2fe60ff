package gateway

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// serveQuery routes GET and DELETE /v1/query/{id} (how trino-go-client, the
// Node clients and kill_query cancel): to the coordinator this replica saw
// run the query, else to the one of the listed coordinators that knows it,
// asked all at once under one deadline with the client's credentials.
func (g *Gateway) serveQuery(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/v1/query/")
	if id == "" || strings.Contains(id, "/") || (r.Method != http.MethodGet && r.Method != http.MethodDelete) {
		g.stats.add("query", http.StatusNotFound)
		writeError(w, http.StatusNotFound, errQueryNotFound, id, "zkpresto gateway: no such resource: "+r.Method+" "+r.URL.Path)
		return
	}
	base, ok := g.queries.lookup(id)
	if !ok {
		base, ok = g.findQuery(r, id)
	}
	if !ok {
		// Answered as the servers answer a query they do not know, which
		// includes one submitted and not yet fetched (they dispatch it at the
		// first GET of its nextUri): DELETE is a no-op 204, GET 410 (trino:
		// server/QueryResource.java; prestodb: the same). Neither is a failure
		// of any coordinator.
		if r.Method == http.MethodDelete {
			g.stats.add("query", http.StatusNoContent)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		g.stats.add("query", http.StatusGone)
		writeError(w, http.StatusGone, errQueryNotFound, id, "zkpresto gateway: no coordinator knows query "+id+" (a query is known once its first nextUri was fetched)")
		return
	}
	state, rc := g.stateOf(r.Context(), base)
	g.forward(w, r, "query", base+r.URL.EscapedPath(), base, id, rc, state == memberDeparted)
}

// findQuery asks every coordinator any group lists for query id, at once.
func (g *Gateway) findQuery(r *http.Request, id string) (string, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), queryFanOutTimeout)
	defer cancel()
	// Groups not open yet are opened, but for half the time at most: a
	// ZooKeeper that does not answer must leave time to ask the others.
	opening, opened := context.WithTimeout(ctx, queryFanOutTimeout/2)
	snaps := g.snapshots(opening, true)
	opened()
	var bases []string
	reaches := map[string]reach{}
	for _, rs := range snaps {
		for i := range rs.snap.Nodes {
			if b := rs.reach.base(&rs.snap.Nodes[i]); !slices.Contains(bases, b) {
				bases = append(bases, b)
				reaches[b] = rs.reach
			}
		}
	}
	if len(bases) == 0 {
		return "", false
	}
	found := make(chan string, len(bases))
	header := g.outboundHeader(r)
	for _, base := range bases {
		go func() {
			rc := reaches[base]
			req, err := http.NewRequestWithContext(withFlavour(ctx, rc.flavour), http.MethodGet, base+"/v1/query/"+url.PathEscape(id), nil)
			if err != nil {
				found <- ""
				return
			}
			req.Header = header.Clone()
			resp, err := rc.transport.RoundTrip(req)
			if err != nil {
				found <- ""
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				found <- base
				return
			}
			found <- ""
		}()
	}
	for range bases {
		select {
		case base := <-found:
			if base != "" {
				g.queries.remember(id, base)
				return base, true
			}
		case <-ctx.Done():
			return "", false
		}
	}
	return "", false
}

// queryTable remembers which coordinator runs a query, from the answers
// this replica relayed, for /v1/query/{id}; the oldest entries go first.
type queryTable struct {
	mu    sync.Mutex
	limit int
	byID  map[string]string
	order []string
	next  int
}

func (q *queryTable) init(limit int) {
	q.limit = limit
	q.byID = map[string]string{}
}

func (q *queryTable) remember(id, base string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.byID[id]; ok {
		q.byID[id] = base
		return
	}
	if len(q.order) < q.limit {
		q.order = append(q.order, id)
	} else {
		delete(q.byID, q.order[q.next])
		q.order[q.next] = id
		q.next = (q.next + 1) % q.limit
	}
	q.byID[id] = base
}

func (q *queryTable) lookup(id string) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	base, ok := q.byID[id]
	return base, ok
}
