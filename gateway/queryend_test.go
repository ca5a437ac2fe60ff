package gateway_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// outcomeGateway is a status gateway over one multi-page coordinator that
// registered a weight, a zone and a version.
func outcomeGateway(t *testing.T) *gatewayServer {
	t.Helper()
	c, err := coordinator.Start(coordinator.Options{BatchRows: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	nodes := []discovery.Node{{Addr: c.Addr(), Weight: 3, Zone: "eu-1", Version: "0.289"}}
	r, err := routing.New(routing.Config{Discoverer: discovery.NewStatic("static:"+c.Addr(), nodes), Strategy: strategy.Named("poll")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	g, err := gateway.New(gateway.Config{Router: r, Keys: testKeys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	mux := http.NewServeMux()
	mux.Handle("/", g)
	g.HandleStatus(mux)
	return serveGateway(t, mux)
}

// runOutcomes runs a finished, a failed and a cancelled statement through
// srv, by source.
func runOutcomes(t *testing.T, srv *gatewayServer) {
	t.Helper()
	db, err := sql.Open("presto", "presto://alice@"+strings.TrimPrefix(srv.URL, "http://")+"/hive?source=finished")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT * FROM rows(12)") // three pages
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	// A failure on a later page, and a cancel by DELETE of the nextUri.
	for _, tc := range []struct{ source, sql string }{{"failed", "SELECT * FROM rows(12) WHERE fail('boom on page 2')"}, {"cancelled", "SELECT * FROM sleep(5000)"}} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/statement", strings.NewReader(tc.sql))
		req.Header.Set("X-Presto-User", "alice")
		req.Header.Set("X-Presto-Source", tc.source)
		next := pageNext(t, req)
		if tc.source == "cancelled" {
			del, _ := http.NewRequest(http.MethodDelete, next, nil)
			resp, err := http.DefaultClient.Do(del)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			continue
		}
		for next != "" {
			get, _ := http.NewRequest(http.MethodGet, next, nil)
			next = pageNext(t, get)
		}
	}
}

// pageNext sends req and returns its answer's nextUri.
func pageNext(t *testing.T, req *http.Request) string {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		NextURI string `json:"nextUri"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	return page.NextURI
}

func TestStatusShowsEachStatementsOutcome(t *testing.T) {
	srv := outcomeGateway(t)
	runOutcomes(t, srv)
	st, _ := statusOf(t, srv.URL)
	g := st.Groups[0]
	bySource := map[string]gateway.StatementRecord{}
	for _, rec := range g.Statements {
		bySource[rec.Source] = rec
	}
	if rec := bySource["finished"]; rec.Outcome != "finished" || rec.State != "FINISHED" || rec.ElapsedMillis <= 0 || rec.Ended.IsZero() || rec.Coordinator == "" || rec.ChosenBy != "weights" || rec.PickedBy != "" {
		t.Errorf("the finished statement: %+v", rec)
	}
	if rec := bySource["failed"]; rec.Outcome != "failed" || rec.ErrorName != "GENERIC_USER_ERROR" || rec.ElapsedMillis <= 0 {
		t.Errorf("the failed statement: %+v", rec)
	}
	if rec := bySource["cancelled"]; rec.Outcome != "cancelled" || rec.Ended.IsZero() {
		t.Errorf("the cancelled statement: %+v", rec)
	}
	c := g.Coordinators[0]
	if c.Weight != 3 || c.Zone != "eu-1" || c.Version != "0.289" {
		t.Errorf("the coordinator shows weight %d, zone %q, version %q", c.Weight, c.Zone, c.Version)
	}
	_, page := get(t, srv.URL+"/_zk/status")
	for _, want := range []string{">finished<", ">cancelled<", "GENERIC_USER_ERROR", ">eu-1<", ">0.289<", "Elapsed ms", "Chosen by", ">weights<"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the status page does not show %q", want)
		}
	}
}

// The page's script shows the same after its refresh, in a real browser.
func TestStatusOutcomesInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	testutil.RequireTool(t, "chromium", err)
	srv := outcomeGateway(t)
	runOutcomes(t, srv)
	dom := string(chromium(t, bin, srv.URL+"/_zk/status", "--dump-dom", "--virtual-time-budget=5000", "--window-size=1280,900"))
	for _, want := range []string{`data-live="1"`, ">finished<", ">failed<", ">cancelled<", "GENERIC_USER_ERROR", ">eu-1<", ">0.289<", ">3<", "Elapsed ms", "Chosen by", ">weights<"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the refreshed DOM does not show %q", want)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}
