package gateway_test

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/gatewayrig"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// oauth2Canary is in every code and token the identity provider issues: it
// must reach the coordinators and the client and be in no log line or page
// of the gateway's own.
const oauth2Canary = "CANARY-0a7f-oauth2"

// oauth2Setup is two Trino coordinators in OAuth2 mode behind two gateway
// replicas behind a round-robin front, which sends each request to the
// other replica than the one before.
type oauth2Setup struct {
	idp      *gatewayrig.IdP
	coords   []*coordinator.Coordinator
	gateways []*gateway.Gateway
	front    *httptest.Server
	client   *http.Client // trusts the front
	hits     [2]atomic.Int64
	logs     *testutil.Buffer
	disc     *changing // lists the coordinators
}

// newOAuth2Setup starts it all, the front on https when tls, where the
// coordinators also send Trino's nonce cookie, which is Secure.
func newOAuth2Setup(t *testing.T, tls bool) *oauth2Setup {
	t.Helper()
	s := &oauth2Setup{idp: gatewayrig.StartIdP(t, oauth2Canary), logs: &testutil.Buffer{}}
	disc := &changing{}
	s.disc = disc
	var nodes []discovery.Node
	for i := range 2 {
		c, err := coordinator.Start(coordinator.Options{
			Name: fmt.Sprintf("c%d", i+1), Flavour: coordinator.Trino, HonourForwarded: true,
			OAuth2: s.idp.Coordinator(tls),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		s.coords = append(s.coords, c)
		nodes = append(nodes, discovery.Node{Addr: c.Addr()})
	}
	disc.setNodes(nodes)
	logger := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var fronts [2]*url.URL
	var next atomic.Int64
	s.front = httptest.NewUnstartedServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(fronts[next.Add(1)%2])
		pr.Out.Host = pr.In.Host
	}})
	if tls {
		s.front.StartTLS()
	} else {
		s.front.Start()
	}
	t.Cleanup(s.front.Close)
	s.client = s.front.Client()
	s.client.Timeout = 10 * time.Second
	for i := range 2 {
		r, err := routing.New(routing.Config{Discoverer: disc, Strategy: strategy.Named("round_robin")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		g, err := gateway.New(gateway.Config{Router: r, Keys: testKeys, Flavour: gateway.Trino, Logger: logger, StandardTransport: standardTransport, PublicURL: s.front.URL})
		if err != nil {
			t.Fatal(err)
		}
		hits := &s.hits[i]
		srv := serveGateway(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			hits.Add(1)
			g.ServeHTTP(w, req)
		}))
		s.gateways = append(s.gateways, g)
		fronts[i], _ = url.Parse(srv.URL)
	}
	return s
}

// browser is a browser's HTTP client: it keeps cookies and lets the test
// follow each redirect itself.
func (s *oauth2Setup) browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: s.client.Transport, Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func fetch(t *testing.T, c *http.Client, method, uri string, header http.Header, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, uri, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

var challengeParam = regexp.MustCompile(`(x_redirect_server|x_token_server)="([^"]*)"`)

// challenge submits a statement without a token and returns the URIs of
// the 401's challenge.
func (s *oauth2Setup) challenge(t *testing.T) (redirect, tokenURI string) {
	t.Helper()
	resp, body := fetch(t, s.client, http.MethodPost, s.front.URL+"/v1/statement", http.Header{"X-Trino-User": {"alice"}}, "SELECT 1")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a statement without a token: %s %s, want 401", resp.Status, body)
	}
	if n := len(resp.Header.Values("WWW-Authenticate")); n != 1 {
		t.Fatalf("%d WWW-Authenticate headers, want the coordinator's one, rewritten", n)
	}
	for _, m := range challengeParam.FindAllStringSubmatch(resp.Header.Get("WWW-Authenticate"), -1) {
		if m[1] == "x_redirect_server" {
			redirect = m[2]
		} else {
			tokenURI = m[2]
		}
	}
	for _, u := range []string{redirect, tokenURI} {
		if !strings.HasPrefix(u, s.front.URL+"/_zk/") {
			t.Fatalf("challenge %q: a URI is not the gateway's under a routing token", resp.Header.Get("WWW-Authenticate"))
		}
	}
	return redirect, tokenURI
}

// poll GETs the token URI once.
func (s *oauth2Setup) poll(t *testing.T, uri string) (int, map[string]string) {
	t.Helper()
	resp, body := fetch(t, s.client, http.MethodGet, uri, nil, "")
	var m map[string]string
	_ = json.Unmarshal([]byte(body), &m)
	return resp.StatusCode, m
}

// signIn plays the browser: the initiate step through the gateway, the
// identity provider, and returns the callback URI and the cookie the
// gateway set, without calling back.
func (s *oauth2Setup) signIn(t *testing.T, b *http.Client, redirect string) (callback string, cookie *http.Cookie) {
	t.Helper()
	resp, body := fetch(t, b, http.MethodGet, redirect, nil, "")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("initiate: %s %s, want 303 to the identity provider", resp.Status, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), s.idp.URL+"/authorize") {
		t.Fatalf("initiate redirects to %q, not the identity provider", resp.Header.Get("Location"))
	}
	if got, want := loc.Query().Get("redirect_uri"), s.front.URL+"/oauth2/callback"; got != want {
		t.Fatalf("the coordinator's redirect_uri is %q, want the gateway's %q", got, want)
	}
	nonce := false
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, "zkpresto_oauth2_") {
			cookie = c
		}
		nonce = nonce || c.Name == "__Secure-Trino-Nonce"
	}
	if https := strings.HasPrefix(s.front.URL, "https:"); nonce != https {
		t.Fatalf("the coordinator's nonce cookie relayed: %v, on https: %v", nonce, https)
	}
	if cookie == nil || !cookie.HttpOnly || cookie.Path != "/oauth2/callback" || cookie.SameSite != http.SameSiteLaxMode || cookie.MaxAge <= 0 || cookie.MaxAge > 600 ||
		cookie.Secure != strings.HasPrefix(s.front.URL, "https:") {
		t.Fatalf("the routing cookie %+v: want HttpOnly, Path=/oauth2/callback, SameSite=Lax, at most 10 minutes, Secure on https", cookie)
	}
	resp, body = fetch(t, b, http.MethodGet, loc.String(), nil, "")
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("identity provider: %s %s", resp.Status, body)
	}
	return resp.Header.Get("Location"), cookie
}

// The whole flow through two replicas, each step on the other replica than
// the one before: the challenge's URIs are the gateway's, the browser's
// callback reaches the coordinator that began the sign-in, the token poll
// gets the token there, and the token runs a statement.
func TestOAuth2ThroughTwoReplicas(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[tls], func(t *testing.T) { testOAuth2ThroughTwoReplicas(t, tls) })
	}
}

// testOAuth2ThroughTwoReplicas is TestOAuth2ThroughTwoReplicas with the
// front on https or not: on https the coordinators also set Trino's nonce
// cookie, which the browser must bring back to the callback through the
// gateway.
func testOAuth2ThroughTwoReplicas(t *testing.T, tls bool) {
	s := newOAuth2Setup(t, tls)
	redirect, tokenURI := s.challenge(t)

	// Before the callback, the poll's nextUri stays on the gateway.
	code, m := s.poll(t, tokenURI)
	if code != http.StatusOK || !strings.HasPrefix(m["nextUri"], s.front.URL+"/_zk/") {
		t.Fatalf("poll before the callback: %d %v, want a nextUri on the gateway", code, m)
	}
	tokenURI = m["nextUri"]

	b := s.browser(t)
	callback, _ := s.signIn(t, b, redirect)
	if !strings.HasPrefix(callback, s.front.URL+"/oauth2/callback?") {
		t.Fatalf("the identity provider calls back %q, not the gateway", callback)
	}
	resp, body := fetch(t, b, http.MethodGet, callback, nil, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Authentication successful") {
		t.Fatalf("callback: %s %s", resp.Status, body)
	}
	// The cookie is spent.
	u, _ := url.Parse(s.front.URL + "/oauth2/callback")
	for _, c := range b.Jar.Cookies(u) {
		if strings.HasPrefix(c.Name, "zkpresto_oauth2_") {
			t.Fatalf("the routing cookie %s is kept after its callback", c.Name)
		}
	}

	code, m = s.poll(t, tokenURI)
	tok := m["token"]
	if code != http.StatusOK || !strings.HasPrefix(tok, "token-") {
		t.Fatalf("poll after the callback: %d %v, want the token", code, m)
	}
	var minted, callbacks int64
	for _, c := range s.coords {
		n := c.OAuth2Counts()
		minted += n.Challenges
		callbacks += n.Callbacks
		if n.Callbacks > 0 && n.Initiates != 1 {
			t.Fatalf("%s got the callback but not the initiate step: %+v", c.Name(), n)
		}
		if n.Callbacks > 0 && (slices.ContainsFunc(n.CallbackCookies, func(name string) bool { return strings.HasPrefix(name, "zkpresto_oauth2_") }) ||
			slices.Contains(n.CallbackCookies, "__Secure-Trino-Nonce") != tls) {
			t.Fatalf("the callback brought %s the cookies %q: want the nonce on https, never the gateway's", c.Name(), n.CallbackCookies)
		}
		if n.RefusedCallbacks != 0 {
			t.Fatalf("%s refused a callback: %+v", c.Name(), n)
		}
	}
	if minted != 1 || callbacks != 1 {
		t.Fatalf("challenges %d, callbacks %d: want 1 and 1", minted, callbacks)
	}

	// The token runs a statement, through either replica.
	auth := http.Header{"X-Trino-User": {"alice"}, "Authorization": {"Bearer " + tok}}
	resp, body = fetch(t, s.client, http.MethodPost, s.front.URL+"/v1/statement", auth, "SELECT 1")
	for resp.StatusCode == http.StatusOK {
		var page map[string]any
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatal(err)
		}
		next, _ := page["nextUri"].(string)
		if next == "" {
			if st := page["stats"].(map[string]any)["state"]; st != "FINISHED" {
				t.Fatalf("the statement ended %v: %s", st, body)
			}
			break
		}
		resp, body = fetch(t, s.client, http.MethodGet, next, auth, "")
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a statement with the token: %s %s", resp.Status, body)
	}
	if s.hits[0].Load() == 0 || s.hits[1].Load() == 0 {
		t.Fatalf("requests per replica %d/%d: both should have served steps", s.hits[0].Load(), s.hits[1].Load())
	}
	// The forwarding headers go with /oauth2/* only, never a statement.
	statements := 0
	for _, c := range s.coords {
		statements += len(c.Requests())
		for _, req := range c.Requests() {
			if len(req.Forwarded) != 0 {
				t.Fatalf("a statement reached %s with forwarding headers %v", c.Name(), req.Forwarded)
			}
		}
	}
	if statements == 0 {
		t.Fatal("no statement reached a coordinator")
	}
	if strings.Contains(s.logs.String(), oauth2Canary) {
		t.Fatalf("a code or token is in the gateway's log:\n%s", s.logs.String())
	}
}

// Callbacks the gateway refuses, with a 400 page and nothing relayed: no
// cookie, a forged one, one for another sign-in, one replayed after it
// expired; and token URIs whose routing token was tampered with. Nothing
// of a code, token, state or cookie is in any answer or log line.
func TestOAuth2HostileCallbacks(t *testing.T) {
	s := newOAuth2Setup(t, false)
	var shown []string
	refused := func(name string, c *http.Client, uri string, want int) {
		t.Helper()
		resp, body := fetch(t, c, http.MethodGet, uri, nil, "")
		if resp.StatusCode != want {
			t.Fatalf("%s: %s %s, want %d", name, resp.Status, body, want)
		}
		shown = append(shown, body, resp.Header.Get("Set-Cookie"))
	}
	untouched := func(name string) {
		t.Helper()
		for _, c := range s.coords {
			if n := c.OAuth2Counts(); n.Callbacks != 0 || n.RefusedCallbacks != 0 {
				t.Fatalf("%s: a callback reached %s: %+v", name, c.Name(), n)
			}
		}
	}

	redirect, tokenURI := s.challenge(t)
	b := s.browser(t)
	callback, cookie := s.signIn(t, b, redirect)

	// No cookie: another browser.
	refused("no cookie", s.browser(t), callback, http.StatusBadRequest)
	untouched("no cookie")

	// A forged cookie: the right name, a value not made with the key.
	forger := s.browser(t)
	cu, _ := url.Parse(callback)
	exp := fmt.Sprint(time.Now().Add(time.Minute).Unix())
	forger.Jar.SetCookies(cu, []*http.Cookie{{Name: cookie.Name, Value: exp + ".k1.aHR0cDovLzEyNy4wLjAuMTo5.AAAAAAAAAAAAAAAAAAAAAA" + oauth2Canary, Path: "/oauth2/callback"}})
	refused("forged cookie", forger, callback, http.StatusBadRequest)
	// The real cookie with its expiry pushed back: the token is bound to it.
	_, tok, _ := strings.Cut(cookie.Value, ".")
	forger.Jar.SetCookies(cu, []*http.Cookie{{Name: cookie.Name, Value: fmt.Sprint(time.Now().Add(time.Hour).Unix()) + "." + tok, Path: "/oauth2/callback"}})
	refused("cookie with a changed expiry", forger, callback, http.StatusBadRequest)
	// The real cookie on another sign-in's state.
	other := strings.Replace(callback, "state=", "state=x"+oauth2Canary, 1)
	b.Jar.SetCookies(cu, []*http.Cookie{{Name: "zkpresto_oauth2_" + strings.TrimPrefix(cookie.Name, "zkpresto_oauth2_"), Value: cookie.Value, Path: "/oauth2/callback"}})
	refused("cookie of another sign-in", b, other, http.StatusBadRequest)
	untouched("forged cookies")

	// Replayed after it expired, on both replicas.
	for _, g := range s.gateways {
		gateway.SetClock(g, func() time.Time { return time.Now().Add(gateway.OAuth2CookieTTL + time.Second) })
	}
	refused("expired cookie", b, callback, http.StatusBadRequest)
	refused("expired cookie, other replica", b, callback, http.StatusBadRequest)
	untouched("expired cookie")
	for _, g := range s.gateways {
		gateway.SetClock(g, time.Now)
	}

	// Tampered token URIs: a flipped MAC character, and a token moved to
	// another auth id's path.
	i := strings.Index(tokenURI, "/_zk/") + len("/_zk/")
	j := i + strings.LastIndex(tokenURI[i:strings.Index(tokenURI[i:], "/")+i], ".") + 1
	flipped := byte('A')
	if tokenURI[j] == 'A' {
		flipped = 'B'
	}
	refused("tampered token", http.DefaultClient, tokenURI[:j]+string(flipped)+tokenURI[j+1:], http.StatusForbidden)
	refused("token on another auth id", http.DefaultClient, tokenURI[:len(tokenURI)-4]+"0000", http.StatusForbidden)
	refused("token on the initiate path", http.DefaultClient, strings.Replace(tokenURI, "/oauth2/token/", "/oauth2/token/initiate/", 1), http.StatusForbidden)
	refused("token on a statement path", http.DefaultClient, strings.Replace(tokenURI, "/oauth2/token/", "/v1/statement/executing/", 1), http.StatusForbidden)
	for _, c := range s.coords {
		if n := c.OAuth2Counts(); n.Polls != 0 {
			t.Fatalf("a tampered poll reached %s: %+v", c.Name(), n)
		}
	}

	// The cookie still completes its own sign-in.
	resp, body := fetch(t, b, http.MethodGet, callback, nil, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the real callback after the hostile ones: %s %s", resp.Status, body)
	}

	shown = append(shown, s.logs.String())
	noSecretShown(t, shown, oauth2Canary, cookie.Value, cu.Query().Get("state"))
}

// A challenge's other parameters and other challenges pass unchanged; a
// challenge URI that is not a token URI is dropped, never relayed with
// the coordinator's address.
func TestOAuth2ChallengeRewrite(t *testing.T) {
	h := http.Header{}
	h.Add("WWW-Authenticate", `Basic realm="Trino"`)
	h.Add("WWW-Authenticate", `Bearer realm="x", x_redirect_server="http://10.0.0.7:8080/oauth2/token/initiate/abc", x_token_server="http://10.0.0.7:8080/v1/query/x"`)
	g, err := gateway.New(gateway.Config{Router: newRouterFor(t), Keys: testKeys})
	if err != nil {
		t.Fatal(err)
	}
	gateway.RewriteChallenge(g, h, "https://gw.example", "http://10.0.0.7:8080")
	got := h.Values("WWW-Authenticate")
	if len(got) != 2 || got[0] != `Basic realm="Trino"` {
		t.Fatalf("challenges %q", got)
	}
	if !strings.HasPrefix(got[1], `Bearer realm="x", x_redirect_server="https://gw.example/_zk/k1.`) || strings.Contains(got[1], "10.0.0.7") || strings.Contains(got[1], "x_token_server") {
		t.Fatalf("rewritten challenge %q", got[1])
	}
}

// newRouterFor is a Router over one fixed, unreachable address.
func newRouterFor(t *testing.T) *routing.Router {
	t.Helper()
	return routerOver(t, "127.0.0.1:9")
}

// routerOver is a round-robin Router over the one coordinator at addr
// (host:port), closed when t ends.
func routerOver(t *testing.T, addr string) *routing.Router {
	t.Helper()
	disc := &changing{}
	disc.setNodes([]discovery.Node{{Addr: addr}})
	r, err := routing.New(routing.Config{Discoverer: disc, Strategy: strategy.Named("round_robin")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Two challenges in one WWW-Authenticate value (RFC 9110 lets a proxy
// join them with a comma): the Bearer challenge's URIs after another
// scheme's parameters are rewritten too, never relayed with the
// coordinator's address, and the other challenge passes unchanged.
func TestOAuth2ChallengeRewriteJoined(t *testing.T) {
	g, err := gateway.New(gateway.Config{Router: newRouterFor(t), Keys: testKeys})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{
		`Basic realm="Trino", Bearer x_redirect_server="http://10.0.0.7:8080/oauth2/token/initiate/abc", x_token_server="http://10.0.0.7:8080/oauth2/token/abc"`,
		`Basic realm="Trino",Bearer x_token_server="http://10.0.0.7:8080/oauth2/token/abc", x_redirect_server="http://10.0.0.7:8080/oauth2/token/initiate/abc"`,
		`Basic realm="Trino", Bearer x_redirect_server="http://10.0.0.7:8080/v1/query/x", x_token_server="http://10.0.0.7:8080/oauth2/token/abc"`,
	} {
		h := http.Header{"Www-Authenticate": {v}}
		gateway.RewriteChallenge(g, h, "https://gw.example", "http://10.0.0.7:8080")
		got := h.Get("WWW-Authenticate")
		if strings.Contains(got, "10.0.0.7") || !strings.HasPrefix(got, `Basic realm="Trino", Bearer x_`) || !strings.Contains(got, `x_token_server="https://gw.example/_zk/k1.`) {
			t.Fatalf("%s\nrewritten as %s", v, got)
		}
	}
}

// The coordinator that began a sign-in stops answering: while it is
// listed, its token poll gets 502 and its callback a 502 page; once it
// has left discovery and failed again, as a query's follow-up, it is gone
// for both replicas: 410, and a page saying to sign in again. No answer
// quotes a code, state or cookie.
func TestOAuth2CoordinatorFailedOrGone(t *testing.T) {
	s := newOAuth2Setup(t, false)
	redirect, tokenURI := s.challenge(t)
	b := s.browser(t)
	callback, cookie := s.signIn(t, b, redirect)
	var minter, other *coordinator.Coordinator
	for _, c := range s.coords {
		if c.OAuth2Counts().Challenges == 1 {
			minter = c
		} else {
			other = c
		}
	}
	if minter == nil || other == nil {
		t.Fatal("no single coordinator minted the challenge")
	}
	var shown []string
	answer := func(name string, c *http.Client, uri string, want int, says string) {
		t.Helper()
		resp, body := fetch(t, c, http.MethodGet, uri, nil, "")
		if resp.StatusCode != want || !strings.Contains(body, says) {
			t.Fatalf("%s: %s %s, want %d saying %q", name, resp.Status, body, want, says)
		}
		shown = append(shown, body)
	}
	if err := minter.Stop(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // each replica
		answer(fmt.Sprintf("poll, listed but stopped (%d)", i), s.client, tokenURI, http.StatusBadGateway, "did not answer")
		answer(fmt.Sprintf("callback, listed but stopped (%d)", i), b, callback, http.StatusBadGateway, "did not answer")
	}
	s.disc.set(other)
	for i := range 4 { // each replica, twice: the first failure of a departed coordinator is its end
		answer(fmt.Sprintf("poll, left and stopped (%d)", i), s.client, tokenURI, http.StatusGone, "gone")
		answer(fmt.Sprintf("callback, left and stopped (%d)", i), b, callback, http.StatusGone, "Sign in again")
	}
	if n := other.OAuth2Counts(); n.Initiates != 0 || n.Callbacks != 0 || n.RefusedCallbacks != 0 || n.Polls != 0 {
		t.Fatalf("the other coordinator got a step of the sign-in: %+v", other.OAuth2Counts())
	}
	cu, _ := url.Parse(callback)
	shown = append(shown, s.logs.String())
	noSecretShown(t, shown, oauth2Canary, cookie.Value, cu.Query().Get("state"))
}

// A challenge's parameter names are read without regard to case (RFC 9110
// section 11.2: auth-param names are case-insensitive), so a coordinator's
// URI under X_Redirect_Server is rewritten too, never relayed.
func TestOAuth2ChallengeRewriteAnyCase(t *testing.T) {
	g, err := gateway.New(gateway.Config{Router: newRouterFor(t), Keys: testKeys})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Www-Authenticate": {`Bearer X_Redirect_Server="http://10.0.0.7:8080/oauth2/token/initiate/abc", X_TOKEN_SERVER="http://10.0.0.7:8080/oauth2/token/abc"`}}
	gateway.RewriteChallenge(g, h, "https://gw.example", "http://10.0.0.7:8080")
	got := h.Get("WWW-Authenticate")
	if strings.Contains(got, "10.0.0.7") || strings.Count(got, `="https://gw.example/_zk/k1.`) != 2 {
		t.Fatalf("rewritten as %s", got)
	}
}

// The initiate step reaches the coordinator with the gateway's public
// address in X-Forwarded-Proto, -Host, -Port and, when --public-url has a
// path, -Prefix; never the client's own forwarding headers.
func TestOAuth2InitiateForwardedHeaders(t *testing.T) {
	var got atomic.Pointer[http.Header]
	coord := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/oauth2/token/initiate/") {
			h := r.Header.Clone()
			got.Store(&h)
			http.Redirect(w, r, "http://127.0.0.1:9/authorize?state=s1", http.StatusSeeOther)
			return
		}
		base := "http://" + r.Host
		w.Header().Set("WWW-Authenticate", `Bearer x_redirect_server="`+base+`/oauth2/token/initiate/h1", x_token_server="`+base+`/oauth2/token/a1"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(coord.Close)
	r := routerOver(t, strings.TrimPrefix(coord.URL, "http://"))
	for _, tc := range []struct{ public, proto, host, port, prefix string }{
		{"https://gw.example/trino", "https", "gw.example", "443", "/trino"},
		{"http://gw.example:8080", "http", "gw.example:8080", "8080", ""},
	} {
		g, err := gateway.New(gateway.Config{Router: r, Keys: testKeys, Flavour: gateway.Trino, StandardTransport: standardTransport, PublicURL: tc.public})
		if err != nil {
			t.Fatal(err)
		}
		srv := serveGateway(t, g)
		resp, body := fetch(t, http.DefaultClient, http.MethodPost, srv.URL+"/v1/statement", http.Header{"X-Trino-User": {"alice"}}, "SELECT 1")
		m := challengeParam.FindStringSubmatch(resp.Header.Get("WWW-Authenticate"))
		if resp.StatusCode != http.StatusUnauthorized || m == nil || m[1] != "x_redirect_server" || !strings.HasPrefix(m[2], tc.public+"/_zk/") {
			t.Fatalf("%s: the challenge %s %q %s", tc.public, resp.Status, resp.Header.Get("WWW-Authenticate"), body)
		}
		initiate := srv.URL + strings.TrimPrefix(m[2], tc.public)
		resp, body = fetch(t, noRedirects, http.MethodGet, initiate, http.Header{"X-Forwarded-Host": {"evil.example"}, "X-Forwarded-Prefix": {"/evil"}}, "")
		h := got.Load()
		if resp.StatusCode != http.StatusSeeOther || h == nil {
			t.Fatalf("%s: initiate %s %s", tc.public, resp.Status, body)
		}
		if h.Get("X-Forwarded-Proto") != tc.proto || h.Values("X-Forwarded-Host")[0] != tc.host || len(h.Values("X-Forwarded-Host")) != 1 ||
			h.Get("X-Forwarded-Port") != tc.port || h.Get("X-Forwarded-Prefix") != tc.prefix || len(h.Values("X-Forwarded-Prefix")) > 1 {
			t.Errorf("%s: the coordinator got forwarding headers %v %v %v %v", tc.public, h.Values("X-Forwarded-Proto"), h.Values("X-Forwarded-Host"), h.Values("X-Forwarded-Port"), h.Values("X-Forwarded-Prefix"))
		}
		got.Store(nil)
	}
}

// noRedirects is a client that hands back redirects.
var noRedirects = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// A coordinator that answers a token poll in gzip though asked for
// identity (as the relay of a statement's answers allows for): the
// client gets the answer decoded, its nextUri rewritten onto the gateway.
func TestOAuth2TokenPollGzipAnswer(t *testing.T) {
	coord := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := "http://" + r.Host
		if r.URL.Path == "/oauth2/token/a1" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			_, _ = io.WriteString(gz, `{"nextUri": "`+base+`/oauth2/token/a1"}`)
			_ = gz.Close()
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer x_redirect_server="`+base+`/oauth2/token/initiate/h1", x_token_server="`+base+`/oauth2/token/a1"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(coord.Close)
	r := routerOver(t, strings.TrimPrefix(coord.URL, "http://"))
	g, err := gateway.New(gateway.Config{Router: r, Keys: testKeys, Flavour: gateway.Trino, StandardTransport: standardTransport})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveGateway(t, g)
	resp, _ := fetch(t, http.DefaultClient, http.MethodPost, srv.URL+"/v1/statement", http.Header{"X-Trino-User": {"alice"}}, "SELECT 1")
	var tokenURI string
	for _, m := range challengeParam.FindAllStringSubmatch(resp.Header.Get("WWW-Authenticate"), -1) {
		if m[1] == "x_token_server" {
			tokenURI = m[2]
		}
	}
	if !strings.HasPrefix(tokenURI, srv.URL+"/_zk/") {
		t.Fatalf("the challenge %q", resp.Header.Get("WWW-Authenticate"))
	}
	// The transport would decode a gzip answer it asked for itself: ask
	// for identity, as the gateway does.
	resp, body := fetch(t, http.DefaultClient, http.MethodGet, tokenURI, http.Header{"Accept-Encoding": {"identity"}}, "")
	var m map[string]string
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &m) != nil || m["nextUri"] != tokenURI || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("a gzip poll answer: %s %q %q, want JSON with the nextUri %s", resp.Status, resp.Header.Get("Content-Encoding"), body, tokenURI)
	}
}

// noSecretShown fails t when any of shown (answers, logs) holds any of
// the secrets.
func noSecretShown(t *testing.T, shown []string, secrets ...string) {
	t.Helper()
	for _, text := range shown {
		for _, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Fatalf("a secret is shown in:\n%s", text)
			}
		}
	}
}
