package trino_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/zkpresto/zkpresto/internal/testrig/gatewayrig"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// trino-go-client's external authentication through two gateway replicas
// on https, every request on the other replica than the one before: the
// client gets the coordinator's OAuth2 challenge with the gateway's URIs
// (it refuses a token server on another origin than its server), its
// redirect handler plays the browser (the initiate step, the identity
// provider, the callback, each through the front), it polls the token
// server through the gateway and runs statements with the token.
func TestExternalAuthenticationThroughTheGateway(t *testing.T) {
	rig := gatewayrig.Start(t, gatewayrig.Options{TLS: true, OAuth2: true, Coordinator: coordinator.Options{Flavour: coordinator.Trino}})
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Transport: rig.Client.Transport, Jar: jar, Timeout: 10 * time.Second}
	var redirects int
	timeout := 20 * time.Second
	connector, err := trino.NewConnector(&trino.Config{
		ServerURI:                     strings.Replace(rig.Front, "https://", "https://alice@", 1),
		Catalog:                       "hive",
		Schema:                        "default",
		ExternalAuthentication:        true,
		ExternalAuthenticationTimeout: &timeout,
		HTTPClient:                    &http.Client{Transport: rig.Client.Transport},
		RedirectHandler: func(ctx context.Context, u *url.URL) error {
			redirects++
			if !strings.HasPrefix(u.String(), rig.Front+"/_zk/") {
				t.Errorf("the client is sent to %s, not the gateway", u)
			}
			// The browser follows the redirects: the coordinator's 303 to
			// the identity provider, its 302 to the gateway's callback.
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
			if err != nil {
				return err
			}
			resp, err := browser.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/oauth2/callback" {
				t.Errorf("the browser ended at %s with %s", resp.Request.URL, resp.Status)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	for range 3 {
		var n int64
		if err := db.QueryRow("SELECT * FROM rows(1)").Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	if redirects != 1 {
		t.Fatalf("the client signed in %d times, want once", redirects)
	}
	if got := rig.IdP.Redirects(); len(got) != 1 || got[0] != rig.Front+"/oauth2/callback" {
		t.Fatalf("the identity provider was asked to send the browser to %q, want the gateway's callback", got)
	}
	var callbacks int64
	for _, c := range rig.Coordinators {
		callbacks += c.OAuth2Counts().Callbacks
	}
	if h := rig.Hits(); callbacks != 1 || h[0] == 0 || h[1] == 0 {
		t.Fatalf("callbacks %d, requests per replica %v", callbacks, h)
	}
}
