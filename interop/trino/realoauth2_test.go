package trino_test

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/zkpresto/zkpresto/internal/testrig/gatewayrig"
	"github.com/zkpresto/zkpresto/internal/testrig/idp"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// oauth2Trino is a real Trino 476 with OAuth2 against a test identity
// provider (both stop when t ends), and the CA its https certificate is
// from.
type oauth2Trino struct {
	idp    *idp.Provider
	server *realserver.Server
	certs  *testtls.Files
}

func startOAuth2Trino(t *testing.T) *oauth2Trino {
	t.Helper()
	if err := realserver.Available(coordinator.Trino); err != nil {
		realTrino.Server(t) // skips, or fails under CI, as the shared server does
	}
	certs, err := testtls.Generate(t.TempDir(), "coordinator")
	if err != nil {
		t.Fatal(err)
	}
	provider := idp.Start(t)
	server, err := realserver.Start(realserver.Options{
		Flavour: coordinator.Trino, Name: "trino-oauth2",
		HTTPSKeyStore: certs.ServerKeyStore, OAuth2: provider.OAuth2(),
		// Through the gateway, its forwarding headers on /oauth2/* make
		// the redirect URI the gateway's callback.
		Config: map[string]string{"http-server.process-forwarded": "true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return &oauth2Trino{idp: provider, server: server, certs: certs}
}

// redirects is a trino.RedirectHandler that opens each URL in a test
// browser, as the user would in theirs, and keeps what it saw.
type redirects struct {
	browser *idp.Browser
	mu      sync.Mutex
	visits  []idp.Visit
	errs    []error
}

func (r *redirects) open(ctx context.Context, u *url.URL) error {
	v, err := r.browser.Open(ctx, u.String())
	r.mu.Lock()
	defer r.mu.Unlock()
	r.visits = append(r.visits, v)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	return err
}

func (r *redirects) seen() ([]idp.Visit, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]idp.Visit(nil), r.visits...), append([]error(nil), r.errs...)
}

// openExternalAuth opens trino-go-client on serverURI with external
// authentication, its redirect handler the test's browser, trusting caFile.
func openExternalAuth(t *testing.T, serverURI, caFile string, browser *idp.Browser) (*sql.DB, *redirects) {
	t.Helper()
	r := &redirects{browser: browser}
	timeout := time.Minute
	connector, err := trino.NewConnector(&trino.Config{
		ServerURI: serverURI, Catalog: "tpch", Schema: "tiny", SSLCertPath: caFile,
		ExternalAuthentication: true, ExternalAuthenticationTimeout: &timeout, RedirectHandler: r.open,
	})
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { _ = db.Close() })
	return db, r
}

// trino-go-client v1.5.0's external authentication (Config.ExternalAuthentication,
// a RedirectHandler) against a real Trino with OAuth2, straight to it and
// through two gateway replicas behind a round-robin https front (every
// request on the other replica than the one before): the first statement
// is refused 401 with the challenge, the client hands x_redirect_server to
// its redirect handler (here the test's browser, which goes through the
// identity provider and back to /oauth2/callback, the coordinator's or the
// gateway's), polls x_token_server, and runs the statement with the token
// as the provider's user; the next statement reuses the token without
// another login. Through the gateway, the challenge's URIs must be on the
// gateway's origin: v1.5.0 refuses a token server on another one.
func TestRealTrinoOAuth2(t *testing.T) {
	ot := startOAuth2Trino(t)
	rig := gatewayrig.Start(t, gatewayrig.Options{
		Addrs: []string{ot.server.HTTPSAddr()}, CoordinatorCA: ot.certs.CAFile, TLS: true,
		Coordinator: coordinator.Options{Flavour: coordinator.Trino},
	})
	browser, err := idp.NewBrowser(ot.certs.CAFile, rig.FrontCAFile)
	if err != nil {
		t.Fatal(err)
	}
	defer browser.CloseIdleConnections()
	for _, tg := range []struct{ name, base, caFile string }{
		{"direct", ot.server.HTTPSURL(), ot.certs.CAFile},
		{"gateway", rig.Front, rig.FrontCAFile},
	} {
		t.Run(tg.name, func(t *testing.T) {
			user := "oauth2-go-user-" + tg.name
			ot.idp.QueueUser(user)
			before := ot.idp.Authorizations()
			db, r := openExternalAuth(t, tg.base, tg.caFile, browser)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var got string
			if err := db.QueryRowContext(ctx, "SELECT current_user").Scan(&got); err != nil {
				t.Fatalf("trino-go-client with external authentication: %v", err)
			}
			if got != user {
				t.Fatalf("the statement ran as %q, want the identity provider's user %q", got, user)
			}
			var nations int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM nation").Scan(&nations); err != nil || nations != 25 {
				t.Fatalf("the second statement: %d nations, %v", nations, err)
			}
			visits, errs := r.seen()
			if len(errs) != 0 || len(visits) != 1 || visits[0].Status != 200 || ot.idp.Authorizations() != before+1 {
				t.Fatalf("%d redirects (want 1), errors %v, %d authorizations (want 1)", len(visits), errs, ot.idp.Authorizations()-before)
			}
			if last := visits[0].Path[len(visits[0].Path)-1]; !strings.HasPrefix(last, tg.base+"/oauth2/callback?") {
				t.Errorf("the browser's last step is not %s/oauth2/callback", tg.base)
			}
		})
	}
	if hits := rig.Hits(); hits[0] == 0 || hits[1] == 0 {
		t.Errorf("the replicas served %v requests; want both some", hits)
	}
}
