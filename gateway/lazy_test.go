package gateway_test

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// flavours are the servers a lazy-submission test runs against.
var flavours = []struct {
	name    string
	sim     coordinator.Flavour
	gateway gateway.Flavour
	user    string
}{
	{"presto", coordinator.Presto, "", "X-Presto-User"},
	{"trino", coordinator.Trino, gateway.Trino, "X-Trino-User"},
}

// provenGateway is a gateway over one coordinator of flavour f with
// opts (its Latency set after), after a statement through it has run to
// its end: the gateway has
// seen the coordinator dispatch, so it leaves the next statements' first
// GET to their clients.
func provenGateway(t *testing.T, f coordinator.Flavour, gf gateway.Flavour, opts coordinator.Options) (*coordinator.Coordinator, *gateway.Gateway, string) {
	t.Helper()
	opts.Flavour = f
	latency := opts.Latency
	opts.Latency = 0
	c, err := coordinator.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, _ := staticGateway(t, gateway.Config{Flavour: gf}, c.Addr())
	base := serveGateway(t, g).URL
	if n, err := statementRows(base, "SELECT 1", nil, nil); err != nil || n != 1 {
		t.Fatalf("the first statement: %d rows, %v", n, err)
	}
	c.SetLatency(latency)
	return c, g, base
}

// waitIdle waits until g serves no request.
func waitIdle(t *testing.T, g *gateway.Gateway) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway still serves %d requests", g.InFlight())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A client that POSTs through the gateway and goes away without reading
// the answer (it takes the first byte the network brought, then closes)
// leaves no query running: the gateway answered with the POST's own
// answer, and the query, never fetched, was never dispatched. Formerly
// the gateway made the first GET itself and the query ran unread.
func TestClientGoneBeforeReadingLeavesNoQuery(t *testing.T) {
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			c, g, base := provenGateway(t, f.sim, f.gateway, coordinator.Options{Latency: time.Hour})
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			const sql = "INSERT INTO t SELECT 1"
			req := "POST /v1/statement HTTP/1.1\r\nHost: gateway\r\n" + f.user + ": alice\r\nContent-Length: " +
				strconv.Itoa(len(sql)) + "\r\n\r\n" + sql
			if _, err := conn.Write([]byte(req)); err != nil {
				t.Fatal(err)
			}
			if _, err := bufio.NewReader(conn).ReadByte(); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			waitIdle(t, g)
			if c.Statements() != 2 {
				t.Fatalf("%d statements reached the coordinator, want 2", c.Statements())
			}
			if running, queued := c.Load(); running != 0 || queued != 0 {
				t.Fatalf("Load() = %d, %d after the client left unread: its query was dispatched", running, queued)
			}
			for _, call := range c.Calls() {
				if call.Method == http.MethodGet && strings.HasPrefix(call.Path, "/v1/statement/queued/") && call.QueryID != c.Requests()[0].QueryID {
					t.Errorf("the gateway fetched %s for a client that never asked", call.Path)
				}
			}
		})
	}
}

// A client that cancels its statement before its first GET: the query
// never starts, as without the gateway (the coordinator dispatches a
// query at the first GET of its queued nextUri, and a DELETE there ends
// it before).
func TestCancelBeforeFirstGETNeverStarts(t *testing.T) {
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			c, _, base := provenGateway(t, f.sim, f.gateway, coordinator.Options{Latency: time.Hour})
			answer := post(t, base, "INSERT INTO t SELECT 1")
			if running, _ := c.Load(); running != 0 {
				t.Fatalf("%d queries dispatched before the client's first GET, want 0", running)
			}
			next := answer["nextUri"].(string)
			if code, body := do(t, http.MethodDelete, next); code != http.StatusNoContent {
				t.Fatalf("DELETE of the nextUri: %d %v, want 204", code, body)
			}
			code, page := do(t, http.MethodGet, next)
			if name := failedPageError(code, page); name != "USER_CANCELED" {
				t.Fatalf("GET after the cancel: %d %v, want USER_CANCELED", code, page)
			}
			if running, queued := c.Load(); running != 0 || queued != 0 {
				t.Fatalf("Load() = %d, %d after the cancel", running, queued)
			}
			for _, call := range c.Calls() {
				if strings.HasPrefix(call.Path, "/v1/statement/executing/") && call.QueryID == answer["id"] {
					t.Fatalf("the cancelled query reached the executing resource: %+v", call)
				}
			}
		})
	}
}

// Where the gateway still makes the first GET (a coordinator it has not
// seen dispatch), the GET carries what a client's GET carries: not the
// session nor the prepared statements of the POST, which may be
// megabytes.
func TestGatewaysFirstGETCarriesNoSession(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, _ := staticGateway(t, gateway.Config{}, c.Addr())
	base := serveGateway(t, g).URL
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/statement", strings.NewReader("SELECT 1"))
	req.Header.Set("X-Presto-User", "alice")
	req.Header.Set("X-Presto-Session", "query_max_run_time=1h")
	req.Header.Set("X-Presto-Prepared-Statement", "big="+strings.Repeat("x", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var gets int
	for _, call := range c.Calls() {
		if call.Method != http.MethodGet || !strings.HasPrefix(call.Path, "/v1/statement/queued/") {
			continue
		}
		gets++
		if call.PrestoHeaders != 1 || call.HeaderBytes > 4<<10 {
			t.Errorf("the gateway's GET of %s carried %d X-Presto headers, %d bytes of header; want the user's alone", call.Path, call.PrestoHeaders, call.HeaderBytes)
		}
	}
	if gets == 0 {
		t.Fatal("the gateway made no GET of a coordinator it had not seen dispatch")
	}
}

// A coordinator the gateway has seen dispatch loses that standing when it
// fails: restarted and starting, it is checked again, and the statements
// that reach it while it starts go to the other coordinator, none failed.
// (Ejections end at once here, so that the restarted coordinator is
// picked.)
func TestRestartedCoordinatorIsCheckedAgain(t *testing.T) {
	coords, err := coordinator.StartFleet(2, coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]discovery.Node, len(coords))
	for i, c := range coords {
		t.Cleanup(func() { c.Close() })
		nodes[i] = discovery.Node{Addr: c.Addr()}
	}
	r, err := routing.New(routing.Config{
		Discoverer: discovery.NewStatic("static:test", nodes),
		Strategy:   strategy.Named("poll"),
		Health:     health.Policy{BaseEjection: time.Nanosecond, MaxEjection: time.Nanosecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	g, err := gateway.New(gateway.Config{Router: r, Keys: testKeys, StandardTransport: standardTransport})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	base := serveGateway(t, g).URL
	run := func(what string, n int) {
		t.Helper()
		for i := range n {
			if rows, err := statementRows(base, "SELECT 1", nil, nil); err != nil || rows != 1 {
				t.Fatalf("statement %d %s: %d rows, %v", i, what, rows, err)
			}
		}
	}
	run("before the restart", 4)
	coords[0].Stop()
	run("while c1 is down", 4)
	if err := coords[0].Restart(); err != nil {
		t.Fatal(err)
	}
	coords[0].SetStarting(true)
	before := coords[0].Statements()
	run("while c1 starts", 8)
	if coords[0].Statements() == before {
		t.Fatal("no statement reached the starting coordinator: the test shows nothing")
	}
}
