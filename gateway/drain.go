package gateway

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultDrainQuiet is how long a draining replica waits, with no request
// in flight and none coming, before it takes the queries still awaiting
// a page as carried on elsewhere (see Server.Drain).
const DefaultDrainQuiet = time.Second

// serving counts the requests in flight and when the last one began or
// ended: what a drain waits for.
type serving struct {
	// since is when the gateway started: last counts from it on the
	// monotonic clock, which a step of the wall clock does not move.
	since    time.Time
	inFlight atomic.Int64
	last     atomic.Int64 // nanoseconds after since
	// cut counts the requests a drain cut because its time ran out.
	cut atomic.Uint64
}

func (s *serving) begin(now time.Time) {
	s.inFlight.Add(1)
	s.last.Store(int64(now.Sub(s.since)))
}

// end records a request's end. The time goes first: a drain that sees
// nothing in flight then sees when the last request ended.
func (s *serving) end(now time.Time) {
	s.last.Store(int64(now.Sub(s.since)))
	s.inFlight.Add(-1)
}

// quietFor reports whether no request has been in flight for d at now.
func (s *serving) quietFor(d time.Duration, now time.Time) bool {
	return s.inFlight.Load() == 0 && now.Sub(s.since)-time.Duration(s.last.Load()) >= d
}

// drainPoll is how often a drain looks at what is left.
const drainPoll = 20 * time.Millisecond

// Drain ends srv, which serves g, as a replica of a gateway deployment
// should end: g refuses new statements (see Gateway.Drain), and srv goes
// on serving until nothing it is responsible for is left, then stops.
// What it is responsible for is its own requests in flight (a page being
// relayed, a cancel); the queries whose answers it relayed are not its
// own, since any replica serves their next pages. So the drain ends when
// no request is in flight and either no query whose answer it relayed
// awaits its next page, or no request has come for quiet (zero:
// DefaultDrainQuiet): the clients of those queries reach another replica
// now (their load balancer took this one out when its health check
// failed), or are gone. A lone replica whose clients poll keeps serving
// them to their last page.
//
// A drain that ends so cuts nothing and returns nil: srv stops listening
// and waits for a request that came in the meantime. When ctx ends first,
// srv is closed and the drain returns ctx's error; the requests g was
// then serving are cut, and Drain returns how many (Gateway.DrainCuts
// counts them). Connections cut outside g (a head still being read, an
// operator page) are not among them.
func (srv *Server) Drain(ctx context.Context, g *Gateway, quiet time.Duration) (cut int, err error) {
	if quiet <= 0 {
		quiet = DefaultDrainQuiet
	}
	g.Drain()
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
wait:
	for !g.drained(quiet, time.Now()) {
		select {
		case <-tick.C:
		case <-ctx.Done():
			break wait
		}
	}
	if err := srv.Shutdown(ctx); err == nil {
		return 0, nil
	}
	n := int(max(g.serving.inFlight.Load(), 0))
	g.serving.cut.Add(uint64(n))
	_ = srv.Close()
	return n, ctx.Err()
}

// drained reports whether a draining replica has nothing of its own left.
func (g *Gateway) drained(quiet time.Duration, now time.Time) bool {
	if !g.serving.quietFor(0, now) {
		return false
	}
	return g.running.empty() || g.serving.quietFor(quiet, now)
}

// InFlight returns how many requests g is serving now.
func (g *Gateway) InFlight() int64 { return g.serving.inFlight.Load() }

// DrainCuts returns how many requests in flight drains of this gateway
// cut because their time ran out.
func (g *Gateway) DrainCuts() uint64 { return g.serving.cut.Load() }

// running is the set of queries this gateway relayed an answer of that
// names a next page: those whose clients will come back for it. A drain
// waits for it to empty.
type running struct {
	mu sync.Mutex
	// ids holds when an answer last named each query (unix seconds): a
	// query not asked for within queryAge is abandoned on its server.
	ids     map[string]int64
	swept   int64 // when ids was last swept of those, unix seconds
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
	now := time.Now().Unix()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ids == nil {
		q.ids = map[string]int64{}
	}
	if now-q.swept >= int64(queryAge/time.Second)/10 {
		q.sweep(now)
	}
	switch {
	case next != "":
		if _, ok := q.ids[next]; ok {
			q.ids[next] = now
		} else if len(q.ids) < rememberedQueries {
			q.ids[strings.Clone(next)] = now // not a slice of the answer
		}
	case id != "" && (status < 300 || status == http.StatusNotFound || status == http.StatusGone):
		// The last page, a cancel, or a query the coordinator no longer
		// has; a refusal to retry (503, 429) leaves the query running.
		delete(q.ids, id)
	}
	q.wakeIfEmpty()
}

// sweep forgets the queries not asked for within queryAge of now (unix
// seconds), which their servers have abandoned, and returns when the
// oldest of those left will be (0 when none is left). q.mu is held.
func (q *running) sweep(now int64) (next int64) {
	q.swept = now
	age := int64(queryAge / time.Second)
	for id, seen := range q.ids {
		switch {
		case now-seen >= age:
			delete(q.ids, id)
		case next == 0 || seen+age < next:
			next = seen + age
		}
	}
	return next
}

// wakeIfEmpty releases the waiters once no query is left. q.mu is held.
func (q *running) wakeIfEmpty() {
	if len(q.ids) == 0 {
		for _, w := range q.waiters {
			close(w)
		}
		q.waiters = nil
	}
}

// empty reports whether no query awaits its next page.
func (q *running) empty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ids) == 0
}

// wait returns nil once no query awaits its next page, or ctx's error. A
// query whose client has not asked for it within queryAge is abandoned on
// its server (query.client.timeout), so it is not waited for: the set is
// swept when the wait starts and whenever its oldest query reaches that
// age, however quiet the gateway is.
//
// A wait holds one waiter however many sweeps it makes, and takes it back
// when ctx ends, so that waits polled with short contexts leave nothing.
func (q *running) wait(ctx context.Context) error {
	var w chan struct{}
	for {
		q.mu.Lock()
		next := q.sweep(time.Now().Unix())
		if len(q.ids) == 0 {
			q.wakeIfEmpty()
			q.mu.Unlock()
			return nil
		}
		if w == nil {
			w = make(chan struct{})
			q.waiters = append(q.waiters, w)
		}
		q.mu.Unlock()
		aged := time.NewTimer(time.Until(time.Unix(next, 0)))
		select {
		case <-w:
			aged.Stop()
			return nil
		case <-aged.C:
		case <-ctx.Done():
			aged.Stop()
			q.unwait(w)
			return ctx.Err()
		}
	}
}

// unwait takes back the waiter w, unless it was released already.
func (q *running) unwait(w chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			return
		}
	}
}

// WaitQueries returns once no query whose answer this gateway relayed
// awaits its next page (each finished, was cancelled, or is unknown to its
// coordinator), or when ctx ends, with ctx's error. After Drain no new
// query starts, so a server that keeps serving until WaitQueries returns
// loses none of them; a query whose client abandoned it without
// cancelling it is waited for until its server abandons it too (its client
// timeout, 5 minutes by default), or until ctx ends.
func (g *Gateway) WaitQueries(ctx context.Context) error { return g.running.wait(ctx) }
