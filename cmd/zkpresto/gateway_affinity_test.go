package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// Two gateway replicas with --affinity-cookie over one host list: a client
// that keeps cookies, as python's requests session does, has every
// statement on one coordinator, whichever replica each reaches; the
// status page says the cookie picked it, and the metrics count the
// cookies.
func TestGatewayAffinityCookieAcrossReplicas(t *testing.T) {
	cs := startFleet(t, 3, coordinator.Options{BatchRows: 2})
	hosts := addrsOf(cs)
	secret := writeGatewaySecret(t, t.TempDir())
	var replicas []string
	for range 2 {
		gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret, "--affinity-cookie", "5m",
			"--dsn", "presto://"+strings.Join(hosts, ",")+"/;zooKeeperStrategy=poll")
		replicas = append(replicas, "http://"+announcedAddr(t, gw, "http"))
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar}
	for i := range 6 {
		method, uri, body := http.MethodPost, replicas[i%2]+"/v1/statement", fmt.Sprintf("SELECT * FROM rows(%d)", 3+i)
		for uri != "" {
			req, _ := http.NewRequest(method, uri, strings.NewReader(body))
			req.Header.Set("X-Trino-User", "dbt")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var page struct {
				NextURI string `json:"nextUri"`
				Error   any    `json:"error"`
			}
			err = json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || page.Error != nil {
				t.Fatalf("%s %s: %s %v %v", method, uri, resp.Status, err, page.Error)
			}
			method, uri, body = http.MethodGet, page.NextURI, ""
		}
	}
	got, busy := statementsPer(cs)
	if busy != 1 {
		t.Fatalf("statements per coordinator %v, want the session's 6 on one", got)
	}
	resp, err := http.Get(replicas[1] + "/_zk/status.json")
	if err != nil {
		t.Fatal(err)
	}
	var st gateway.Status
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || len(st.Groups) != 1 || len(st.Groups[0].Statements) != 3 {
		t.Fatalf("status.json: %v, %+v", err, st)
	}
	for _, rec := range st.Groups[0].Statements {
		if rec.ChosenBy != "weights" || rec.PickedBy != "affinity cookie" {
			t.Errorf("replica 1's statement chosen by %q, picked by %q; want weights, the affinity cookie", rec.ChosenBy, rec.PickedBy)
		}
	}
	resp, err = http.Get(replicas[1] + "/_zk/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`zkpresto_gateway_affinity_cookies_total{outcome="followed"} 3`, `zkpresto_gateway_affinity_cookies_total{outcome="set"} 3`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("the metrics do not show %s", want)
		}
	}
}

// pythonClients returns the python of the virtual environment that
// scripts/install-python-clients.sh makes (make test-deps runs it).
func pythonClients(t *testing.T) string {
	t.Helper()
	venv := os.Getenv("ZKPRESTO_PYTHON_CLIENTS")
	if venv == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		venv = filepath.Join(cache, "zkpresto", "python-clients")
	}
	_, err := os.Stat(filepath.Join(venv, "zkpresto-requirements.txt"))
	testutil.RequireTool(t, "the Python clients (scripts/install-python-clients.sh)", err)
	return filepath.Join(venv, "bin", "python")
}

// affinityPy runs statements on one trino-python-client connection, whose
// requests.Session keeps cookies, as dbt-trino's does.
const affinityPy = `
import sys, trino
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conn = trino.dbapi.connect(host=host, port=port, user="dbt", http_scheme="http")
cur = conn.cursor()
for i in range(n):
    cur.execute("SELECT * FROM rows(%d)" % (3 + i))
    assert len(cur.fetchall()) == 3 + i
print("ok")
`

// trino-python-client, as dbt-trino runs it, through two replicas behind
// a round-robin balancer: with --affinity-cookie one connection's
// statements all reach one coordinator; without, they spread.
func TestGatewayAffinityCookieWithTrinoPythonClient(t *testing.T) {
	python := pythonClients(t)
	for _, cookie := range []bool{true, false} {
		t.Run(fmt.Sprintf("cookie=%t", cookie), func(t *testing.T) {
			cs := startFleet(t, 3, coordinator.Options{Flavour: coordinator.Trino, BatchRows: 2})
			hosts := addrsOf(cs)
			secret := writeGatewaySecret(t, t.TempDir())
			args := []string{"gateway", "--listen", "127.0.0.1:0", "--secret-file", secret, "--dsn", "trino://" + strings.Join(hosts, ",") + "/;zooKeeperStrategy=poll"}
			if cookie {
				args = append(args, "--affinity-cookie", "5m")
			}
			var replicas []string
			for range 2 {
				replicas = append(replicas, announcedAddr(t, start(t, args...), "http"))
			}
			front, addr := startFront(t, replicas...)
			host, port, _ := net.SplitHostPort(addr)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, python, "-c", affinityPy, host, port, "8").CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "ok" {
				t.Fatalf("trino-python-client: %v\n%s", err, out)
			}
			got, busy := statementsPer(cs)
			if cookie && busy != 1 || !cookie && busy < 2 {
				t.Errorf("statements per coordinator %v; want all on one with the cookie, spread without", got)
			}
			for _, r := range replicas {
				if n := front.served[r].Load(); n == 0 {
					t.Errorf("replica %s served no request: the test needs both", r)
				}
			}
		})
	}
}

// statementsPer returns how many statements each coordinator ran, in
// order, and how many ran any.
func statementsPer(cs []*coordinator.Coordinator) (got []int64, busy int) {
	for _, c := range cs {
		n := c.Statements()
		got = append(got, n)
		if n > 0 {
			busy++
		}
	}
	return got, busy
}
