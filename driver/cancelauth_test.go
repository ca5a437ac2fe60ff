package driver_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// TestCancelsCarryCredentials checks that the driver's own cancels (rows
// closed early, a context that ends before the first GET) carry the
// statement's authentication, a password, a static token or a token
// source's, to a coordinator that authenticates every request, as a
// Trino or PrestoDB with authentication does: it takes them (204), and
// the queries end instead of running on.
func TestCancelsCarryCredentials(t *testing.T) {
	certs, err := testtls.Generate(t.TempDir(), "coordinators")
	if err != nil {
		t.Fatal(err)
	}
	serverTLS, err := certs.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	tlsKey := "ssl_ca=" + url.QueryEscape(certs.CAFile)
	source := func(context.Context) (string, error) { return "sourced-" + authSecret, nil }
	for _, tc := range []struct {
		name, query string
		opts        []zkdriver.Option
		want        string
	}{
		{"password", "password=" + url.QueryEscape(authSecret), nil, "Basic "},
		{"accessToken", "accessToken=" + url.QueryEscape(authSecret), nil, "Bearer " + authSecret},
		{"token source", "", []zkdriver.Option{zkdriver.WithAccessTokenSource(source)}, "Bearer sourced-" + authSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			quietPrestoClient(t)
			c, err := coordinator.Start(coordinator.Options{Flavour: coordinator.Trino, TLS: serverTLS, RequireAuthorization: true, BatchRows: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			db, _ := openConnector(t, "trino://"+c.Addr()+"?user=alice&"+tlsKey+"&"+tc.query, tc.opts...)

			// Rows closed early.
			rows, err := db.Query("SELECT x FROM rows(100)")
			if err != nil {
				t.Fatal(err)
			}
			if !rows.Next() {
				t.Fatal(rows.Err())
			}
			rows.Close()
			// A context that ends once the POST is answered.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx = zkdriver.WithProgress(ctx, func(zkdriver.Progress) { cancel() })
			if _, err := db.ExecContext(ctx, "SELECT 1"); !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
			waitFor(t, "both queries cancelled", func() bool { return c.Running() == 0 })
			var deletes int
			for _, call := range c.Calls() {
				if call.Method != http.MethodDelete {
					continue
				}
				deletes++
				if auth := call.Identity.Get("Authorization"); !strings.HasPrefix(auth, tc.want) || call.Status != http.StatusNoContent {
					t.Errorf("DELETE %s: %d with Authorization %q, want 204 with %q…", call.Path, call.Status, auth, tc.want)
				}
			}
			if deletes != 2 {
				t.Fatalf("%d DELETEs, want 2: %+v", deletes, c.Calls())
			}
		})
	}
}
