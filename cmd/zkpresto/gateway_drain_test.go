package main

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// Break 6: on SIGTERM, with 100 clients between two pages of their
// queries, the gateway keeps listening: every query finishes, a new
// statement gets 503 with Connection: close, and the gateway exits once
// the queries are done, well before --drain-timeout.
func TestGatewayDrainKeepsQueriesInFlight(t *testing.T) {
	const clients, pages = 100, 20
	c, err := coordinator.Start(coordinator.Options{BatchRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	secret := writeGatewaySecret(t, t.TempDir())
	// A lone replica: its clients' next pages can come only here, and the
	// test holds them back a moment after SIGTERM; the quiet time must
	// not take that moment for clients that went elsewhere.
	gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret, "--drain-timeout", "2m", "--drain-quiet", "2m",
		"--dsn", "presto://"+c.Addr()+"/;zooKeeperStrategy=poll")
	addr := announcedAddr(t, gw, "http")
	db, err := sql.Open("presto", "presto://alice@"+addr+"/hive")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxIdleConns(clients)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var started, finished sync.WaitGroup
	started.Add(clients)
	errs := make(chan error, clients)
	drained := make(chan struct{})
	for range clients {
		finished.Add(1)
		go func() {
			defer finished.Done()
			rows, err := db.QueryContext(ctx, "SELECT * FROM rows(20)")
			if err != nil {
				started.Done()
				errs <- err
				return
			}
			defer rows.Close()
			n := 0
			for rows.Next() {
				if n++; n == 1 {
					started.Done()
					<-drained // every client is between two pages at SIGTERM
				}
				time.Sleep(30 * time.Millisecond)
			}
			if err := rows.Err(); err != nil || n != pages {
				errs <- err
				if err == nil {
					errs <- context.DeadlineExceeded
				}
			}
		}()
	}
	started.Wait()
	gw.cancel() // SIGTERM
	eventually(t, "the gateway to drain", func() bool { return strings.Contains(gw.errOut.String(), "draining") })
	resp, err := http.Post("http://"+addr+"/v1/statement", "text/plain", strings.NewReader("SELECT 1"))
	if err != nil {
		t.Fatalf("a new statement while draining: %v (the gateway must keep listening)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close {
		t.Errorf("a new statement while draining: %s, Connection: close %t; want 503 and close", resp.Status, resp.Close)
	}
	close(drained)
	finished.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		failed++
		t.Log(err)
	}
	if failed > 0 {
		t.Errorf("%d of %d queries in flight at SIGTERM failed", failed, clients)
	}
	select {
	case err := <-gw.done:
		gw.done <- err
		if err != nil {
			t.Errorf("the gateway exited with %v", err)
		}
	case <-time.After(waitFor):
		t.Error("the gateway did not exit once its queries were done")
	}
}
