package dsn

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/strategy"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRoutingConfigCarriesTheDSN checks that what a DSN says about routing
// reaches the routing.Config, and what the caller chooses too.
func TestRoutingConfigCarriesTheDSN(t *testing.T) {
	cfg, err := ParseDSN("presto://zk1,zk2:2182;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=prod/presto" +
		";zooKeeperStrategy=consistent_hash;hashKey=source;hashLoadBound=1.5;retries=0;healthCheckInterval=5s" +
		";zone=eu-1;weights=c1:8080=3;zooKeeperAuth=digest:alice:s3cret;zooKeeperSessionTimeout=7s")
	if err != nil {
		t.Fatal(err)
	}
	probed := false
	check := func(context.Context, discovery.Node) error { probed = true; return nil }
	policy := health.Policy{ConsecutiveFailures: 5}
	rc := cfg.RoutingConfig(Options{Health: policy, Probe: check})
	switch {
	case rc.ZooKeeper == nil || rc.Discoverer != nil:
		t.Fatalf("ZooKeeper %v, Discoverer %v: want ZooKeeper discovery only", rc.ZooKeeper, rc.Discoverer)
	case rc.ZooKeeper.Path != "/prod/presto" || strings.Join(rc.ZooKeeper.Servers, ",") != "zk1:2181,zk2:2182":
		t.Errorf("ZooKeeper %s %v: want /prod/presto on zk1:2181,zk2:2182", rc.ZooKeeper.Path, rc.ZooKeeper.Servers)
	case rc.ZooKeeper.AuthScheme != "digest" || string(rc.ZooKeeper.Auth) != "alice:s3cret":
		t.Errorf("ZooKeeper credentials %q: want digest's", rc.ZooKeeper.AuthScheme)
	case rc.ZooKeeper.SessionTimeout != 7*time.Second:
		t.Errorf("session timeout %v, want 7s", rc.ZooKeeper.SessionTimeout)
	case strategy.NameOf(rc.Strategy(strategy.Options{})) != "consistent_hash" || rc.StrategyOptions.Zone != "eu-1" || rc.StrategyOptions.Config != strategy.ConsistentHashConfig{Key: strategy.HashBySource, LoadBound: 1.5}:
		t.Errorf("strategy %+v", rc.StrategyOptions)
	case rc.Retries != -1 || rc.HealthCheckInterval != 5*time.Second || rc.Weights["c1:8080"] != 3:
		t.Errorf("retries %d, health checks %v, weights %v", rc.Retries, rc.HealthCheckInterval, rc.Weights)
	case rc.Health != policy || rc.Probe == nil || rc.Probe(context.Background(), discovery.Node{}) != nil || !probed:
		t.Errorf("the caller's policy or probe did not arrive")
	}

	static, err := ParseDSN("presto://c1:8080,c2")
	if err != nil {
		t.Fatal(err)
	}
	rc = static.RoutingConfig(Options{})
	if rc.ZooKeeper != nil || rc.Discoverer == nil {
		t.Fatalf("a host list gives ZooKeeper %v, Discoverer %v: want the static list", rc.ZooKeeper, rc.Discoverer)
	}
	var addrs []string
	for _, n := range rc.Discoverer.Snapshot().Nodes {
		addrs = append(addrs, n.Addr)
	}
	if got := strings.Join(addrs, ","); got != "c1:8080,c2:8080" {
		t.Errorf("static nodes %s, want c1:8080,c2:8080", got)
	}
}

// TestOpenReportsFailedDials checks that a dial of Open's transport that
// fails counts against its coordinator, and that with a client of the
// caller's nothing is reported.
func TestOpenReportsFailedDials(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // refuses connections from now on
	cfg, err := ParseDSN("presto://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		opts   Options
		report bool
	}{
		{"own transport", Options{}, true},
		{"caller's client", Options{Client: &http.Client{Transport: &http.Transport{}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Open(cfg, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if (r.Transport != nil) != tc.report {
				t.Errorf("Transport %v, want one only when Open made it", r.Transport)
			}
			if err := r.Router.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			if resp, err := r.Client.Get("http://" + addr + "/v1/info"); err == nil {
				resp.Body.Close()
				t.Fatal("a GET of a closed port succeeded")
			}
			if got := r.Router.Health().State(addr).LastError != ""; got != tc.report {
				t.Errorf("failed dial reported: %v, want %v", got, tc.report)
			}
			if tc.opts.Client != nil {
				tc.opts.Client.CloseIdleConnections()
			}
		})
	}
}

// TestOpenRefusesBadConfigs checks that Open refuses what ParseDSN would,
// and TLS files it cannot read, before it opens anything.
func TestOpenRefusesBadConfigs(t *testing.T) {
	if _, err := Open(nil, Options{}); err == nil || err.Error() != "dsn: Open: nil Config" {
		t.Errorf("Open(nil) = %v", err)
	}
	cfg := NewConfig()
	cfg.Hosts = []string{"c1:8080"}
	cfg.SSLCA = filepath.Join(t.TempDir(), "missing.pem")
	_, err := Open(cfg, Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "dsn: TLS settings: failed to read CA certificate") {
		t.Errorf("Open with a missing ssl_ca = %v", err)
	}
	cfg.SSLCA, cfg.Hosts = "", []string{"c1:8080", "c1:8080"}
	if _, err := Open(cfg, Options{}); err == nil || err.Error() != `dsn: host "c1:8080" listed twice in host list "c1:8080,c1:8080"` {
		t.Errorf("Open with a host listed twice = %v", err)
	}
}

// TestOpenCopiesTheConfig checks that changing the Config after Open
// changes nothing the Routing uses.
func TestOpenCopiesTheConfig(t *testing.T) {
	cfg, err := ParseDSN("presto://c1:8080;weights=c1:8080=4")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cfg.Weights["c1:8080"] = 1
	cfg.Hosts[0] = "c9:8080"
	node, err := r.Router.Pick(context.Background(), &strategy.Request{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if node.Addr != "c1:8080" || node.Weight != 4 {
		t.Errorf("picked %s with weight %d, want c1:8080 with weight 4", node.Addr, node.Weight)
	}
}

// TestDialRace checks the dialRaceDelay in effect.
func TestDialRace(t *testing.T) {
	for _, tc := range []struct {
		race, dial, want time.Duration
	}{
		{0, 0, defaultDialRaceDelay},
		{time.Second, 0, time.Second},
		{5 * time.Second, 0, 0},        // the default dialTimeout: off
		{0, 300 * time.Millisecond, 0}, // below the default delay: off
		{time.Second, 2 * time.Second, time.Second},
	} {
		c := &Config{DialRaceDelay: tc.race, DialTimeout: tc.dial}
		if got := c.DialRace(); got != tc.want {
			t.Errorf("dialRaceDelay %v, dialTimeout %v: DialRace %v, want %v", tc.race, tc.dial, got, tc.want)
		}
	}
}

// TestImportersOfDSNDoNotImportTheDriver checks the layering: the gateway
// and metrics reach routing through this package and routing.Stats, never
// through the database/sql driver, and this package not at all.
func TestImportersOfDSNDoNotImportTheDriver(t *testing.T) {
	const module = "github.com/zkpresto/zkpresto/"
	for _, pkg := range []string{"dsn", "gateway", "metrics"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 2 || deps[len(deps)-1] != module+pkg {
			t.Fatalf("go list %s listed %d packages, not ending with it: %q", pkg, len(deps), out)
		}
		for _, dep := range deps {
			if dep == module+"driver" {
				t.Errorf("%s imports %s", pkg, dep)
			}
		}
	}
}
