package idp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/internal/testrig/idp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The code flow as Trino runs it against the provider: discovery names
// the issuer, the browser's authorization comes back to the redirect URI
// with a code and the state, and the token request, with the client's
// credentials by HTTP basic authentication only (client_secret_basic),
// gets tokens whose subject is the queued user.
func TestCodeFlowAsTrinoRunsIt(t *testing.T) {
	p := idp.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := &http.Client{}
	defer client.CloseIdleConnections()

	var discovery struct {
		Issuer, AuthorizationEndpoint, TokenEndpoint string
	}
	resp, err := client.Get(p.Issuer() + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	err = json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	discovery.Issuer, _ = raw["issuer"].(string)
	discovery.AuthorizationEndpoint, _ = raw["authorization_endpoint"].(string)
	discovery.TokenEndpoint, _ = raw["token_endpoint"].(string)
	if discovery.Issuer != p.Issuer() {
		t.Fatalf("discovery names issuer %q, want %q", discovery.Issuer, p.Issuer())
	}

	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer callback.Close()
	cfg := p.OAuth2()
	p.QueueUser("carol")
	browser, err := idp.NewBrowser()
	if err != nil {
		t.Fatal(err)
	}
	defer browser.CloseIdleConnections()
	q := url.Values{"client_id": {cfg.ClientID}, "response_type": {"code"}, "scope": {"openid"}, "state": {"s1"}, "nonce": {"n1"}, "redirect_uri": {callback.URL + "/oauth2/callback"}}
	v, err := browser.Open(ctx, discovery.AuthorizationEndpoint+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	back, err := url.Parse(v.Path[len(v.Path)-1])
	if err != nil || v.Status != http.StatusOK || back.Path != "/oauth2/callback" || back.Query().Get("state") != "s1" || back.Query().Get("code") == "" {
		t.Fatalf("the authorization ended at %v (HTTP %d, %v); want the callback with a code and the state", v.Path, v.Status, err)
	}
	if p.Authorizations() != 1 {
		t.Errorf("%d authorizations, want 1", p.Authorizations())
	}

	form := url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")}, "redirect_uri": {callback.URL + "/oauth2/callback"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, discovery.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(cfg.ClientID, cfg.ClientSecret)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tokens struct {
		AccessToken string `json:"access_token"`
		IDToken     string `json:"id_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tokens)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || tokens.AccessToken == "" || tokens.IDToken == "" {
		t.Fatalf("the token request with basic authentication: HTTP %d, %v; want an access and an ID token", resp.StatusCode, err)
	}
	parts := strings.Split(tokens.AccessToken, ".")
	if len(parts) != 3 {
		t.Fatalf("the access token is not a JWT (%d parts)", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Sub string `json:"sub"`
		Iss string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Sub != "carol" || claims.Iss != p.Issuer() {
		t.Fatalf("the access token's claims: sub %q iss %q (%v); want carol from %s", claims.Sub, claims.Iss, err, p.Issuer())
	}
	if p.Tokens() != 1 {
		t.Errorf("%d token requests, want 1", p.Tokens())
	}
}
