package coordinator

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The OAuth2 mode as Trino's: a statement without a token is challenged
// with URIs on the address the client used (or the one the forwarding
// headers name), the initiate step redirects to the identity provider with
// a state and the callback URI, a callback with a state this coordinator
// did not sign is refused, a good one exchanges the code and the poll then
// gets the token, which authenticates statements.
func TestOAuth2Mode(t *testing.T) {
	var gotRedirect string
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		if r.ParseForm() != nil || id != "trino" || secret != "sec" || r.PostForm.Get("code") != "the-code" {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		gotRedirect = r.PostForm.Get("redirect_uri")
		_ = json.NewEncoder(w).Encode(map[string]string{"access_token": "the-token"})
	}))
	defer idp.Close()
	c, err := Start(Options{Flavour: Trino, HonourForwarded: true, OAuth2: &OAuth2{
		AuthURL: "https://idp.example/authorize", TokenURL: idp.URL, ClientID: "trino", ClientSecret: "sec", PollWait: 10 * time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	resp, _ := exchange(t, http.MethodPost, c.URL()+"/v1/statement", http.Header{"X-Trino-User": {"alice"}}, "SELECT 1")
	m := regexp.MustCompile(`^Bearer x_redirect_server="([^"]+)", x_token_server="([^"]+)"$`).FindStringSubmatch(resp.Header.Get("WWW-Authenticate"))
	if resp.StatusCode != http.StatusUnauthorized || m == nil {
		t.Fatalf("no token: %s %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	redirect, tokenURI := m[1], m[2]
	authID := strings.TrimPrefix(tokenURI, c.URL()+"/oauth2/token/")
	if redirect != c.URL()+"/oauth2/token/initiate/"+hashAuthID(authID) || !validUUID(authID) {
		t.Fatalf("challenge URIs %q %q", redirect, tokenURI)
	}

	fwd := http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"gw.example"}, "X-Forwarded-Port": {"8443"}}
	req, _ := http.NewRequest(http.MethodGet, redirect, nil)
	req.Header = fwd
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc.Host != "idp.example" || loc.Query().Get("redirect_uri") != "https://gw.example:8443/oauth2/callback" {
		t.Fatalf("initiate: %s %q", resp.Status, resp.Header.Get("Location"))
	}
	state := loc.Query().Get("state")

	if code, body := pollToken(t, tokenURI); code != http.StatusOK || body["nextUri"] != tokenURI {
		t.Fatalf("poll before the callback: %d %v", code, body)
	}
	resp, _ = exchange(t, http.MethodGet, c.URL()+"/oauth2/callback?code=the-code&state=x"+url.QueryEscape(state), fwd, "")
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a forged state: %s", resp.Status)
	}
	resp, _ = exchange(t, http.MethodGet, c.URL()+"/oauth2/callback?code=the-code&state="+url.QueryEscape(state), fwd, "")
	if resp.StatusCode != http.StatusOK || gotRedirect != "https://gw.example:8443/oauth2/callback" {
		t.Fatalf("callback: %s, redirect_uri at the token endpoint %q", resp.Status, gotRedirect)
	}
	if code, body := pollToken(t, tokenURI); code != http.StatusOK || body["token"] != "the-token" {
		t.Fatalf("poll after the callback: %d %v", code, body)
	}
	resp, _ = exchange(t, http.MethodPost, c.URL()+"/v1/statement", http.Header{"X-Trino-User": {"alice"}, "Authorization": {"Bearer the-token"}}, "SELECT 1")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with the token: %s", resp.Status)
	}
	if n := c.OAuth2Counts(); n.Challenges != 1 || n.Initiates != 1 || n.Callbacks != 1 || n.RefusedCallbacks != 1 || n.Polls != 2 {
		t.Fatalf("counts %+v", n)
	}
}

func pollToken(t *testing.T, uri string) (int, map[string]string) {
	t.Helper()
	resp, b := exchange(t, http.MethodGet, uri, nil, "")
	var m map[string]string
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}
