package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// statusGateway is one gateway over a static list of addrs, served on
// loopback with its status page mounted as zkpresto gateway mounts it.
func statusGateway(t *testing.T, addrs ...string) (*gateway.Gateway, *gatewayServer) {
	t.Helper()
	g, _ := staticGateway(t, gateway.Config{}, addrs...)
	mux := http.NewServeMux()
	mux.Handle("/", g)
	g.HandleStatus(mux)
	return g, serveGateway(t, mux)
}

// queuedCoordinators starts n coordinators whose statements stay running
// for an hour, so that they show as in flight, and returns their addresses.
func queuedCoordinators(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		c, err := coordinator.Start(coordinator.Options{Latency: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		addrs = append(addrs, c.Addr())
	}
	return addrs
}

// submit posts a statement as user (with source, and credentials that
// must never show) and returns the status and decoded answer.
func submit(t *testing.T, base, user, source string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/statement", strings.NewReader("SELECT 1"))
	req.Header.Set("X-Presto-User", user)
	req.Header.Set("X-Presto-Source", source)
	req.Header.Set("Authorization", "Basic "+secretCredential)
	req.Header.Set("X-Presto-Extra-Credential", "password="+secretCredential)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&answer)
	return resp.StatusCode, answer
}

// secretCredential is sent with every statement and must appear nowhere
// on the status page.
const secretCredential = "c2VjcmV0LXBhc3N3b3Jk"

func get(t *testing.T, uri string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(uri)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func statusOf(t *testing.T, base string) (gateway.Status, []byte) {
	t.Helper()
	resp, b := get(t, base+"/_zk/status.json")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status.json: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	var st gateway.Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("status.json: %v\n%s", err, b)
	}
	return st, b
}

// recorded waits until status.json lists n statements: a statement is
// recorded once its answer has been relayed, which the client may have read
// whole a moment before.
func recorded(t *testing.T, base string, n int) {
	t.Helper()
	testutil.Eventually(t, waitFor, 5*time.Millisecond, fmt.Sprintf("%d statements on the status page", n), func() bool {
		st, _ := statusOf(t, base)
		return len(st.Groups) > 0 && len(st.Groups[0].Statements) >= n
	})
}

// After a few statements through the gateway, status.json has the group,
// its coordinators with their figures, the statements newest first (each
// with its coordinator and query id, also under its coordinator) and the
// request counts; no credential shows anywhere.
func TestStatusJSONAfterStatements(t *testing.T) {
	addrs := queuedCoordinators(t, 2)
	_, srv := statusGateway(t, addrs...)
	users := []string{"alice", "bob", "carol", "dave"}
	ids := map[string]string{} // query id → user
	for _, u := range users {
		code, answer := submit(t, srv.URL, u, "status-test")
		id, _ := answer["id"].(string)
		if code != http.StatusOK || id == "" {
			t.Fatalf("%s: %d %v", u, code, answer)
		}
		ids[id] = u
	}

	recorded(t, srv.URL, len(users))
	st, raw := statusOf(t, srv.URL)
	if strings.Contains(string(raw), secretCredential) || strings.Contains(string(raw), "00112233445566778899") {
		t.Fatalf("status.json shows a secret:\n%s", raw)
	}
	if len(st.Groups) != 1 {
		t.Fatalf("%d groups, want 1", len(st.Groups))
	}
	g := st.Groups[0]
	if g.Name == "" || g.Strategy != "poll" || !g.Discovery.Connected || !g.Discovery.Open || !strings.HasPrefix(g.Discovery.Source, "static:") {
		t.Fatalf("group: %+v", g)
	}
	if len(g.Coordinators) != 2 {
		t.Fatalf("%d coordinators, want 2", len(g.Coordinators))
	}
	var picks uint64
	perCoordinator := 0
	for i, c := range g.Coordinators {
		if c.Address != addrs[0] && c.Address != addrs[1] || c.State != "usable" || !c.Usable || c.Scheme != "http" {
			t.Fatalf("coordinator %d: %+v", i, c)
		}
		picks += c.Picks
		perCoordinator += len(c.Recent)
		for _, rec := range c.Recent {
			if rec.Coordinator != c.Address {
				t.Fatalf("%s lists a statement of %s", c.Address, rec.Coordinator)
			}
		}
	}
	if picks != uint64(len(users)) || perCoordinator != len(users) {
		t.Fatalf("picks %d, statements under coordinators %d, want %d", picks, perCoordinator, len(users))
	}
	if len(g.Statements) != len(users) {
		t.Fatalf("%d statements, want %d", len(g.Statements), len(users))
	}
	// Newest first, by when each was recorded: once its answer was relayed,
	// which on a busy machine need not be in the order the answers were read.
	seen := map[string]bool{}
	for i, rec := range g.Statements {
		want := ids[rec.QueryID]
		if seen[want] {
			t.Fatalf("statement %d: %s's again", i, want)
		}
		seen[want] = true
		if rec.User != want || rec.Source != "status-test" || want == "" ||
			rec.Status != http.StatusOK || rec.Outcome != "accepted" || rec.State == "" || rec.Coordinator == "" || rec.Time.IsZero() {
			t.Fatalf("statement %d: %+v, want %s's", i, rec, want)
		}
		if i > 0 && rec.Time.After(g.Statements[i-1].Time) {
			t.Fatalf("statements not newest first: %v after %v", rec.Time, g.Statements[i-1].Time)
		}
	}
	var submits uint64
	for _, rc := range st.Requests {
		if rc.Kind == "submit" && rc.Status == http.StatusOK {
			submits = rc.Count
		}
	}
	if submits != uint64(len(users)) {
		t.Fatalf("requests %+v: want %d submits answered 200", st.Requests, len(users))
	}

	// The JSON's field names, which the page's script reads.
	var shape map[string]any
	if err := json.Unmarshal(raw, &shape); err != nil {
		t.Fatal(err)
	}
	group := shape["groups"].([]any)[0].(map[string]any)
	coord := group["coordinators"].([]any)[0].(map[string]any)
	stmt := group["statements"].([]any)[0].(map[string]any)
	for _, k := range []string{"now", "uptimeSeconds", "draining", "requests", "groups"} {
		if _, ok := shape[k]; !ok {
			t.Errorf("status.json has no %q", k)
		}
	}
	for _, k := range []string{"name", "strategy", "discovery", "coordinators", "statements"} {
		if _, ok := group[k]; !ok {
			t.Errorf("a group has no %q", k)
		}
	}
	for _, k := range []string{"address", "state", "usable", "ejected", "unhealthy", "ejections", "inFlight", "picks", "latencyMs", "recent"} {
		if _, ok := coord[k]; !ok {
			t.Errorf("a coordinator has no %q", k)
		}
	}
	for _, k := range []string{"time", "user", "coordinator", "queryId", "status", "outcome"} {
		if _, ok := stmt[k]; !ok {
			t.Errorf("a statement has no %q", k)
		}
	}

	resp, page := get(t, srv.URL+"/_zk/status")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("status page: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{addrs[0], addrs[1], "alice", "dave", "Group " + g.Name, "Recent statements"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the status page does not show %q", want)
		}
	}
	if bytes.Contains(page, []byte(secretCredential)) {
		t.Fatal("the status page shows a credential")
	}
	if resp, _ := get(t, srv.URL+"/_zk/status.json?x"); resp.StatusCode != http.StatusOK {
		t.Fatalf("status.json with a query: %s", resp.Status)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/_zk/status.json", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode == http.StatusOK {
		t.Fatalf("POST status.json: %v %v: the page is read-only", resp, err)
	} else {
		resp.Body.Close()
	}
}

// The ring keeps the last statements; one no coordinator took is listed
// with its 503 and without a coordinator.
func TestStatusRingAndFailures(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	dead.Close() // nothing listens there now
	_, srv := statusGateway(t, addr)
	for i := range gateway.RecentStatements + 3 {
		user := "u" + string(rune('a'+i%26))
		if code, _ := submit(t, srv.URL, user, ""); code != http.StatusServiceUnavailable {
			t.Fatalf("statement %d: %d, want 503", i, code)
		}
	}
	st, _ := statusOf(t, srv.URL)
	ss := st.Groups[0].Statements
	if len(ss) != gateway.RecentStatements {
		t.Fatalf("%d statements kept, want %d", len(ss), gateway.RecentStatements)
	}
	last := gateway.RecentStatements + 2
	if ss[0].User != "u"+string(rune('a'+last%26)) {
		t.Fatalf("newest is %q's", ss[0].User)
	}
	rec := ss[0]
	if rec.Status != http.StatusServiceUnavailable || rec.Outcome != "not routed" || rec.Coordinator != "" || rec.Error == "" {
		t.Fatalf("%+v", rec)
	}
	if c := st.Groups[0].Coordinators[0]; c.LastError == "" || c.Address != addr {
		t.Fatalf("the dead coordinator: %+v", c)
	}
}

// A user name that is markup shows as text on the page, in the JSON and
// (see the browser test) in the DOM the script builds.
func TestStatusEscapes(t *testing.T) {
	_, srv := statusGateway(t, queuedCoordinators(t, 1)...)
	evil := `<script>alert("x")</script><img src=x onerror=alert(1)>`
	if code, _ := submit(t, srv.URL, evil, `"><b>source</b>`); code != http.StatusOK {
		t.Fatalf("submit: %d", code)
	}
	recorded(t, srv.URL, 1)
	_, page := get(t, srv.URL+"/_zk/status")
	if bytes.Contains(page, []byte("<script>alert")) || bytes.Contains(page, []byte("<img src=x")) || bytes.Contains(page, []byte("<b>source")) {
		t.Fatalf("the user name is not escaped:\n%s", page)
	}
	if !bytes.Contains(page, []byte("&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")) {
		t.Fatalf("the escaped user name is not on the page:\n%s", page)
	}
	_, raw := statusOf(t, srv.URL)
	if bytes.Contains(raw, []byte("<script>")) || !bytes.Contains(raw, []byte(`\u003cscript\u003e`)) {
		t.Fatalf("status.json does not escape the user name:\n%s", raw)
	}
}

// chromium runs the Debian chromium headless against url with extra flags,
// its profile in a temporary folder and no network but loopback, and
// returns what it printed.
func chromium(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}
	args = append(append(args, extra...), url)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.String())
	}
	return stdout.Bytes()
}

// A real browser renders the page (a screenshot of the right size, kept
// for a look) and its script refreshes it from status.json: after the
// refresh ran, the DOM it built shows the coordinator, the statement's
// user escaped as text, and "updated Ns ago".
func TestStatusPageInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	testutil.RequireTool(t, "chromium", err)
	addrs := queuedCoordinators(t, 2)
	_, srv := statusGateway(t, addrs...)
	for _, u := range []string{"alice", "bob", "<script>x</script>"} {
		if code, _ := submit(t, srv.URL, u, "chromium-test"); code != http.StatusOK {
			t.Fatalf("submit: %d", code)
		}
	}
	page := srv.URL + "/_zk/status"
	if !strings.HasPrefix(page, "http://127.0.0.1:") {
		t.Fatalf("the gateway is not on loopback: %s", page)
	}

	shot := filepath.Join(t.TempDir(), "status.png")
	chromium(t, bin, page, "--screenshot="+shot, "--window-size=1280,900", "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 900 {
		t.Fatalf("screenshot %dx%d, want 1280x900", b.Dx(), b.Dy())
	}
	t.Logf("screenshot of the status page: %s", shot)

	dom := string(chromium(t, bin, page, "--dump-dom", "--virtual-time-budget=5000", "--window-size=1280,900"))
	for _, want := range []string{`data-live="1"`, addrs[0], addrs[1], "alice", "&lt;script&gt;x&lt;/script&gt;"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the refreshed DOM does not show %q", want)
		}
	}
	if !strings.Contains(dom, "updated ") || !strings.Contains(dom, "s ago") {
		t.Errorf("the refreshed DOM does not say when it was updated")
	}
	if strings.Contains(dom, "<script>x</script>") {
		t.Error("the script put the user name in as markup")
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}
