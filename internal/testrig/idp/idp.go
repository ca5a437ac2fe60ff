// Package idp serves a test OpenID Connect identity provider on loopback
// (github.com/oauth2-proxy/mockoidc) for a real Trino configured for OAuth2
// (realserver.Options.OAuth2), and a test "browser" that follows the
// external authentication's redirects through it. The provider approves
// every authorization at once: a GET of its authorization URL redirects
// straight to the redirect URI with a code and the state, so a browser is
// an http.Client that follows redirects with a cookie jar. Only tests
// import it.
//
// The simulated coordinators' OAuth2 mode has a provider of its own,
// gatewayrig.IdP, whose codes and tokens hold a test's marker, whose
// token endpoint checks the redirect_uri and which tells a coordinator
// the tokens it issued (see its doc): this one's are mockoidc's random
// codes and signed JWTs, and its token endpoint does not check the
// redirect_uri.
package idp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// Provider is a running identity provider, stopped when the test that
// started it ends.
type Provider struct {
	m *mockoidc.MockOIDC
	// authorizations and tokens count the authorization and token
	// requests it answered.
	authorizations, tokens atomic.Int64
}

// Start serves a provider on a loopback port over http, with a client of
// random id and secret, until t ends.
func Start(t testing.TB) *Provider {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatalf("idp: %v", err)
	}
	p := &Provider{m: m}
	// mockoidc keeps its sessions in a map without a lock: one request at
	// a time. Trino authenticates its token request by HTTP basic
	// authentication (client_secret_basic, NimbusOAuth2Client), which
	// mockoidc's token endpoint does not read: it wants client_id and
	// client_secret in the form, so they are copied there.
	var mu sync.Mutex
	if err := m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			switch r.URL.Path {
			case mockoidc.AuthorizationEndpoint:
				p.authorizations.Add(1)
			case mockoidc.TokenEndpoint:
				p.tokens.Add(1)
				if id, secret, ok := r.BasicAuth(); ok {
					if err := r.ParseForm(); err != nil {
						http.Error(w, "idp: the token request's form", http.StatusBadRequest)
						return
					}
					r.Form.Set("client_id", id)
					r.Form.Set("client_secret", secret)
				}
			}
			next.ServeHTTP(w, r)
		})
	}); err != nil {
		t.Fatalf("idp: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("idp: %v", err)
	}
	if err := m.Start(ln, nil); err != nil {
		_ = ln.Close()
		t.Fatalf("idp: %v", err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	return p
}

// OAuth2 is the coordinator's configuration for this provider: its issuer
// (OpenID Connect discovery), its client, the openid scope and the
// subject as the user.
func (p *Provider) OAuth2() *realserver.OAuth2 {
	return &realserver.OAuth2{Issuer: p.m.Issuer(), ClientID: p.m.ClientID, ClientSecret: p.m.ClientSecret}
}

// Issuer is the provider's issuer URL.
func (p *Provider) Issuer() string { return p.m.Issuer() }

// ClientSecret is the secret of the coordinator's client, which no log,
// error or page may show.
func (p *Provider) ClientSecret() string { return p.m.ClientSecret }

// QueueUser makes the next authorization that of a user whose subject,
// the coordinator's principal, is subject; without one, mockoidc's
// default user, subject "1234567890".
func (p *Provider) QueueUser(subject string) {
	p.m.QueueUser(&mockoidc.MockUser{Subject: subject, Email: subject + "@example.com", PreferredUsername: subject, EmailVerified: true})
}

// Authorizations is how many authorization requests the provider has
// answered.
func (p *Provider) Authorizations() int64 { return p.authorizations.Load() }

// Tokens is how many token requests the provider has answered.
func (p *Provider) Tokens() int64 { return p.tokens.Load() }

// Browser is a user's browser in the external authentication: an
// http.Client with a cookie jar that follows redirects, trusting the CA
// files given to NewBrowser on https.
type Browser struct {
	client *http.Client
}

// NewBrowser returns a browser trusting caFiles' certificates (PEM): the
// coordinator's, or a gateway's in front of it.
func NewBrowser(caFiles ...string) (*Browser, error) {
	roots := x509.NewCertPool()
	for _, caFile := range caFiles {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("idp: browser: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("idp: browser: %s holds no certificate", caFile)
		}
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, fmt.Errorf("idp: browser: %w", err)
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	return &Browser{client: &http.Client{Transport: transport, Jar: jar}}, nil
}

// Visit is one page a browser opened and every address it went through.
type Visit struct {
	// Path is the URLs the browser requested, the first and every
	// redirect's, in order.
	Path []string
	// Status and Body are the last page's.
	Status int
	Body   string
}

// Open GETs uri as a browser does, following redirects (at most 10), and
// returns where it went and the last page. Only a failure to reach a page
// is an error; the last page's status is the caller's to judge.
func (b *Browser) Open(ctx context.Context, uri string) (Visit, error) {
	var v Visit
	client := *b.client
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("more than 10 redirects")
		}
		v.Path = append(v.Path, req.URL.String())
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return v, fmt.Errorf("idp: browser: %w", err)
	}
	v.Path = append(v.Path, uri)
	resp, err := client.Do(req)
	if err != nil {
		// The URL may carry a code or a state: the error names the
		// step, not the address.
		return v, fmt.Errorf("idp: browser: step %d of the redirects: %w", len(v.Path), errors.Unwrap(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return v, fmt.Errorf("idp: browser: reading the last page: %w", err)
	}
	v.Status, v.Body = resp.StatusCode, string(body)
	return v, nil
}

// CloseIdleConnections closes the browser's idle connections.
func (b *Browser) CloseIdleConnections() { b.client.CloseIdleConnections() }
