package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// hookGroups builds groups a and etl with the hook at url, spec's other
// fields as given.
func hookGroups(t *testing.T, spec string) *Groups {
	t.Helper()
	text := `{"groups": [{"name": "a", "members": ["http://127.0.0.1:1"]}, {"name": "etl", "members": ["http://127.0.0.1:2"], "weight": 0}],
  "selectors": [], "externalRouting": ` + spec + `}`
	c, err := ParseRouterConfig("router-config.json", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := BuildGroups(c, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gs.Close() })
	return gs
}

// countingHook answers every request with answer and counts them.
func countingHook(t *testing.T, answer string) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func userHeader(user string) http.Header {
	h := http.Header{}
	h.Set("X-Trino-User", user)
	return h
}

// An answer in the cache is not asked again, until it expires; another
// input is.
func TestExternalRoutingCacheHitDoesNotCallTheHook(t *testing.T) {
	srv, calls := countingHook(t, `{"group": "etl"}`)
	gs := hookGroups(t, `{"url": "`+srv.URL+`", "timeout": "5s", "cacheTTL": "1m"}`)
	now := time.Now()
	gs.hook.cache.now = func() time.Time { return now }
	var stats hookStats
	ask := func(user, sql string) hookAnswer {
		return gs.askHook(context.Background(), gs.input(userHeader(user), sql), &stats, nil)
	}
	for i := range 5 {
		if a := ask("ann", "SELECT 1"); a.group != "etl" || a.cached != (i > 0) {
			t.Fatalf("ask %d: %+v, want etl, cached after the first", i, a)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls for one input asked 5 times, want 1", n)
	}
	ask("bob", "SELECT 1")
	ask("ann", "INSERT INTO t SELECT 1")
	if n := calls.Load(); n != 3 {
		t.Errorf("%d calls after two more inputs, want 3", n)
	}
	now = now.Add(time.Minute)
	if a := ask("ann", "SELECT 1"); a.cached || calls.Load() != 4 {
		t.Errorf("after the TTL: %+v and %d calls, want the hook asked again", a, calls.Load())
	}
	if stats.hits != 4 || stats.latency.Count != 4 || stats.answers["group"] != 8 {
		t.Errorf("figures: %d hits, %d calls, %v answers; want 4, 4, 8 group", stats.hits, stats.latency.Count, stats.answers)
	}
}

// The cache holds at most cacheSize answers: the oldest goes first.
func TestExternalRoutingCacheIsBounded(t *testing.T) {
	srv, calls := countingHook(t, `{}`)
	gs := hookGroups(t, `{"url": "`+srv.URL+`", "timeout": "5s", "cacheTTL": "1h", "cacheSize": 3}`)
	for i := range 10 {
		gs.askHook(context.Background(), gs.input(userHeader(fmt.Sprint("u", i)), "SELECT 1"), nil, nil)
		if n := gs.hook.cache.len(); n > 3 {
			t.Fatalf("%d answers cached, want at most 3", n)
		}
	}
	before := calls.Load()
	gs.askHook(context.Background(), gs.input(userHeader("u9"), "SELECT 1"), nil, nil)
	gs.askHook(context.Background(), gs.input(userHeader("u0"), "SELECT 1"), nil, nil)
	if n := calls.Load() - before; n != 1 {
		t.Errorf("%d calls for the newest and the oldest input, want 1: the oldest was dropped, the newest kept", n)
	}
}

// The cache drops expired answers before live ones when full.
func TestAnswerCacheDropsExpiredFirst(t *testing.T) {
	c := newAnswerCache(time.Minute, 2)
	now := time.Now()
	c.now = func() time.Time { return now }
	key := func(s string) [32]byte { return sha256.Sum256([]byte(s)) }
	c.put(key("a"), hookAnswer{group: "a"})
	now = now.Add(2 * time.Minute)
	c.put(key("b"), hookAnswer{group: "b"})
	c.put(key("c"), hookAnswer{group: "c"})
	if _, ok := c.get(key("a")); ok {
		t.Error("an expired answer is served")
	}
	for _, k := range []string{"b", "c"} {
		if a, ok := c.get(key(k)); !ok || a.group != k {
			t.Errorf("%s: %+v %v, want it cached", k, a, ok)
		}
	}
}

// The hook gets the routing inputs and the headers the config names, and
// never a credential.
func TestExternalRoutingRequestBody(t *testing.T) {
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	gs := hookGroups(t, `{"url": "`+srv.URL+`", "timeout": "5s", "headers": ["x-job-id", "X-Absent"]}`)
	h := http.Header{}
	for k, v := range map[string]string{"X-Presto-User": "etl_x", "X-Presto-Source": "airflow", "X-Presto-Client-Tags": "a, b",
		"X-Presto-Client-Info": "dbt", "X-Presto-Catalog": "hive", "X-Presto-Schema": "web", "X-Job-Id": "42",
		"Authorization": "Basic c2VjcmV0", "Cookie": "s=secret", "X-Presto-Extra-Credential": "k=secret"} {
		h.Set(k, v)
	}
	a := gs.askHook(context.Background(), gs.input(h, "INSERT INTO s.t SELECT * FROM tpch.tiny.nation"), nil, nil)
	if a.failed != "" || a.group != "" || a.refuse != "" {
		t.Errorf("a 204 answers %+v, want nothing", a)
	}
	body := <-got
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	want := `{"catalog":"hive","clientInfo":"dbt","clientTags":["a","b"],"headers":{"X-Job-Id":"42"},"schema":"web","source":"airflow","statementKind":"INSERT",` +
		`"tables":[{"catalog":"hive","schema":"s","table":"t"},{"catalog":"tpch","schema":"tiny","table":"nation"}],"user":"etl_x"}`
	if b, _ := json.Marshal(req); string(b) != want {
		t.Errorf("the hook got\n%s\nwant\n%s", b, want)
	}
	if strings.Contains(string(body), "secret") || strings.Contains(string(body), "c2VjcmV0") {
		t.Errorf("the hook got a credential: %s", body)
	}
}

func TestReadAnswer(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"group": "etl"}`, `group "etl"`},
		{`{"group": " etl "}`, `group "etl"`},
		{`{"refuse": "not now"}`, `refuse "not now"`},
		{`{"refuse": ""}`, `refuse "no reason given"`},
		{`{}`, `none`},
		{`null`, `none`},
		{``, `none`},
		{`{"group": ""}`, `none`},
		{`{"group": "etl", "refuse": "no"}`, `bad_answer: both a group and a refusal`},
		{`{"gruop": "etl"}`, `bad_answer: want {"group": "name"}, {"refuse": "message"} or {}: unknown field "gruop"`},
		{`{"group": 3}`, `bad_answer: want {"group": "name"}, {"refuse": "message"} or {}: group: number where string is wanted`},
		{`<html>`, `bad_answer: want {"group": "name"}, {"refuse": "message"} or {}: not JSON (at byte 1)`},
		{`{"group": "etl"} {}`, `bad_answer: more than one JSON value`},
		{`["etl"]`, `bad_answer: want {"group": "name"}, {"refuse": "message"} or {}: not a JSON object`},
	} {
		a := readAnswer([]byte(tc.body))
		var got string
		switch {
		case a.failed != "":
			got = a.failed + ": " + a.detail
		case a.group != "":
			got = fmt.Sprintf("group %q", a.group)
		case a.refuse != "":
			got = fmt.Sprintf("refuse %q", a.refuse)
		default:
			got = "none"
		}
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.body, got, tc.want)
		}
	}
	long := readAnswer([]byte(`{"refuse": "` + strings.Repeat("x", 5000) + `"}`))
	if len(long.refuse) > maxRefusalMessage+len("…") {
		t.Errorf("a refusal of %d bytes, want at most %d", len(long.refuse), maxRefusalMessage)
	}
	// Cut at a character's boundary: the client's error is UTF-8.
	wide := readAnswer([]byte(`{"refuse": "x` + strings.Repeat("é", 2000) + `"}`))
	if !utf8.ValidString(wide.refuse) || len(wide.refuse) > maxRefusalMessage+len("…") {
		t.Errorf("a refusal cut to %d bytes, valid UTF-8 %v", len(wide.refuse), utf8.ValidString(wide.refuse))
	}
}

// Many statements ask at once, through a cache smaller than their inputs
// (run with -race): every answer is the hook's, the cache stays within
// its bound, and every ask is counted once, as a call or a hit.
func TestExternalRoutingCacheConcurrentUse(t *testing.T) {
	srv, calls := countingHook(t, `{"group": "etl"}`)
	gs := hookGroups(t, `{"url": "`+srv.URL+`", "timeout": "5s", "cacheTTL": "1h", "cacheSize": 4}`)
	var stats hookStats
	const workers, asks = 6, 50
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range asks {
				in := gs.input(userHeader(fmt.Sprint("u", (w+i)%9)), "SELECT 1")
				if a := gs.askHook(context.Background(), in, &stats, nil); a.group != "etl" {
					errs <- fmt.Errorf("worker %d ask %d: %+v", w, i, a)
					return
				}
				if n := gs.hook.cache.len(); n > 4 {
					errs <- fmt.Errorf("%d answers cached, want at most 4", n)
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	stats.mu.Lock()
	defer stats.mu.Unlock()
	if got := stats.hits + stats.latency.Count; got != workers*asks || stats.latency.Count != uint64(calls.Load()) || stats.answers["group"] != workers*asks {
		t.Errorf("%d hits + %d calls (hook saw %d), %v answers; want %d asks in all", stats.hits, stats.latency.Count, calls.Load(), stats.answers, workers*asks)
	}
}
