package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/prestodb/presto-go-client/v2"

	"github.com/zkpresto/zkpresto/internal/testrig/coordinator"
	"github.com/zkpresto/zkpresto/internal/testrig/testtls"
)

const gatewayTestSecret = "k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"

// zkpresto gateway as an operator runs it: a DSN, a secret file; a client
// queries through it; SIGTERM (here: the context) drains and it exits 0.
func TestGatewayCommandServesAndDrains(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{BatchRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	secret := filepath.Join(t.TempDir(), "gateway.key")
	if err := os.WriteFile(secret, []byte(gatewayTestSecret), 0o600); err != nil {
		t.Fatal(err)
	}
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
	secret := filepath.Join(t.TempDir(), "gateway.key")
	if err := os.WriteFile(secret, []byte(gatewayTestSecret), 0o600); err != nil {
		t.Fatal(err)
	}
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
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--config", "router-config.json"}, "give one of them"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--no-coordinator-grace", "-1s"}, "--no-coordinator-grace must not be negative"},
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
	secret := filepath.Join(dir, "gateway.key")
	config := filepath.Join(dir, "router-config.json")
	if err := os.WriteFile(secret, []byte(gatewayTestSecret), 0o600); err != nil {
		t.Fatal(err)
	}
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
	secret := filepath.Join(dir, "gateway.key")
	if err := os.WriteFile(secret, []byte(gatewayTestSecret), 0o600); err != nil {
		t.Fatal(err)
	}
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
