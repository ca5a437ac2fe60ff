package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// affinitySetup is n coordinators behind two gateway replicas, each with
// its own round-robin Router over one discovery, handing out affinity
// cookies of ten minutes.
type affinitySetup struct {
	coords   []*coordinator.Coordinator
	disc     *changing
	gateways [2]*gateway.Gateway
	urls     [2]string
}

func newAffinitySetup(t *testing.T, n int) *affinitySetup {
	t.Helper()
	s := &affinitySetup{disc: &changing{}, coords: startCoordinators(t, n)}
	s.disc.set(s.coords...)
	for i := range 2 {
		r, err := routing.New(routing.Config{Discoverer: s.disc, Strategy: strategy.Named("poll")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		g, err := gateway.New(gateway.Config{Router: r, Keys: testKeys, AffinityCookie: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		s.gateways[i], s.urls[i] = g, serveGateway(t, g).URL
	}
	return s
}

// jarClient is a client that keeps cookies, as python's requests.Session.
func jarClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

// runOn runs n statements with client, on each replica in turn (every
// follow-up too through the one it lands on), and returns how many
// statements each coordinator got.
func (s *affinitySetup) runOn(t *testing.T, client *http.Client, n int, h http.Header) []int64 {
	t.Helper()
	if h == nil {
		h = http.Header{"X-Presto-User": {"dbt"}}
	}
	before := statements(s.coords)
	for i := range n {
		runWith(t, client, s.urls[i%2], fmt.Sprintf("SELECT * FROM rows(%d)", 3+i), h)
	}
	got := statements(s.coords)
	for i := range got {
		got[i] -= before[i]
	}
	return got
}

// busy counts the coordinators that got a statement.
func busy(counts []int64) int {
	n := 0
	for _, c := range counts {
		if c > 0 {
			n++
		}
	}
	return n
}

// affinityCounts reads a gateway's affinity cookie counts by outcome.
func affinityCounts(g *gateway.Gateway) map[string]uint64 {
	out := map[string]uint64{}
	for _, c := range g.AffinityCookies() {
		out[c.Outcome] = c.Count
	}
	return out
}

// submitWithCookie submits a statement to base carrying the affinity cookie
// value (none when empty) among another cookie, and returns the answer's
// affinity cookie.
func submitWithCookie(t *testing.T, base, value string) *http.Cookie {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/statement", strings.NewReader("SELECT 1"))
	req.Header.Set("X-Presto-User", "dbt")
	if value != "" {
		req.Header.Set("Cookie", "other=1; "+gateway.AffinityCookieName+"="+value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST with an affinity cookie: %s %s", resp.Status, body)
	}
	for _, c := range resp.Cookies() {
		if c.Name == gateway.AffinityCookieName {
			return c
		}
	}
	t.Fatal("the answer sets no affinity cookie")
	return nil
}

// A client that keeps cookies has every statement of its session on one
// coordinator, whichever replica each lands on; without cookies they
// spread. The cookie is HttpOnly, SameSite, for the statement path only,
// and short-lived.
func TestAffinityCookieKeepsASessionOnOneCoordinator(t *testing.T) {
	s := newAffinitySetup(t, 3)
	got := s.runOn(t, jarClient(t), 8, nil)
	if busy(got) != 1 {
		t.Fatalf("statements of one cookie-keeping session per coordinator %v, want all on one", got)
	}
	if n := affinityCounts(s.gateways[0])["followed"] + affinityCounts(s.gateways[1])["followed"]; n != 7 {
		t.Errorf("cookies followed %d, want 7 (every statement but the first)", n)
	}
	for i, g := range s.gateways {
		if c := affinityCounts(g); c["followed"] == 0 || c["set"] == 0 {
			t.Errorf("replica %d: affinity counts %v, want cookies set and followed on both", i, c)
		}
	}
	if got := s.runOn(t, &http.Client{}, 8, nil); busy(got) < 2 {
		t.Errorf("statements without cookies per coordinator %v, want them spread", got)
	}
	// A second session has a cookie of its own, which may name another
	// coordinator: two sessions stay each on theirs.
	a, b := jarClient(t), jarClient(t)
	for range 2 {
		if got := s.runOn(t, a, 3, nil); busy(got) != 1 {
			t.Fatalf("session a per coordinator %v, want one", got)
		}
		if got := s.runOn(t, b, 3, nil); busy(got) != 1 {
			t.Fatalf("session b per coordinator %v, want one", got)
		}
	}

	c := submitWithCookie(t, s.urls[0], "")
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/v1/statement" || c.MaxAge != 600 || c.Secure {
		t.Errorf("the cookie %q: want HttpOnly, SameSite=Strict, Path=/v1/statement, Max-Age=600, not Secure over http", c.String())
	}
}

// A forged cookie, one signed as another purpose's token (a routing
// token), one expired, and one naming a coordinator that is drained are
// ignored, never an error, and counted; the drained case moves the session
// to a coordinator that stays its own.
func TestAffinityCookieIgnoredWhenItMayNotBeFollowed(t *testing.T) {
	s := newAffinitySetup(t, 3)
	valid := submitWithCookie(t, s.urls[0], "").Value
	i := len(valid) - 3
	flipped := byte('A')
	if valid[i] == 'A' {
		flipped = 'B'
	}
	answer := post(t, s.urls[0], "SELECT 1")
	next := answer["nextUri"].(string)
	routingToken := strings.SplitN(strings.SplitN(next, "/_zk/", 2)[1], "/", 2)[0]
	old := time.Now().Add(-time.Hour)
	gateway.SetAffinityClock(s.gateways[0], func() time.Time { return old })
	expired := submitWithCookie(t, s.urls[0], "").Value
	gateway.SetAffinityClock(s.gateways[0], time.Now)

	for name, tc := range map[string]struct{ value, outcome string }{
		"forged":        {valid[:i] + string(flipped) + valid[i+1:], "invalid"},
		"routing token": {routingToken, "invalid"},
		"expired":       {expired, "expired"},
		"garbage":       {"not.a.cookie", "invalid"},
	} {
		before := affinityCounts(s.gateways[1])[tc.outcome]
		fresh := submitWithCookie(t, s.urls[1], tc.value)
		if n := affinityCounts(s.gateways[1])[tc.outcome]; n != before+1 {
			t.Errorf("%s cookie: %q count %d, want %d", name, tc.outcome, n, before+1)
		}
		if fresh.Value == tc.value {
			t.Errorf("%s cookie: handed back as it came", name)
		}
	}

	client := jarClient(t)
	got := s.runOn(t, client, 2, nil)
	home := slices.IndexFunc(got, func(n int64) bool { return n > 0 })
	if busy(got) != 1 {
		t.Fatalf("a session's statements per coordinator %v, want one", got)
	}
	nodes := make([]discovery.Node, len(s.coords))
	for i, c := range s.coords {
		nodes[i] = discovery.Node{Addr: c.Addr()}
	}
	nodes[home].NotReady = "drained"
	s.disc.setNodes(nodes)
	got = s.runOn(t, client, 6, nil)
	if got[home] != 0 || busy(got) != 1 {
		t.Fatalf("after the session's coordinator %d was drained: statements per coordinator %v, want none there and the rest on one other", home, got)
	}
	if n := affinityCounts(s.gateways[0])["unusable"] + affinityCounts(s.gateways[1])["unusable"]; n != 1 {
		t.Errorf("cookies naming a drained coordinator counted %d, want 1 (the next answer's cookie names the new one)", n)
	}
}

// With a router config, the cookie never overrides the group the selectors
// choose: a session's statements another selector claims go to that
// group's coordinators and its cookie is counted as of another group; the
// status page says which selector chose each statement's group and that
// the cookie chose its coordinator.
func TestAffinityCookieKeepsToTheSelectorsGroup(t *testing.T) {
	cs := startCoordinators(t, 4)
	file := writeConfig(t, "", `{
  "groups": [
    {"name": "etl", "members": ["`+cs[0].URL()+`", "`+cs[1].URL()+`"]},
    {"name": "bi", "members": ["`+cs[2].URL()+`", "`+cs[3].URL()+`"]}
  ],
  "selectors": [
    {"user": "etl_.*", "targetGroup": "etl"},
    {"targetGroup": "bi"}
  ],
  "scheduler": "ROUND_ROBIN"
}`)
	s := &affinitySetup{coords: cs}
	for i := range 2 {
		gs, err := gateway.LoadConfig(file, gateway.BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := gateway.New(gateway.Config{Groups: gs, Keys: testKeys, AffinityCookie: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		s.gateways[i], s.urls[i] = g, serveGateway(t, g).URL
	}
	client := jarClient(t)
	etl := http.Header{"X-Presto-User": {"etl_nightly"}}
	got := s.runOn(t, client, 4, etl)
	if busy(got) != 1 || got[2]+got[3] != 0 {
		t.Fatalf("etl session per coordinator %v, want all on one of etl's", got)
	}
	got = s.runOn(t, client, 4, http.Header{"X-Presto-User": {"bob"}})
	if got[0]+got[1] != 0 || busy(got) != 1 {
		t.Fatalf("the session's statements for bi per coordinator %v, want all on one of bi's", got)
	}
	if n := affinityCounts(s.gateways[0])["other group"] + affinityCounts(s.gateways[1])["other group"]; n != 1 {
		t.Errorf("cookies of another group counted %d, want 1 (the next answer's cookie is bi's)", n)
	}
	st := s.gateways[1].Status()
	for _, g := range st.Groups {
		want := map[string]string{"etl": "selectors[0]", "bi": "selectors[1]"}[g.Name]
		if len(g.Statements) != 2 {
			t.Fatalf("group %s: %d statements on replica 1, want 2", g.Name, len(g.Statements))
		}
		for _, rec := range g.Statements {
			if rec.ChosenBy != want || rec.PickedBy != "affinity cookie" {
				t.Errorf("group %s: a statement chosen by %q, picked by %q; want %q, the affinity cookie", g.Name, rec.ChosenBy, rec.PickedBy, want)
			}
		}
	}
	mux := http.NewServeMux()
	s.gateways[1].HandleStatus(mux)
	status := httptest.NewServer(mux)
	defer status.Close()
	_, page := get(t, status.URL+"/_zk/status")
	for _, want := range []string{">selectors[0]; affinity cookie<", ">selectors[1]; affinity cookie<"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the status page does not show %q", want)
		}
	}
}

// The cookie is off unless asked for, and a max age out of bounds is
// refused.
func TestAffinityCookieConfig(t *testing.T) {
	cs := startCoordinators(t, 1)
	g, _ := staticGateway(t, gateway.Config{}, cs[0].Addr())
	srv := serveGateway(t, g)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/statement", strings.NewReader("SELECT 1"))
	req.Header.Set("X-Presto-User", "dbt")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 0 {
		t.Errorf("without AffinityCookie: %s with cookies %v, want 200 and none", resp.Status, resp.Cookies())
	}
	if g.AffinityCookies() != nil {
		t.Error("AffinityCookies without the cookie is not nil")
	}
	for _, age := range []time.Duration{-time.Second, time.Millisecond, 25 * time.Hour} {
		r, err := routing.New(routing.Config{Discoverer: discovery.NewStatic("test", []discovery.Node{{Addr: cs[0].Addr()}})})
		if err != nil {
			t.Fatal(err)
		}
		_, err = gateway.New(gateway.Config{Router: r, Keys: testKeys, AffinityCookie: age})
		r.Close()
		if err == nil || !strings.Contains(err.Error(), "affinity cookie") {
			t.Errorf("AffinityCookie %s: %v, want an error naming the affinity cookie", age, err)
		}
	}
}

// Behind a public URL with a prefix, on https (a front terminating TLS),
// the cookie is Secure and its path is the prefix's statement path, the
// one the client posts to; a client on TLS gets a Secure cookie too.
func TestAffinityCookiePublicURLAndTLS(t *testing.T) {
	coords := startCoordinators(t, 1)
	disc := &changing{}
	disc.set(coords...)
	r, err := routing.New(routing.Config{Discoverer: disc, Strategy: strategy.Named("poll")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	g, err := gateway.New(gateway.Config{Router: r, Keys: testKeys, AffinityCookie: time.Minute, PublicURL: "https://gw.example/trino"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	c := submitWithCookie(t, serveGateway(t, g).URL, "")
	if c.Path != "/trino/v1/statement" || !c.Secure {
		t.Errorf("the cookie %q behind https://gw.example/trino: want Path=/trino/v1/statement, Secure", c.String())
	}

	plain, err := gateway.New(gateway.Config{Router: r, Keys: testKeys, AffinityCookie: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	srv := httptest.NewTLSServer(plain)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/statement", strings.NewReader("SELECT 1"))
	req.Header.Set("X-Presto-User", "dbt")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	i := slices.IndexFunc(resp.Cookies(), func(c *http.Cookie) bool { return c.Name == gateway.AffinityCookieName })
	if resp.StatusCode != http.StatusOK || i < 0 || !resp.Cookies()[i].Secure || resp.Cookies()[i].Path != "/v1/statement" {
		t.Errorf("a client on TLS: %s, cookies %q; want a Secure affinity cookie for /v1/statement", resp.Status, resp.Header.Values("Set-Cookie"))
	}
}
