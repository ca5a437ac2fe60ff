package gateway

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkpresto/zkpresto/internal/gateway/token"
)

// LatencyBounds are the upper bounds, in seconds, of the buckets request
// latencies are counted in: Prometheus' default buckets, which span what
// the gateway serves, from an info request (milliseconds) to a follow-up
// that long-polls a coordinator (about a second) or streams a big page.
var LatencyBounds = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// RequestLatency is how long the gateway took to serve the requests of one
// kind, as a histogram over LatencyBounds.
type RequestLatency struct {
	// Kind is submit, followup, query, info, oauth2 or other (RequestCount's kinds).
	Kind string `json:"kind"`
	// Count is the number of requests; Sum their latencies in seconds.
	Count uint64  `json:"count"`
	Sum   float64 `json:"sumSeconds"`
	// Buckets[i] counts the requests that took at most LatencyBounds[i]
	// (cumulative, as Prometheus' buckets are).
	Buckets []uint64 `json:"buckets"`
}

// latencies is the gateway's histograms, by kind. The zero value is ready.
type latencies struct {
	mu     sync.Mutex
	byKind map[string]*RequestLatency
}

func (l *latencies) observe(kind string, d time.Duration) {
	s := d.Seconds()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKind == nil {
		l.byKind = map[string]*RequestLatency{}
	}
	h := l.byKind[kind]
	if h == nil {
		h = &RequestLatency{Kind: kind, Buckets: make([]uint64, len(LatencyBounds))}
		l.byKind[kind] = h
	}
	h.Count++
	h.Sum += s
	for i, bound := range LatencyBounds {
		if s <= bound {
			h.Buckets[i]++
		}
	}
}

// requestKind is the kind a request is counted under: the kinds the
// handlers count their answers under (see counters).
func requestKind(r *http.Request) string {
	path := r.URL.Path
	switch {
	case path == OAuth2CallbackPath:
		return "oauth2"
	case strings.HasPrefix(path, token.PathPrefix):
		if _, rest, ok := token.Split(path); ok && isOAuth2TokenPath(rest) {
			return "oauth2"
		}
		return "followup"
	case strings.HasPrefix(path, failedQueryPrefix):
		return "followup"
	case path == "/v1/statement" && r.Method == http.MethodPost:
		return "submit"
	case strings.HasPrefix(path, "/v1/query/"):
		return "query"
	case path == "/v1/statement" && r.Method == http.MethodHead, path == "/v1/info", path == "/v1/info/state":
		return "info"
	}
	return "other"
}

// RequestLatencies returns the gateway's latency histograms so far, by
// kind in name order.
func (g *Gateway) RequestLatencies() []RequestLatency {
	g.latency.mu.Lock()
	defer g.latency.mu.Unlock()
	out := make([]RequestLatency, 0, len(g.latency.byKind))
	for _, h := range g.latency.byKind {
		c := *h
		c.Buckets = slices.Clone(h.Buckets)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b RequestLatency) int { return strings.Compare(a.Kind, b.Kind) })
	return out
}
