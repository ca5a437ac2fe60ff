package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// A query's infoUri leads the browser to the coordinator's web UI: at the
// address its registration gives (discovery.MetadataWebUI), else at the
// coordinator's own.
func TestInfoURIRedirectsToTheRegisteredWebUI(t *testing.T) {
	for _, tc := range []struct {
		name, webUI, want string
	}{
		{"registered", "https://presto-ui.example.com/cluster1/", "https://presto-ui.example.com/cluster1/ui/"},
		{"not registered", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := coordinator.Start(coordinator.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			node := discovery.Node{Addr: c.Addr()}
			if tc.webUI != "" {
				node.Metadata = map[string]string{discovery.MetadataWebUI: tc.webUI}
			}
			r, err := routing.New(routing.Config{Discoverer: discovery.NewStatic("static", []discovery.Node{node})})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			g, err := gateway.New(gateway.Config{Router: r, Keys: testKeys})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			srv := serveGateway(t, g)
			_, answer := submit(t, srv.URL, "alice", "webui-test")
			info, _ := answer["infoUri"].(string)
			if !strings.HasPrefix(info, srv.URL+"/_zk/") {
				t.Fatalf("infoUri %q is not the gateway's", info)
			}
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := client.Get(info)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := tc.want
			if want == "" {
				want = "http://" + c.Addr() + "/ui/"
			}
			if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, want) || !strings.Contains(loc, answer["id"].(string)) {
				t.Fatalf("infoUri answered %d, Location %q; want a redirect under %s for the query", resp.StatusCode, loc, want)
			}
		})
	}
}
