package trino_test

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
	"github.com/zkpresto/zkpresto/zkprestotest/testjwt"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// tlsGateway serves a gateway over the coordinator at coordAddr (https,
// trusting coordCA) on its own TLS listener with certs, until t ends, and
// returns its host:port.
func tlsGateway(t *testing.T, coordAddr, coordCA string, certs *testtls.Files) string {
	t.Helper()
	cfg, err := zkdriver.ParseDSN("trino://" + coordAddr + "/;ssl_ca=" + coordCA)
	if err != nil {
		t.Fatal(err)
	}
	group, err := gateway.DSNGroup(gateway.DefaultGroup, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := gateway.NewGroups([]*gateway.Group{group}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Config{Groups: groups, Keys: "k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"})
	if err != nil {
		groups.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	pair, err := tls.LoadX509KeyPair(certs.ServerKeyStore, certs.ServerKeyStore)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := gateway.NewServer(g, nil, gateway.ServerLimits{})
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("the gateway's server: %v", err)
		}
	})
	return ln.Addr().String()
}

// trino-go-client v1.5.0's accessToken against a real Trino 476 with
// https and JWT authentication (http-server.authentication.jwt.key-file,
// the public key of a key the test makes): a token signed by that key runs
// as its subject, straight and through two gateway replicas on TLS; one
// signed by another key is refused with Trino's reason, and the error
// carries no token.
func TestRealTrinoAccessToken(t *testing.T) {
	if err := realserver.Available(coordinator.Trino); err != nil {
		// As realserver.Shared: required in CI, skipped elsewhere.
		if os.Getenv("CI") != "" {
			t.Fatalf("a real Trino server is required in CI: %v", err)
		}
		t.Skipf("no real Trino server: %v", err)
	}
	dir := t.TempDir()
	certs, err := testtls.Generate(dir, "coordinator")
	if err != nil {
		t.Fatal(err)
	}
	gatewayCerts, err := testtls.Generate(dir, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	key, err := testjwt.Generate(dir, "issuer")
	if err != nil {
		t.Fatal(err)
	}
	other, err := testjwt.Generate(dir, "forger")
	if err != nil {
		t.Fatal(err)
	}
	token, err := key.Sign("alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := other.Sign("alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	server, err := realserver.Start(realserver.Options{
		Flavour: coordinator.Trino, Name: "trino-jwt", HTTPSKeyStore: certs.ServerKeyStore, StartTimeout: 8 * time.Minute,
		JWT: &realserver.JWT{KeyFile: key.PublicKeyFile, User: "alice", Token: token},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	targets := []struct{ name, addr, ca string }{
		{"direct", server.HTTPSAddr(), certs.CAFile},
		{"gateway 1", tlsGateway(t, server.HTTPSAddr(), certs.CAFile, gatewayCerts), gatewayCerts.CAFile},
		{"gateway 2", tlsGateway(t, server.HTTPSAddr(), certs.CAFile, gatewayCerts), gatewayCerts.CAFile},
	}
	for _, tg := range targets {
		for _, tok := range []string{token, forged} {
			db, err := sql.Open("trino", "https://alice@"+tg.addr+"?catalog=tpch&schema=tiny&SSLCertPath="+url.QueryEscape(tg.ca)+"&accessToken="+url.QueryEscape(tok))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			var user string
			err = db.QueryRowContext(ctx, "SELECT current_user").Scan(&user)
			cancel()
			db.Close()
			if tok == token {
				if err != nil || user != "alice" {
					t.Fatalf("%s: ran as %q, %v", tg.name, user, err)
				}
				continue
			}
			if err == nil {
				t.Fatalf("%s: a token signed by another key was let in", tg.name)
			}
			if msg := err.Error(); !strings.Contains(msg, "401") || strings.Contains(msg, forged) || strings.Contains(msg, token) {
				t.Errorf("%s: a forged token: %v; want the 401 and no token", tg.name, err)
			}
			t.Logf("%s: a forged token: %v", tg.name, err)
		}
	}
}
