package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/metrics"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

func nodesDSN(ensemble, namespace string) string {
	return "presto://" + ensemble + "/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=" + namespace
}

func TestNodesListsWhatRegisterWrote(t *testing.T) {
	zks := zkserver.StartT(t)
	cs := startCoordinators(t, 2)
	observer := fleet.DialT(t, zks.Addr())
	start(t, "register", "--zookeeper", zks.Addr(), "--advertise", cs[0].URL(), "--weight", "3", "--zone", "eu-1", "--interval", "50ms")
	start(t, "register", "--zookeeper", zks.Addr(), "--advertise", cs[1].URL(), "--interval", "50ms")
	eventually(t, "two registrations", func() bool { return len(registrations(t, observer, "/presto")) == 2 })

	// Two more coordinators written by hand as plain host:port children: one
	// starting, one stopped, for the health column.
	starting, err := coordinator.Start(coordinator.Options{Starting: true})
	if err != nil {
		t.Fatal(err)
	}
	defer starting.Close()
	stopped, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stopped.Close()
	for _, c := range []*coordinator.Coordinator{starting, stopped} {
		if _, err := observer.Create("/presto/"+c.Addr(), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if err := stopped.Stop(); err != nil {
		t.Fatal(err)
	}

	dsn := nodesDSN(zks.Addr(), "presto")
	out, _, err := run([]string{"nodes", "--dsn", dsn, "--probe"}, "")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !regexp.MustCompile(`^ADDRESS\s+FORMAT\s+WEIGHT\s+ZONE\s+VERSION\s+ID\s+READY\s+HEALTH$`).MatchString(lines[0]) {
		t.Fatalf("nodes printed:\n%s", out)
	}
	want := map[string]*regexp.Regexp{
		cs[0].Addr():    regexp.MustCompile(`^http://` + regexp.QuoteMeta(cs[0].Addr()) + `\s+zkpresto\s+3\s+eu-1\s+0\.289\s+serverUri=` + regexp.QuoteMeta(cs[0].Addr()) + `;version=0\.289;sequence=\d{10}\s+yes\s+up$`),
		cs[1].Addr():    regexp.MustCompile(`^http://` + regexp.QuoteMeta(cs[1].Addr()) + `\s+zkpresto\s+1\s+-\s+0\.289\s+\S+\s+yes\s+up$`),
		starting.Addr(): regexp.MustCompile(`^http://` + regexp.QuoteMeta(starting.Addr()) + `\s+hostport\s+1\s+-\s+-\s+\S+\s+yes\s+starting$`),
		stopped.Addr():  regexp.MustCompile(`^http://` + regexp.QuoteMeta(stopped.Addr()) + `\s+hostport\s+1\s+-\s+-\s+\S+\s+yes\s+down$`),
	}
	for addr, re := range want {
		found := false
		for _, l := range lines[1:] {
			found = found || re.MatchString(l)
		}
		if !found {
			t.Errorf("no line for %s matching %s in:\n%s", addr, re, out)
		}
	}

	// JSON, with the DSN from the environment.
	t.Setenv("ZKPRESTO_DSN", dsn)
	out, _, err = run([]string{"nodes", "--json"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var rows []nodeRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("nodes --json printed %q: %v", out, err)
	}
	if len(rows) != 4 {
		t.Fatalf("nodes --json listed %d nodes:\n%s", len(rows), out)
	}
	for _, r := range rows {
		if r.Address == cs[0].Addr() && (r.Format != "zkpresto" || r.Weight != 3 || r.Zone != "eu-1" || r.Version != "0.289" || r.Health != "" || !r.Ready) {
			t.Errorf("JSON row %+v", r)
		}
	}

	// An operator's drain shows in READY, and so does its end.
	readyOf := func(addr string) string {
		out, _, err := run([]string{"nodes"}, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 6 && strings.HasSuffix(f[0], "//"+addr) {
				return f[6]
			}
		}
		return ""
	}
	if out, errOut, err := run([]string{"drain", "--zookeeper", zks.Addr(), cs[1].URL()}, ""); err != nil || !strings.HasPrefix(out, "drained "+cs[1].URL()) {
		t.Fatalf("drain: %q %q %v", out, errOut, err)
	}
	eventually(t, "READY no:drained", func() bool { return readyOf(cs[1].Addr()) == "no:drained" })
	if got := readyOf(cs[0].Addr()); got != "yes" {
		t.Errorf("the other coordinator's READY is %q", got)
	}
	if _, _, err := run([]string{"undrain", "--zookeeper", zks.Addr(), cs[1].Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "READY yes again", func() bool { return readyOf(cs[1].Addr()) == "yes" })
}

func TestNodesWatchFollowsChanges(t *testing.T) {
	zks := zkserver.StartT(t)
	cs := startCoordinators(t, 2)
	observer := fleet.DialT(t, zks.Addr())
	start(t, "register", "--zookeeper", zks.Addr(), "--advertise", cs[0].URL(), "--interval", "50ms")
	second := start(t, "register", "--zookeeper", zks.Addr(), "--advertise", cs[1].URL(), "--interval", "50ms")
	eventually(t, "two registrations", func() bool { return len(registrations(t, observer, "/presto")) == 2 })

	watch := start(t, "nodes", "--dsn", nodesDSN(zks.Addr(), "presto"), "--watch", "--json", "--interval", "20ms")
	prints := func() [][]nodeRow {
		var all [][]nodeRow
		for _, line := range strings.Split(strings.TrimSpace(watch.out.String()), "\n") {
			var rows []nodeRow
			if line != "" && json.Unmarshal([]byte(line), &rows) == nil {
				all = append(all, rows)
			}
		}
		return all
	}
	eventually(t, "a first print with two nodes", func() bool { p := prints(); return len(p) == 1 && len(p[0]) == 2 })

	if err := second.stop(t); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a second print with one node", func() bool { p := prints(); return len(p) == 2 && len(p[1]) == 1 })
	if got := prints()[1][0].Address; got != cs[0].Addr() {
		t.Errorf("after the second left, watch shows %s", got)
	}
	// stderr said so, once, in words, with where it looked.
	left := []string{"level=INFO", `msg="coordinator left"`, "node=" + cs[1].Addr(), "ensemble=" + zks.Addr(), "path=/presto"}
	eventually(t, "the line saying the second left", func() bool { return countLines(watch.errOut.String(), left...) == 1 })
	if err := watch.stop(t); err != nil {
		t.Fatalf("interrupted --watch returned %v", err)
	}
	if n := len(prints()); n != 2 {
		t.Errorf("watch printed %d times for two states:\n%s", n, watch.out.String())
	}
}

func TestNodesJoinsUsageFromMetrics(t *testing.T) {
	zks := zkserver.StartT(t)
	cs := startCoordinators(t, 2)
	observer := fleet.DialT(t, zks.Addr())
	for _, c := range cs {
		if _, err := observer.Create("/presto", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
		if _, err := observer.Create("/presto/"+c.Addr(), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	// An application exporting zkpresto's driver metrics, busy on cs[0] only.
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDriverCollector(metrics.StatsFunc(func() routing.Stats {
		return routing.Stats{Nodes: []routing.NodeStats{{Node: discovery.Node{Addr: cs[0].Addr()}, Picks: 17, Failures: 2, InFlight: 4}}}
	})))
	app := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer app.Close()

	out, _, err := run([]string{"nodes", "--dsn", nodesDSN(zks.Addr(), "presto"), "--metrics", app.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^ADDRESS.*HEALTH\s+PICKS\s+FAILURES\s+INFLIGHT$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^http://`+regexp.QuoteMeta(cs[0].Addr())+`\s.*\s17\s+2\s+4$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^http://`+regexp.QuoteMeta(cs[1].Addr())+`\s.*\s-\s+-\s+-$`).MatchString(out) {
		t.Errorf("nodes --metrics printed:\n%s", out)
	}

	// An endpoint without the driver's series is an error, not silence.
	other := httptest.NewServer(promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{}))
	defer other.Close()
	_, _, err = run([]string{"nodes", "--dsn", nodesDSN(zks.Addr(), "presto"), "--metrics", other.URL}, "")
	if err == nil || !strings.Contains(err.Error(), "no zkpresto_driver_* series") {
		t.Fatalf("an endpoint without driver metrics: %v", err)
	}
}

func TestNodesExplainsAnEmptyList(t *testing.T) {
	zks := zkserver.StartT(t)
	out, errOut, err := run([]string{"nodes", "--dsn", nodesDSN(zks.Addr(), "nobody/here")}, "")
	if err == nil || !strings.Contains(err.Error(), "no usable coordinator") {
		t.Fatalf("an empty list: got %v, want a failure", err)
	}
	if strings.TrimSpace(out) != strings.TrimSpace(strings.Split(out, "\n")[0]) || !strings.HasPrefix(out, "ADDRESS") {
		t.Errorf("stdout should be the header alone:\n%s", out)
	}
	if !strings.Contains(errOut, "no coordinators in") || !strings.Contains(errOut, zks.Addr()) ||
		!strings.Contains(errOut, "/nobody/here does not exist") {
		t.Errorf("stderr %q does not explain the empty list", errOut)
	}
}

func TestNodesNamesTheSkippedRegistrations(t *testing.T) {
	zks := zkserver.StartT(t)
	conn := fleet.DialT(t, zks.Addr())
	for _, p := range []string{"/presto", "/presto/garbage"} {
		if _, err := conn.Create(p, []byte("{not a registration"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut, err := run([]string{"nodes", "--dsn", nodesDSN(zks.Addr(), "presto")}, "")
	if err == nil || !strings.Contains(err.Error(), "no usable coordinator") {
		t.Fatalf("got %v, want a failure", err)
	}
	if !strings.Contains(errOut, "1 registration skipped in") || !regexp.MustCompile(`\n  garbage: \S`).MatchString(errOut) {
		t.Errorf("stderr %q does not name the skipped registration and why", errOut)
	}
	// --log-level shows the driver's own logs too.
	_, errOut, _ = run([]string{"nodes", "--dsn", nodesDSN(zks.Addr(), "presto"), "--log-level", "warn"}, "")
	if !strings.Contains(errOut, "level=WARN") {
		t.Errorf("--log-level warn logged nothing: %q", errOut)
	}

	// With --probe, listed coordinators that are all down are not usable.
	stopped := startCoordinators(t, 1)[0]
	if _, err := conn.Create("/presto/"+stopped.Addr(), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := stopped.Stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the registration", func() bool {
		out, _, _ := run([]string{"nodes", "--dsn", nodesDSN(zks.Addr(), "presto")}, "")
		return strings.Contains(out, stopped.Addr())
	})
	if _, _, err := run([]string{"nodes", "--dsn", nodesDSN(zks.Addr(), "presto")}, ""); err != nil {
		t.Errorf("a listed coordinator without --probe: %v", err)
	}
	if _, _, err := run([]string{"nodes", "--dsn", nodesDSN(zks.Addr(), "presto"), "--probe", "--timeout", "2s"}, ""); err == nil || !strings.Contains(err.Error(), "none of the 1 listed is up") {
		t.Errorf("--probe with the only coordinator down: %v", err)
	}
}

func TestNodesRejectsBadSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nodes"}, "--zookeeper HOSTS (or $ZKPRESTO_ZOOKEEPER), or --dsn"},
		{[]string{"nodes", "--dsn", "mysql://x"}, "presto"},
		{[]string{"nodes", "--dsn", "presto://127.0.0.1:1", "--interval", "0s"}, "--interval"},
	} {
		_, _, err := run(tc.args, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// HEALTH is ProbeInfo's verdict, including for the answers on which the
// probe used to differ from the health checker and the registrar.
func TestProbeHealthIsTheSharedVerdict(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer http.HandlerFunc
		want   string
	}{
		{"up", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"nodeVersion":{"version":"0.289"},"starting":false}`)
		}, "up"},
		{"starting", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"nodeVersion":{"version":"0.289"},"starting":true}`)
		}, "starting"},
		{"503", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) }, "down"},
		// http.DefaultClient used to follow this to an answer that is up.
		{"redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }, "down"},
		{"html", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html><body>proxy</body></html>") }, "down"},
		{"no starting, no version", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"coordinator":true}`) }, "down"},
		// Used to be down: a missing "starting" was never up here.
		{"no starting, a version", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"nodeVersion":{"version":"0.150"}}`)
		}, "up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/info" {
					fmt.Fprint(w, `{"nodeVersion":{"version":"0.289"},"starting":false}`)
					return
				}
				tc.answer(w, r)
			}))
			defer srv.Close()
			node := discovery.Node{Addr: strings.TrimPrefix(srv.URL, "http://"), Scheme: "http"}
			got := probeHealth(context.Background(), &node, 5*time.Second)
			verdict := wire.ProbeInfo(context.Background(), nil, srv.URL).Verdict.String()
			if got != tc.want || got != verdict {
				t.Errorf("HEALTH %q, ProbeInfo %q, want %q", got, verdict, tc.want)
			}
		})
	}
}

// --wait-for waits for registrars that have only just started, and says so
// when they do not all show up within --timeout.
func TestNodesWaitFor(t *testing.T) {
	zks := zkserver.StartT(t)
	cs := startCoordinators(t, 2)
	dsn := nodesDSN(zks.Addr(), "presto")
	for _, c := range cs {
		start(t, "register", "--zookeeper", zks.Addr(), "--advertise", c.URL())
	}
	// Right after the registrars start: no eventually here, the flag waits.
	out, errOut, err := run([]string{"nodes", "--dsn", dsn, "--probe", "--wait-for", "2"}, "")
	if err != nil || strings.Count(out, " up\n") != 2 {
		t.Fatalf("nodes --wait-for 2: %v\n%s%s", err, out, errOut)
	}
	began := time.Now()
	out, _, err = run([]string{"nodes", "--dsn", dsn, "--probe", "--wait-for", "3", "--timeout", "300ms"}, "")
	if err == nil || !strings.Contains(err.Error(), "2 usable coordinators after waiting 300ms for 3") {
		t.Fatalf("nodes --wait-for 3: %v", err)
	}
	if took := time.Since(began); took > 5*time.Second || strings.Count(out, " up\n") != 2 {
		t.Errorf("took %s and printed:\n%s", took, out)
	}
	if _, _, err := run([]string{"nodes", "--dsn", dsn, "--wait-for", "1", "--watch"}, ""); err == nil || !strings.Contains(err.Error(), "do not go together") {
		t.Errorf("--wait-for with --watch: %v", err)
	}
}

// countLines counts the lines of s that hold every one of parts.
func countLines(s string, parts ...string) int {
	n := 0
	for line := range strings.Lines(s) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

func TestNodesTakesTheEnsembleFromTheEnvironment(t *testing.T) {
	zks := zkserver.StartT(t)
	cs := startCoordinators(t, 1)
	observer := fleet.DialT(t, zks.Addr())
	for _, ns := range []string{"/presto", "/elsewhere"} {
		if _, err := observer.Create(ns, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := observer.Create("/elsewhere/"+cs[0].Addr(), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	// $ZKPRESTO_ZOOKEEPER alone, with --namespace.
	t.Setenv("ZKPRESTO_DSN", "")
	t.Setenv("ZKPRESTO_ZOOKEEPER", zks.Addr())
	out, _, err := run([]string{"nodes", "--namespace", "elsewhere"}, "")
	if err != nil || !strings.Contains(out, cs[0].Addr()) {
		t.Fatalf("nodes with $ZKPRESTO_ZOOKEEPER: %v\n%s", err, out)
	}
	// /presto is empty: the default namespace is read there.
	if _, errOut, err := run([]string{"nodes"}, ""); err == nil || !strings.Contains(errOut, zks.Addr()+"/presto") {
		t.Errorf("nodes with $ZKPRESTO_ZOOKEEPER and no namespace: %v, stderr %q", err, errOut)
	}
	// $ZKPRESTO_DSN says more, and wins when both are set (as dev.env sets them).
	t.Setenv("ZKPRESTO_DSN", nodesDSN(zks.Addr(), "elsewhere"))
	if out, _, err := run([]string{"nodes"}, ""); err != nil || !strings.Contains(out, cs[0].Addr()) {
		t.Errorf("nodes with both variables: %v\n%s", err, out)
	}
	// A flag on the command line wins over both.
	if out, _, err := run([]string{"nodes", "--zookeeper", zks.Addr(), "--namespace", "/elsewhere/"}, ""); err != nil || !strings.Contains(out, cs[0].Addr()) {
		t.Errorf("nodes --zookeeper: %v\n%s", err, out)
	}
	if _, _, err := run([]string{"nodes", "--zookeeper", zks.Addr(), "--dsn", nodesDSN(zks.Addr(), "x")}, ""); err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Errorf("nodes --zookeeper --dsn: %v, want them refused together", err)
	}
}

func TestNodesSaysTheStrategyFellBack(t *testing.T) {
	zks := zkserver.StartT(t)
	cs := startCoordinators(t, 1)
	observer := fleet.DialT(t, zks.Addr())
	if _, err := observer.Create("/presto", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := observer.Create("/presto/"+cs[0].Addr(), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := run([]string{"nodes", "--dsn", nodesDSN(zks.Addr(), "presto") + ";zooKeeperStrategy=weigthed"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "random (fallback for unknown 'weigthed'); did you mean weighted?") {
		t.Errorf("stderr %q does not say the strategy fell back", errOut)
	}
	_, errOut, err = run([]string{"nodes", "--dsn", nodesDSN(zks.Addr(), "presto") + ";zooKeeperStrategy=weighted"}, "")
	if err != nil || strings.Contains(errOut, "strategy") {
		t.Errorf("a known strategy: %v, stderr %q", err, errOut)
	}
}
