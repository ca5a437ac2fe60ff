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

// TestCanaryNeverShown sends the canary as a password, an access token
// (static and from a token source), an extra credential, a Negotiate
// token and a cookie, through the driver and through the gateway (at
// debug level, on TLS), to a coordinator that authenticates every
// request and refuses a replayed Negotiate token, on statements that
// succeed, fail, are closed early or cancelled (the driver's and the
// gateway's own cancels carry credentials), and looks for it in every log
// line, error, String, status page and metric the gateway and the driver
// produce.
func TestCanaryNeverShown(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Flavour: coordinator.Trino, RequireAuthorization: true})
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
	source := zkdriver.WithAccessTokenSource(func(context.Context) (string, error) { return canary, nil })
	for _, tc := range []struct {
		dsn  string
		opts []zkdriver.Option
	}{
		{"trino://" + addr + "/hive?user=alice&password=" + canary + "&" + cred + "&" + tlsKey, nil},
		{"trino://" + addr + "/hive?user=alice&accessToken=" + canary + "&" + cred + "&" + tlsKey, nil},
		{"trino://" + addr + "/hive?user=alice&" + cred + "&" + tlsKey, []zkdriver.Option{source}},
		// A coordinator that is not there: the driver's errors and logs.
		{"trino://" + dead + "/hive?user=alice&accessToken=" + canary + "&" + cred + "&" + tlsKey + "&retries=0", nil},
	} {
		cfg, err := zkdriver.ParseDSN(tc.dsn)
		if err != nil {
			t.Fatal(err)
		}
		shown = append(shown, cfg.String())
		connector, err := zkdriver.NewConnector(cfg, append(tc.opts, zkdriver.WithLogger(logger))...)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(connector)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for _, stmt := range []string{"SELECT 1", "SELECT fail('no')", "SELECT * FROM rows(300)", "closed early: SELECT * FROM rows(300)", "cancelled: SELECT sleep(5000)"} {
			stmtCtx, stop := ctx, context.CancelFunc(func() {})
			if text, ok := strings.CutPrefix(stmt, "cancelled: "); ok {
				stmt = text
				stmtCtx, stop = context.WithTimeout(ctx, 200*time.Millisecond)
			}
			text, early := strings.CutPrefix(stmt, "closed early: ")
			if rows, err := db.QueryContext(stmtCtx, text); err != nil {
				shown = append(shown, err.Error())
			} else {
				for rows.Next() && !early {
				}
				if err := rows.Err(); err != nil {
					shown = append(shown, err.Error())
				}
				rows.Close()
			}
			stop()
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
		for _, auth := range []string{"Bearer " + canary, "Basic " + canary, "Negotiate " + canary} {
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
	// Clients that leave while the coordinator is slow to answer: the
	// gateway cancels their queries with their credentials, never with a
	// Negotiate token (refused, and logged at debug level).
	c.SetAnswerDelay(300 * time.Millisecond)
	for _, auth := range []string{"Bearer " + canary, "Negotiate " + canary + "-gone"} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+"/v1/statement", strings.NewReader("SELECT 1"))
		req.Header.Set("X-Trino-User", "alice")
		req.Header.Set("Authorization", auth)
		req.Header.Set("Cookie", "session="+canary)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		} else {
			shown = append(shown, err.Error())
		}
		cancel()
	}
	c.SetAnswerDelay(0)
	deadline := time.Now().Add(10 * time.Second)
	for deletes := 0; deletes < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		deletes = 0
		for _, call := range c.Calls() {
			if call.Method == http.MethodDelete && strings.HasPrefix(call.Path, "/v1/statement/queued/") {
				deletes++
			}
		}
	}
	var refused int
	for _, call := range c.Calls() {
		if call.Status == http.StatusUnauthorized {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("the coordinator refused nothing: the refusals' paths were not taken")
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
