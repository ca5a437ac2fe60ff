package coordinator

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// OAuth2 makes a Trino coordinator authenticate statements with OAuth2
// external authentication, as Trino does with
// http-server.authentication.type=oauth2 (Options.OAuth2). It follows
// trino-main's server/security/oauth2:
//
//   - a statement or query request without an accepted bearer token gets
//     401 with WWW-Authenticate: Bearer x_redirect_server="{base}/oauth2/token/initiate/{authIdHash}",
//     x_token_server="{base}/oauth2/token/{authId}", base being the
//     request's (OAuth2Authenticator.needAuthentication);
//   - GET /oauth2/token/initiate/{authIdHash} answers 303 to AuthURL with
//     response_type=code, client_id, redirect_uri = the request's base +
//     /oauth2/callback and a state the coordinator signs, carrying the
//     authIdHash and an expiry (OAuth2TokenExchangeResource
//     .initiateTokenExchange, OAuth2Service.startOAuth2Challenge);
//   - GET /oauth2/callback?code&state checks the state (400 "Authentication
//     response could not be verified" when it fails), exchanges the code at
//     TokenURL with the same redirect_uri and keeps the access token under
//     the authIdHash (OAuth2CallbackResource, OAuth2Service
//     .finishOAuth2Challenge);
//   - GET /oauth2/token/{authId} answers {"token": ...} or {"error": ...}
//     once the callback came, or {"nextUri": its own URL} after PollWait
//     (OAuth2TokenExchangeResource.getAuthenticationToken, whose wait is
//     MAX_POLL_TIME); DELETE drops the token.
//
// The base of a request honours the forwarding headers when
// Options.HonourForwarded is set (http-server.process-forwarded=true), so
// behind a proxy the redirect_uri is the proxy's. With Nonce, the nonce of
// the openid scope is simulated too.
type OAuth2 struct {
	// AuthURL is the identity provider's authorization endpoint.
	AuthURL string
	// TokenURL is its token endpoint.
	TokenURL string
	// ClientID and ClientSecret are the coordinator's client at the
	// identity provider, sent to TokenURL with HTTP basic authentication.
	ClientID, ClientSecret string
	// StateKey signs the state, as
	// http-server.authentication.oauth2.state-key; empty means a random
	// key of this coordinator's own (Trino's default), so only it
	// accepts its states.
	StateKey string
	// Accept says whether a bearer token authenticates; nil accepts the
	// tokens this coordinator obtained at TokenURL.
	Accept func(token string) bool
	// Client reaches TokenURL; nil means http.DefaultClient.
	Client *http.Client
	// PollWait is how long a token poll waits for the callback before it
	// answers nextUri; default 1s (Trino waits 10 s).
	PollWait time.Duration
	// ChallengeTimeout is how long a state is good for; default 15m
	// (http-server.authentication.oauth2.challenge-timeout).
	ChallengeTimeout time.Duration
	// Nonce makes the initiate step send a nonce's hash with the
	// authorization request and the nonce in Trino's cookie
	// __Secure-Trino-Nonce (Secure, HttpOnly, Path=/oauth2/callback) with
	// its 303, and the callback refuse a browser that does not bring the
	// cookie back, as Trino does when its scopes hold openid
	// (OAuth2Service.startOAuth2Challenge, NonceCookie; Trino checks the
	// nonce against the ID token, the simulator against its state).
	Nonce bool
}

// OAuth2Counts is what a coordinator's OAuth2 resources served.
type OAuth2Counts struct {
	// Challenges counts the 401 challenges sent.
	Challenges int64
	// Initiates counts the initiate steps answered with a redirect.
	Initiates int64
	// Callbacks counts the callbacks whose code was exchanged for a token.
	Callbacks int64
	// RefusedCallbacks counts the callbacks refused (a bad state, a failed
	// exchange).
	RefusedCallbacks int64
	// Polls counts the token polls.
	Polls int64
	// CallbackCookies are the names of the cookies the last callback
	// brought.
	CallbackCookies []string
}

// oauth2State is a coordinator's OAuth2 mode.
type oauth2State struct {
	cfg    OAuth2
	key    []byte
	counts struct{ challenges, initiates, callbacks, refused, polls atomic.Int64 }

	mu              sync.Mutex
	results         map[string]*tokenResult // by authIdHash
	accepted        map[string]bool         // tokens obtained, when cfg.Accept is nil
	callbackCookies []string                // see OAuth2Counts
}

// tokenResult is the outcome of one sign-in, once its callback came.
type tokenResult struct {
	done  chan struct{}
	token string
	err   string
}

func newOAuth2State(cfg OAuth2) (*oauth2State, error) {
	if cfg.AuthURL == "" || cfg.TokenURL == "" {
		return nil, errors.New("coordinator: OAuth2 needs AuthURL and TokenURL")
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = time.Second
	}
	if cfg.ChallengeTimeout <= 0 {
		cfg.ChallengeTimeout = 15 * time.Minute
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	o := &oauth2State{cfg: cfg, results: map[string]*tokenResult{}, accepted: map[string]bool{}}
	if cfg.StateKey != "" {
		sum := sha256.Sum256([]byte(cfg.StateKey)) // as OAuth2Service hashes state-key
		o.key = sum[:]
	} else {
		o.key = make([]byte, 32)
		_, _ = rand.Read(o.key)
	}
	return o, nil
}

// OAuth2Counts returns what the coordinator's OAuth2 resources served;
// zero without Options.OAuth2.
func (c *Coordinator) OAuth2Counts() OAuth2Counts {
	o := c.oauth
	if o == nil {
		return OAuth2Counts{}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return OAuth2Counts{
		Challenges: o.counts.challenges.Load(), Initiates: o.counts.initiates.Load(),
		Callbacks: o.counts.callbacks.Load(), RefusedCallbacks: o.counts.refused.Load(), Polls: o.counts.polls.Load(),
		CallbackCookies: slices.Clone(o.callbackCookies),
	}
}

// routes adds the OAuth2 resources to mux.
func (o *oauth2State) routes(c *Coordinator, mux *http.ServeMux) {
	mux.HandleFunc("GET /oauth2/token/initiate/{hash}", func(w http.ResponseWriter, r *http.Request) { o.initiate(c, w, r) })
	mux.HandleFunc("GET /oauth2/callback", func(w http.ResponseWriter, r *http.Request) { o.callback(c, w, r) })
	mux.HandleFunc("GET /oauth2/token/{authId}", func(w http.ResponseWriter, r *http.Request) { o.poll(c, w, r) })
	mux.HandleFunc("DELETE /oauth2/token/{authId}", func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		delete(o.results, hashAuthID(r.PathValue("authId")))
		o.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})
}

// guards reports whether path needs authentication: the statement and
// query resources. /v1/info is public on Trino too.
func (o *oauth2State) guards(path string) bool {
	return strings.HasPrefix(path, "/v1/statement") || strings.HasPrefix(path, "/v1/query")
}

// authenticated reports whether r carries an accepted bearer token.
func (o *oauth2State) authenticated(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return false
	}
	if o.cfg.Accept != nil {
		return o.cfg.Accept(tok)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.accepted[tok]
}

// challenge answers 401 with a fresh auth id's URIs.
func (o *oauth2State) challenge(c *Coordinator, w http.ResponseWriter, r *http.Request) {
	o.counts.challenges.Add(1)
	authID := newUUID()
	base := c.origin(r)
	w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer x_redirect_server="%s/oauth2/token/initiate/%s", x_token_server="%s/oauth2/token/%s"`,
		base, hashAuthID(authID), base, authID))
	writeText(w, http.StatusUnauthorized, "Unauthorized")
}

// stateClaims is what the state carries (Trino: a JWT with audience
// trino_oauth_ui, the claim handler_state and an expiry).
type stateClaims struct {
	Audience     string `json:"aud"`
	HandlerState string `json:"handler_state"`
	Expiry       int64  `json:"exp"`
	// NonceHash is the simulator's: Trino finds it in the ID token.
	NonceHash string `json:"nonce_hash,omitempty"`
}

// nonceCookie is Trino's NonceCookie.NONCE_COOKIE.
const nonceCookie = "__Secure-Trino-Nonce"

// hashNonce is Trino's OAuth2Service.hashNonce: SHA-256 in hex.
func hashNonce(nonce string) string {
	sum := sha256.Sum256([]byte(nonce))
	return hex.EncodeToString(sum[:])
}

func (o *oauth2State) signState(claims stateClaims) string {
	payload, _ := json.Marshal(claims)
	p := base64.RawURLEncoding.EncodeToString(payload)
	mac := hmac.New(sha256.New, o.key)
	mac.Write([]byte(p))
	return p + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func (o *oauth2State) parseState(state string) (stateClaims, bool) {
	p, sig, ok := strings.Cut(state, ".")
	if !ok {
		return stateClaims{}, false
	}
	mac := hmac.New(sha256.New, o.key)
	mac.Write([]byte(p))
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac.Sum(nil)) {
		return stateClaims{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	var claims stateClaims
	if err != nil || json.Unmarshal(payload, &claims) != nil || claims.Audience != "trino_oauth_ui" || time.Now().Unix() >= claims.Expiry {
		return stateClaims{}, false
	}
	return claims, true
}

func (o *oauth2State) initiate(c *Coordinator, w http.ResponseWriter, r *http.Request) {
	o.counts.initiates.Add(1)
	expiry := time.Now().Add(o.cfg.ChallengeTimeout)
	claims := stateClaims{Audience: "trino_oauth_ui", HandlerState: r.PathValue("hash"), Expiry: expiry.Unix()}
	var nonce string
	if o.cfg.Nonce {
		nonce = rand.Text()
		claims.NonceHash = hashNonce(nonce)
		http.SetCookie(w, &http.Cookie{Name: nonceCookie, Value: nonce, Path: "/oauth2/callback", Expires: expiry, Secure: true, HttpOnly: true})
	}
	state := o.signState(claims)
	q := url.Values{
		"response_type": {"code"},
		"client_id":     {o.cfg.ClientID},
		"redirect_uri":  {c.origin(r) + "/oauth2/callback"},
		"state":         {state},
		"scope":         {"openid"},
	}
	if nonce != "" {
		q.Set("nonce", hashNonce(nonce))
	}
	sep := "?"
	if strings.Contains(o.cfg.AuthURL, "?") {
		sep = "&"
	}
	w.Header().Set("Location", o.cfg.AuthURL+sep+q.Encode())
	w.WriteHeader(http.StatusSeeOther)
}

// failureHTML is Trino's failure page (oauth2/failure.html) with the
// message in place.
func failureHTML(msg string) string {
	return "<!DOCTYPE html>\n<html><head><title>Trino</title></head><body><p>" + msg + "</p></body></html>\n"
}

func (o *oauth2State) callback(c *Coordinator, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var names []string
	for _, ck := range r.Cookies() {
		names = append(names, ck.Name)
	}
	o.mu.Lock()
	o.callbackCookies = names
	o.mu.Unlock()
	if o.cfg.Nonce {
		// Every answer of Trino's callback deletes the nonce cookie.
		http.SetCookie(w, &http.Cookie{Name: nonceCookie, Value: "delete", Path: "/oauth2/callback", MaxAge: -1, Secure: true, HttpOnly: true})
	}
	claims, ok := o.parseState(q.Get("state"))
	if !ok {
		o.counts.refused.Add(1)
		writeHTML(w, http.StatusBadRequest, failureHTML("Authentication response could not be verified"))
		return
	}
	result := o.result(claims.HandlerState)
	if e := q.Get("error"); e != "" {
		o.counts.refused.Add(1)
		o.finish(result, "", "Authentication response could not be verified: error="+e)
		writeHTML(w, http.StatusOK, failureHTML("OAuth2 server denied the login"))
		return
	}
	if claims.NonceHash != "" {
		if ck, err := r.Cookie(nonceCookie); err != nil || hashNonce(ck.Value) != claims.NonceHash {
			// Trino: "Cannot validate nonce parameter", a failed challenge.
			o.counts.refused.Add(1)
			o.finish(result, "", "Authentication response could not be verified")
			writeHTML(w, http.StatusBadRequest, failureHTML("Authentication response could not be verified"))
			return
		}
	}
	tok, err := o.exchange(r.Context(), q.Get("code"), c.origin(r)+"/oauth2/callback")
	if err != nil {
		o.counts.refused.Add(1)
		o.finish(result, "", "Authentication response could not be verified")
		writeHTML(w, http.StatusBadRequest, failureHTML("Authentication response could not be verified"))
		return
	}
	o.counts.callbacks.Add(1)
	o.mu.Lock()
	o.accepted[tok] = true
	o.mu.Unlock()
	o.finish(result, tok, "")
	writeHTML(w, http.StatusOK, "<!DOCTYPE html>\n<html><head><title>Trino</title></head><body><p>Authentication successful. You may close this window.</p></body></html>\n")
}

// exchange trades code for an access token at the token endpoint.
func (o *oauth2State) exchange(ctx context.Context, code, redirectURI string) (string, error) {
	if code == "" {
		return "", errors.New("no code")
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(o.cfg.ClientID), url.QueryEscape(o.cfg.ClientSecret))
	resp, err := o.cfg.Client.Do(req)
	if err != nil {
		return "", errors.New("token endpoint unreachable")
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body) != nil || body.AccessToken == "" {
		return "", fmt.Errorf("token endpoint answered %d", resp.StatusCode)
	}
	return body.AccessToken, nil
}

// result is the sign-in of authIdHash, made on first use (Trino's token
// exchange makes a pending entry on the first poll or callback).
func (o *oauth2State) result(hash string) *tokenResult {
	o.mu.Lock()
	defer o.mu.Unlock()
	res, ok := o.results[hash]
	if !ok {
		res = &tokenResult{done: make(chan struct{})}
		o.results[hash] = res
	}
	return res
}

func (o *oauth2State) finish(res *tokenResult, tok, errMsg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case <-res.done:
		return // the first outcome stands
	default:
	}
	res.token, res.err = tok, errMsg
	close(res.done)
}

func (o *oauth2State) poll(c *Coordinator, w http.ResponseWriter, r *http.Request) {
	o.counts.polls.Add(1)
	authID := r.PathValue("authId")
	if !validUUID(authID) {
		writeText(w, http.StatusNotFound, "Not Found") // JAX-RS: the UUID path parameter does not convert
		return
	}
	res := o.result(hashAuthID(authID))
	timer := time.NewTimer(o.cfg.PollWait)
	defer timer.Stop()
	select {
	case <-res.done:
		if res.err != "" {
			writeJSON(w, http.StatusOK, map[string]string{"error": res.err})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"token": res.token})
	case <-timer.C:
		writeJSON(w, http.StatusOK, map[string]string{"nextUri": c.origin(r) + r.URL.EscapedPath()})
	case <-r.Context().Done():
	}
}

// origin is the scheme and authority of r's base URI as Trino sees it
// (forwarding headers honoured when the coordinator honours them): the
// coordinator resolves /oauth2/... against it, so a prefix is dropped.
func (c *Coordinator) origin(r *http.Request) string {
	base := c.links(r).base
	if u, err := url.Parse(base); err == nil {
		return u.Scheme + "://" + u.Host
	}
	return base
}

// hashAuthID is Trino's OAuth2TokenExchange.hashAuthId: the SHA-256 of
// the auth id's text, in hex.
func hashAuthID(authID string) string {
	sum := sha256.Sum256([]byte(authID))
	return hex.EncodeToString(sum[:])
}

// newUUID is a random (version 4) UUID, as Trino's UUID.randomUUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// validUUID reports whether s is a UUID in its text form.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if s[i] != '-' {
				return false
			}
		case (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F'):
		default:
			return false
		}
	}
	return true
}

func writeHTML(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
