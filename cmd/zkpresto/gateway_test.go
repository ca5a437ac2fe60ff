package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/prestodb/presto-go-client/v2"

	"github.com/zkpresto/zkpresto/internal/testrig/coordinator"
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
	var addr string
	eventually(t, "the gateway to announce its address", func() bool {
		m := regexp.MustCompile(`on http://(127\.0\.0\.1:\d+)`).FindStringSubmatch(gw.out.String())
		if m != nil {
			addr = m[1]
		}
		return addr != ""
	})
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

func TestGatewayCommandRefusesBadSetups(t *testing.T) {
	t.Setenv(secretEnv, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gateway"}, "--dsn"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/"}, "--secret-file"},
		{[]string{"gateway", "--dsn", "presto://c1:8080/", "--tls-cert", "x.pem"}, "--tls-cert and --tls-key"},
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
