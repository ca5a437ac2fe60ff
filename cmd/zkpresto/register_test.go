package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/registrar"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

const waitFor = 20 * time.Second

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, waitFor, 20*time.Millisecond, what, cond)
}

// running is a zkpresto command running in the background; the test may
// read its output while it runs.
type running struct {
	out, errOut *testutil.Buffer
	cancel      context.CancelFunc
	done        chan error
}

// start runs the zkpresto command line args until stop (or the test's end).
func start(t *testing.T, args ...string) *running {
	t.Helper()
	r := &running{out: &testutil.Buffer{}, errOut: &testutil.Buffer{}, done: make(chan error, 1)}
	cmd := newRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(r.out)
	cmd.SetErr(r.errOut)
	cmd.SetIn(strings.NewReader(""))
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// stop cancels the command and returns its error.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(waitFor):
		t.Fatal("the command did not stop")
		return nil
	}
}

// run runs a zkpresto command line to the end with stdin and returns its
// stdout, stderr and error.
func run(args []string, stdin string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := newRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetIn(strings.NewReader(stdin))
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// registrations returns the parsed children of path by address.
func registrations(t *testing.T, conn *zk.Conn, path string) map[string]discovery.Node {
	t.Helper()
	byName, err := fleet.Registrations(conn, path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]discovery.Node{}
	for _, n := range byName {
		out[n.Addr] = n
	}
	return out
}

func startCoordinators(t *testing.T, n int) []*coordinator.Coordinator {
	t.Helper()
	return startFleet(t, n, coordinator.Options{Version: "0.289"})
}

// startFleet starts n coordinators with opts (coordinator.StartFleet),
// closed when t ends.
func startFleet(t *testing.T, n int, opts coordinator.Options) []*coordinator.Coordinator {
	t.Helper()
	cs, err := coordinator.StartFleet(n, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	return cs
}

// addrsOf returns the coordinators' host:port addresses, in order.
func addrsOf(cs []*coordinator.Coordinator) []string {
	addrs := make([]string, len(cs))
	for i, c := range cs {
		addrs[i] = c.Addr()
	}
	return addrs
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestRegisterFollowsHealthServesMetricsAndDrainsOnSIGTERM(t *testing.T) {
	zks := zkserver.StartT(t)
	c := startCoordinators(t, 1)[0]
	observer := fleet.DialT(t, zks.Addr())
	t.Setenv("ZKPRESTO_NAMESPACE", "team/presto") // from the environment
	t.Setenv("ZKPRESTO_WEIGHT", "9")              // the flag wins
	t.Setenv("ZKPRESTO_ZONE", "eu-1")

	r := start(t, "register", "--zookeeper", zks.Addr(), "--advertise", c.URL(), "--weight", "2",
		"--interval", "50ms", "--metrics-addr", "127.0.0.1:0")

	eventually(t, "the registration", func() bool { return len(registrations(t, observer, "/team/presto")) == 1 })
	n := registrations(t, observer, "/team/presto")[c.Addr()]
	if n.Weight != 2 || n.Zone != "eu-1" || n.Version != "0.289" || n.Format != discovery.FormatZkpresto {
		t.Errorf("registered %+v", n)
	}

	var metricsAddr string
	eventually(t, "the metrics address in the log", func() bool {
		m := regexp.MustCompile(`msg="serving /metrics and /healthz" addr=(\S+)`).FindStringSubmatch(r.errOut.String())
		if m != nil {
			metricsAddr = m[1]
		}
		return m != nil
	})
	scrape := func() string {
		code, body := httpGet(t, "http://"+metricsAddr+"/metrics")
		if code != http.StatusOK {
			t.Fatalf("/metrics: %d %s", code, body)
		}
		return body
	}
	eventually(t, "registered 1 in /metrics", func() bool {
		return strings.Contains(scrape(), "\nzkpresto_registrar_registered 1\n")
	})
	if body := scrape(); !strings.Contains(body, "zkpresto_registrar_registrations_total 1") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics:\n%s", body)
	}
	if code, body := httpGet(t, "http://"+metricsAddr+"/healthz"); code != http.StatusOK || !strings.Contains(body, "registered=true") {
		t.Errorf("/healthz: %d %q", code, body)
	}

	marked := func(want string) func() bool {
		return func() bool {
			regs := registrations(t, observer, "/team/presto")
			return len(regs) == 1 && regs[c.Addr()].NotReady == want
		}
	}
	c.SetStarting(true)
	eventually(t, "the registration marked notready=starting", marked("starting"))
	eventually(t, "not ready in /metrics", func() bool {
		return strings.Contains(scrape(), "\nzkpresto_registrar_coordinator_not_ready{reason=\"starting\"} 1\n")
	})
	c.SetStarting(false)
	eventually(t, "the mark gone after recovery", marked(""))
	// Without workers (the default --min-workers 1).
	c.SetNoWorkers(true)
	eventually(t, "the registration marked notready=workers:0/1", marked("workers:0/1"))
	c.SetNoWorkers(false)
	eventually(t, "the mark gone with a worker back", marked(""))

	// SIGTERM reaches the command's signal handler, not the test binary's
	// default action: it is registered while the command runs.
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.done:
		r.done <- err
		if err != nil {
			t.Fatalf("register exited with %v after SIGTERM", err)
		}
	case <-time.After(waitFor):
		t.Fatal("register did not exit after SIGTERM")
	}
	if got := registrations(t, observer, "/team/presto"); len(got) != 0 {
		t.Errorf("after SIGTERM the registration is still there: %v", got)
	}
	if !strings.Contains(r.errOut.String(), "drained") {
		t.Errorf("log does not say it drained:\n%s", r.errOut.String())
	}
}

func TestRegisterWithDigestAuthNeverLogsTheSecret(t *testing.T) {
	zks := zkserver.StartT(t)
	c := startCoordinators(t, 1)[0]
	admin := fleet.DialT(t, zks.Addr())
	if err := admin.AddAuth("digest", []byte("presto:t0p-s3cret")); err != nil {
		t.Fatal(err)
	}
	acl := append(zk.DigestACL(zk.PermAll, "presto", "t0p-s3cret"), zk.WorldACL(zk.PermRead)...)
	if _, err := admin.Create("/secure", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ZKPRESTO_ZOOKEEPER_AUTH", "presto:t0p-s3cret")
	r := start(t, "register", "--zookeeper", zks.Addr(), "--namespace", "secure", "--advertise", c.URL(),
		"--interval", "50ms", "--log-level", "debug")
	eventually(t, "the registration", func() bool { return len(registrations(t, admin, "/secure")) == 1 })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if log := r.errOut.String(); strings.Contains(log, "t0p-s3cret") {
		t.Errorf("the log shows the password:\n%s", log)
	}

	// Without the credentials ZooKeeper refuses, and register says so.
	os.Unsetenv("ZKPRESTO_ZOOKEEPER_AUTH")
	_, _, err := run([]string{"register", "--zookeeper", zks.Addr(), "--namespace", "secure", "--advertise", c.URL(), "--interval", "50ms"}, "")
	if err == nil || !strings.Contains(err.Error(), "not authenticated") {
		t.Fatalf("without credentials: %v", err)
	}
}

func TestRegisterOverTLS(t *testing.T) {
	zkserver.Require(t)
	port, err := testtls.NewPort(t.TempDir(), "register")
	if err != nil {
		t.Fatal(err)
	}
	zks, err := zkserver.Start(zkserver.Options{Dir: t.TempDir(), ExtraConfig: port.Config})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zks.Close() })
	c := startCoordinators(t, 1)[0]
	observer := fleet.DialT(t, zks.Addr()) // the plain port, to look

	secure, files := port.Addr, port.Files
	r := start(t, "register", "--zookeeper", secure, "--advertise", c.URL(), "--interval", "50ms",
		"--zookeeper-tls-ca", files.CAFile, "--zookeeper-tls-cert", files.ClientCertFile, "--zookeeper-tls-key", files.ClientKeyFile)
	eventually(t, "the registration over TLS", func() bool { return len(registrations(t, observer, "/presto")) == 1 })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if got := registrations(t, observer, "/presto"); len(got) != 0 {
		t.Errorf("after stop: %v", got)
	}
}

// --web-ui is registered, and what discovery reads back says where the
// coordinator's web UI is.
func TestRegisterCarriesTheWebUIAddress(t *testing.T) {
	zks := zkserver.StartT(t)
	c := startCoordinators(t, 1)[0]
	observer := fleet.DialT(t, zks.Addr())
	start(t, "register", "--zookeeper", zks.Addr(), "--advertise", c.URL(), "--web-ui", "https://presto-ui.example.com/c1/", "--interval", "50ms")
	eventually(t, "the registration", func() bool { return len(registrations(t, observer, "/presto")) == 1 })
	n := registrations(t, observer, "/presto")[c.Addr()]
	if got := n.WebUI(); got != "https://presto-ui.example.com/c1" {
		t.Fatalf("registered %+v: web UI %q", n, got)
	}
}

func TestRegisterRejectsBadSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no zookeeper", []string{"register", "--advertise", "http://127.0.0.1:8080"}, nil, "--zookeeper"},
		{"no advertise", []string{"register", "--zookeeper", "127.0.0.1:2181"}, nil, "--advertise"},
		{"bad advertise", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "http://h/x"}, nil, "advertised URI"},
		{"advertise without scheme", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "10.0.0.5:8080"}, nil, "write http://10.0.0.5:8080"},
		{"bad env value", []string{"register"}, map[string]string{"ZKPRESTO_WEIGHT": "heavy"}, "$ZKPRESTO_WEIGHT=heavy"},
		{"bad env bool", []string{"register"}, map[string]string{"ZKPRESTO_ZOOKEEPER_TLS": "nope"}, "$ZKPRESTO_ZOOKEEPER_TLS=nope"},
		{"bad auth", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "http://127.0.0.1:8080", "--zookeeper-auth", "nocolon"}, nil, "user:password"},
		{"cert without key", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "http://127.0.0.1:8080", "--zookeeper-tls-cert", "c.pem"}, nil, "go together"},
		{"missing CA", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "http://127.0.0.1:8080", "--zookeeper-tls-ca", "/nonexistent/ca.pem"}, nil, "--zookeeper-tls-ca"},
		{"log level", []string{"register", "--log-level", "loud"}, nil, "--log-level"},
		{"metrics addr", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "http://127.0.0.1:8080", "--metrics-addr", "not-an-addr"}, nil, "--metrics-addr"},
		{"load source", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "http://127.0.0.1:8080", "--load-source", "jmx"}, nil, `load source "jmx"`},
		{"load user without source", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "http://127.0.0.1:8080", "--load-user", "u"}, nil, "need --load-source"},
		{"load threshold", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "http://127.0.0.1:8080", "--load-source", "trino", "--load-threshold", "0"}, nil, "--load-threshold 0"},
		{"load burst", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "http://127.0.0.1:8080", "--load-source", "trino", "--load-burst", "0"}, nil, "--load-burst 0"},
		{"load min gap", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "http://127.0.0.1:8080", "--load-source", "trino", "--load-min-gap", "0s"}, nil, "--load-min-gap 0s"},
		{"web UI not a URL", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "http://127.0.0.1:8080", "--web-ui", "ui.example.com"}, nil, `web UI "ui.example.com"`},
		{"web UI with a query", []string{"register", "--zookeeper", "127.0.0.1:2181", "--advertise", "http://127.0.0.1:8080", "--web-ui", "https://ui/?x=1"}, nil, "web UI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, _, err := run(tc.args, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestEveryCommandHasHelpWithExamples(t *testing.T) {
	for _, name := range []string{"register", "nodes", "query", "gateway"} {
		out, _, err := run([]string{name, "--help"}, "")
		if err != nil {
			t.Fatalf("%s --help: %v", name, err)
		}
		if !strings.Contains(out, "Examples:") || !strings.Contains(out, "zkpresto "+name) {
			t.Errorf("%s --help lacks examples:\n%s", name, out)
		}
	}
}

// With --load-source, register publishes the simulated coordinator's own
// running and queued counts in its znode, read with the given user.
func TestRegisterPublishesLoad(t *testing.T) {
	zks := zkserver.StartT(t)
	c, err := coordinator.Start(coordinator.Options{Version: "0.289", MaxRunning: 1, Latency: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	observer := fleet.DialT(t, zks.Addr())
	t.Setenv("ZKPRESTO_LOAD_PASSWORD", "l0ad-s3cret")
	r := start(t, "register", "--zookeeper", zks.Addr(), "--advertise", c.URL(), "--interval", "50ms",
		"--load-source", "presto", "--load-interval", "10ms", "--load-min-gap", "20ms", "--load-slots", "1",
		"--load-user", "monitor", "--log-level", "debug")
	eventually(t, "an idle coordinator's figure", func() bool {
		n, ok := registrations(t, observer, "/presto")[c.Addr()]
		return ok && n.Load.Known() && n.Load.Total() == 0 && n.Load.Slots == 1
	})
	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, c.URL()+"/v1/statement", strings.NewReader("SELECT 1"))
		req.Header.Set("X-Presto-User", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			NextURI string `json:"nextUri"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		// The first GET of its nextUri dispatches it; only then does it run or queue.
		req, _ = http.NewRequest(http.MethodGet, answer.NextURI, nil)
		req.Header.Set("X-Presto-User", "alice")
		if resp, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	eventually(t, "1 running, 2 queued published", func() bool {
		l := registrations(t, observer, "/presto")[c.Addr()].Load
		return l.Running == 1 && l.Queued == 2
	})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if log := r.errOut.String(); strings.Contains(log, "l0ad-s3cret") {
		t.Errorf("the log shows the password:\n%s", log)
	}
}

func TestRegisterLoadFlagsReachTheRegistrar(t *testing.T) {
	o := registerOptions{loadSource: "Trino", loadInterval: 5 * time.Millisecond, loadThreshold: 2,
		loadMinGap: 40 * time.Millisecond, loadBurst: 7, loadRefresh: time.Second, loadSlots: 9, loadUser: "monitor"}
	got, err := o.loadPublishing()
	if err != nil {
		t.Fatal(err)
	}
	want := registrar.LoadPublishing{Source: registrar.LoadSource("trino"), Interval: 5 * time.Millisecond, Threshold: 2,
		MinGap: 40 * time.Millisecond, Burst: 7, Refresh: time.Second, Slots: 9, User: "monitor"}
	if *got != want {
		t.Errorf("load publishing %+v, want %+v", *got, want)
	}
}
