package gatewayrig

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// The client the stub identity provider knows.
const (
	IdPClientID     = "trino"
	IdPClientSecret = "s3cret"
)

// IdP is a stub OAuth2 identity provider with one client (IdPClientID):
// its authorization endpoint (/authorize) sends the browser straight back
// to the redirect_uri with a code, as for a user already signed in; its
// token endpoint (/token) trades a code for an access token once, only for
// the client's secret and the redirect_uri the code was issued for.
//
// It is not the OpenID Connect provider of internal/testrig/idp
// (mockoidc), which a real Trino needs, for what the gateway's tests ask
// of it: every code and token it issues holds the test's marker, so a
// test finds one in a log or a page even when only the coordinator saw
// it; its token endpoint refuses a code sent with another redirect_uri
// than the one it was issued for (mockoidc does not check it), which
// is how a callback relayed so that the coordinator sees another address
// than at the sign-in's start fails; and Accept tells a simulated
// coordinator which tokens it issued, where mockoidc's are JWTs a
// coordinator would verify by their signature.
type IdP struct {
	// URL is its base URL, http://127.0.0.1:port.
	URL string

	marker    string
	mu        sync.Mutex
	codes     map[string]string // code → redirect_uri
	issued    map[string]bool   // access tokens
	redirects []string          // the redirect_uris asked for at authorization
	seq       atomic.Int64
}

// StartIdP starts an IdP until tb ends. Every code and token it issues
// holds marker, for tests that look for them where they must not be.
func StartIdP(tb testing.TB, marker string) *IdP {
	tb.Helper()
	idp := &IdP{marker: marker, codes: map[string]string{}, issued: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", idp.authorize)
	mux.HandleFunc("POST /token", idp.token)
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	idp.URL = srv.URL
	return idp
}

func (idp *IdP) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != IdPClientID || q.Get("response_type") != "code" || q.Get("state") == "" || q.Get("redirect_uri") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := fmt.Sprintf("code-%s-%d", idp.marker, idp.seq.Add(1))
	idp.mu.Lock()
	idp.codes[code] = q.Get("redirect_uri")
	idp.redirects = append(idp.redirects, q.Get("redirect_uri"))
	idp.mu.Unlock()
	http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
}

func (idp *IdP) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok || id != IdPClientID || secret != IdPClientSecret || r.ParseForm() != nil {
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		return
	}
	code := r.PostForm.Get("code")
	idp.mu.Lock()
	defer idp.mu.Unlock()
	redirect, ok := idp.codes[code]
	delete(idp.codes, code)
	if !ok || redirect != r.PostForm.Get("redirect_uri") {
		http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
		return
	}
	tok := fmt.Sprintf("token-%s-%d", idp.marker, idp.seq.Add(1))
	idp.issued[tok] = true
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
}

// Accept reports whether tok is a token the IdP issued: what every
// coordinator trusts (a real Trino checks the token's signature).
func (idp *IdP) Accept(tok string) bool {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	return idp.issued[tok]
}

// Redirects returns the redirect_uris asked for at authorization so far.
func (idp *IdP) Redirects() []string {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	return append([]string(nil), idp.redirects...)
}

// Coordinator returns a simulated coordinator's OAuth2 mode for this IdP,
// with Trino's nonce cookie when nonce is set, and token polls that wait
// 50 ms for the callback.
func (idp *IdP) Coordinator(nonce bool) *coordinator.OAuth2 {
	return &coordinator.OAuth2{
		AuthURL: idp.URL + "/authorize", TokenURL: idp.URL + "/token",
		ClientID: IdPClientID, ClientSecret: IdPClientSecret,
		Accept: idp.Accept, PollWait: 50 * time.Millisecond, Nonce: nonce,
	}
}
