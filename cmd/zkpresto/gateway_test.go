package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/prestodb/presto-go-client/v2"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

const gatewayTestSecret = "k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"

// writeGatewaySecret writes gatewayTestSecret to gateway.key in dir, as an
// operator's --secret-file, and returns its path.
func writeGatewaySecret(t *testing.T, dir string) string {
	t.Helper()
	secret := filepath.Join(dir, "gateway.key")
	if err := os.WriteFile(secret, []byte(gatewayTestSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	return secret
}

// zkpresto gateway as an operator runs it: a DSN, a secret file; a client
// queries through it; SIGTERM (here: the context) drains and it exits 0.
func TestGatewayCommandServesAndDrains(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{BatchRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	secret := writeGatewaySecret(t, t.TempDir())
	gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret,
		"--dsn", "presto://"+c.Addr()+"/;zooKeeperStrategy=poll")
	addr := announcedAddr(t, gw, "http")
	db, err := sql.Open("presto", "presto://alice@"+addr+"/hive")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT * FROM rows(10)")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil || n != 10 {
		t.Fatalf("%d rows through the gateway, %v", n, err)
	}
	rows.Close()
	if err := gw.stop(t); err != nil {
		t.Fatalf("gateway exited with %v on SIGTERM", err)
	}
	if !strings.Contains(gw.errOut.String(), "draining") {
		t.Errorf("the gateway did not log its drain:\n%s", gw.errOut.String())
	}
}

// --no-coordinator-grace 0: a statement no coordinator takes fails at once
// with a query failure the client shows, instead of 503s it retries.
func TestGatewayCommandNoCoordinatorGrace(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // a coordinator that refuses every connection
	secret := writeGatewaySecret(t, t.TempDir())
	gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret,
		"--dsn", "presto://"+dead+"/", "--no-coordinator-grace", "0")
	addr := announcedAddr(t, gw, "http")
	db, err := sql.Open("presto", "presto://alice@"+addr+"/hive")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, "SELECT 1")
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "NO_NODES_AVAILABLE") || !strings.Contains(err.Error(), dead) {
		t.Fatalf("got %v (context %v), want NO_NODES_AVAILABLE naming %s at once", err, ctx.Err(), dead)
	}
}

func TestGatewayCommandRefusesBadSetups(t *testing.T) {
	t.Setenv(secretEnv, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gateway"}, "--dsn"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/"}, "--secret-file"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--tls-cert", "x.pem"}, "--tls-cert and --tls-key"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--forwarded-proto"}, "--forwarded-proto needs --tls-cert and --tls-key"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--config", "router-config.json"}, "give one of them"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--client-ca", "ca.pem"}, "--client-ca and --jwt-signing-key go together"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--client-ca", "ca.pem", "--jwt-signing-key", "k.pem"}, "--client-ca needs --tls-cert"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--no-coordinator-grace", "-1s"}, "--no-coordinator-grace must not be negative"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--drain-quiet", "0s"}, "--drain-timeout and --drain-quiet must be positive"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--drain-timeout", "-1s"}, "--drain-timeout and --drain-quiet must be positive"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--affinity-cookie", "48h"}, "--affinity-cookie: want 0 (no cookie) or 1s to 24h"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--affinity-cookie", "-1m"}, "--affinity-cookie: want 0 (no cookie) or 1s to 24h"},
	} {
		if _, _, err := run(tc.args, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
	t.Setenv(secretEnv, "not a key")
	if _, _, err := run([]string{"gateway", "--dsn", "presto://c1:8080/"}, ""); err == nil || strings.Contains(err.Error(), "not a key") {
		t.Errorf("a bad secret: %v (it must be refused and never quoted)", err)
	}
}

// --config instead of --dsn: Presto Router's file, reloaded when it
// changes.
func TestGatewayCommandRouterConfig(t *testing.T) {
	var cs []*coordinator.Coordinator
	for _, name := range []string{"c1", "c2"} {
		c, err := coordinator.Start(coordinator.Options{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	dir := t.TempDir()
	secret := writeGatewaySecret(t, dir)
	config := filepath.Join(dir, "router-config.json")
	write := func(c *coordinator.Coordinator, pad string) {
		text := `{"groups": [{"name": "all", "members": ["` + c.URL() + `"]}], "scheduler": "ROUND_ROBIN"}` + pad
		if err := os.WriteFile(config+".new", []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(config+".new", config); err != nil {
			t.Fatal(err)
		}
	}
	write(cs[0], "")
	t.Setenv("ZKPRESTO_DSN", "presto://ignored:8080/")
	gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret, "--config", config)
	t.Cleanup(func() {
		if t.Failed() {
			select {
			case err := <-gw.done:
				gw.done <- err
				t.Logf("gateway exited: %v", err)
			default:
			}
			t.Logf("gateway log:\n%s%s", gw.out.String(), gw.errOut.String())
		}
	})
	addr := announcedAddr(t, gw, "http")
	query := func() string {
		t.Helper()
		db, err := sql.Open("presto", "presto://alice@"+addr+"/hive")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// One row of six columns, the first naming the coordinator.
		var coord string
		dest := []any{&coord}
		for range 5 {
			dest = append(dest, new(any))
		}
		if err := db.QueryRow("SELECT who").Scan(dest...); err != nil {
			t.Fatal(err)
		}
		return coord
	}
	if got := query(); got != "c1" {
		t.Fatalf("ran on %s, want c1", got)
	}
	write(cs[1], "\n")
	eventually(t, "the gateway to reload its config", func() bool {
		return strings.Contains(gw.errOut.String(), "router config reloaded")
	})
	if got := query(); got != "c2" {
		t.Fatalf("after the reload, ran on %s, want c2", got)
	}
	if err := gw.stop(t); err != nil {
		t.Fatalf("gateway exited with %v", err)
	}
}

// --tls-cert and --tls-key: the gateway serves https, and the URIs it
// hands out say https too.
func TestGatewayCommandTLS(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{BatchRows: 3})
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
	gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret,
		"--tls-cert", certs.ServerKeyStore, "--tls-key", certs.ServerKeyStore,
		"--dsn", "presto://"+c.Addr()+"/")
	defer gw.stop(t)
	addr := announcedAddr(t, gw, "https")
	trust, err := certs.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	transport := &http.Transport{TLSClientConfig: trust}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	req, _ := http.NewRequest(http.MethodPost, "https://"+addr+"/v1/statement", strings.NewReader("SELECT * FROM rows(7)"))
	rows := 0
	for {
		req.Header.Set("X-Presto-User", "alice")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			NextURI string  `json:"nextUri"`
			Data    [][]any `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, %v", resp.StatusCode, err)
		}
		rows += len(page.Data)
		if page.NextURI == "" {
			break
		}
		if !strings.HasPrefix(page.NextURI, "https://"+addr+"/") {
			t.Fatalf("nextUri %s is not on https://%s", page.NextURI, addr)
		}
		req, _ = http.NewRequest(http.MethodGet, page.NextURI, nil)
	}
	if rows != 7 {
		t.Fatalf("%d rows over https, want 7", rows)
	}
}

// announcedAddr waits for the gateway to print that it serves scheme on a
// loopback address, and returns the address.
func announcedAddr(t *testing.T, gw *running, scheme string) string {
	t.Helper()
	var addr string
	eventually(t, "the gateway to announce its address", func() bool {
		m := regexp.MustCompile(`on ` + scheme + `://(127\.0\.0\.1:\d+)`).FindStringSubmatch(gw.out.String())
		if m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	return addr
}

// The operator pages: by default on the clients' address, GET / leading to
// them; with --admin-listen on that address only; with
// --admin-password-file behind the password.
func TestGatewayCommandOperatorPages(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	dir := t.TempDir()
	secret := writeGatewaySecret(t, dir)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(url string, auth func(*http.Request)) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if auth != nil {
			auth(req)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret, "--dsn", "presto://"+c.Addr()+"/")
	addr := announcedAddr(t, gw, "http")
	if resp, _ := get("http://"+addr+"/", nil); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/_zk/status" {
		t.Errorf("GET / answered %d, Location %q; want a redirect to the status page", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := get("http://"+addr+"/_zk/status", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the status page on the clients' address answered %d", resp.StatusCode)
	}
	if err := gw.stop(t); err != nil {
		t.Fatal(err)
	}

	password := filepath.Join(dir, "admin.password")
	if err := os.WriteFile(password, []byte("s3cret operator\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gw = start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret, "--dsn", "presto://"+c.Addr()+"/",
		"--admin-listen", "127.0.0.1:0", "--admin-password-file", password)
	addr = announcedAddr(t, gw, "http")
	var adminAddr string
	eventually(t, "the operator address", func() bool {
		m := regexp.MustCompile(`operator pages at http://(127\.0\.0\.1:\d+)/_zk/status`).FindStringSubmatch(gw.out.String())
		if m != nil {
			adminAddr = m[1]
		}
		return adminAddr != ""
	})
	// A statement, for the metrics to count.
	db, err := sql.Open("presto", "presto://alice@"+addr+"/hive")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/_zk/status", "/_zk/status.json", "/_zk/metrics"} {
		if resp, _ := get("http://"+addr+path, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s on the clients' address answered %d with --admin-listen, want 404", path, resp.StatusCode)
		}
		resp, _ := get("http://"+adminAddr+path, nil)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("%s without the password answered %d (%q), want 401 asking for it", path, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		if resp, _ := get("http://"+adminAddr+path, func(r *http.Request) { r.SetBasicAuth("ops", "wrong") }); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s with a wrong password answered %d", path, resp.StatusCode)
		}
		if resp, _ := get("http://"+adminAddr+path, func(r *http.Request) { r.SetBasicAuth("anyone", "s3cret operator") }); resp.StatusCode != http.StatusOK {
			t.Errorf("%s with the password answered %d", path, resp.StatusCode)
		}
	}
	if resp, _ := get("http://"+addr+"/_zk/health", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("/_zk/health left the clients' address: %d", resp.StatusCode)
	}
	resp, body := get("http://"+adminAddr+"/_zk/metrics", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret operator") })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics with the bearer token: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`zkpresto_gateway_requests_total{kind="submit",status="200"} 1`,
		`zkpresto_gateway_request_duration_seconds_bucket{kind="submit",le="+Inf"} 1`,
		`zkpresto_gateway_request_duration_seconds_count{kind="followup"}`,
		`zkpresto_gateway_external_routing_failures_total{kind="timeout"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the metrics lack %s:\n%s", want, body)
		}
	}
	if resp, _ := get("http://"+adminAddr+"/", nil); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/_zk/status" {
		t.Errorf("GET / on the operator address answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// A gateway whose ZooKeeper does not answer says so in its log at start,
// before any client sends a statement: it used to open discovery only at
// the first statement, and stayed silent until then.
func TestGatewayCommandLogsAnUnreachableZooKeeperAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // a ZooKeeper that refuses every connection
	secret := writeGatewaySecret(t, t.TempDir())
	gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret,
		"--dsn", "presto://"+dead+"/;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto;zooKeeperConnectTimeout=1s")
	announcedAddr(t, gw, "http")
	eventually(t, "the gateway logs the unreachable ensemble", func() bool {
		return strings.Contains(gw.errOut.String(), "ZooKeeper unreachable") && strings.Contains(gw.errOut.String(), dead)
	})
	if err := gw.stop(t); err != nil {
		t.Fatalf("gateway exited with %v", err)
	}
}
