package main

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// canary is a credential that must reach the coordinator and nothing
// else: no log line, error, status page or metric.
const canary = "CANARY-5b0e1f-s3cr3t"

// TestCanaryNeverShown sends the canary as a password, an access token,
// an extra credential and a cookie, through the driver and through the
// gateway (at debug level, on TLS), on statements that succeed and ones
// that fail, and looks for it in every log line, error, String, status
// page and metric the gateway and the driver produce.
func TestCanaryNeverShown(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Flavour: coordinator.Trino})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dir := t.TempDir()
	secret := writeGatewaySecret(t, dir)
	certs, err := testtls.Generate(dir, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret, "--log-level", "debug",
		"--tls-cert", certs.ServerKeyStore, "--tls-key", certs.ServerKeyStore, "--forwarded-proto",
		"--dsn", "trino://"+c.Addr()+"/")
	defer gw.stop(t)
	addr := announcedAddr(t, gw, "https")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()

	var shown []string // every text that must not hold the canary
	logs := &testutil.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tlsKey := "ssl_ca=" + url.QueryEscape(certs.CAFile)
	cred := "extraCredentials=s3:" + canary
	for _, dsn := range []string{
		"trino://" + addr + "/hive?user=alice&password=" + canary + "&" + cred + "&" + tlsKey,
		"trino://" + addr + "/hive?user=alice&accessToken=" + canary + "&" + cred + "&" + tlsKey,
		// A coordinator that is not there: the driver's errors and logs.
		"trino://" + dead + "/hive?user=alice&accessToken=" + canary + "&" + cred + "&" + tlsKey + "&retries=0",
	} {
		cfg, err := zkdriver.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		shown = append(shown, cfg.String())
		connector, err := zkdriver.NewConnector(cfg, zkdriver.WithLogger(logger))
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(connector)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for _, stmt := range []string{"SELECT 1", "SELECT fail('no')", "SELECT * FROM rows(300)"} {
			if rows, err := db.QueryContext(ctx, stmt); err != nil {
				shown = append(shown, err.Error())
			} else {
				for rows.Next() {
				}
				if err := rows.Err(); err != nil {
					shown = append(shown, err.Error())
				}
				rows.Close()
			}
		}
		cancel()
		db.Close()
	}
	// DSNs that fail to parse around the secrets.
	for _, dsn := range []string{
		"trino://c1?extraCredentials=" + canary,
		"trino://c1?extraCredentials=a:" + canary + ";a:x",
		"trino://c1?accessToken=" + canary,
		"trino://c1?accessToken=" + canary + "%0A&SSL=true",
		"trino://c1?password=" + canary + "&accessToken=" + canary + "&SSL=true",
	} {
		if _, err := zkdriver.ParseDSN(dsn); err == nil {
			t.Fatalf("a bad DSN parsed")
		} else {
			shown = append(shown, err.Error())
		}
	}

	// Raw clients through the gateway: a cookie, a bearer token and a
	// basic password, on a statement, a forged follow-up and a path that
	// is not there.
	trust, err := certs.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	transport := &http.Transport{TLSClientConfig: trust}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/statement", "SELECT 1"},
		{http.MethodGet, "/_zk/forged." + canary + "/v1/statement/executing/x/y/0", ""},
		{http.MethodGet, "/oauth2/token/" + canary, ""},
		// OAuth2: a callback with the canary as its code, state and
		// cookie, and token URIs under forged routing tokens.
		{http.MethodGet, "/oauth2/callback?code=" + canary + "&state=" + canary, ""},
		{http.MethodGet, "/_zk/k1.aHR0cDovLzEyNy4wLjAuMTo5.AAAAAAAAAAAAAAAAAAAAAA/oauth2/token/" + canary, ""},
		{http.MethodGet, "/_zk/k1.aHR0cDovLzEyNy4wLjAuMTo5.AAAAAAAAAAAAAAAAAAAAAA/oauth2/token/initiate/" + canary, ""},
		{http.MethodDelete, "/v1/query/" + canary, ""},
	} {
		for _, auth := range []string{"Bearer " + canary, "Basic " + canary} {
			req, _ := http.NewRequest(tc.method, "https://"+addr+tc.path, strings.NewReader(tc.body))
			req.Header.Set("X-Trino-User", "alice")
			req.Header.Set("Authorization", auth)
			req.Header.Set("Cookie", "session="+canary+"; zkpresto_oauth2_x="+canary)
			resp, err := client.Do(req)
			if err != nil {
				shown = append(shown, err.Error())
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			shown = append(shown, string(b), resp.Header.Get("WWW-Authenticate"))
		}
	}
	if n := len(c.Requests()); n == 0 {
		t.Fatal("no statement reached the coordinator")
	}
	if got := c.Requests()[0].Identity.Get("X-Trino-Extra-Credential"); got != "s3="+canary {
		t.Fatalf("the coordinator got the extra credential %q", got)
	}

	for _, page := range []string{"/_zk/status", "/_zk/status.json", "/_zk/metrics"} {
		resp, err := client.Get("https://" + addr + page)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(b) == 0 {
			t.Fatalf("%s: %s", page, resp.Status)
		}
		shown = append(shown, page+": "+string(b))
	}
	shown = append(shown, "gateway output: "+gw.out.String(), "gateway log: "+gw.errOut.String(), "driver log: "+logs.String())
	if !strings.Contains(logs.String(), "level=DEBUG") && !strings.Contains(gw.errOut.String(), "level=DEBUG") {
		t.Fatal("no debug line was logged: the test would prove nothing")
	}
	for _, text := range shown {
		if strings.Contains(text, canary) {
			t.Errorf("the canary is shown in:\n%s", text)
		}
	}
}
