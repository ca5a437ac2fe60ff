package gateway

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/internal/gateway/token"
)

// OAuth2 external authentication through any replica, without shared
// state. Trino's flow (server/security/oauth2 in trino-main):
//
//  1. A request without a token gets 401 and WWW-Authenticate: Bearer
//     x_redirect_server="{base}/oauth2/token/initiate/{authIdHash}",
//     x_token_server="{base}/oauth2/token/{authId}", base being the
//     coordinator's own address (OAuth2Authenticator.needAuthentication).
//     The gateway rewrites both URIs under a routing token naming that
//     coordinator and bound to the URI's path (oauth2Binding), as it
//     rewrites a nextUri, so that any replica sends them back to it.
//  2. The client opens x_redirect_server in a browser. The coordinator
//     answers 303 to the identity provider, with a state it signed and
//     redirect_uri = the base of the request it got + /oauth2/callback
//     (OAuth2TokenExchangeResource.initiateTokenExchange,
//     OAuth2Service.startOAuth2Challenge). The gateway sends that request
//     with X-Forwarded-Proto, -Host and -Port of its own public address,
//     so that with http-server.process-forwarded=true the redirect_uri is
//     the gateway's /oauth2/callback, the one address registered with the
//     identity provider; and it relays the 303 with a short-lived signed
//     cookie naming the coordinator (oauth2Cookie).
//  3. The identity provider sends the browser to the gateway's
//     /oauth2/callback?code&state, on any replica. The cookie names the
//     coordinator the callback goes to: the one that signed the state
//     and waits for the token under the authId (OAuth2CallbackResource,
//     OAuth2TokenExchange keeps it in its memory only). No cookie, or
//     one forged, expired or for another sign-in, is a 400 page and
//     nothing is relayed.
//  4. The client polls x_token_server until it answers {"token": ...} or
//     {"error": ...}; a poll that times out answers {"nextUri": its own
//     URL}, rewritten as the challenge's URIs are.
//
// Why a cookie and not the state: the state is the coordinator's, a JWT
// it signs and checks (OAuth2Service.parseState); carrying a route in it
// would mean the gateway rewriting what the identity provider echoes and
// keeping the coordinator's value under its own, for nothing a cookie
// does not do, and the cookie also ties the callback to the browser that
// began the sign-in: a callback URI carried to another browser is refused
// before any coordinator sees it.

const (
	// OAuth2CallbackPath is the gateway's fixed callback address, to
	// register with the identity provider (as https://gateway/oauth2/callback):
	// Trino resolves /oauth2/callback against the base of the request.
	OAuth2CallbackPath = "/oauth2/callback"
	// OAuth2CookieTTL is how long a sign-in's routing cookie is good
	// for: the time a user has at the identity provider. Trino's own
	// challenge times out after 15 minutes
	// (http-server.authentication.oauth2.challenge-timeout).
	OAuth2CookieTTL = 10 * time.Minute
	// oauth2TokenPrefix is the path of Trino's token exchange resource.
	oauth2TokenPrefix = "/oauth2/token/"
	// oauth2CookiePrefix begins the name of the routing cookie, whose
	// rest tells the sign-ins of one browser apart (oauth2StateTag).
	oauth2CookiePrefix = "zkpresto_oauth2_"
	// oauth2CookiePurpose labels the keys the callback cookies are signed
	// with (token.Keys.Derive).
	oauth2CookiePurpose = "oauth2 callback cookie v1"
	// maxOAuth2Body bounds the answers of the OAuth2 resources the
	// gateway relays (a token, a redirect, a page).
	maxOAuth2Body = 1 << 20
)

// oauth2Binding is what a routing token for an OAuth2 URI of a coordinator
// is bound to: its path, so that the token opens that path only. No query
// id begins with "/", so no such token opens a query.
func oauth2Binding(path string) string { return path }

// isOAuth2TokenPath reports whether path is one of Trino's token exchange
// URIs (the initiate step or the token poll).
func isOAuth2TokenPath(path string) bool {
	return strings.HasPrefix(path, oauth2TokenPrefix) && len(path) > len(oauth2TokenPrefix)
}

// rewriteChallenge rewrites the URIs of Trino's OAuth2 challenge in the
// WWW-Authenticate values of h (x_redirect_server and x_token_server) to
// the gateway's, under routing tokens naming the coordinator at base. A
// URI that does not parse, or is not an OAuth2 token URI, is dropped with
// its parameter: the client must never be sent to a coordinator directly.
func (g *Gateway) rewriteChallenge(h http.Header, public, base string) {
	values := h.Values("WWW-Authenticate")
	if len(values) == 0 {
		return
	}
	out := make([]string, 0, len(values))
	for _, v := range values {
		if lower := strings.ToLower(v); !strings.Contains(lower, "x_redirect_server") && !strings.Contains(lower, "x_token_server") {
			out = append(out, v)
			continue
		}
		out = append(out, g.rewriteChallengeValue(v, public, base))
	}
	h[http.CanonicalHeaderKey("WWW-Authenticate")] = out
}

// rewriteChallengeValue rewrites one value of WWW-Authenticate: its
// parameters are read as Trino writes them, name="value" separated by
// commas, names of any case (RFC 9110 section 11.2). The value may hold several challenges (a proxy may join them,
// RFC 9110 section 11.6.1): a parameter that begins another challenge
// reads "Scheme name=value", and its scheme is kept before it.
func (g *Gateway) rewriteChallengeValue(v, public, base string) string {
	scheme, params, _ := strings.Cut(strings.TrimSpace(v), " ")
	var kept []string
	lead := "" // the scheme of a challenge whose first parameter was dropped
	for _, p := range splitParams(params) {
		name, val, ok := strings.Cut(p, "=")
		name = strings.TrimSpace(name)
		next := ""
		if i := strings.LastIndexAny(name, " \t"); i >= 0 {
			next, name = name[:i+1], name[i+1:]
		}
		if !ok || (!strings.EqualFold(name, "x_redirect_server") && !strings.EqualFold(name, "x_token_server")) {
			kept = append(kept, lead+strings.TrimSpace(p))
			lead = ""
			continue
		}
		lead += next
		uri := strings.Trim(strings.TrimSpace(val), `"`)
		rewritten, err := g.oauth2URI(public, base, uri)
		if err != nil {
			g.log.Warn("an OAuth2 challenge's URI is not one of the token exchange's; dropped", "node", hostOf(base), "param", name)
			continue
		}
		kept = append(kept, lead+name+`="`+rewritten+`"`)
		lead = ""
	}
	if lead = strings.TrimSpace(lead); lead != "" {
		kept = append(kept, lead)
	}
	return scheme + " " + strings.Join(kept, ", ")
}

// splitParams splits a challenge's parameters at the commas outside
// quotes.
func splitParams(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if strings.TrimSpace(s[start:]) != "" {
		out = append(out, s[start:])
	}
	return out
}

// oauth2URI is the gateway's URI for a coordinator's OAuth2 token URI: its
// path behind a routing token for base bound to that path. The URI's own
// host is not trusted, as for a nextUri.
func (g *Gateway) oauth2URI(public, base, uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || !isOAuth2TokenPath(u.Path) || u.RawQuery != "" || u.Fragment != "" || !tokenPathClean(u.Path) {
		return "", fmt.Errorf("not an OAuth2 token URI")
	}
	tok, err := g.keys.Sign(base, oauth2Binding(u.Path))
	if err != nil {
		return "", err
	}
	return public + token.Prefix(tok) + u.EscapedPath(), nil
}

// tokenPathClean reports whether p has no dot segments, doubled slashes or
// escapes: a path a coordinator resolves as it reads.
func tokenPathClean(p string) bool {
	return !strings.Contains(p, "//") && !strings.Contains(p, "/.") && !strings.ContainsAny(p, "%?#\\")
}

// serveOAuth2Token relays a request on a rewritten OAuth2 token URI (the
// initiate step or the token poll) to the coordinator its token names,
// verified against the path (rest) it opens.
func (g *Gateway) serveOAuth2Token(w http.ResponseWriter, r *http.Request, tok string, rest *url.URL) {
	if !tokenPathClean(rest.Path) || rest.RawPath != "" && rest.RawPath != rest.Path {
		g.oauth2Refused(w, http.StatusForbidden, "zkpresto gateway: malformed OAuth2 token URI")
		return
	}
	base, err := g.keys.Verify(tok, oauth2Binding(rest.Path))
	if err != nil {
		g.oauth2Refused(w, http.StatusForbidden, "zkpresto gateway: routing token refused: "+err.Error())
		return
	}
	initiate := strings.HasPrefix(rest.Path, oauth2TokenPrefix+"initiate/")
	switch {
	case r.Method == http.MethodGet:
	case r.Method == http.MethodDelete && !initiate:
	default:
		g.oauth2Refused(w, http.StatusMethodNotAllowed, "zkpresto gateway: "+r.Method+" is not an OAuth2 token exchange request")
		return
	}
	state, rc := g.stateOf(r.Context(), base)
	if state == memberUnknown || state == memberGone {
		tokenRefusal.gone(g, w, base)
		return
	}
	out, err := http.NewRequestWithContext(withFlavour(r.Context(), rc.flavour), r.Method, base+rest.EscapedPath(), nil)
	if err != nil {
		g.oauth2Refused(w, http.StatusBadRequest, "zkpresto gateway: malformed OAuth2 token URI")
		return
	}
	out.Header = g.oauth2Header(r)
	resp, body, ok := g.relayOAuth2(w, r, out, base, state, rc, tokenRefusal)
	if !ok {
		return
	}
	public := g.publicBase(r)
	if initiate && resp.StatusCode/100 == 3 {
		if loc, err := url.Parse(resp.Header.Get("Location")); err == nil && loc.IsAbs() {
			// The browser goes to the identity provider, and comes back
			// to the gateway's callback with this cookie.
			http.SetCookie(w, g.oauth2Cookie(r, base, loc.Query().Get("state")))
		}
	}
	if !initiate && resp.StatusCode == http.StatusOK {
		body = g.rewriteTokenPoll(body, public, base)
	}
	g.writeOAuth2Answer(w, resp.StatusCode, body)
}

// oauth2Refusal is how a relay of an OAuth2 resource refuses when the
// coordinator is gone, does not answer or answers what cannot be read:
// a token exchange answers its client JSON (oauth2Refused), a callback
// the browser a page (oauth2Page). Each message's %s is the
// coordinator's host.
type oauth2Refusal struct {
	refuse                  func(g *Gateway, w http.ResponseWriter, status int, msg string)
	goneMsg, silent, broken string
}

var (
	tokenRefusal = oauth2Refusal{
		refuse:  (*Gateway).oauth2Refused,
		goneMsg: "zkpresto gateway: the sign-in began on coordinator %s, which is gone; sign in again",
		silent:  "zkpresto gateway: coordinator %s did not answer an OAuth2 token exchange request",
		broken:  "zkpresto gateway: coordinator %s sent a broken answer to an OAuth2 token exchange request",
	}
	callbackRefusal = oauth2Refusal{
		refuse:  (*Gateway).oauth2Page,
		goneMsg: "This sign-in began on coordinator %s, which is gone. Sign in again from your client.",
		silent:  "Coordinator %s did not answer this sign-in's callback. Sign in again from your client.",
		broken:  "Coordinator %s sent a broken answer to this sign-in's callback.",
	}
)

// gone refuses with 410: the coordinator at base is gone.
func (f oauth2Refusal) gone(g *Gateway, w http.ResponseWriter, base string) {
	f.refuse(g, w, http.StatusGone, fmt.Sprintf(f.goneMsg, hostOf(base)))
}

// relayOAuth2 sends out to the coordinator at base, in state st and
// reached by rc, and reads its answer's body (readOAuth2Body). When the
// coordinator does not answer or its answer cannot be read, it refuses
// as f says and returns false: a coordinator that left discovery and
// fails is gone from now on, as for a query's follow-ups. Otherwise it
// copies the answer's header to w's, but its Content-Encoding (the body
// is decoded), and returns the answer, its body read and closed.
func (g *Gateway) relayOAuth2(w http.ResponseWriter, r, out *http.Request, base string, st memberState, rc reach, f oauth2Refusal) (*http.Response, []byte, bool) {
	resp, err := rc.transport.RoundTrip(out)
	if err != nil {
		if r.Context().Err() != nil {
			panic(http.ErrAbortHandler)
		}
		g.reportFailure(r.Context(), base, err)
		if st == memberDeparted {
			// Left discovery and failed since: gone, as for a query's
			// follow-ups, on every request from now on.
			g.markGone(base)
			f.gone(g, w, base)
			return nil, nil, false
		}
		f.refuse(g, w, http.StatusBadGateway, fmt.Sprintf(f.silent, hostOf(base)))
		return nil, nil, false
	}
	defer resp.Body.Close()
	body, err := readOAuth2Body(resp)
	if err != nil || len(body) > maxOAuth2Body {
		if r.Context().Err() != nil {
			panic(http.ErrAbortHandler)
		}
		f.refuse(g, w, http.StatusBadGateway, fmt.Sprintf(f.broken, hostOf(base)))
		return nil, nil, false
	}
	h := w.Header()
	copyAnswerHeader(h, resp.Header)
	h.Del("Content-Encoding")
	return resp, body, true
}

// writeOAuth2Answer writes a relayed OAuth2 answer, its header already
// copied, with body's length.
func (g *Gateway) writeOAuth2Answer(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	g.stats.add("oauth2", status)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// readOAuth2Body reads the answer of a coordinator's OAuth2 resource, at
// most maxOAuth2Body+1 bytes of it, decoded when it came in gzip though
// the gateway asked for identity (as relayAnswer decodes a statement's):
// the client gets it without its Content-Encoding.
func readOAuth2Body(resp *http.Response) ([]byte, error) {
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, err
		}
		defer gz.Close()
		body = gz
	}
	return io.ReadAll(io.LimitReader(body, maxOAuth2Body+1))
}

// rewriteTokenPoll rewrites the nextUri of a token poll's answer (Trino's
// pending answer is {"nextUri": the poll's own URL}); a token or an error
// passes as it came. A key of any case is a nextUri: Go's encoding/json
// (trino-go-client's) reads "NextURI" as "nextUri".
func (g *Gateway) rewriteTokenPoll(body []byte, public, base string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	changed := false
	for k, raw := range m {
		if !strings.EqualFold(k, "nextUri") {
			continue
		}
		changed = true
		var next string
		rewritten, err := "", json.Unmarshal(raw, &next)
		if err == nil {
			rewritten, err = g.oauth2URI(public, base, next)
		}
		if err != nil {
			// Never the coordinator's own address: the client would leave
			// the gateway.
			delete(m, k)
			m["error"], _ = json.Marshal("zkpresto gateway: the coordinator's token poll answered a nextUri that is not a token URI")
			continue
		}
		m[k], _ = json.Marshal(rewritten)
	}
	if !changed {
		return body
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// serveOAuth2Callback relays the identity provider's redirect to the
// coordinator that began the sign-in, named by the sign-in's cookie.
func (g *Gateway) serveOAuth2Callback(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		g.oauth2Refused(w, http.StatusMethodNotAllowed, "zkpresto gateway: "+r.Method+" is not an OAuth2 callback")
		return
	}
	state := r.URL.Query().Get("state")
	name := oauth2CookiePrefix + oauth2StateTag(state)
	c, err := r.Cookie(name)
	if err != nil {
		g.oauth2Page(w, http.StatusBadRequest, "This sign-in cannot be completed here: the browser sent no cookie for it. Sign in again from your client, in this browser.")
		return
	}
	base, err := g.verifyOAuth2Cookie(c.Value, state)
	if err != nil {
		g.oauth2Page(w, http.StatusBadRequest, "This sign-in cannot be completed: its cookie "+err.Error()+". Sign in again from your client.")
		return
	}
	st, rc := g.stateOf(r.Context(), base)
	if st == memberUnknown || st == memberGone {
		callbackRefusal.gone(g, w, base)
		return
	}
	out, err := http.NewRequestWithContext(withFlavour(r.Context(), rc.flavour), http.MethodGet, base+OAuth2CallbackPath+queryPart(r), nil)
	if err != nil {
		g.oauth2Page(w, http.StatusBadRequest, "This sign-in's callback is malformed.")
		return
	}
	out.Header = g.oauth2Header(r)
	dropOwnCookies(out.Header)
	resp, body, ok := g.relayOAuth2(w, r, out, base, st, rc, callbackRefusal)
	if !ok {
		return
	}
	// The cookie has done its work: one sign-in, one callback.
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: OAuth2CallbackPath, MaxAge: -1, HttpOnly: true, Secure: g.publicTLS(r), SameSite: http.SameSiteLaxMode})
	g.writeOAuth2Answer(w, resp.StatusCode, body)
}

// oauth2StateTag names the cookie of the sign-in whose state is state: a
// browser may run several sign-ins at once, each to its own coordinator.
// It is a digest, so the state (the coordinator's) is never in a name.
func oauth2StateTag(state string) string {
	sum := sha256.Sum256([]byte("zkpresto oauth2 state\x00" + state))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// oauth2CookieBinding is what the routing token in a sign-in's cookie is
// bound to: its expiry and its state's tag, so that neither can be
// changed and the cookie serves one sign-in, for OAuth2CookieTTL.
func oauth2CookieBinding(expiry int64, tag string) string {
	return "oauth2-callback " + strconv.FormatInt(expiry, 10) + " " + tag
}

// oauth2Cookie is the routing cookie of a sign-in the coordinator at base
// began, whose state is state: {expiry}.{token of the derived keys
// oauth2Keys}, HttpOnly, Secure
// when the gateway's public address is https, for the callback's path
// only, sent on the identity provider's top-level redirect (SameSite=Lax).
func (g *Gateway) oauth2Cookie(r *http.Request, base, state string) *http.Cookie {
	tag := oauth2StateTag(state)
	expiry := g.now().Add(OAuth2CookieTTL).Unix()
	tok, err := g.oauth2Keys.Sign(base, oauth2CookieBinding(expiry, tag))
	if err != nil {
		tok = "" // a coordinator address too long to sign: the callback is refused
	}
	return &http.Cookie{
		Name:     oauth2CookiePrefix + tag,
		Value:    strconv.FormatInt(expiry, 10) + "." + tok,
		Path:     OAuth2CallbackPath,
		MaxAge:   int(OAuth2CookieTTL / time.Second),
		HttpOnly: true,
		Secure:   g.publicTLS(r),
		SameSite: http.SameSiteLaxMode,
	}
}

// verifyOAuth2Cookie returns the coordinator a sign-in's cookie names, or
// says why it names none (without quoting it).
func (g *Gateway) verifyOAuth2Cookie(value, state string) (string, error) {
	exp, tok, ok := strings.Cut(value, ".")
	expiry, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil || len(value) > token.MaxTokenLen+32 {
		return "", fmt.Errorf("is malformed")
	}
	base, err := g.oauth2Keys.Verify(tok, oauth2CookieBinding(expiry, oauth2StateTag(state)))
	if err != nil {
		return "", fmt.Errorf("was not made by this gateway for this sign-in")
	}
	if g.now().Unix() >= expiry {
		return "", fmt.Errorf("has expired")
	}
	return base, nil
}

// dropOwnCookies removes the gateway's routing cookies from the Cookie
// header of a request to a coordinator: they are the gateway's alone.
func dropOwnCookies(h http.Header) {
	takeCookies(h, func(name string) bool { return strings.HasPrefix(name, oauth2CookiePrefix) })
}

// oauth2Header is the header of a request to a coordinator's OAuth2
// resources: the client's, without its own forwarding headers (see
// outboundHeader), with X-Forwarded-Proto, -Host and -Port saying the
// gateway's public address, from which Trino (with
// http-server.process-forwarded=true) builds the callback URI it gives
// the identity provider. Only on these requests: a coordinator without
// process-forwarded refuses every request with X-Forwarded-* (406).
func (g *Gateway) oauth2Header(r *http.Request) http.Header {
	h := g.outboundHeader(r)
	delete(h, "X-Forwarded-Proto")
	u, err := url.Parse(g.publicBase(r))
	if err != nil {
		return h
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	h.Set("X-Forwarded-Proto", u.Scheme)
	h.Set("X-Forwarded-Host", u.Host)
	h.Set("X-Forwarded-Port", port)
	if u.Path != "" && u.Path != "/" {
		h.Set("X-Forwarded-Prefix", u.Path)
	}
	return h
}

// publicTLS reports whether the gateway's public address for r is https.
func (g *Gateway) publicTLS(r *http.Request) bool {
	if g.public != nil {
		return g.public.Scheme == "https"
	}
	return r.TLS != nil
}

// oauth2Refused answers a token exchange request the gateway does not
// relay, with text that quotes nothing of the request (its path holds
// the auth id, which is worth a token).
func (g *Gateway) oauth2Refused(w http.ResponseWriter, status int, msg string) {
	g.stats.add("oauth2", status)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// oauth2Page answers a browser's callback the gateway does not relay with
// a short page that quotes nothing of the request.
func (g *Gateway) oauth2Page(w http.ResponseWriter, status int, msg string) {
	g.stats.add("oauth2", status)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, "<!DOCTYPE html>\n<html><head><title>Sign-in failed</title></head><body><h1>Sign-in failed</h1><p>zkpresto gateway: "+htmlEscaper.Replace(msg)+"</p></body></html>\n")
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")
