package gateway_test

import (
	"database/sql"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	_ "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// serveGatewayTLS serves h on https until the test ends, and returns its
// URL, the CA file that trusts it and a client that does.
func serveGatewayTLS(t *testing.T, h http.Handler) (string, string, *http.Client) {
	t.Helper()
	files, err := testtls.Generate(t.TempDir(), "gateway")
	if err != nil {
		t.Fatal(err)
	}
	serverTLS, err := files.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	clientTLS, err := files.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	srv := gateway.NewServer(h, nil, gateway.ServerLimits{})
	srv.TLSConfig = serverTLS
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	tr := &http.Transport{TLSClientConfig: clientTLS}
	t.Cleanup(func() { tr.CloseIdleConnections(); srv.Close(); <-done })
	return "https://" + ln.Addr().String(), files.CAFile, &http.Client{Transport: tr}
}

// runWith runs sqlText through base with client, following every nextUri,
// with h on every request.
func runWith(t *testing.T, client *http.Client, base, sqlText string, h http.Header) {
	t.Helper()
	method, uri, body := http.MethodPost, base+"/v1/statement", sqlText
	for uri != "" {
		req, _ := http.NewRequest(method, uri, strings.NewReader(body))
		req.Header = h.Clone()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			NextURI string `json:"nextUri"`
			Error   any    `json:"error"`
		}
		err = decodeJSON(resp.Body, &answer)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || answer.Error != nil {
			t.Fatalf("%s %s: %s %v %v", method, uri, resp.Status, err, answer.Error)
		}
		method, uri, body = http.MethodGet, answer.NextURI, ""
	}
}

// TestForwardedProtoFromTheClientsConnection checks that with
// Config.ForwardedProto the coordinator is told https for a client on TLS
// and nothing for one on plain http, whatever X-Forwarded-Proto the client
// sent, and that without it a TLS client's request carries none.
func TestForwardedProtoFromTheClientsConnection(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Flavour: coordinator.Trino})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, tc := range []struct {
		name   string
		on     bool
		tls    bool
		forged string
		want   string
	}{
		{"TLS client", true, true, "", "https"},
		{"TLS client that says http", true, true, "http", "https"},
		{"plain client that says https", true, false, "https", ""},
		{"plain client", true, false, "", ""},
		{"off, TLS client", false, true, "https", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := staticGateway(t, gateway.Config{Flavour: gateway.Trino, ForwardedProto: tc.on}, c.Addr())
			base, client := serveGateway(t, g).URL, http.DefaultClient
			if tc.tls {
				base, _, client = serveGatewayTLS(t, g)
			}
			h := session("X-Trino-", "User", "alice")
			if tc.forged != "" {
				h.Set("X-Forwarded-Proto", tc.forged)
			}
			before := len(c.Calls())
			runWith(t, client, base, "SELECT 1", h)
			calls := c.Calls()[before:]
			if len(calls) < 2 {
				t.Fatalf("%d requests reached the coordinator", len(calls))
			}
			for _, call := range calls {
				if got := strings.Join(call.Forwarded.Values("X-Forwarded-Proto"), ","); got != tc.want {
					t.Fatalf("%s %s: X-Forwarded-Proto %q, want %q", call.Method, call.Path, got, tc.want)
				}
			}
		})
	}
}

// TestBearerTokenPassesThrough checks that the driver's access token (a
// JWT) reaches the coordinator through the gateway byte for byte, on
// every request of the statement.
func TestBearerTokenPassesThrough(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Flavour: coordinator.Trino})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, _ := staticGateway(t, gateway.Config{Flavour: gateway.Trino}, c.Addr())
	base, ca, _ := serveGatewayTLS(t, g)
	const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
	u, _ := url.Parse(base)
	db, err := sql.Open("zkpresto", "trino://"+u.Host+"?user=alice&ssl_ca="+url.QueryEscape(ca)+"&accessToken="+jwt)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	calls := c.Calls()
	if len(calls) < 2 {
		t.Fatalf("%d requests reached the coordinator", len(calls))
	}
	for _, call := range calls {
		if got := call.Identity.Values("Authorization"); len(got) != 1 || got[0] != "Bearer "+jwt {
			t.Fatalf("%s %s: Authorization %q", call.Method, call.Path, got)
		}
	}
}
