package gateway

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
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
//
// A Kerberos client's Negotiate token is good for one request, the
// client's own, which goes to the coordinator found: the search goes
// without it (a coordinator that saw it in the search would refuse the
// client's request as a replay). A coordinator that authenticates every
// request refuses such a search (401): when it is the only one not to say
// it does not know the query, the client's request goes there, and it
// answers with the token.
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
	type asked struct {
		base   string
		status int // 0 when the request failed
	}
	found := make(chan asked, len(bases))
	header := g.outboundHeader(r)
	negotiating := negotiates(header)
	if negotiating {
		delete(header, "Authorization")
	}
	for _, base := range bases {
		go func() {
			rc := reaches[base]
			req, err := http.NewRequestWithContext(withFlavour(ctx, rc.flavour), http.MethodGet, base+"/v1/query/"+url.PathEscape(id), nil)
			if err != nil {
				found <- asked{base: base}
				return
			}
			req.Header = header.Clone()
			resp, err := rc.transport.RoundTrip(req)
			if err != nil {
				found <- asked{base: base}
				return
			}
			resp.Body.Close()
			found <- asked{base: base, status: resp.StatusCode}
		}()
	}
	var refused []string // answered 401 to a search without the client's token
	unsure := false      // a coordinator failed or answered something else
	for range bases {
		select {
		case a := <-found:
			switch {
			case a.status == http.StatusOK:
				g.queries.remember(id, a.base)
				return a.base, true
			case negotiating && a.status == http.StatusUnauthorized:
				refused = append(refused, a.base)
			case a.status != http.StatusGone && a.status != http.StatusNotFound:
				unsure = true
			}
		case <-ctx.Done():
			return "", false
		}
	}
	if len(refused) == 1 && !unsure {
		return refused[0], true
	}
	return "", false
}

// queryAge bounds how long the gateway remembers a query after the last
// answer that named it: the servers abandon a query whose client has not
// asked for it within their client timeout (trino and prestodb:
// query.client.timeout, 5 minutes by default), so nothing is left to route
// to after that.
const queryAge = 5 * time.Minute

// queryTable remembers which coordinator runs a query, from the answers
// this replica relayed, for /v1/query/{id}: at most limit queries, none
// longer than queryAge after the last answer that named it. Entries are
// kept in a ring in the order they came, and the oldest goes first, but
// one named again since it came or since it was last passed over goes to
// the back instead (a second chance, as a CLOCK cache does), so that a
// query whose client still polls is not lost to the count while idle
// ones go.
type queryTable struct {
	mu    sync.Mutex
	limit int
	byID  map[string]queryEntry
	ring  []string // ids, oldest first from head
	head  int
	n     int
}

// queryEntry is what the routing needs of a query: its coordinator, and
// when an answer last named it (unix seconds); named says an answer named
// it again since the ring last passed it over.
type queryEntry struct {
	base  string
	seen  int64
	named bool
}

func (q *queryTable) init(limit int) {
	q.limit = limit
	q.byID = map[string]queryEntry{}
	q.ring, q.head, q.n = nil, 0, 0
}

// sweepPerEntry is how many of the oldest entries each new one looks at,
// to let those past queryAge go: more than one, so the table shrinks when
// statements come more slowly than before.
const sweepPerEntry = 2

func (q *queryTable) remember(id, base string) { q.rememberAt(id, base, time.Now()) }

func (q *queryTable) rememberAt(id, base string, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.byID[id]; ok {
		if e.base != base {
			e.base = strings.Clone(base)
		}
		e.seen, e.named = now.Unix(), true
		q.byID[id] = e
		return
	}
	// The oldest entries: those past queryAge go, those named again go to
	// the back; the first that is neither stops the sweep.
sweep:
	for range sweepPerEntry {
		if q.n == 0 {
			break
		}
		oldest := q.ring[q.head]
		e := q.byID[oldest]
		switch {
		case now.Unix()-e.seen >= int64(queryAge/time.Second):
			q.pop()
			delete(q.byID, oldest)
		case e.named:
			q.pop()
			e.named = false
			q.byID[oldest] = e
			q.push(oldest)
		default:
			break sweep
		}
	}
	if q.n == q.limit {
		// Full of queries still asked for: the oldest not named again
		// since it was last passed over goes.
		for range sweepPerEntry {
			oldest := q.ring[q.head]
			e := q.byID[oldest]
			if !e.named {
				break
			}
			q.pop()
			e.named = false
			q.byID[oldest] = e
			q.push(oldest)
		}
		delete(q.byID, q.ring[q.head])
		q.pop()
	}
	// Copies: the id and base may be slices of a whole answer, which the
	// table must not keep alive.
	id = strings.Clone(id)
	q.push(id)
	q.byID[id] = queryEntry{base: strings.Clone(base), seen: now.Unix()}
}

func (q *queryTable) pop() {
	q.ring[q.head] = ""
	q.head = (q.head + 1) % len(q.ring)
	q.n--
}

// push adds id at the back, growing the ring up to limit.
func (q *queryTable) push(id string) {
	if q.n == len(q.ring) {
		grown := make([]string, min(max(2*len(q.ring), 16), q.limit))
		for i := range q.n {
			grown[i] = q.ring[(q.head+i)%len(q.ring)]
		}
		q.ring, q.head = grown, 0
	}
	q.ring[(q.head+q.n)%len(q.ring)] = id
	q.n++
}

func (q *queryTable) lookup(id string) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.byID[id]
	if !ok || time.Since(time.Unix(e.seen, 0)) >= queryAge {
		return "", false
	}
	return e.base, true
}
