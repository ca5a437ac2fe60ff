package dsn

import (
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
)

// TestDSNWeightsMeetCuratorIPv6 checks that a coordinator that Apache
// Curator registered as 0:0:0:0:0:0:0:1 (Java's spelling) gets the weight
// a DSN gives to [::1], and that a static host list meets the same keys.
func TestDSNWeightsMeetCuratorIPv6(t *testing.T) {
	node, err := discovery.ParseZnode("3c9d2e1f-instance",
		[]byte(`{"name":"presto","id":"3c9d2e1f","address":"0:0:0:0:0:0:0:1","port":8080}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseDSN("presto://zk1;serviceDiscoveryMode=zooKeeper;weights=[::1]:8080=3")
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := cfg.Weights[node.Addr]; !ok || w != 3 {
		t.Errorf("Weights = %v, node %q: want weight 3 for the node", cfg.Weights, node.Addr)
	}

	static, err := ParseDSN("presto://[0:0:0:0:0:0:0:1]:8080,[::2];weights=[::1]:8080=3,[0::2]=2")
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]discovery.Node, len(static.Hosts))
	for i, h := range static.Hosts {
		nodes[i] = discovery.Node{Addr: h, Format: discovery.FormatStatic}
	}
	for _, n := range discovery.NewStatic(static.Ensemble(), nodes).Snapshot().Nodes {
		if _, ok := static.Weights[n.Addr]; !ok {
			t.Errorf("static node %q has no weight in %v", n.Addr, static.Weights)
		}
	}
}

func TestDSNCanonicalDuplicates(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"presto://[::1],[0:0:0:0:0:0:0:1]", `host "[::1]:8080" listed twice`},
		{"presto://c1,C1:8080", `host "c1:8080" listed twice`},
		{"presto://c1;weights=[::1]=1,[0::1]:8080=2", `bad weights: "[::1]:8080" listed twice`},
		{"presto://c1;weights=h=1,H:8080=2", `bad weights: "h:8080" listed twice`},
	} {
		if _, err := ParseDSN(tc.dsn); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDSN(%q) = %v, want an error containing %q", tc.dsn, err, tc.want)
		}
	}

	// A hand-built Config: a weight under another spelling would never apply.
	cfg := NewConfig()
	cfg.Hosts = []string{"[0:0:0:0:0:0:0:1]:8080"}
	cfg.Weights = map[string]int{"[0:0:0:0:0:0:0:1]:8080": 3}
	err := cfg.Validate()
	if want := `bad weights: address "[0:0:0:0:0:0:0:1]:8080" is not in canonical form: want "[::1]:8080"`; err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want %q", err, want)
	}
	cfg.Hosts = append(cfg.Hosts, "[::1]:8080")
	cfg.Weights = nil
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `host "[::1]:8080" listed twice`) {
		t.Errorf("Validate() = %v, want the host listed twice", err)
	}
}
