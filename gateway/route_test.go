package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

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
