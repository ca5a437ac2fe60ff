package driver

import (
	"maps"
	"net/http"
	"testing"
)

// TestSessionReadsBothSpellingsAndSurvivesMalformedAnswers feeds a session
// the answers a hostile or confused coordinator could send: the other
// flavour's spelling, entries without "=", bad escapes, repeated pages.
func TestSessionReadsBothSpellingsAndSurvivesMalformedAnswers(t *testing.T) {
	cs := newClientSession(&Config{User: "alice", Catalog: "hive", Schema: "default", SessionProperties: map[string]string{"a": "1"}})
	answer := func(kv ...string) {
		h := make(http.Header)
		for i := 0; i+1 < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		cs.apply(h)
		cs.apply(h) // the next page repeats the change
	}
	answer("X-Trino-Set-Catalog", "tpch", "X-Presto-Set-Schema", "tiny")
	answer("X-Presto-Set-Session", "novalue", "X-Presto-Set-Session", "=x", "X-Trino-Set-Session", "b=%zz", "X-Presto-Set-Session", "c=x%2Cy")
	answer("X-Presto-Added-Prepare", "p%201=SELECT+%3F", "X-Presto-Added-Prepare", "broken")
	answer("X-Presto-Clear-Session", "a", "X-Presto-Deallocated-Prepare", "nosuch")
	got := cs.snapshot()
	if got.Catalog != "tpch" || got.Schema != "tiny" {
		t.Errorf("catalog.schema %s.%s, want tpch.tiny", got.Catalog, got.Schema)
	}
	if want := map[string]string{"b": "%zz", "c": "x,y"}; !maps.Equal(got.Properties, want) {
		t.Errorf("properties %v, want %v", got.Properties, want)
	}
	if want := map[string]string{"p 1": "SELECT ?"}; !maps.Equal(got.PreparedStatements, want) {
		t.Errorf("prepared statements %v, want %v", got.PreparedStatements, want)
	}

	// The request header is the Presto client's and stays untouched.
	req := http.Header{"X-Presto-User": {"alice"}, "X-Presto-Catalog": {"hive"}, "X-Presto-Session": {"a=1"}, "X-Trino-Schema": {"stray"}}
	before := req.Clone()
	out := cs.headers(req)
	if !equalHeaders(req, before) {
		t.Fatalf("headers modified its argument: %v", req)
	}
	want := http.Header{
		"X-Presto-User": {"alice"}, "X-Presto-Catalog": {"tpch"}, "X-Presto-Schema": {"tiny"},
		"X-Presto-Session": {"b=%25zz,c=x%2Cy"}, "X-Presto-Prepared-Statement": {"p+1=SELECT+%3F"},
	}
	if !equalHeaders(out, want) {
		t.Fatalf("submission headers %v, want %v", out, want)
	}

	cs.reset()
	if got := cs.snapshot(); got.Catalog != "hive" || got.Schema != "default" || !maps.Equal(got.Properties, map[string]string{"a": "1"}) || got.PreparedStatements != nil {
		t.Fatalf("after reset: %+v", got)
	}
}

func equalHeaders(a, b http.Header) bool {
	return maps.EqualFunc(a, b, func(x, y []string) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	})
}

// BenchmarkSessionApplyUnchanged is the cost an ordinary answer (no session
// change) pays: one pass over its header keys.
func BenchmarkSessionApplyUnchanged(b *testing.B) {
	cs := newClientSession(&Config{User: "alice"})
	h := http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}, "Date": {"x"}, "Vary": {"Accept-Encoding"}}
	b.ReportAllocs()
	for b.Loop() {
		cs.apply(h)
	}
}
