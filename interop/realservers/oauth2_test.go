package realservers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/gatewayrig"
	"github.com/zkpresto/zkpresto/internal/testrig/idp"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// oauth2Fleet is a Trino coordinator configured for OAuth2 with a test
// identity provider, registered at its https address under a namespace of
// its own in the shared ZooKeeper.
type oauth2Fleet struct {
	idp     *idp.Provider
	cluster *realserver.Cluster
	server  *realserver.Server
	certs   *testtls.Files
}

// startOAuth2Fleet starts the identity provider, then the coordinator
// that reads its discovery document; both stop when t ends.
func startOAuth2Fleet(t *testing.T) *oauth2Fleet {
	t.Helper()
	certs, err := testtls.Generate(t.TempDir(), "coordinators")
	if err != nil {
		t.Fatal(err)
	}
	provider := idp.Start(t)
	cluster, err := realserver.StartCluster(realserver.ClusterOptions{
		Flavour: coordinator.Trino, Servers: 1, Namespace: "trino-oauth2", ZooKeeper: zkServer,
		Server: realserver.Options{
			Name: "trino-oauth2", HTTPSKeyStore: certs.ServerKeyStore, OAuth2: provider.OAuth2(),
			// Through the gateway, the forwarding headers it sends on
			// /oauth2/* make the redirect URI the gateway's callback;
			// the direct clients send none.
			Config: map[string]string{"http-server.process-forwarded": "true"},
			// Started while the shared servers run: see startSecureFleet.
			StartTimeout: 8 * time.Minute,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Close() })
	return &oauth2Fleet{idp: provider, cluster: cluster, server: cluster.Servers()[0], certs: certs}
}

// whoAmIOAuth2 is the statement the OAuth2 tests run: the user Trino
// took from the access token's subject.
const whoAmIOAuth2 = "SELECT current_user"

// oauth2Target is where the OAuth2 clients connect: the coordinator's
// https port, or the https front of two gateway replicas.
type oauth2Target struct {
	// base is the https base URL, caFile the CA its certificate is from,
	// client an http.Client trusting it.
	base, caFile string
	client       *http.Client
	// rig is the gateway deployment, nil for the coordinator.
	rig *gatewayrig.Rig
}

func (tg oauth2Target) addr() string { return strings.TrimPrefix(tg.base, "https://") }

// OAuth2 external authentication end to end, on a real Trino 476 with
// http-server.authentication.type=OAUTH2 and a test identity provider
// (mockoidc) that approves every authorization at once: the protocol by
// hand, then Trino JDBC's externalAuthentication, trino-python-client's
// OAuth2Authentication, each with the test as the user's browser; first
// straight to the coordinator, then through two gateway replicas behind a
// round-robin https front (every request on the other replica than the
// one before), whose /oauth2/callback is the redirect URI. One
// coordinator serves every subtest (a start costs a minute).
func TestOAuth2Authentication(t *testing.T) {
	fleet(t, coordinator.Trino)
	of := startOAuth2Fleet(t)
	rig := gatewayrig.Start(t, gatewayrig.Options{
		Addrs: []string{of.server.HTTPSAddr()}, CoordinatorCA: of.certs.CAFile, TLS: true,
		Coordinator: coordinator.Options{Flavour: coordinator.Trino},
	})
	direct := &http.Client{Transport: browserlessTransport(t, of.certs)}
	defer direct.CloseIdleConnections()
	browser, err := idp.NewBrowser(of.certs.CAFile, rig.FrontCAFile)
	if err != nil {
		t.Fatal(err)
	}
	defer browser.CloseIdleConnections()
	for _, c := range []struct {
		name string
		tg   oauth2Target
	}{
		{"direct", oauth2Target{base: of.server.HTTPSURL(), caFile: of.certs.CAFile, client: direct}},
		{"gateway", oauth2Target{base: rig.Front, caFile: rig.FrontCAFile, client: rig.Client, rig: rig}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Run("protocol", func(t *testing.T) { testOAuth2Protocol(t, of, browser, c.tg) })
			t.Run("jdbc", func(t *testing.T) { testOAuth2JDBC(t, of, browser, c.tg) })
			t.Run("python", func(t *testing.T) { testOAuth2Python(t, of, browser, c.tg) })
		})
	}
	hits := rig.Hits()
	if hits[0] == 0 || hits[1] == 0 {
		t.Errorf("the replicas served %v requests; want both some", hits)
	}
}

// challenge is the external authentication challenge of a 401.
type challenge struct {
	redirect, token string
}

// parseChallenge reads WWW-Authenticate: Bearer x_redirect_server="...",
// x_token_server="..." (Trino's OAuth2Authenticator).
func parseChallenge(h http.Header) (challenge, error) {
	for _, v := range h.Values("WWW-Authenticate") {
		scheme, params, _ := strings.Cut(v, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			continue
		}
		var c challenge
		for _, p := range strings.Split(params, ",") {
			k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok {
				continue
			}
			val = strings.Trim(val, `"`)
			switch k {
			case "x_redirect_server":
				c.redirect = val
			case "x_token_server":
				c.token = val
			}
		}
		if c.token != "" {
			return c, nil
		}
	}
	return challenge{}, fmt.Errorf("no Bearer challenge with x_token_server in %q", h.Values("WWW-Authenticate"))
}

// postStatement POSTs sql to base's /v1/statement with authorization (if
// any) and no user header, and returns the answer and its body.
func postStatement(t *testing.T, client *http.Client, base, sql, authorization string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, base+"/v1/statement", strings.NewReader(sql))
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// pollToken GETs the token server until it answers a token or an error,
// following its nextUri, as the clients do (Trino's
// OAuth2TokenExchangeResource answers {"nextUri"} while the user has not
// finished, {"token"} or {"error"} then).
func pollToken(ctx context.Context, client *http.Client, uri string) (string, error) {
	for range 20 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", fmt.Errorf("polling the token server: %w", errors.Unwrap(err))
		}
		var answer struct {
			Token   string `json:"token"`
			NextURI string `json:"nextUri"`
			Error   string `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		switch {
		case err != nil:
			return "", fmt.Errorf("the token server's answer (HTTP %d): %w", resp.StatusCode, err)
		case answer.Token != "":
			return answer.Token, nil
		case answer.Error != "":
			return "", fmt.Errorf("the token server: %s", answer.Error)
		case answer.NextURI == "":
			return "", fmt.Errorf("the token server answered HTTP %d with neither token, nextUri nor error", resp.StatusCode)
		}
		uri = answer.NextURI
	}
	return "", errors.New("the token server gave no token in 20 polls")
}

// runWithToken runs sql on base with the bearer token to its last page
// and returns the first row's first column.
func runWithToken(t *testing.T, client *http.Client, base, sql, token string) string {
	t.Helper()
	resp, body := postStatement(t, client, base, sql, "Bearer "+token)
	for {
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("with the token: HTTP %d %.300s", resp.StatusCode, body)
		}
		var p struct {
			NextURI string  `json:"nextUri"`
			Data    [][]any `json:"data"`
			Error   *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatalf("with the token: %v in %.300s", err, body)
		}
		if p.Error != nil {
			t.Fatalf("with the token: %s", p.Error.Message)
		}
		if len(p.Data) > 0 {
			return fmt.Sprint(p.Data[0][0])
		}
		if p.NextURI == "" {
			t.Fatalf("with the token: no row")
		}
		req, err := http.NewRequestWithContext(ctx(t), http.MethodGet, p.NextURI, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		r, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp, body = r, string(b)
	}
}

// The protocol by hand, as every client speaks it: a statement without a
// token is answered 401 with the challenge on base's origin; the browser
// opens x_redirect_server, which sends it to the identity provider and
// back to the coordinator's /oauth2/callback; x_token_server then gives
// the token, with which the statement runs as the identity provider's
// user. A token the coordinator did not mint is refused.
func testOAuth2Protocol(t *testing.T, of *oauth2Fleet, browser *idp.Browser, tg oauth2Target) {
	base, client := tg.base, tg.client
	resp, body := postStatement(t, client, base, whoAmIOAuth2, "")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a statement without a token: HTTP %d %.300s; want 401", resp.StatusCode, body)
	}
	c, err := parseChallenge(resp.Header)
	if err != nil {
		t.Fatal(err)
	}
	for name, u := range map[string]string{"x_redirect_server": c.redirect, "x_token_server": c.token} {
		if !strings.HasPrefix(u, base+"/") {
			t.Errorf("%s is %q; want on %s", name, u, base)
		}
		if tg.rig != nil && strings.Contains(u, of.server.HTTPSAddr()) {
			t.Errorf("%s through the gateway names the coordinator: %q", name, u)
		}
	}

	const user = "oauth2-protocol-user"
	of.idp.QueueUser(user)
	before := of.idp.Authorizations()
	visit, err := browser.Open(ctx(t), c.redirect)
	if err != nil {
		t.Fatal(err)
	}
	if visit.Status != http.StatusOK || of.idp.Authorizations() != before+1 {
		t.Fatalf("the browser: HTTP %d after %d steps, %d authorizations; want 200 and one authorization\n%.500s", visit.Status, len(visit.Path), of.idp.Authorizations()-before, visit.Body)
	}
	callback := visit.Path[len(visit.Path)-1]
	if !strings.HasPrefix(callback, base+"/oauth2/callback?") {
		t.Errorf("the browser's last step is not %s/oauth2/callback", base)
	}
	token, err := pollToken(ctx(t), client, c.token)
	if err != nil {
		t.Fatal(err)
	}
	if got := runWithToken(t, client, base, whoAmIOAuth2, token); got != user {
		t.Fatalf("with the token the statement ran as %q, want the identity provider's user %q", got, user)
	}

	resp, body = postStatement(t, client, base, whoAmIOAuth2, "Bearer not-a-token-"+user)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a token the coordinator did not mint: HTTP %d %.300s; want 401", resp.StatusCode, body)
	}
	if tg.rig == nil {
		return
	}
	// The callback replayed by another browser, without the gateway's
	// cookie: the gateway cannot tell which coordinator began the
	// sign-in, and refuses it.
	other, err := idp.NewBrowser(tg.caFile)
	if err != nil {
		t.Fatal(err)
	}
	defer other.CloseIdleConnections()
	replay, err := other.Open(ctx(t), callback)
	if err != nil {
		t.Fatal(err)
	}
	if replay.Status != http.StatusBadRequest {
		t.Errorf("the callback replayed without the gateway's cookie: HTTP %d %.300s; want 400", replay.Status, replay.Body)
	}
}

// browserlessTransport is a client's transport trusting certs' CA: the
// client, not the browser (no cookies).
func browserlessTransport(t *testing.T, certs *testtls.Files) http.RoundTripper {
	t.Helper()
	cfg, err := certs.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	return &http.Transport{TLSClientConfig: cfg}
}

// followPrinted runs cmd, reads its standard output line by line, opens
// in browser every line that is an https URL (the redirect URI a client
// printed instead of opening a browser), and returns the rest of the
// output and the URLs it opened, once cmd has ended.
func followPrinted(t *testing.T, browser *idp.Browser, cmd *exec.Cmd) (out string, opened []idp.Visit, err error) {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		// A client may print the URL after words of its own.
		if i := strings.Index(line, "https://"); i >= 0 && strings.Contains(line, "/oauth2/") {
			v, err := browser.Open(ctx(t), strings.Fields(line[i:])[0])
			if err != nil {
				t.Error(err)
			}
			opened = append(opened, v)
			continue
		}
		lines.WriteString(line + "\n")
	}
	err = cmd.Wait()
	if err != nil {
		err = fmt.Errorf("%w; stderr:\n%s", err, stderr.String())
	}
	return lines.String(), opened, err
}

// Trino JDBC with externalAuthentication=true: its PRINT redirect handler
// prints the URI to open (the default, OPEN, would start a desktop
// browser), the test opens it, the driver polls the token server and runs
// the statement with the token.
func testOAuth2JDBC(t *testing.T, of *oauth2Fleet, browser *idp.Browser, tg oauth2Target) {
	of.idp.QueueUser(passwordUser) // JdbcProbe's user
	before := of.idp.Authorizations()
	bin, err := realserver.Java(coordinator.Trino)
	if err != nil {
		t.Fatal(err)
	}
	jdbcURL := "jdbc:trino://" + tg.addr() + "/tpch/tiny?SSL=true&SSLTrustStorePath=" + url.QueryEscape(tg.caFile) +
		"&externalAuthentication=true&externalAuthenticationRedirectHandlers=PRINT&externalAuthenticationTimeout=2m"
	c, cancel := context.WithTimeout(ctx(t), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, bin, "-cp", jar(t, realserver.TrinoJDBC), "testdata/JdbcProbe.java", jdbcURL, whoAmIOAuth2, "SELECT count(*) FROM nation")
	out, opened, err := followPrinted(t, browser, cmd)
	if err != nil {
		t.Fatalf("JDBC: %v\n%s", err, out)
	}
	if len(opened) != 1 || opened[0].Status != http.StatusOK || of.idp.Authorizations() != before+1 {
		t.Fatalf("JDBC printed %d URIs to open (want 1, its pages %v), %d authorizations (want 1)\n%s", len(opened), visitStatuses(opened), of.idp.Authorizations()-before, out)
	}
	if !strings.Contains(out, "1\t"+passwordUser+"\n") || !strings.Contains(out, "2\t25\n") {
		t.Fatalf("JDBC after the external authentication:\n%s\nwant 1\t%s and 2\t25", out, passwordUser)
	}
}

func visitStatuses(vs []idp.Visit) []int {
	var s []int
	for _, v := range vs {
		s = append(s, v.Status)
	}
	return s
}

// trino-python-client's OAuth2Authentication with a redirect handler that
// prints the URL (testdata/python_oauth2.py): the test opens it, the
// client polls the token server and runs the statement with the token.
func testOAuth2Python(t *testing.T, of *oauth2Fleet, browser *idp.Browser, tg oauth2Target) {
	python := pythonClients(t)
	const user = "oauth2-python-user"
	of.idp.QueueUser(user)
	before := of.idp.Authorizations()
	host, port, _ := strings.Cut(tg.addr(), ":")
	c, cancel := context.WithTimeout(ctx(t), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, python, "testdata/python_oauth2.py", host, port, tg.caFile, user)
	// requests takes REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE over a
	// Session's verify (Session.merge_environment_settings), so where
	// either is set the client's verify=CA_FILE would be ignored.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REQUESTS_CA_BUNDLE=") && !strings.HasPrefix(kv, "CURL_CA_BUNDLE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, opened, err := followPrinted(t, browser, cmd)
	if err != nil {
		t.Fatalf("trino-python-client: %v\n%s", err, out)
	}
	if len(opened) != 1 || opened[0].Status != http.StatusOK || of.idp.Authorizations() != before+1 {
		t.Fatalf("trino-python-client printed %d URLs to open (want 1, its pages %v), %d authorizations (want 1)\n%s", len(opened), visitStatuses(opened), of.idp.Authorizations()-before, out)
	}
	var got struct {
		User  string `json:"user"`
		Count int    `json:"count"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.User != user || got.Count != 25 {
		t.Fatalf("trino-python-client after the external authentication: %q (%v); want user %q and 25 nations", out, err, user)
	}
}
