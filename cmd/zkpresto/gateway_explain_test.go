package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// zkpresto gateway --explain says what two replicas of the gateway do with
// each request of a table: the group and its coordinator, or the refusal.
func TestGatewayExplainAgreesWithTheGateway(t *testing.T) {
	cs := startFleet(t, 4, coordinator.Options{})
	config := filepath.Join(t.TempDir(), "router-config.json")
	text := `{
  "groups": [
    {"name": "etl", "members": ["` + cs[0].URL() + `"], "weight": 0},
    {"name": "bi", "members": ["` + cs[1].URL() + `"], "weight": 0},
    {"name": "ddl", "members": ["` + cs[2].URL() + `"], "weight": 0},
    {"name": "rest", "members": ["` + cs[3].URL() + `"]}
  ],
  "selectors": [
    {"statementKind": ["DDL"], "targetGroup": "ddl"},
    {"user": "etl_.*", "targetGroup": "etl"},
    {"source": "superset", "clientTags": ["bi"], "targetGroup": "bi"},
    {"catalog": "hive", "schema": "sales", "targetGroup": "bi"},
    {"resourceEstimates": {"PEAK_MEMORY": ">=1TB"}, "targetGroup": "etl"},
    {"targetGroup": "rest"}
  ],
  "routingGroupHeader": {"source": "airflow"}
}`
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var fronts [2]*url.URL
	for i, r := range configReplicas(t, config, 2) {
		fronts[i], _ = url.Parse(r)
	}
	var next atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Each request to the other replica.
		u := *fronts[next.Add(1)%2]
		out, _ := http.NewRequestWithContext(r.Context(), r.Method, u.String()+r.URL.RequestURI(), r.Body)
		out.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(front.Close)

	type request struct {
		user, source, tags, sql string
		headers                 []string
	}
	for _, rq := range []request{
		{user: "etl_nightly", sql: "SELECT 1"},
		{user: "etl_nightly", sql: "create table t (a int)"},
		{user: "ann", source: "superset", tags: "x,bi", sql: "SELECT 1"},
		{user: "ann", source: "superset", sql: "SELECT 1"},
		{user: "ann", sql: "SELECT * FROM orders", headers: []string{"X-Trino-Catalog: hive", "X-Trino-Schema: sales"}},
		{user: "ann", sql: "SELECT * FROM hive.web.orders"},
		{user: "ann", sql: "SELECT 1", headers: []string{"X-Trino-Resource-Estimate: PEAK_MEMORY=2TB"}},
		{user: "ann", source: "airflow", sql: "SELECT 1", headers: []string{"X-Trino-Routing-Group: bi"}},
		{user: "ann", source: "airflow", sql: "SELECT 1", headers: []string{"X-Trino-Routing-Group: nope"}},
		{user: "ann", sql: "SELECT 1", headers: []string{"X-Presto-Routing-Group: etl"}},
	} {
		args := []string{"gateway", "--config", config, "--explain", rq.sql, "--explain-user", rq.user, "--explain-source", rq.source, "--explain-tags", rq.tags}
		for _, h := range rq.headers {
			args = append(args, "--explain-header", h)
		}
		out, _, err := run(args, "")
		if err != nil {
			t.Fatalf("%v: %v", rq, err)
		}
		// What the gateway does.
		req, _ := http.NewRequest(http.MethodPost, front.URL+"/v1/statement", strings.NewReader(rq.sql))
		req.Header.Set("X-Trino-User", rq.user)
		for name, v := range map[string]string{"X-Trino-Source": rq.source, "X-Trino-Client-Tags": rq.tags} {
			if v != "" {
				req.Header.Set(name, v)
			}
		}
		for _, h := range rq.headers {
			name, v, _ := strings.Cut(h, ":")
			req.Header.Set(name, strings.TrimSpace(v))
		}
		before := make([]int64, len(cs))
		for i, c := range cs {
			before[i] = c.Statements()
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		did := fmt.Sprintf("refused: %d", resp.StatusCode)
		for i, c := range cs {
			if c.Statements() != before[i] {
				did = "coordinators: " + strings.TrimPrefix(c.URL(), "http://")
			}
		}
		if !strings.Contains(out, did+"\n") && !strings.Contains(out, did+" ") {
			t.Errorf("%+v: --explain says\n%s\nbut the gateway did %q (%d %s)", rq, out, did, resp.StatusCode, body)
		}
		cancelQuery(t, body)
	}
}

// cancelQuery cancels the query an answer started, if any.
func cancelQuery(t *testing.T, body []byte) {
	t.Helper()
	i := strings.Index(string(body), `"nextUri":"`)
	if i < 0 {
		return
	}
	rest := string(body[i+len(`"nextUri":"`):])
	uri := rest[:strings.IndexByte(rest, '"')]
	req, _ := http.NewRequest(http.MethodDelete, uri, nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

// configReplicas starts n gateways in process from the router config
// file config, as n replicas of one deployment, until t ends, and returns
// their URLs.
func configReplicas(t *testing.T, config string, n int) []string {
	t.Helper()
	urls := make([]string, n)
	for i := range n {
		gs, err := gateway.LoadConfig(config, gateway.BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gw, err := gateway.New(gateway.Config{Groups: gs, Keys: gatewayTestSecret})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(gw)
		t.Cleanup(func() {
			srv.Close()
			gw.Close()
		})
		urls[i] = srv.URL
	}
	return urls
}
