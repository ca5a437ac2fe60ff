package devenv

import (
	"context"
	"database/sql"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/zkpresto/zkpresto/driver" // the "zkpresto" driver, what ZKPRESTO_DSN is for

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

// TestDevRealServers starts dev with --real trino: a real Trino registered
// by zkpresto's registrar, which the exported DSN reaches through
// ZooKeeper. make test runs it in the step of the real servers.
func TestDevRealServers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := &testutil.Buffer{}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, out, Options{Coordinators: 1, Real: "trino"}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	dsnLine := regexp.MustCompile(`export ZKPRESTO_DSN='([^']+)'`)
	testutil.Eventually(t, 4*time.Minute, 100*time.Millisecond, "the export lines", func() bool {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("dev --real trino ended: %v\n%s", err, out.String())
		default:
		}
		return dsnLine.MatchString(out.String())
	})
	if !strings.Contains(out.String(), "1 real trino 476 servers, registered under /trino") {
		t.Fatalf("the announcement:\n%s", out.String())
	}
	db, err := sql.Open("zkpresto", dsnLine.FindStringSubmatch(out.String())[1])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	qctx, qcancel := context.WithTimeout(ctx, time.Minute)
	defer qcancel()
	var n int
	if err := db.QueryRowContext(qctx, "SELECT count(*) FROM tpch.tiny.nation").Scan(&n); err != nil || n != 25 {
		t.Fatalf("through ZKPRESTO_DSN: %d nations, %v", n, err)
	}
}
