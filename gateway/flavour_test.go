package gateway_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/gateway/token"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// run sends a statement with the session headers h and follows its
// nextUri to the end with the same headers, as a client that speaks one
// flavour does; it returns every answer's headers, merged, and the
// nextUris seen.
func run(t *testing.T, base, sqlText string, h http.Header) (http.Header, []string) {
	t.Helper()
	all := http.Header{}
	var nexts []string
	method, uri, body := http.MethodPost, base+"/v1/statement", sqlText
	for uri != "" {
		req, _ := http.NewRequest(method, uri, strings.NewReader(body))
		req.Header = h.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			NextURI string `json:"nextUri"`
			Error   any    `json:"error"`
		}
		err = decodeJSON(resp.Body, &answer)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || answer.Error != nil {
			t.Fatalf("%s %s: %s %v %v", method, uri, resp.Status, err, answer.Error)
		}
		for k, v := range resp.Header {
			all[k] = append(all[k], v...)
		}
		method, uri, body = http.MethodGet, answer.NextURI, ""
		if uri != "" {
			nexts = append(nexts, uri)
		}
	}
	return all, nexts
}

func decodeJSON(r io.Reader, v any) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// session is the session headers of a client of one flavour.
func session(prefix string, kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(prefix+kv[i], kv[i+1])
	}
	return h
}

// The Presto Go client through two replicas to Trino coordinators, which
// ignore X-Presto-* headers: its user, catalog and schema arrive as
// X-Trino-*, and a SET SESSION answer comes back as X-Presto-Set-Session,
// so that the client's next statement carries the property.
func TestPrestoClientToTrinoCoordinators(t *testing.T) {
	s := newSetupFor(t, 2, coordinator.Options{Flavour: coordinator.Trino}, gateway.Trino, nil)
	db, err := sql.Open("presto", s.dsn("alice"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION query_max_run_time = '1h'"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	var last *coordinator.Request
	for _, c := range s.coords {
		for _, r := range c.Requests() {
			if r.User != "alice" || r.Catalog != "hive" || r.Schema != "default" || !r.Trino || r.PrestoHeaders != 0 {
				t.Fatalf("%q reached the coordinator as user %q catalog %q schema %q, with %d X-Trino-* and %d X-Presto-* headers",
					r.SQL, r.User, r.Catalog, r.Schema, r.TrinoHeaders, r.PrestoHeaders)
			}
			if r.SQL == "SELECT 1" {
				last = &r
			}
		}
	}
	if last == nil {
		t.Fatal("SELECT 1 reached no coordinator")
	}
	if got := last.SessionProperties["query_max_run_time"]; got != "1h" {
		t.Fatalf("the statement after SET SESSION carried session %v", last.SessionProperties)
	}
}

// A transaction of the Presto Go client on Trino coordinators: the
// started id comes back as X-Presto-Started-Transaction-Id, still wrapped,
// and every statement goes, as X-Trino-Transaction-Id with the
// coordinator's own id, to the coordinator holding it.
func TestTransactionAcrossFlavours(t *testing.T) {
	s := newSetupFor(t, 3, coordinator.Options{Flavour: coordinator.Trino}, gateway.Trino, nil)
	holder, in := runTransaction(t, s, 4)
	if len(in) != 5 { // four statements and the COMMIT
		t.Fatalf("%d statements carried the transaction id, want 5", len(in))
	}
	for _, r := range in {
		if strings.HasPrefix(r.TransactionID, "zk~") || !r.Trino {
			t.Fatalf("the coordinator got transaction id %q (X-Trino-*: %v)", r.TransactionID, r.Trino)
		}
	}
	if n := holder.Transactions(); n != 0 {
		t.Fatalf("%d transactions still open after COMMIT", n)
	}
}

// The reverse, in raw HTTP: a client speaking X-Trino-* to Presto
// coordinators that read X-Presto-* only. Its session arrives as
// X-Presto-*, and USE, SET SESSION, PREPARE and a transaction answer in
// X-Trino-*.
func TestTrinoHeadersToStrictPrestoCoordinators(t *testing.T) {
	s := newSetupFor(t, 2, coordinator.Options{StrictPrefix: true}, gateway.Presto, nil)
	h := session("X-Trino-", "User", "bob", "Catalog", "hive", "Schema", "default", "Source", "trino-cli",
		"Time-Zone", "UTC", "Client-Info", "ci", "Transaction-Id", "NONE")
	for _, tc := range []struct{ sql, header, want string }{
		{"USE other.s2", "Set-Catalog", "other"},
		{"USE other.s2", "Set-Schema", "s2"},
		{"SET SESSION join_distribution_type = 'BROADCAST'", "Set-Session", "join_distribution_type=BROADCAST"},
		{"RESET SESSION join_distribution_type", "Clear-Session", "join_distribution_type"},
		{"PREPARE q FROM SELECT 1", "Added-Prepare", "q=SELECT+1"},
		{"SET PATH hive.default", "Set-Path", "hive.default"},
	} {
		got, _ := run(t, s.front.URL, tc.sql, h)
		if v := got.Get("X-Trino-" + tc.header); v != tc.want {
			t.Errorf("%s: X-Trino-%s %q, want %q (answer headers %v)", tc.sql, tc.header, v, tc.want, got)
		}
		if v := got.Get("X-Presto-" + tc.header); v != "" {
			t.Errorf("%s: the client got X-Presto-%s %q too", tc.sql, tc.header, v)
		}
	}
	got, _ := run(t, s.front.URL, "START TRANSACTION", h)
	txn := got.Get("X-Trino-Started-Transaction-Id")
	if !strings.HasPrefix(txn, "zk~") {
		t.Fatalf("X-Trino-Started-Transaction-Id %q: not wrapped (answer %v)", txn, got)
	}
	in := h.Clone()
	in.Set("X-Trino-Transaction-Id", txn)
	run(t, s.front.URL, "SELECT 1", in)
	got, _ = run(t, s.front.URL, "COMMIT", in)
	if got.Get("X-Trino-Clear-Transaction-Id") != "true" {
		t.Fatalf("COMMIT answered %v", got)
	}
	statements := 0
	for _, c := range s.coords {
		for _, r := range c.Requests() {
			statements++
			if r.User != "bob" || r.Catalog != "hive" || r.Schema != "default" || r.Source != "trino-cli" ||
				r.TimeZone != "UTC" || r.ClientInfo != "ci" || r.Trino || r.TrinoHeaders != 0 {
				t.Fatalf("%q reached the coordinator as %+v", r.SQL, r)
			}
			if r.TransactionID != "" && strings.HasPrefix(r.TransactionID, "zk~") {
				t.Fatalf("%q carried the wrapped transaction id", r.SQL)
			}
		}
		if n := c.Transactions(); n != 0 {
			t.Fatalf("%s: %d transactions open after COMMIT", c.Name(), n)
		}
	}
	if statements != 9 {
		t.Fatalf("%d statements reached the coordinators, want 9", statements)
	}
}

// A client using both prefixes is left as it is, both ways: nothing tells
// which one it reads.
func TestBothPrefixesPassThrough(t *testing.T) {
	s := newSetupFor(t, 1, coordinator.Options{Flavour: coordinator.Trino}, gateway.Trino, nil)
	h := session("X-Presto-", "User", "carol", "Catalog", "hive")
	h.Set("X-Trino-User", "dave")
	got, _ := run(t, s.front.URL, "USE other.s2", h)
	if got.Get("X-Trino-Set-Catalog") != "other" || got.Get("X-Presto-Set-Catalog") != "" {
		t.Fatalf("answer headers %v", got)
	}
	r := s.coords[0].Requests()[0]
	if r.User != "dave" || r.Catalog != "" || r.PrestoHeaders != 2 {
		t.Fatalf("the coordinator got %+v", r)
	}
}

// An unknown flavour is refused when the gateway is made.
func TestUnknownFlavour(t *testing.T) {
	r, err := routing.New(routing.Config{Discoverer: &changing{}, Strategy: strategy.Named("poll")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := gateway.New(gateway.Config{Router: r, Keys: testKeys, Flavour: "hive"}); err == nil {
		t.Fatal("flavour hive accepted")
	}
}

// Way (b), the coordinator building the gateway's URIs, is not used: the
// gateway sends no X-Forwarded-Host/-Proto/-Prefix nor X-Presto-Prefix-Url
// (a client's are dropped), so no token is ever handed to a coordinator,
// and coordinators that honour forwarding headers still get their URIs
// rewritten.
func TestNoForwardedPrefixIsSent(t *testing.T) {
	for _, f := range []coordinator.Flavour{coordinator.Presto, coordinator.Trino} {
		s := newSetupFor(t, 1, coordinator.Options{Flavour: f, HonourForwarded: true}, gateway.Flavour(f), nil)
		h := session("X-Presto-", "User", "alice")
		h.Set("X-Forwarded-Prefix", "/_zk/forged")
		h.Set("X-Forwarded-Host", "evil.example")
		h.Set("X-Presto-Prefix-Url", "http://evil.example/")
		_, nexts := run(t, s.front.URL, "SELECT * FROM rows(300)", h)
		for _, n := range nexts {
			if !strings.HasPrefix(n, s.front.URL+"/_zk/") || strings.Count(n, "/_zk/") != 1 {
				t.Fatalf("%s: nextUri %q", f, n)
			}
		}
		for _, c := range s.coords[0].Calls() {
			// Not even X-Forwarded-For, unless Config.ForwardedFor: Trino
			// answers 406 to any X-Forwarded-* header without
			// http-server.process-forwarded=true (interop/realservers).
			for _, name := range []string{"X-Forwarded-Prefix", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Presto-Prefix-Url", "X-Forwarded-For", "Forwarded"} {
				if v := c.Forwarded.Get(name); v != "" {
					t.Fatalf("%s: %s %s reached the coordinator with %s: %q", f, c.Method, c.Path, name, v)
				}
			}
		}
	}
}

// A coordinator whose URIs already carry the gateway's origin (here a
// proxy in front of it sets the forwarding headers, with a prefix holding
// the token for the query) is not rewritten twice: a URI on the public
// base with a token for its coordinator and query is kept byte for byte,
// one with a token for another coordinator is signed again, and the
// query pages through both replicas to the end.
func TestURIsAlreadyOnTheGatewayAreKept(t *testing.T) {
	keys, err := token.ParseKeys(testKeys)
	if err != nil {
		t.Fatal(err)
	}
	var forge atomic.Bool // sign the prefix for another coordinator
	var front atomic.Pointer[string]
	via := func(c *coordinator.Coordinator) string {
		target, _ := url.Parse("http://" + c.Addr())
		var self string
		proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pub, _ := url.Parse(*front.Load())
			pr.Out.Header.Set("X-Forwarded-Proto", "http")
			pr.Out.Header.Set("X-Forwarded-Host", pub.Host)
			parts := strings.Split(pr.In.URL.Path, "/") // /v1/statement/{phase}/{id}/...
			if len(parts) > 4 && parts[2] == "statement" {
				coord := self
				if forge.Load() {
					coord = "http://127.0.0.1:1"
				}
				tok, err := keys.Sign(coord, parts[4])
				if err != nil {
					panic(err)
				}
				pr.Out.Header.Set("X-Forwarded-Prefix", token.Prefix(tok))
			}
		}})
		t.Cleanup(proxy.Close)
		self = proxy.URL
		return strings.TrimPrefix(proxy.URL, "http://")
	}
	s := newSetupFor(t, 1, coordinator.Options{Flavour: coordinator.Trino, HonourForwarded: true, BatchRows: 10}, gateway.Trino, via)
	front.Store(&s.front.URL)
	h := session("X-Trino-", "User", "alice")
	for _, forged := range []bool{false, true} {
		forge.Store(forged)
		_, nexts := run(t, s.front.URL, "SELECT * FROM rows(100)", h)
		if len(nexts) < 10 {
			t.Fatalf("only %d pages", len(nexts))
		}
		for _, n := range nexts {
			if !strings.HasPrefix(n, s.front.URL+"/_zk/") || strings.Count(n, "/_zk/") != 1 {
				t.Fatalf("nextUri %q", n)
			}
			tok, rest, _ := token.Split(strings.TrimPrefix(n, s.front.URL))
			parts := strings.Split(rest, "/")
			base, err := keys.Verify(tok, parts[4])
			if err != nil || !strings.HasPrefix(base, "http://127.0.0.1:") || base == "http://127.0.0.1:1" {
				t.Fatalf("forged %v: nextUri %q names %q (%v)", forged, n, base, err)
			}
		}
	}
	if s.hits[0].Load() < 10 || s.hits[1].Load() < 10 {
		t.Fatalf("requests per replica %d/%d", s.hits[0].Load(), s.hits[1].Load())
	}
}

// With Config.ForwardedFor the coordinators get X-Forwarded-For naming the
// client, and nothing else a client sent of the forwarding headers.
func TestForwardedForWhenAsked(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Flavour: coordinator.Trino})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r, err := routing.New(routing.Config{Discoverer: discovery.NewStatic("test", []discovery.Node{{Addr: c.Addr()}}), Strategy: strategy.Named("poll")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	g, err := gateway.New(gateway.Config{Router: r, Keys: testKeys, Flavour: gateway.Trino, ForwardedFor: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveGateway(t, g)
	h := session("X-Trino-", "User", "alice")
	h.Set("X-Forwarded-For", "203.0.113.9")
	run(t, srv.URL, "SELECT 1", h)
	calls := c.Calls()
	if len(calls) == 0 {
		t.Fatal("the coordinator got nothing")
	}
	for _, call := range calls {
		if v := call.Forwarded.Get("X-Forwarded-For"); v != "127.0.0.1" {
			t.Fatalf("%s %s reached the coordinator with X-Forwarded-For %q, want the client's 127.0.0.1", call.Method, call.Path, v)
		}
	}
}
