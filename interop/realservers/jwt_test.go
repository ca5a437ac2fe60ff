package realservers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
	"github.com/zkpresto/zkpresto/zkprestotest/testjwt"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// jwtFleet is the Trino coordinator with https that takes access tokens
// (JWT) beside passwords: the password tests' (startSecureFleet).
type jwtFleet struct {
	cluster *realserver.Cluster
	server  *realserver.Server
	// certs is the coordinator's CA; sf carries the gateway's
	// certificates for startPasswordGateway.
	certs *testtls.Files
	sf    *secureFleet
	// token is signed by the key the coordinator trusts, forged by
	// another one; both name passwordUser.
	token, forged string
	// key signs token; the coordinator trusts its public half.
	key *testjwt.Key
}

// jwtRefused is Trino's reason for a token signed by another key
// (JwtAuthenticator). The coordinator takes passwords too (PASSWORD,JWT),
// and a 401 joins the messages of every authenticator that refused with
// " | " (AuthenticationFilter); the password authenticator, finding no
// Basic credentials, refuses with none, so the reason reads as with JWT
// alone.
const jwtRefused = "JWT signature does not match locally computed signature"

// startJWTFleet returns Trino's secure fleet as the JWT tests see it.
func startJWTFleet(t *testing.T) *jwtFleet {
	t.Helper()
	sf := startSecureFleet(t, coordinator.Trino)
	return &jwtFleet{cluster: sf.cluster, server: sf.server, certs: sf.certs, sf: sf, token: sf.token, forged: sf.forged, key: sf.jwtKey}
}

// Access tokens (JWT) end to end, on a Trino 476 with https and
// http-server.authentication.type=PASSWORD,JWT (the password tests'
// coordinator, shared: startSecureFleet) whose key file is the public key
// of a key the test made: a token signed by that key runs a statement as its
// subject, straight and through two gateway replicas, with the zkpresto
// driver (the DSN's accessToken and driver.WithAccessTokenSource),
// trino-jdbc (accessToken=), trino-go-client v1.5.0 (accessToken=) and
// trino-python-client (JWTAuthentication);
// a token signed by another key is refused by the coordinator (trino
// server/security/jwt JwtAuthenticator), its reason reaching the client,
// and no token shows in an error or in the gateways' logs. One
// coordinator serves every subtest and TestPasswordAuthentication: a start
// costs a minute.
func TestJWTAuthentication(t *testing.T) {
	jf := startJWTFleet(t)
	log1, log2 := &lockedLog{}, &lockedLog{}
	gw1 := startPasswordGateway(t, jf.sf, jf.cluster.DSN(";ssl_ca="+jf.certs.CAFile), log1)
	gw2 := startPasswordGateway(t, jf.sf, jf.cluster.DSN(";ssl_ca="+jf.certs.CAFile), log2)
	defer func() {
		noSecretIn(t, "the gateways' logs", log1.String()+log2.String(), jf.token, jf.forged)
	}()
	gatewayCA := url.QueryEscape(jf.sf.gatewayCerts.CAFile)
	targets := []struct{ name, dsn string }{
		{"straight", jf.cluster.DSN(";ssl_ca=" + jf.certs.CAFile + "?user=" + passwordUser)},
		{"two gateways", "trino://" + gw1 + "," + gw2 + "/tpch/tiny;ssl_ca=" + gatewayCA + "?user=" + passwordUser},
	}

	t.Run("driver accessToken", func(t *testing.T) {
		for _, target := range targets {
			for _, token := range []string{jf.token, jf.forged} {
				db, err := sql.Open("zkpresto", target.dsn+"&accessToken="+url.QueryEscape(token))
				if err != nil {
					t.Fatal(err)
				}
				var user string
				// Several statements: through the gateways, each replica's turn.
				for range 4 {
					if err = db.QueryRowContext(ctx(t), "SELECT current_user").Scan(&user); err != nil {
						break
					}
				}
				db.Close()
				if token == jf.token {
					if err != nil || user != passwordUser {
						t.Fatalf("%s: ran as %q, %v; want %q", target.name, user, err, passwordUser)
					}
					continue
				}
				if err == nil {
					t.Fatalf("%s: a token signed by another key was let in", target.name)
				}
				if !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), jwtRefused) {
					t.Errorf("%s: a forged token: %v; want the coordinator's 401 and its reason", target.name, err)
				}
				noSecretIn(t, "the forged token's error", err.Error(), jf.forged, jf.token)
				t.Logf("%s: a token signed by another key: %v", target.name, err)
			}
		}
	})

	t.Run("driver WithAccessTokenSource", func(t *testing.T) {
		for _, target := range targets {
			cfg, err := zkdriver.ParseDSN(target.dsn)
			if err != nil {
				t.Fatal(err)
			}
			var asked atomic.Int64
			connector, err := zkdriver.NewConnector(cfg, zkdriver.WithAccessTokenSource(func(context.Context) (string, error) {
				asked.Add(1)
				return jf.token, nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(connector)
			user, _, err := queryWhoAmI(t, db)
			db.Close()
			if err != nil || user != passwordUser {
				t.Fatalf("%s: ran as %q, %v", target.name, user, err)
			}
			if asked.Load() < 2 {
				t.Errorf("%s: the source was asked %d times, want once per request", target.name, asked.Load())
			}
		}
	})

	// The driver's own cancel (rows closed early), which carries the token,
	// ends the query at once (USER_CANCELED), not after its client timeout
	// (query.client.timeout, 5 minutes) for want of a poll. Trino 476 would
	// take it without the token too (tried: a statement's follow-ups are
	// public there, the slug guarding them); PrestoDB, which authenticates
	// every request, would not (the simulator's RequireAuthorization,
	// TestCancelsCarryCredentials in package driver).
	t.Run("driver cancel", func(t *testing.T) {
		for i, target := range targets {
			db, err := sql.Open("zkpresto", target.dsn+"&accessToken="+url.QueryEscape(jf.token))
			if err != nil {
				t.Fatal(err)
			}
			mark := fmt.Sprintf("jwt-cancel-%d-%d", i, time.Now().UnixNano())
			rows, err := db.QueryContext(ctx(t), "SELECT orderkey FROM tpch.sf1.lineitem /* "+mark+" */")
			if err != nil {
				t.Fatal(err)
			}
			if !rows.Next() {
				t.Fatal(rows.Err())
			}
			rows.Close()
			db.Close()
			var state string
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
				res, err := jf.server.Query(ctx(t), "SELECT state, error_code FROM system.runtime.queries WHERE query LIKE '%"+mark+" */'")
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Rows) == 1 {
					state = fmt.Sprint(res.Rows[0]...)
					if !strings.HasPrefix(state, "RUNNING") && !strings.HasPrefix(state, "QUEUED") {
						break
					}
				}
			}
			if !strings.Contains(state, "USER_CANCELED") {
				t.Errorf("%s: the query closed early is %q, want FAILED by USER_CANCELED", target.name, state)
			}
		}
	})

	t.Run("client certificate", func(t *testing.T) { testClientCertJWT(t, jf) })

	t.Run("jdbc", func(t *testing.T) {
		driverJar := jar(t, realserver.TrinoJDBC)
		jdbcURL := func(addr, ca, token string) string {
			return "jdbc:trino://" + addr + "/tpch/tiny?SSL=true&SSLTrustStorePath=" + url.QueryEscape(ca) + "&accessToken=" + url.QueryEscape(token)
		}
		for _, addr := range []struct{ addr, ca string }{{jf.server.HTTPSAddr(), jf.certs.CAFile}, {gw1, jf.sf.gatewayCerts.CAFile}, {gw2, jf.sf.gatewayCerts.CAFile}} {
			rows := probe(t, driverJar, []string{jdbcURL(addr.addr, addr.ca, jf.token), whoAmI})
			if len(rows[1]) != 1 || rows[1][0][0] != passwordUser {
				t.Fatalf("JDBC on %s: %q, want %s", addr.addr, rows[1], passwordUser)
			}
			out, err := javaCombined(t, "-cp", driverJar, "testdata/JdbcProbe.java", jdbcURL(addr.addr, addr.ca, jf.forged), whoAmI)
			if err == nil && !strings.Contains(out, "\tERROR\t") {
				t.Fatalf("JDBC with a forged token on %s: %s", addr.addr, out)
			}
			if !strings.Contains(out, "401") && !strings.Contains(strings.ToLower(out), "authentication failed") {
				t.Errorf("JDBC with a forged token on %s: %.400s; want the 401", addr.addr, out)
			}
			noSecretIn(t, "JDBC's output", out, jf.forged, jf.token)
		}
	})

	// trino-go-client v1.5.0, the version users have, with its DSN's
	// accessToken: the interop/trino module's probe command (as the
	// password tests run it), which starts no Trino of its own.
	t.Run("trino-go-client v1.5.0 accessToken", func(t *testing.T) {
		for _, addr := range []struct{ addr, ca string }{{jf.server.HTTPSAddr(), jf.certs.CAFile}, {gw1, jf.sf.gatewayCerts.CAFile}, {gw2, jf.sf.gatewayCerts.CAFile}} {
			for _, token := range []string{jf.token, jf.forged} {
				dsn := "https://" + passwordUser + "@" + addr.addr + "?catalog=tpch&schema=tiny&SSLCertPath=" + url.QueryEscape(addr.ca) + "&accessToken=" + url.QueryEscape(token)
				out, errOut, err := runTrinoProbe(t, dsn)
				noSecretIn(t, "trino-go-client v1.5.0's output", out+errOut, jf.forged, jf.token)
				if token == jf.token {
					if err != nil || out != passwordUser+"\t"+jf.server.Name()+"\n" {
						t.Fatalf("trino-go-client v1.5.0 on %s: %q, %v\n%s\nwant %s on %s", addr.addr, out, err, errOut, passwordUser, jf.server.Name())
					}
					continue
				}
				if err == nil || !strings.Contains(errOut, "401") || !strings.Contains(errOut, jwtRefused) {
					t.Fatalf("trino-go-client v1.5.0 with a forged token on %s: %q, %v\n%s\nwant the 401 and its reason", addr.addr, out, err, errOut)
				}
				t.Logf("trino-go-client v1.5.0 with a forged token on %s: %.300s", addr.addr, errOut)
			}
		}
	})

	t.Run("python JWTAuthentication", func(t *testing.T) {
		python := pythonClients(t)
		for _, addr := range []struct{ addr, ca string }{{jf.server.HTTPSAddr(), jf.certs.CAFile}, {gw1, jf.sf.gatewayCerts.CAFile}, {gw2, jf.sf.gatewayCerts.CAFile}} {
			for _, token := range []string{jf.token, jf.forged} {
				got := runPythonJWT(t, python, addr.addr, addr.ca, token)
				if token == jf.token {
					if got.User != passwordUser {
						t.Fatalf("trino-python-client on %s: %+v, want %s", addr.addr, got, passwordUser)
					}
					continue
				}
				if got.User != "" || !strings.Contains(got.Error, "401") || !strings.Contains(got.Error, jwtRefused) {
					t.Errorf("trino-python-client with a forged token on %s: %+v; want the 401 and its reason", addr.addr, got)
				}
				noSecretIn(t, "trino-python-client's error", got.Error, jf.forged, jf.token)
				t.Logf("trino-python-client with a forged token on %s: %.300s", addr.addr, got.Error)
			}
		}
	})
}

// pythonJWT is what testdata/python_jwt.py prints.
type pythonJWT struct {
	User  string `json:"user"`
	Error string `json:"error"`
}

func runPythonJWT(t *testing.T, python, addr, ca, token string) pythonJWT {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, python, "testdata/python_jwt.py", host, port, ca)
	// The token in the environment, not on a command line others may list.
	cmd.Env = append(os.Environ(), "ZKPRESTO_JWT="+token)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("python_jwt.py on %s: %v\n%s", addr, err, stderr)
	}
	var p pythonJWT
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("python_jwt.py printed %q: %v", out, err)
	}
	return p
}

// A gateway with ClientCertJWT signing with the key the coordinator
// trusts, as `zkpresto gateway --client-ca --jwt-signing-key` runs: a
// client that presents a certificate from the accepted CA, and sends no
// credential and no user, runs as the certificate's common name (Trino
// takes the user from the token's principal); the same client without its
// certificate is refused by the coordinator, and one whose own forged
// token the certificate's token replaces runs as the certificate says.
func testClientCertJWT(t *testing.T, jf *jwtFleet) {
	cfg, err := zkdriver.ParseDSN(jf.cluster.DSN(";ssl_ca=" + jf.certs.CAFile))
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
	signer, err := gateway.LoadSigningKey(jf.key.PrivateKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Config{Groups: groups, Keys: gatewayKeys, Flavour: gateway.Trino, ClientCertJWT: &gateway.CertJWT{Key: signer}})
	if err != nil {
		groups.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	gc := jf.sf.gatewayCerts
	pair, err := tls.LoadX509KeyPair(gc.ServerKeyStore, gc.ServerKeyStore)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(gc.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := gateway.NewServer(g, nil, gateway.ServerLimits{})
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"},
		ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close(); <-served })
	base := "https://" + ln.Addr().String()

	clientPair, err := tls.LoadX509KeyPair(gc.ClientCertFile, gc.ClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cert bool
		auth string
		want string // current_user, or "401"
	}{
		{"certificate", true, "", "zkpresto client"},
		{"certificate and a forged token", true, "Bearer " + jf.forged, "zkpresto client"},
		{"no certificate", false, "", "401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tlsConfig := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
			if tc.cert {
				tlsConfig.Certificates = []tls.Certificate{clientPair}
			}
			tr := &http.Transport{TLSClientConfig: tlsConfig}
			defer tr.CloseIdleConnections()
			header := http.Header{}
			if tc.auth != "" {
				header.Set("Authorization", tc.auth)
			}
			res, err := realserver.QueryWith(ctx(t), &http.Client{Transport: tr}, base, coordinator.Trino, "", "SELECT current_user", header)
			if tc.want == "401" {
				if err == nil || !strings.Contains(err.Error(), "401") {
					t.Fatalf("without a certificate: %v, %v; want the coordinator's 401", res, err)
				}
				t.Logf("without a certificate: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) != 1 || res.Rows[0][0] != tc.want {
				t.Fatalf("ran as %v, want %q", res.Rows, tc.want)
			}
		})
	}
}
