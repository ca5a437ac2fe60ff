package health_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/health/httpprobe"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

func startCoordinators(t *testing.T, n int) ([]*coordinator.Coordinator, []discovery.Node) {
	t.Helper()
	coords := make([]*coordinator.Coordinator, n)
	nodes := make([]discovery.Node, n)
	for i := range coords {
		c, err := coordinator.Start(coordinator.Options{Name: fmt.Sprintf("c%d", i+1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		coords[i] = c
		nodes[i] = discovery.Node{Addr: c.Addr(), Scheme: "http", Weight: 1}
	}
	return coords, nodes
}

func unhealthy(tr *health.Tracker, nodes []discovery.Node) []bool {
	out := make([]bool, len(nodes))
	for i := range nodes {
		out[i] = tr.State(nodes[i].Addr).Unhealthy
	}
	return out
}

func TestCheckerAgainstCoordinators(t *testing.T) {
	coords, nodes := startCoordinators(t, 3)
	tr := health.NewTracker(health.Policy{})
	tr.Forget(nodes)
	// A long interval: only CheckNow runs rounds in this test.
	c := health.StartChecker(time.Hour, httpprobe.New(testutil.NewClient(t)), func() []discovery.Node { return nodes }, tr, nil)
	defer c.Close()
	ctx := context.Background()

	c.CheckNow(ctx)
	if got := unhealthy(tr, nodes); fmt.Sprint(got) != "[false false false]" {
		t.Fatalf("all running: unhealthy = %v", got)
	}

	coords[0].SetStarting(true)
	if err := coords[2].Stop(); err != nil {
		t.Fatal(err)
	}
	c.CheckNow(ctx)
	if got := unhealthy(tr, nodes); fmt.Sprint(got) != "[true false true]" {
		t.Fatalf("c1 starting, c3 stopped: unhealthy = %v", got)
	}
	if st := tr.State(nodes[0].Addr); !strings.Contains(st.LastError, "starting") {
		t.Fatalf("starting node's reason = %q", st.LastError)
	}
	if st := tr.State(nodes[2].Addr); !strings.Contains(st.LastError, nodes[2].Addr) {
		t.Fatalf("stopped node's reason %q does not name it", st.LastError)
	}
	if got := tr.Usable(nodes); len(got) != 1 || got[0].Addr != nodes[1].Addr {
		t.Fatalf("Usable = %v, want only c2", addrs(got))
	}

	coords[0].SetStarting(false)
	if err := coords[2].Restart(); err != nil {
		t.Fatal(err)
	}
	v := tr.Version()
	c.CheckNow(ctx)
	if got := unhealthy(tr, nodes); fmt.Sprint(got) != "[false false false]" {
		t.Fatalf("all recovered: unhealthy = %v", got)
	}
	if tr.Version() == v {
		t.Fatal("Version unchanged by recoveries")
	}
	if got := tr.Usable(nodes); len(got) != 3 {
		t.Fatalf("Usable after recovery = %v", addrs(got))
	}
}

func TestCheckerBadAnswers(t *testing.T) {
	answers := map[string]func(http.ResponseWriter){
		"status":   func(w http.ResponseWriter) { http.Error(w, "down", http.StatusServiceUnavailable) },
		"not json": func(w http.ResponseWriter) { fmt.Fprint(w, "<html>") },
		"ok":       func(w http.ResponseWriter) { fmt.Fprint(w, `{"coordinator":true,"starting":false}`) },
	}
	var nodes []discovery.Node
	names := map[string]string{}
	for name, answer := range answers {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/info" {
				http.NotFound(w, r)
				return
			}
			answer(w)
		}))
		t.Cleanup(srv.Close)
		addr := strings.TrimPrefix(srv.URL, "http://")
		nodes = append(nodes, discovery.Node{Addr: addr, Scheme: "http"})
		names[addr] = name
	}
	tr := health.NewTracker(health.Policy{})
	c := health.StartChecker(time.Hour, httpprobe.New(testutil.NewClient(t)), func() []discovery.Node { return nodes }, tr, nil)
	defer c.Close()
	c.CheckNow(context.Background())
	for _, n := range nodes {
		st := tr.State(n.Addr)
		switch name := names[n.Addr]; name {
		case "ok":
			if st.Unhealthy {
				t.Errorf("%s: unhealthy (%s)", name, st.LastError)
			}
		case "status":
			if !st.Unhealthy || !strings.Contains(st.LastError, "503") {
				t.Errorf("%s: state %+v", name, st)
			}
		default:
			if !st.Unhealthy || !strings.Contains(st.LastError, "not a Presto /v1/info answer") {
				t.Errorf("%s: state %+v", name, st)
			}
		}
	}
}

// infoAnswers are /v1/info answers on which the callers of
// wire.ProbeInfo used to disagree, and the plain ones.
var infoAnswers = map[string]http.HandlerFunc{
	"up": func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"nodeVersion":{"version":"0.289"},"starting":false}`)
	},
	"starting": func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"nodeVersion":{"version":"0.289"},"starting":true}`)
	},
	"503":                     func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) },
	"redirect":                func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) },
	"html":                    func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html><body>proxy</body></html>") },
	"null":                    func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "null") },
	"no starting, no version": func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"coordinator":true}`) },
	"no starting, a version":  func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"nodeVersion":{"version":"0.150"}}`) },
}

// The checker marks healthy exactly the nodes whose verdict is up.
func TestCheckerAgreesWithProbeInfo(t *testing.T) {
	client := testutil.NewClient(t)
	var nodes []discovery.Node
	names := map[string]string{}
	for name, answer := range infoAnswers {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/info" {
				// Where the redirect points: up, if the check went there.
				fmt.Fprint(w, `{"nodeVersion":{"version":"0.289"},"starting":false}`)
				return
			}
			answer(w, r)
		}))
		t.Cleanup(srv.Close)
		addr := strings.TrimPrefix(srv.URL, "http://")
		nodes = append(nodes, discovery.Node{Addr: addr, Scheme: "http"})
		names[addr] = name
	}
	tr := health.NewTracker(health.Policy{})
	c := health.StartChecker(time.Hour, httpprobe.New(client), func() []discovery.Node { return nodes }, tr, nil)
	defer c.Close()
	c.CheckNow(context.Background())
	for _, n := range nodes {
		info := wire.ProbeInfo(context.Background(), client, n.URL())
		st := tr.State(n.Addr)
		if st.Unhealthy != (info.Verdict != wire.Up) {
			t.Errorf("%s: verdict %v but unhealthy=%v (%s)", names[n.Addr], info.Verdict, st.Unhealthy, st.LastError)
		}
		if info.Err != nil && !strings.Contains(st.LastError, info.Err.Error()) {
			t.Errorf("%s: reason %q, want it to say %q", names[n.Addr], st.LastError, info.Err)
		}
	}
	for _, name := range []string{"starting", "redirect", "null", "no starting, no version"} {
		for _, n := range nodes {
			if names[n.Addr] == name && !tr.State(n.Addr).Unhealthy {
				t.Errorf("%s: healthy", name)
			}
		}
	}
}

func TestCheckerBackgroundRounds(t *testing.T) {
	coords, nodes := startCoordinators(t, 1)
	coords[0].SetStarting(true)
	tr := health.NewTracker(health.Policy{})
	var rounds atomic.Int64
	list := func() []discovery.Node { rounds.Add(1); return nodes }
	c := health.StartChecker(5*time.Millisecond, httpprobe.New(testutil.NewClient(t)), list, tr, nil)
	defer c.Close()
	waitFor(t, "the background check to mark the starting node", func() bool { return tr.State(nodes[0].Addr).Unhealthy })
	coords[0].SetStarting(false)
	waitFor(t, "the background check to mark it healthy again", func() bool { return !tr.State(nodes[0].Addr).Unhealthy })
	c.Close()
	after := rounds.Load()
	c.CheckNow(context.Background()) // after Close: does nothing
	if rounds.Load() != after {
		t.Fatal("a round ran after Close")
	}
}

func TestCheckerCloseAbortsRound(t *testing.T) {
	// A node that never answers: Close must cut the round short, and the
	// aborted check must not mark the node.
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	nodes := []discovery.Node{{Addr: strings.TrimPrefix(srv.URL, "http://"), Scheme: "http"}}
	tr := health.NewTracker(health.Policy{})
	c := health.StartChecker(time.Hour, httpprobe.New(testutil.NewClient(t)), func() []discovery.Node { return nodes }, tr, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.CheckNow(context.Background())
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the check never reached the server")
	}
	c.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("CheckNow did not return after Close")
	}
	if st := tr.State(nodes[0].Addr); st.Unhealthy {
		t.Fatalf("an aborted check marked the node: %+v", st)
	}
	c.Close() // idempotent
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, time.Millisecond, what, cond)
}
