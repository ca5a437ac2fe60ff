package gateway_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	presto "github.com/prestodb/presto-go-client/v2"
	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/dsn"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// testMainCleanups run when every test and benchmark has ended.
var testMainCleanups []func()

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		for _, f := range testMainCleanups {
			f()
		}
	}))
}

// testKeys is a routing-token secret for tests: one key of 32 bytes, hex.
const testKeys = "k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"

// setup is a few coordinators behind two gateway replicas behind a
// round-robin front: every request of a client lands on the other
// replica than the one before.
type setup struct {
	coords   []*coordinator.Coordinator
	replicas []*gatewayServer
	gateways []*gateway.Gateway
	front    *httptest.Server
	hits     [2]atomic.Int64 // requests per replica
	disc     *changing
}

// changing is a discoverer whose list a test changes.
type changing struct {
	mu   sync.Mutex
	snap atomic.Pointer[discovery.Snapshot]
	gen  uint64
}

func (c *changing) set(cs ...*coordinator.Coordinator) {
	nodes := make([]discovery.Node, len(cs))
	for i, co := range cs {
		nodes[i] = discovery.Node{Addr: co.Addr()}
	}
	c.setNodes(nodes)
}

// setNodes publishes nodes as the next generation.
func (c *changing) setNodes(nodes []discovery.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.snap.Store(discovery.NewSnapshot("test", c.gen, nodes))
}

func (c *changing) Snapshot() *discovery.Snapshot              { return c.snap.Load() }
func (c *changing) Subscribe(func(*discovery.Snapshot)) func() { return func() {} }
func (c *changing) Status() discovery.Status                   { return discovery.Status{Connected: true} }
func (c *changing) Close() error                               { return nil }

func newSetup(t *testing.T, n int, opts coordinator.Options) *setup {
	t.Helper()
	return newSetupFor(t, n, opts, "", nil)
}

// newSetupFor is newSetup with gateways for coordinators of flavour, and,
// when via is not nil, the address via gives each coordinator listed
// instead of its own (a proxy in front of it).
func newSetupFor(t *testing.T, n int, opts coordinator.Options, flavour gateway.Flavour, via func(*coordinator.Coordinator) string) *setup {
	t.Helper()
	s := &setup{disc: &changing{}}
	var nodes []discovery.Node
	for range n {
		c, err := coordinator.Start(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		s.coords = append(s.coords, c)
		addr := c.Addr()
		if via != nil {
			addr = via(c)
		}
		nodes = append(nodes, discovery.Node{Addr: addr})
	}
	s.disc.setNodes(nodes)
	var fronts [2]*url.URL
	for i := range 2 {
		// Each replica has its own Router over the same discovery, as two
		// processes watching one ZooKeeper namespace would.
		r, err := routing.New(routing.Config{Discoverer: s.disc, Strategy: strategy.Named("poll")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		g, err := gateway.New(gateway.Config{Router: r, Keys: testKeys, Flavour: flavour, StandardTransport: standardTransport})
		if err != nil {
			t.Fatal(err)
		}
		hits := &s.hits[i]
		srv := serveGateway(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			hits.Add(1)
			g.ServeHTTP(w, req)
		}))
		s.replicas = append(s.replicas, srv)
		s.gateways = append(s.gateways, g)
		fronts[i], _ = url.Parse(srv.URL)
	}
	var next atomic.Int64
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(fronts[next.Add(1)%2])
		pr.Out.Host = pr.In.Host // the replicas hand out URIs on the front's host
	}}
	s.front = httptest.NewServer(proxy)
	t.Cleanup(s.front.Close)
	return s
}

func (s *setup) dsn(user string) string {
	return "presto://" + user + "@" + strings.TrimPrefix(s.front.URL, "http://") + "/hive/default"
}

// Through two replicas, every follow-up on the other one: the Presto Go
// client gets multi-page results complete and in order.
func TestPrestoClientThroughTwoReplicas(t *testing.T) {
	s := newSetup(t, 2, coordinator.Options{BatchRows: 7})
	db, err := sql.Open("presto", s.dsn("alice"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for range 4 {
		rows, err := db.Query("SELECT * FROM rows(100)")
		if err != nil {
			t.Fatal(err)
		}
		testutil.CheckNumbered(t, rows, 100)
		rows.Close()
	}
	if s.hits[0].Load() < 10 || s.hits[1].Load() < 10 {
		t.Fatalf("requests per replica %d/%d: both should have served follow-ups", s.hits[0].Load(), s.hits[1].Load())
	}
	var statements int64
	for _, c := range s.coords {
		statements += c.Statements()
	}
	if statements != 4 {
		t.Fatalf("the coordinators got %d statements, want 4", statements)
	}
}

// post submits a statement to base and returns the decoded answer.
func post(t *testing.T, base, sqlText string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/statement", strings.NewReader(sqlText))
	req.Header.Set("X-Presto-User", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST: %s %s", resp.Status, b)
	}
	var answer map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatal(err)
	}
	return answer
}

func do(t *testing.T, method, uri string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, uri, nil)
	req.Header.Set("X-Presto-User", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer map[string]any
	json.NewDecoder(resp.Body).Decode(&answer)
	return resp.StatusCode, answer
}

// A tampered token gets 403 and no coordinator sees the request; the
// untampered one works on either replica.
func TestTamperedTokenIsRefused(t *testing.T) {
	s := newSetup(t, 1, coordinator.Options{Latency: time.Hour})
	answer := post(t, s.replicas[0].URL, "SELECT 1")
	next := answer["nextUri"].(string)
	if !strings.HasPrefix(next, s.replicas[0].URL+"/_zk/") {
		t.Fatalf("nextUri %q does not point at the gateway", next)
	}
	i := strings.Index(next, "/_zk/") + len("/_zk/") + 5
	flipped := byte('A')
	if next[i] == 'A' {
		flipped = 'B'
	}
	tampered := next[:i] + string(flipped) + next[i+1:]
	before := s.coords[0].Requests()
	code, body := do(t, http.MethodGet, strings.Replace(tampered, s.replicas[0].URL, s.replicas[1].URL, 1))
	if code != http.StatusForbidden || body["error"] == nil {
		t.Fatalf("tampered token: %d %v, want 403 with a Presto error", code, body)
	}
	if code, _ := do(t, http.MethodGet, strings.Replace(next, s.replicas[0].URL, s.replicas[1].URL, 1)); code != http.StatusOK {
		t.Fatalf("the real token on the other replica: %d", code)
	}
	_ = before
}

// A DELETE on the nextUri, or on /v1/query/{id} through a replica that
// never saw the query, cancels it on its coordinator. The first statement
// through the gateway to a coordinator is dispatched before its POST is
// answered (the gateway has not seen that coordinator dispatch yet; see
// dispatchChecks). One submitted to a coordinator directly is unknown to it until its first
// GET: a DELETE of /v1/query/{id} through the gateway then is the servers'
// no-op 204 and its GET their 410, never a failure.
func TestCancelReachesTheCoordinator(t *testing.T) {
	s := newSetup(t, 2, coordinator.Options{Latency: time.Hour})
	running := func() (n int64) {
		for _, c := range s.coords {
			r, _ := c.Load()
			n += r
		}
		return n
	}
	for _, via := range []string{"nextUri", "query id"} {
		var target string
		if via == "nextUri" {
			answer := post(t, s.replicas[0].URL, "SELECT 1")
			if running() != 1 {
				t.Fatalf("%d queries dispatched after the gateway's POST, want 1", running())
			}
			target = answer["nextUri"].(string)
		} else {
			answer := post(t, s.coords[0].URL(), "SELECT 1")
			id := answer["id"].(string)
			if code, body := do(t, http.MethodGet, s.replicas[1].URL+"/v1/query/"+id); code != http.StatusGone {
				t.Fatalf("GET /v1/query before dispatch: %d %v, want 410", code, body)
			}
			if code, body := do(t, http.MethodDelete, s.replicas[1].URL+"/v1/query/"+id); code != http.StatusNoContent {
				t.Fatalf("DELETE /v1/query before dispatch: %d %v, want 204", code, body)
			}
			if code, queued := do(t, http.MethodGet, answer["nextUri"].(string)); code != http.StatusOK || running() != 1 {
				t.Fatalf("first GET: %d %v; %d dispatched", code, queued, running())
			}
			target = s.replicas[1].URL + "/v1/query/" + id
		}
		if code, body := do(t, http.MethodDelete, target); code != http.StatusNoContent {
			t.Fatalf("DELETE via %s: %d %v, want 204", via, code, body)
		}
		if n := s.coords[0].Running() + s.coords[1].Running(); n != 0 {
			t.Fatalf("after DELETE via %s: %d queries left", via, n)
		}
	}
	if code, _ := do(t, http.MethodDelete, s.replicas[1].URL+"/v1/query/20260101_000000_00000_nosuch"); code != http.StatusNoContent {
		t.Fatalf("DELETE of an unknown query id: %d, want the servers' 204", code)
	}
	if code, _ := do(t, http.MethodGet, s.replicas[1].URL+"/v1/query/20260101_000000_00000_nosuch"); code != http.StatusGone {
		t.Fatalf("GET of an unknown query id: %d, want the servers' 410", code)
	}
}

// A coordinator killed mid-query: that query fails with a clear error, not
// one the client retries; the next statements go elsewhere.
func TestCoordinatorKilledMidQuery(t *testing.T) {
	s := newSetup(t, 2, coordinator.Options{BatchRows: 5})
	answer := post(t, s.replicas[0].URL, "SELECT * FROM rows(50)")
	var victim *coordinator.Coordinator
	for _, c := range s.coords {
		if c.Running() == 1 {
			victim = c
		}
	}
	if victim == nil {
		t.Fatal("no coordinator runs the query")
	}
	victim.Stop()
	code, body := do(t, http.MethodGet, answer["nextUri"].(string))
	if name := failedPageError(code, body); name != "ZKPRESTO_COORDINATOR_FAILED" || !strings.Contains(fmt.Sprint(body["error"]), victim.Addr()) {
		t.Fatalf("GET after the kill: %d %v; want the query's last page, failed, naming %s", code, body, victim.Addr())
	}
	for range 4 {
		post(t, s.front.URL, "SELECT 1")
	}
}

// A coordinator that leaves discovery while it runs a query gets no new
// statements but its query finishes; once it has failed a request, a token
// naming it gets 410, and never reaches a server that later listens there.
func TestDepartedCoordinator(t *testing.T) {
	s := newSetup(t, 2, coordinator.Options{BatchRows: 5})
	answer := post(t, s.replicas[0].URL, "SELECT * FROM rows(50)")
	var leaving, staying *coordinator.Coordinator
	for _, c := range s.coords {
		if c.Running() == 1 {
			leaving = c
		} else {
			staying = c
		}
	}
	s.disc.set(staying)
	code, page := do(t, http.MethodGet, answer["nextUri"].(string))
	if code != http.StatusOK || page["nextUri"] == nil {
		t.Fatalf("follow-up on the departed coordinator: %d %v", code, page)
	}
	before := leaving.Statements()
	for range 3 {
		post(t, s.front.URL, "SELECT 1")
	}
	if leaving.Statements() != before {
		t.Fatal("a departed coordinator got new statements")
	}
	next := page["nextUri"].(string)
	leaving.Stop()
	if code, body := do(t, http.MethodGet, next); failedPageError(code, body) != "ZKPRESTO_COORDINATOR_GONE" {
		t.Fatalf("after the departed coordinator stopped: %d %v, want its query failed, gone", code, body)
	}
	if err := leaving.Restart(); err != nil {
		t.Fatal(err)
	}
	if code, body := do(t, http.MethodGet, next); failedPageError(code, body) != "ZKPRESTO_COORDINATOR_GONE" || leaving.Statements() != before {
		t.Fatalf("the old token reached the new server on the same address: %d", code)
	}
	// A request other than a page's GET still gets the status.
	if code, _ := do(t, http.MethodHead, next); code != http.StatusGone {
		t.Fatalf("HEAD after the departed coordinator stopped: %d, want 410", code)
	}
}

// failedPageError returns the error name of a statement's last page that
// says its query failed, as a coordinator ends a failed query (200, FAILED,
// no nextUri); "" for any other answer.
func failedPageError(code int, page map[string]any) string {
	stats, _ := page["stats"].(map[string]any)
	failure, _ := page["error"].(map[string]any)
	if code != http.StatusOK || page["nextUri"] != nil || stats["state"] != "FAILED" || page["infoUri"] == nil || failure == nil {
		return ""
	}
	// As the Java clients (trino-cli, JDBC) decode it: a failureInfo
	// without its suppressed and stack lists fails the whole page.
	info, _ := failure["failureInfo"].(map[string]any)
	_, suppressed := info["suppressed"].([]any)
	_, stack := info["stack"].([]any)
	if info["type"] == nil || !suppressed || !stack {
		return ""
	}
	name, _ := failure["errorName"].(string)
	return name
}

// /v1/info says starting until there are coordinators; draining refuses new
// statements with 503 (nothing was sent) and lets running queries go on.
func TestInfoAndDrain(t *testing.T) {
	s := newSetup(t, 1, coordinator.Options{Latency: time.Hour})
	s.disc.set()
	if _, info := do(t, http.MethodGet, s.replicas[0].URL+"/v1/info"); info["starting"] != true {
		t.Fatalf("no coordinators: %v", info)
	}
	s.disc.set(s.coords...)
	if _, info := do(t, http.MethodGet, s.replicas[0].URL+"/v1/info"); info["starting"] != false {
		t.Fatalf("with a coordinator: %v", info)
	}
	answer := post(t, s.replicas[0].URL, "SELECT 1")
	s.gateways[0].Drain()
	req, _ := http.NewRequest(http.MethodPost, s.replicas[0].URL+"/v1/statement", strings.NewReader("SELECT 1"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || s.coords[0].Statements() != 1 {
		t.Fatalf("draining: %s, %d statements", resp.Status, s.coords[0].Statements())
	}
	if code, _ := do(t, http.MethodGet, answer["nextUri"].(string)); code != http.StatusOK {
		t.Fatalf("a running query's follow-up while draining: %d", code)
	}
}

// The DSN route: the driver's DSN describes the gateway's routing core.
func TestGatewayOnADSN(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg, err := dsn.ParseDSN("presto://" + c.Addr() + "/;zooKeeperStrategy=p2c")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := dsn.Open(cfg, dsn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	g, err := gateway.New(gateway.Config{Router: rt.Router, Client: rt.Client, TLS: rt.TLS, Keys: testKeys, StandardTransport: standardTransport})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveGateway(t, g)
	db, err := sql.Open("presto", "presto://bob@"+strings.TrimPrefix(srv.URL, "http://")+"/hive")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT * FROM rows(1)").Scan(&n); err != nil || n != 1 {
		t.Fatalf("got %d, %v", n, err)
	}
}

// A client that asks for gzip gets gzip, URIs rewritten inside, for every
// answer larger than one packet; a smaller one comes uncompressed, whole,
// with its Content-Length.
func TestGzipToClients(t *testing.T) {
	s := newSetup(t, 1, coordinator.Options{BatchRows: 1000})
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	// Two statements: the first's POST may come with the first page of rows (the gateway's
	// own first GET of a coordinator not yet seen dispatching, on PrestoDB, whose queued
	// resource answers it); the second's is the POST's small QUEUED answer.
	for i, sql := range []string{"SELECT * FROM rows(3000)", "SELECT * FROM rows(3000)"} {
		if small := gzipRows(t, s, client, sql); i == 1 && small == 0 {
			t.Fatal("no answer came small and uncompressed, want the queued one")
		}
	}
}

// gzipRows runs sql through the gateway as a client asking for gzip, checks every answer's
// encoding and the rows, and returns how many answers were small and uncompressed.
func gzipRows(t *testing.T, s *setup, client *http.Client, sql string) (small int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.replicas[0].URL+"/v1/statement", strings.NewReader(sql))
	var gzipped int
	for rows := 0; ; {
		req.Header.Set("X-Presto-User", "alice")
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s %v", req.Method, req.URL, resp.Status, err)
		}
		body := raw
		switch resp.Header.Get("Content-Encoding") {
		case "gzip":
			gzipped++
			gz, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(gz); err != nil {
				t.Fatal(err)
			}
			if len(body) <= 1400 {
				t.Errorf("an answer of %d bytes was compressed", len(body))
			}
		case "":
			small++
			if len(raw) > 1400 || resp.ContentLength != int64(len(raw)) {
				t.Errorf("an answer of %d bytes (Content-Length %d) came uncompressed", len(raw), resp.ContentLength)
			}
		default:
			t.Fatalf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
		}
		var answer struct {
			NextURI string  `json:"nextUri"`
			Data    [][]any `json:"data"`
		}
		if err := json.Unmarshal(body, &answer); err != nil {
			t.Fatal(err)
		}
		rows += len(answer.Data)
		if answer.NextURI == "" {
			if rows != 3000 || gzipped < 3 {
				t.Fatalf("%d rows, %d answers gzipped; want 3000 rows, 3 pages gzipped", rows, gzipped)
			}
			return small
		}
		if !strings.HasPrefix(answer.NextURI, s.replicas[0].URL+"/_zk/") {
			t.Fatalf("nextUri %q is not the gateway's", answer.NextURI)
		}
		req, _ = http.NewRequest(http.MethodGet, answer.NextURI, nil)
	}
}

// A client that goes away while the coordinator is slow to answer its POST:
// the query the coordinator accepted is cancelled, not left running; on the
// gateway's own server, which finds the client gone when the answer comes,
// and on net/http's, whose request context ends as the client leaves.
func TestClientLeavingDuringThePOSTCancelsTheQuery(t *testing.T) {
	for _, on := range []string{"gateway server", "net/http"} {
		t.Run(on, func(t *testing.T) {
			c, err := coordinator.Start(coordinator.Options{Latency: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			c.SetAnswerDelay(300 * time.Millisecond)
			g, _ := staticGateway(t, gateway.Config{}, c.Addr())
			base := serveGateway(t, g).URL
			if on == "net/http" {
				srv := httptest.NewServer(g)
				t.Cleanup(srv.Close)
				base = srv.URL
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/statement", strings.NewReader("SELECT 1"))
			req.Header.Set("X-Presto-User", "alice")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				t.Fatal("the POST returned before the client's deadline")
			}
			if c.Statements() != 1 {
				t.Fatalf("%d statements reached the coordinator", c.Statements())
			}
			deadline := time.Now().Add(10 * time.Second)
			for c.Running() != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the query of the client that left is still running")
				}
				time.Sleep(20 * time.Millisecond)
			}
			// Never dispatched (no GET of its nextUri): the gateway DELETEs the
			// queued nextUri, which the coordinator answers 204.
			var deletes int
			for _, call := range c.Calls() {
				switch {
				case call.Method == http.MethodGet:
					t.Errorf("the gateway fetched %s of the client that left", call.Path)
				case call.Method == http.MethodDelete && strings.HasPrefix(call.Path, "/v1/statement/queued/") && call.Status == http.StatusNoContent:
					deletes++
				}
			}
			if deletes != 1 {
				t.Fatalf("%d DELETEs of the queued nextUri answered 204, want 1: %+v", deletes, c.Calls())
			}
		})
	}
}

// A statement no coordinator took gets 503 (the client may resend it);
// nothing listed, or every one refusing.
func TestNoCoordinatorIs503(t *testing.T) {
	s := newSetup(t, 1, coordinator.Options{})
	s.coords[0].Stop()
	req, _ := http.NewRequest(http.MethodPost, s.replicas[0].URL+"/v1/statement", strings.NewReader("SELECT 1"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("all coordinators down: %s, want 503", resp.Status)
	}
}

// A transaction through two replicas: the gateway wraps the transaction
// id, so every statement of it goes to the coordinator that started it,
// with the coordinator's own id.
func TestTransactionStaysOnItsCoordinator(t *testing.T) {
	s := newSetup(t, 3, coordinator.Options{})
	holder, in := runTransaction(t, s, 5)
	for _, r := range in {
		if strings.HasPrefix(r.TransactionID, "zk~") {
			t.Fatalf("the coordinator got the wrapped id %q", r.TransactionID)
		}
	}
	if holder == nil {
		t.Fatal("no statement carried the transaction id")
	}
	if n := holder.Transactions(); n != 0 {
		t.Fatalf("%d transactions still open after COMMIT", n)
	}
}

// runTransaction runs statements statements and a COMMIT in one
// transaction through s's front with the Presto Go client, and returns the
// coordinator that got the statements carrying a transaction id, and
// those statements as it got them; it fails when two coordinators got
// some.
func runTransaction(t *testing.T, s *setup, statements int) (*coordinator.Coordinator, []coordinator.Request) {
	t.Helper()
	// The Presto client alone names no transaction outside one, and the
	// servers refuse its START TRANSACTION; JDBC sends NONE, so this does.
	connector, err := presto.NewConnector(s.dsn("alice"),
		presto.WithHTTPClient(&http.Client{Transport: testutil.TransactionNone{Next: http.DefaultTransport}}))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range statements {
		if _, err := tx.Exec(fmt.Sprintf("SELECT %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var holder *coordinator.Coordinator
	var in []coordinator.Request
	for _, c := range s.coords {
		for _, r := range c.Requests() {
			if r.TransactionID == "" {
				continue
			}
			if holder != nil && holder != c {
				t.Fatalf("statements of one transaction ran on %s and %s", holder.Name(), c.Name())
			}
			holder = c
			in = append(in, r)
		}
	}
	return holder, in
}

// A routing token opens the URIs of its query only: not the rest of the
// coordinator's API, not through dot segments.
func TestTokenOpensOnlyItsQuery(t *testing.T) {
	s := newSetup(t, 1, coordinator.Options{Latency: time.Hour})
	answer := post(t, s.replicas[0].URL, "SELECT 1")
	next := answer["nextUri"].(string)
	i := strings.Index(next, "/v1/statement/")
	prefix := next[:i]
	id := answer["id"].(string)
	for _, p := range []string{
		"/v1/jmx",
		"/v1/query",
		"/v1/statement/executing/" + id + "/../../../jmx",
		"/v1/statement/executing/" + id + "/x/%2e%2e/%2e%2e/info",
		"/v1/statement//executing/" + id + "/x/1",
	} {
		if code, _ := do(t, http.MethodGet, prefix+p); code != http.StatusForbidden {
			t.Errorf("GET %s with the query's token: %d, want 403", p, code)
		}
	}
	if code, _ := do(t, http.MethodGet, next); code != http.StatusOK {
		t.Fatalf("the query's own nextUri: %d", code)
	}
}

// A starting coordinator, one without workers (whose wait for them is
// shorter than a poll) and one whose queue is full accept every POST and
// fail the query on the queued resource (PrestoDB's queue at the second
// GET); the gateway makes those GETs itself for a coordinator it has not
// seen dispatch or whose queue may be full (dispatchChecks), so no
// statement fails for it while another coordinator is ready, and none
// runs twice: the one that never ran goes elsewhere.
func TestNotReadyCoordinatorsFailNoStatement(t *testing.T) {
	s := newSetup(t, 4, coordinator.Options{RequiredWorkersMaxWait: 100 * time.Millisecond})
	s.coords[0].SetStarting(true)
	s.coords[1].SetNoWorkers(true)
	s.coords[2].SetQueueFull(true)
	for i := range 20 {
		if n, err := statementRows(s.replicas[i%2].URL, fmt.Sprintf("SELECT * FROM rows(%d)", i+1), nil, nil); err != nil || n != i+1 {
			t.Fatalf("statement %d: %d rows, %v", i, n, err)
		}
	}
	ran := map[string]int{}
	for i, c := range s.coords {
		for _, r := range c.Requests() {
			if !r.Rejected {
				ran[r.SQL]++
				if i != 3 {
					t.Errorf("%q ran on coordinator %d, which is not ready", r.SQL, i)
				}
			}
		}
	}
	for i := range 20 {
		if q := fmt.Sprintf("SELECT * FROM rows(%d)", i+1); ran[q] != 1 {
			t.Errorf("%q ran %d times, want once", q, ran[q])
		}
	}
}

// The servers' text/plain answer to a stale link (410 for an older token:
// Trino's; PrestoDB's is Jetty's HTML page) reaches the client as it is,
// readable, and the coordinator serves the next statements.
func TestPlainTextErrorsPassThrough(t *testing.T) {
	s := newSetup(t, 1, coordinator.Options{Flavour: coordinator.Trino, BatchRows: 100})
	answer := post(t, s.replicas[0].URL, "SELECT * FROM rows(250)")
	p0 := answer["nextUri"].(string)
	code, page := do(t, http.MethodGet, p0)
	if code != http.StatusOK {
		t.Fatalf("first page: %d", code)
	}
	if code, _ := do(t, http.MethodGet, page["nextUri"].(string)); code != http.StatusOK {
		t.Fatalf("second page: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, p0, nil)
	req.Header.Set("X-Presto-User", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || !strings.Contains(string(body), "older") {
		t.Fatalf("an older token through the gateway: %d %q %q, want the coordinator's 410 text", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	for i := range 3 {
		if n, err := statementRows(s.replicas[0].URL, "SELECT 1", nil, nil); err != nil || n != 1 {
			t.Fatalf("statement %d after a 410: %d rows, %v", i, n, err)
		}
	}
}

// A cancel of a query whose coordinator is gone, listed still but refusing
// connections, or left discovery and stopped, is answered 204: nothing is
// left running, as a server answers the cancel of a query it no longer
// has (trino-python-client's cancel raises on anything else). A page of
// it still fails, naming the coordinator.
func TestCancelOfAQueryWhoseCoordinatorIsGone(t *testing.T) {
	for _, leaves := range []bool{false, true} {
		t.Run(fmt.Sprintf("deregistered=%t", leaves), func(t *testing.T) {
			s := newSetup(t, 2, coordinator.Options{BatchRows: 5})
			answer := post(t, s.replicas[0].URL, "SELECT * FROM rows(50)")
			code, page := do(t, http.MethodGet, answer["nextUri"].(string))
			if code != http.StatusOK || page["nextUri"] == nil {
				t.Fatalf("first page: %d %v", code, page)
			}
			id := page["id"].(string)
			var victim, other *coordinator.Coordinator
			for _, c := range s.coords {
				if c.Running() == 1 {
					victim = c
				} else {
					other = c
				}
			}
			if leaves {
				s.disc.set(other)
			}
			victim.Stop()
			next := page["nextUri"].(string)
			if code, body := do(t, http.MethodGet, next); failedPageError(code, body) == "" {
				t.Fatalf("a page of the query after its coordinator stopped: %d %v, want the query failed", code, body)
			}
			for _, uri := range []string{next, s.replicas[1].URL + "/v1/query/" + id, next} {
				if code, body := do(t, http.MethodDelete, uri); code != http.StatusNoContent {
					t.Errorf("DELETE %s after its coordinator stopped: %d %v, want 204", uri, code, body)
				}
			}
		})
	}
}
