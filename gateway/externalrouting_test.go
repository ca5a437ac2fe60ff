package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
)

// hookConfig is a config of groups a (coordinator 0, by weight) and etl
// (coordinator 1, by selectors or the hook only), whose selector sends
// user bob to a, with hook as its externalRouting.
func hookConfig(a, etl, hook string) string {
	return `{
  "groups": [
    {"name": "a", "members": ["` + a + `"]},
    {"name": "etl", "members": ["` + etl + `"], "weight": 0}
  ],
  "selectors": [{"user": "bob", "targetGroup": "a"}],
  "externalRouting": ` + hook + `
}`
}

// The hook's answers route through two replicas: its group wins over the
// selectors, its "nothing" leaves them to decide, and with a cache each
// replica asks once per input.
func TestExternalRoutingThroughTwoReplicas(t *testing.T) {
	cs := startCoordinators(t, 2)
	var calls atomic.Int64
	var mu sync.Mutex
	var seen []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var in struct {
			User, StatementKind string
			Headers             map[string]string
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, string(b))
		mu.Unlock()
		if err := json.Unmarshal(b, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch {
		case in.StatementKind == "INSERT", strings.HasPrefix(in.User, "etl_"), in.Headers["X-Job"] == "nightly":
			_, _ = io.WriteString(w, `{"group": "etl"}`)
		default:
			_, _ = io.WriteString(w, `{}`)
		}
	}))
	defer hook.Close()
	rs := configReplicas(t, hookConfig(cs[0].URL(), cs[1].URL(), `{"url": "`+hook.URL+`/route", "timeout": "5s", "cacheTTL": "1h", "headers": ["X-Job"]}`), gateway.BuildOptions{})
	for _, tc := range []struct {
		sql    string
		header map[string]string
		want   string
	}{
		{"SELECT 1", map[string]string{"X-Presto-User": "etl_nightly"}, "[0 4]"},
		{"SELECT 1", map[string]string{"X-Presto-User": "", "X-Trino-User": "etl_nightly"}, "[0 4]"},
		{"SELECT 1", map[string]string{"X-Presto-User": "ann"}, "[4 0]"},
		{"INSERT INTO t SELECT 1", map[string]string{"X-Presto-User": "ann"}, "[0 4]"},
		{"SELECT 1", map[string]string{"X-Presto-User": "ann", "X-Job": "nightly", "Authorization": "Basic c2VjcmV0"}, "[0 4]"},
		// The hook says nothing of bob: his selector decides.
		{"SELECT 1", map[string]string{"X-Presto-User": "bob"}, "[4 0]"},
	} {
		if got := delta(cs, func() {
			for range 4 {
				runStatement(t, rs.front, tc.sql, tc.header, nil)
			}
		}); got != tc.want {
			t.Errorf("%s %v: statements per coordinator %s, want %s", tc.sql, tc.header, got, tc.want)
		}
	}
	if rs.hits[0].Load() == 0 || rs.hits[1].Load() == 0 {
		t.Errorf("requests per replica %d/%d: both should have served", rs.hits[0].Load(), rs.hits[1].Load())
	}
	// 6 inputs (the flavours' users are one input), at most once per replica.
	if n := calls.Load(); n < 5 || n > 10 {
		t.Errorf("the hook was called %d times for 5 inputs through two replicas, each caching", n)
	}
	var answers, hits uint64
	for _, gw := range rs.gateways {
		f := gw.ExternalRouting()
		answers += f.Answers["group"] + f.Answers["none"]
		hits += f.CacheHits
		if len(f.Failures) != 0 {
			t.Errorf("failures %v, want none", f.Failures)
		}
	}
	if answers != 24 || hits != 24-uint64(calls.Load()) {
		t.Errorf("%d answers, %d from the cache, for 24 statements and %d calls", answers, hits, calls.Load())
	}
	// The status page says the hook chose the group of what it routed.
	for _, gw := range rs.gateways {
		for _, g := range gw.Status().Groups {
			for _, rec := range g.Statements {
				if g.Name == "etl" && rec.ChosenBy != "routing hook" || g.Name != "etl" && rec.ChosenBy == "routing hook" {
					t.Errorf("a statement in group %s chosen by %q", g.Name, rec.ChosenBy)
				}
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if strings.Contains(s, "c2VjcmV0") || strings.Contains(s, "Authorization") {
			t.Errorf("the hook got a credential: %s", s)
		}
	}
}

// A refusal fails the statement with the hook's message, for a client of
// either flavour, and runs it nowhere.
func TestExternalRoutingRefusal(t *testing.T) {
	cs := startCoordinators(t, 2)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ User string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		_ = json.NewEncoder(w).Encode(map[string]string{"refuse": in.User + " may not run statements now"})
	}))
	defer hook.Close()
	rs := configReplicas(t, hookConfig(cs[0].URL(), cs[1].URL(), `{"url": "`+hook.URL+`", "timeout": "5s"}`), gateway.BuildOptions{})
	for _, user := range []string{"X-Presto-User", "X-Trino-User"} {
		req, _ := http.NewRequest(http.MethodPost, rs.front+"/v1/statement", strings.NewReader("SELECT 1"))
		req.Header.Set(user, "ann")
		var resp *http.Response
		var err error
		if got := delta(cs, func() { resp, err = http.DefaultClient.Do(req) }); got != "[0 0]" {
			t.Errorf("%s: statements per coordinator %s, want none", user, got)
		}
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Stats struct{ State string }
			Error struct {
				Message, ErrorName, ErrorType string
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		want := "zkpresto gateway: the external routing hook refuses the statement: ann may not run statements now"
		if err != nil || resp.StatusCode != http.StatusForbidden || page.Stats.State != "FAILED" || page.Error.Message != want || page.Error.ErrorName != "ZKPRESTO_ROUTING_REFUSED" {
			t.Errorf("%s: %d %+v (%v), want 403 FAILED ZKPRESTO_ROUTING_REFUSED %q", user, resp.StatusCode, page, err, want)
		}
	}
}

// A hook that fails in any way leaves the decision to the selectors
// (bob's to group a, by his selector), is counted by kind and logged,
// without the URL's query.
func TestExternalRoutingFailsOpen(t *testing.T) {
	cs := startCoordinators(t, 2)
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		_, _ = io.WriteString(w, `{"group": "etl"}`)
	}))
	defer other.Close()
	// Each hostile hook holds at most until its request is given up.
	// (Its body read, the server sees the client go away.)
	hold := func(r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	for _, tc := range []struct {
		name, kind string
		timeout    string
		hook       http.HandlerFunc
	}{
		{"slow answer", gateway.HookTimeout, "100ms", func(w http.ResponseWriter, r *http.Request) {
			hold(r)
		}},
		{"slow body", gateway.HookTimeout, "100ms", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"group": `)
			w.(http.Flusher).Flush()
			hold(r)
		}},
		{"huge body", gateway.HookBadAnswer, "5s", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"group": "etl", "padding": "`)
			_, _ = w.Write(bytes.Repeat([]byte("x"), 4<<20))
			_, _ = io.WriteString(w, `"}`)
		}},
		{"garbage", gateway.HookBadAnswer, "5s", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "<html>etl</html>")
		}},
		{"redirect elsewhere", gateway.HookError, "5s", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
		}},
		{"error status", gateway.HookError, "5s", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"group": "etl"}`, http.StatusInternalServerError)
		}},
		{"unknown group", gateway.HookUnknownGroup, "5s", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"group": "nope"}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook := httptest.NewServer(tc.hook)
			defer hook.Close()
			var logs safeBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			rs := configReplicas(t, hookConfig(cs[0].URL(), cs[1].URL(), `{"url": "`+hook.URL+`/route?token=s3cret", "timeout": "`+tc.timeout+`"}`), gateway.BuildOptions{Logger: log})
			if got := delta(cs, func() {
				for range 2 {
					runStatement(t, rs.front, "SELECT 1", map[string]string{"X-Presto-User": "bob"}, nil)
				}
			}); got != "[2 0]" {
				t.Errorf("statements per coordinator %s, want [2 0]: bob's selector decides", got)
			}
			var failures uint64
			for _, gw := range rs.gateways {
				f := gw.ExternalRouting()
				failures += f.Failures[tc.kind]
				if f.Latency.Count != f.Failures[tc.kind] {
					t.Errorf("%d calls timed, %v failures", f.Latency.Count, f.Failures)
				}
			}
			if failures != 2 {
				t.Errorf("%d failures of kind %s, want 2", failures, tc.kind)
			}
			out := logs.String()
			if !strings.Contains(out, "external routing hook failed") || !strings.Contains(out, "kind="+tc.kind) {
				t.Errorf("log, want the failure and its kind:\n%s", out)
			}
			if strings.Contains(out, "s3cret") {
				t.Errorf("the log has the URL's secret:\n%s", out)
			}
		})
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("a redirect to another host was followed %d times", n)
	}
}

// safeBuffer is a bytes.Buffer for logs written from many goroutines.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An externalRouting that says something wrong, or that it does not
// know, is refused with its JSON path; a URL is never quoted.
func TestParseRouterConfigExternalRouting(t *testing.T) {
	for _, tc := range []struct{ hook, want string }{
		{`{"url": "http://h/route", "timout": "50ms"}`, `f.json: externalRouting.timout: unknown field (the nearest known one is "timeout"`},
		{`{"timeout": "50ms"}`, `f.json: externalRouting.url: missing`},
		{`{"url": "ftp://h/x?token=s3cret"}`, `f.json: externalRouting.url: want http[s]://host[:port]/path`},
		{`{"url": "http://u:s3cret@h/x"}`, `f.json: externalRouting.url: user info in the URL`},
		{`{"url": "http://h/x", "timeout": "50"}`, `f.json: externalRouting.timeout: "50": want a Go duration`},
		{`{"url": "http://h/x", "timeout": "1m"}`, `f.json: externalRouting.timeout: "1m": more than 5s`},
		{`{"url": "http://h/x", "cacheTTL": "-1s"}`, `f.json: externalRouting.cacheTTL: "-1s": negative`},
		{`{"url": "http://h/x", "cacheSize": -1}`, `f.json: externalRouting.cacheSize: negative`},
		{`{"url": "http://h/x", "headers": ["X-Job", "authorization"]}`, `f.json: externalRouting.headers[1]: "authorization" carries credentials`},
		{`{"url": "http://h/x", "headers": ["Cookie"]}`, `f.json: externalRouting.headers[0]: "Cookie" carries credentials`},
		{`{"url": "http://h/x", "headers": ["X-Trino-Extra-Credential"]}`, `carries credentials`},
		{`{"url": "http://h/x", "headers": ["X-Auth-Token"]}`, `carries credentials`},
		{`{"url": "http://h/x", "headers": ["X-Job", "x-job"]}`, `f.json: externalRouting.headers[1]: "x-job" a second time`},
		{`{"url": "http://h/x", "headers": ["a b"]}`, `f.json: externalRouting.headers[0]: "a b" is no header name`},
	} {
		_, err := gateway.ParseRouterConfig("f.json", []byte(`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "externalRouting": `+tc.hook+`}`), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %s", tc.hook, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error quotes the URL: %v", tc.hook, err)
		}
	}
	if _, err := gateway.ParseRouterConfig("f.json", []byte(`{"groups": [{"name": "a", "members": ["http://c1:8080"]}],
  "externalRouting": {"url": "https://router.internal/route?key=x", "timeout": "20ms", "cacheTTL": "10s", "cacheSize": 100, "headers": ["X-Job"]}}`), nil); err != nil {
		t.Errorf("a valid externalRouting: %v", err)
	}
}
