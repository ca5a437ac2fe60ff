package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// PrestoDB's queued resource answers the executing resource's first page
// once the query is dispatched, rows included (the simulator as the server:
// interop/realservers TestDifferentialFirstGetCarriesRows). Through the
// gateway no row of that page is lost, whoever makes the first GET: the
// gateway itself, on a coordinator it has not seen dispatch, whose page
// then comes as the POST's answer, or whose end it leaves to the client's
// own GET; or the client, its GET relayed. Each statement reached the
// coordinator once, and its first page came from the queued resource, also
// one larger than the gateway reads whole.
func TestRowsOnThePrestoFirstGETReachTheClient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sql    string
		rows   int
		proven bool
	}{
		{"the gateway's first GET, the page pointing on", "SELECT * FROM rows(5)", 5, false},
		{"the gateway's first GET, the page the last", "SELECT * FROM rows(2)", 2, false},
		// More than the gateway reads whole (maxQueuedAnswer): the client's own
		// GET of the same token gets it again.
		{"the gateway's first GET, a page larger than it reads", "SELECT * FROM bigrows(4, 1048576)", 4, false},
		{"the client's first GET, the page pointing on", "SELECT * FROM rows(5)", 5, true},
		{"the client's first GET, the page the last", "SELECT * FROM rows(2)", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := coordinator.Start(coordinator.Options{Flavour: coordinator.Presto, BatchRows: 3})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			g, _ := staticGateway(t, gateway.Config{}, c.Addr())
			base := serveGateway(t, g).URL
			if tc.proven {
				if n, err := statementRowsInOrder(t, base, "SELECT * FROM rows(1)"); err != nil || n != 1 {
					t.Fatalf("the statement that proves the coordinator: %d rows, %v", n, err)
				}
			}
			sql := tc.sql
			if n, err := statementRowsInOrder(t, base, sql); err != nil || n != tc.rows {
				t.Fatalf("%s: %d rows, %v; want %d", sql, n, err, tc.rows)
			}
			var id string
			for _, r := range c.Requests() {
				if r.SQL == sql {
					if id != "" {
						t.Fatalf("%s reached the coordinator twice", sql)
					}
					id = r.QueryID
				}
			}
			if id == "" {
				t.Fatalf("%s never reached the coordinator", sql)
			}
			for _, call := range c.Calls() {
				if call.QueryID == id && strings.HasSuffix(call.Path, "/executing/"+id+"/0") {
					t.Errorf("%s: the executing resource's first page was asked for (%s %s), want it from the queued resource", sql, call.Method, call.Path)
				}
			}
			var queuedGets int
			for _, call := range c.Calls() {
				if call.QueryID == id && call.Method == http.MethodGet && strings.Contains(call.Path, "/queued/") {
					queuedGets++
				}
			}
			if queuedGets == 0 {
				t.Fatalf("%s: no GET of the queued resource", sql)
			}
		})
	}
}
