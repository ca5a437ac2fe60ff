package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// While the gateway drains, /_zk/health answers 503, so that a load
// balancer sends the clients' next statements to another replica instead
// of to one that refuses them; the operator pages on --admin-listen stay
// up until the queries in flight are done and say that it drains; then
// both listeners close.
func TestGatewayDrainFailsHealthAndKeepsTheOperatorPages(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{BatchRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	secret := writeGatewaySecret(t, t.TempDir())
	gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret, "--drain-timeout", "2m",
		"--admin-listen", "127.0.0.1:0", "--dsn", "presto://"+c.Addr()+"/;zooKeeperStrategy=poll")
	addr := announcedAddr(t, gw, "http")
	var adminAddr string
	eventually(t, "the operator address", func() bool {
		m := regexp.MustCompile(`operator pages at http://(127\.0\.0\.1:\d+)/_zk/status`).FindStringSubmatch(gw.out.String())
		if m != nil {
			adminAddr = m[1]
		}
		return adminAddr != ""
	})
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	status := func(url string) int {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("http://" + addr + "/_zk/health"); got != http.StatusOK {
		t.Fatalf("/_zk/health before the drain: %d", got)
	}

	db, err := sql.Open("presto", "presto://alice@"+addr+"/hive")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT * FROM rows(3)")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() { // the query is between two pages at SIGTERM
		t.Fatal(rows.Err())
	}

	gw.cancel() // SIGTERM
	eventually(t, "the gateway to drain", func() bool { return strings.Contains(gw.errOut.String(), "draining") })
	if got := status("http://" + addr + "/_zk/health"); got != http.StatusServiceUnavailable {
		t.Errorf("/_zk/health while draining: %d, want 503 (a load balancer would keep sending statements here)", got)
	}
	resp, err := client.Get("http://" + adminAddr + "/_zk/status.json")
	if err != nil {
		t.Fatalf("the operator pages while draining: %v (they must stay up until the end)", err)
	}
	var st struct {
		Draining bool `json:"draining"`
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !st.Draining {
		t.Errorf("status.json while draining: %d, draining %t, %v", resp.StatusCode, st.Draining, err)
	}

	n := 1
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil || n != 3 {
		t.Fatalf("the query in flight at SIGTERM: %d rows, %v", n, err)
	}
	rows.Close()
	select {
	case err := <-gw.done:
		gw.done <- err
		if err != nil {
			t.Fatalf("the gateway exited with %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("the gateway did not exit once its query was done")
	}
	for _, a := range []string{addr, adminAddr} {
		if resp, err := client.Get("http://" + a + "/_zk/health"); err == nil {
			resp.Body.Close()
			t.Errorf("%s still answers after the gateway exited", a)
		}
	}
}
