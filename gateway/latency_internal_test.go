package gateway

import (
	"net/http"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/gateway/token"
)

func TestLatencyBucketsAreCumulative(t *testing.T) {
	g := &Gateway{}
	g.latency.observe("submit", 3*time.Millisecond)
	g.latency.observe("submit", 700*time.Millisecond)
	g.latency.observe("submit", time.Minute)
	got := g.RequestLatencies()
	if len(got) != 1 || got[0].Count != 3 {
		t.Fatalf("got %+v", got)
	}
	b := got[0].Buckets
	// .005 holds the first, 1 the first two, 10 still two: a minute is
	// over every bound.
	if b[0] != 1 || b[7] != 2 || b[len(b)-1] != 2 {
		t.Errorf("buckets %v", b)
	}
}

func TestRequestKindsAreTheCountersKinds(t *testing.T) {
	for _, tc := range []struct{ method, path, want string }{
		{http.MethodPost, "/v1/statement", "submit"},
		{http.MethodHead, "/v1/statement", "info"},
		{http.MethodGet, token.PathPrefix + "abc/v1/statement/x", "followup"},
		{http.MethodDelete, "/v1/query/q1", "query"},
		{http.MethodGet, "/v1/info", "info"},
		{http.MethodGet, "/v1/info/state", "info"},
		{http.MethodGet, "/elsewhere", "other"},
		{http.MethodGet, "/oauth2/callback", "oauth2"},
		{http.MethodGet, token.PathPrefix + "abc/oauth2/token/x", "oauth2"},
		{http.MethodGet, token.PathPrefix + "abc/oauth2/token/initiate/x", "oauth2"},
		{http.MethodGet, "/oauth2/token/x", "other"},
	} {
		r, _ := http.NewRequest(tc.method, "http://gw"+tc.path, nil)
		if got := requestKind(r); got != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.method, tc.path, got, tc.want)
		}
	}
}
