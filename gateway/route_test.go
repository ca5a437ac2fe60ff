package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// prestoRouterExample is the etc/router-config.json of Presto Router's
// deployment guide (presto-docs router/deployment.rst), as it is: one
// group, and a selector without a condition, its catch-all.
const prestoRouterExample = `{
  "groups": [
    {
      "name": "all",
      "members": ["http://127.0.0.1:61381", "http://127.0.0.1:61382"],
      "weights": [1, 5]
    }
  ],
  "selectors": [
    {
      "targetGroup": "all"
    }
  ],
  "scheduler": "RANDOM_CHOICE",
  "predictor": "http://127.0.0.1:8000/v1"
}`

// replicas are two gateways routing by one router-config.json behind a
// front that sends each request to the other one, as a load balancer
// over replicas may.
type replicas struct {
	front    string
	gateways [2]*gateway.Gateway
	hits     [2]atomic.Int64
}

// configReplicas serves two replicas of the config text, each with groups
// of its own, as two processes reading one file would have.
func configReplicas(t *testing.T, text string, opts gateway.BuildOptions) *replicas {
	t.Helper()
	file := writeConfig(t, "", text)
	rs := &replicas{}
	var fronts [2]*url.URL
	for i := range 2 {
		gs, err := gateway.LoadConfig(file, opts)
		if err != nil {
			t.Fatal(err)
		}
		gw, err := gateway.New(gateway.Config{Groups: gs, Keys: testKeys, Logger: opts.Logger})
		if err != nil {
			t.Fatal(err)
		}
		hits := &rs.hits[i]
		srv := serveGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			gw.ServeHTTP(w, r)
		}))
		t.Cleanup(func() {
			srv.Close()
			gw.Close()
		})
		rs.gateways[i] = gw
		fronts[i], _ = url.Parse(srv.URL)
	}
	var next atomic.Int64
	front := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(fronts[next.Add(1)%2])
		pr.Out.Host = pr.In.Host
	}})
	t.Cleanup(front.Close)
	rs.front = front.URL
	return rs
}

// delta runs fn and returns how many statements each coordinator got
// meanwhile.
func delta(cs []*coordinator.Coordinator, fn func()) string {
	before := statements(cs)
	fn()
	got := statements(cs)
	for i := range got {
		got[i] -= before[i]
	}
	return fmt.Sprint(got)
}

// Presto Router's documented router-config.json loads as it is.
func TestPrestoRouterExampleLoads(t *testing.T) {
	c, err := gateway.ParseRouterConfig("router-config.json", []byte(prestoRouterExample), nil)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := gateway.BuildGroups(c, gateway.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	if n := len(gs.Groups()); n != 1 {
		t.Fatalf("%d groups, want 1", n)
	}
}

// Presto Router's documented example routes every statement to its one
// group through its catch-all, through two replicas; with a selector before
// the catch-all, what that selector does not claim goes where the catch-all
// says, not by the groups' weights.
func TestCatchAllSelectorRoutesTheRest(t *testing.T) {
	cs := startCoordinators(t, 3)
	example := strings.NewReplacer("http://127.0.0.1:61381", cs[0].URL(), "http://127.0.0.1:61382", cs[1].URL()).Replace(prestoRouterExample)
	rs := configReplicas(t, example, gateway.BuildOptions{})
	got := delta(cs, func() {
		for range 6 {
			runStatement(t, rs.front, "SELECT 1", nil, nil)
		}
	})
	var claimed int64
	for _, c := range cs[:2] {
		claimed += c.Statements()
	}
	if claimed != 6 || cs[2].Statements() != 0 {
		t.Errorf("statements per coordinator %s, want all 6 on the group's two", got)
	}
	if rs.hits[0].Load() == 0 || rs.hits[1].Load() == 0 {
		t.Errorf("requests per replica %d/%d: both should have served", rs.hits[0].Load(), rs.hits[1].Load())
	}

	rs = configReplicas(t, `{
  "groups": [
    {"name": "etl", "members": ["`+cs[2].URL()+`"], "weight": 5},
    {"name": "all", "members": ["`+cs[0].URL()+`"]}
  ],
  "selectors": [
    {"user": "etl_.*", "targetGroup": "etl"},
    {"targetGroup": "all"}
  ]
}`, gateway.BuildOptions{})
	got = delta(cs, func() {
		for _, user := range []string{"etl_a", "bob", "carol", "etl_b", "dave"} {
			runStatement(t, rs.front, "SELECT 1", map[string]string{"X-Presto-User": user}, nil)
		}
	})
	if got != "[3 0 2]" {
		t.Errorf("statements per coordinator %s, want [3 0 2]: etl's users to etl, the rest by the catch-all", got)
	}
}

// postStatement sends one statement and reads the answer to its POST,
// paging to the end when it is a query; it returns the POST's status and
// body.
func postStatement(t *testing.T, base, sql string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/statement", strings.NewReader(sql))
	req.Header.Set("X-Presto-User", "nobody")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The rest of the query, so that none is left running.
	var page struct {
		NextURI string `json:"nextUri"`
	}
	for next := b; json.Unmarshal(next, &page) == nil && page.NextURI != ""; {
		resp, err := http.Get(page.NextURI)
		if err != nil {
			t.Fatal(err)
		}
		next, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		page.NextURI = ""
	}
	return resp.StatusCode, string(b)
}

// A request names its group with X-Trino-Routing-Group or
// X-Presto-Routing-Group where the config lets its user or source; any
// other such request, or one naming no group, fails and runs nowhere.
func TestRoutingGroupHeader(t *testing.T) {
	cs := startCoordinators(t, 2)
	rs := configReplicas(t, `{
  "groups": [
    {"name": "a", "members": ["`+cs[0].URL()+`"]},
    {"name": "b", "members": ["`+cs[1].URL()+`"], "weight": 0}
  ],
  "selectors": [{"user": "bob", "targetGroup": "a"}],
  "routingGroupHeader": {"user": "etl_.*", "source": "airflow"}
}`, gateway.BuildOptions{})
	for _, tc := range []struct {
		header map[string]string
		want   string
	}{
		{map[string]string{"X-Presto-User": "etl_x", "X-Trino-Routing-Group": "b"}, "[0 4]"},
		{map[string]string{"X-Presto-User": "bob", "X-Presto-Source": "airflow", "X-Presto-Routing-Group": "b"}, "[0 4]"},
		{map[string]string{"X-Presto-User": "etl_x"}, "[4 0]"},
	} {
		if got := delta(cs, func() {
			for range 4 {
				runStatement(t, rs.front, "SELECT 1", tc.header, nil)
			}
		}); got != tc.want {
			t.Errorf("%v: statements per coordinator %s, want %s", tc.header, got, tc.want)
		}
	}
	for _, tc := range []struct {
		header map[string]string
		status int
		want   string
	}{
		{map[string]string{"X-Presto-User": "bob", "X-Trino-Routing-Group": "b"}, http.StatusForbidden, `user \"bob\" (source \"\") may not choose a routing group`},
		{map[string]string{"X-Presto-User": "etl_x", "X-Trino-Routing-Group": "c"}, http.StatusBadRequest, `no routing group named \"c\" (groups: a, b)`},
	} {
		var status int
		var body string
		if got := delta(cs, func() { status, body = postStatement(t, rs.front, "SELECT 1", tc.header) }); got != "[0 0]" {
			t.Errorf("%v: statements per coordinator %s, want none", tc.header, got)
		}
		if status != tc.status || !strings.Contains(body, tc.want) || !strings.Contains(body, "ZKPRESTO_ROUTING_GROUP") {
			t.Errorf("%v: %d %s, want %d and %s", tc.header, status, body, tc.status, tc.want)
		}
	}
}

// Selectors on the statement's kind, the tables it names, its client info,
// its resource estimates and the time of day route through two replicas
// as documented.
func TestSelectorsOnTheStatement(t *testing.T) {
	cs := startCoordinators(t, 6)
	var now atomic.Pointer[time.Time]
	noon := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	now.Store(&noon)
	rs := configReplicas(t, `{
  "groups": [
    {"name": "ddl", "members": ["`+cs[0].URL()+`"], "weight": 0},
    {"name": "orders", "members": ["`+cs[1].URL()+`"], "weight": 0},
    {"name": "big", "members": ["`+cs[2].URL()+`"], "weight": 0},
    {"name": "dbt", "members": ["`+cs[3].URL()+`"], "weight": 0},
    {"name": "night", "members": ["`+cs[4].URL()+`"], "weight": 0},
    {"name": "rest", "members": ["`+cs[5].URL()+`"]}
  ],
  "selectors": [
    {"statementKind": ["DDL", "ALTER_TABLE_EXECUTE"], "targetGroup": "ddl"},
    {"catalog": "hive", "table": "orders|lineitem", "targetGroup": "orders"},
    {"resourceEstimates": {"PEAK_MEMORY": ">=10GB"}, "targetGroup": "big"},
    {"clientInfo": ".*dbt.*", "statementKind": ["INSERT", "SELECT"], "targetGroup": "dbt"},
    {"timeOfDay": "22:00-06:00", "timeZone": "Europe/Berlin", "targetGroup": "night"}
  ]
}`, gateway.BuildOptions{Now: func() time.Time { return *now.Load() }})
	for _, tc := range []struct {
		sql    string
		header map[string]string
		want   string
	}{
		{"CREATE TABLE x (a int)", nil, "[1 0 0 0 0 0]"},
		{"/* dbt */ DROP VIEW v", map[string]string{"X-Trino-Client-Info": "dbt-trino"}, "[1 0 0 0 0 0]"},
		{"SELECT * FROM hive.sales.orders", nil, "[0 1 0 0 0 0]"},
		{"SELECT * FROM sales.Orders o JOIN x ON true", map[string]string{"X-Presto-Catalog": "hive"}, "[0 1 0 0 0 0]"},
		{"SELECT * FROM sales.orders", map[string]string{"X-Presto-Catalog": "iceberg"}, "[0 0 0 0 0 1]"},
		{"SELECT * FROM t", map[string]string{"X-Trino-Resource-Estimate": "EXECUTION_TIME=1m, PEAK_MEMORY=12GB"}, "[0 0 1 0 0 0]"},
		{"SELECT * FROM t", map[string]string{"X-Trino-Resource-Estimate": "PEAK_MEMORY=512MB"}, "[0 0 0 0 0 1]"},
		{"INSERT INTO t SELECT 1", map[string]string{"X-Presto-Client-Info": `{"app": "dbt"}`}, "[0 0 0 1 0 0]"},
		{"SHOW TABLES", map[string]string{"X-Presto-Client-Info": `{"app": "dbt"}`}, "[0 0 0 0 0 1]"},
		{"SELECT 1", nil, "[0 0 0 0 0 1]"},
	} {
		if got := delta(cs, func() { postStatement(t, rs.front, tc.sql, tc.header) }); got != tc.want {
			t.Errorf("%q %v: statements per coordinator %s, want %s", tc.sql, tc.header, got, tc.want)
		}
	}
	// 22:30 in Berlin is 21:30 UTC in March.
	late := time.Date(2025, 3, 1, 21, 30, 0, 0, time.UTC)
	now.Store(&late)
	if got := delta(cs, func() { postStatement(t, rs.front, "SELECT 1", nil) }); got != "[0 0 0 0 1 0]" {
		t.Errorf("at 22:30 in Berlin: statements per coordinator %s, want the night group's", got)
	}
}

// A routing key header makes consistent_hash send a dbt run's statements,
// whatever user runs them, to one coordinator, through either replica;
// without it the user is hashed.
func TestRoutingKeyHeader(t *testing.T) {
	cs := startCoordinators(t, 4)
	members := `"` + cs[0].URL() + `", "` + cs[1].URL() + `", "` + cs[2].URL() + `", "` + cs[3].URL() + `"`
	for _, tc := range []struct{ config, header string }{
		{`"scheduler": "CONSISTENT_HASH"`, gateway.DefaultRoutingKeyHeader},
		{`"scheduler": "CONSISTENT_HASH", "routingKeyHeader": "x-dbt-invocation-id"`, "X-Dbt-Invocation-Id"},
	} {
		rs := configReplicas(t, `{"groups": [{"name": "all", "members": [`+members+`]}], `+tc.config+`}`, gateway.BuildOptions{})
		for _, key := range []string{"run-1", "run-2", "run-3"} {
			var hit int
			got := delta(cs, func() {
				for i := range 8 {
					runStatement(t, rs.front, "SELECT 1", map[string]string{tc.header: key, "X-Presto-User": fmt.Sprint("u", i)}, nil)
				}
			})
			for _, n := range strings.Fields(strings.Trim(got, "[]")) {
				if n != "0" {
					hit++
				}
			}
			if hit != 1 {
				t.Errorf("%s %s: statements per coordinator %s, want all 8 on one", tc.header, key, got)
			}
		}
	}
}
