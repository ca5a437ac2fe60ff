package nginx

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Behind nginx, a coordinator that honours the forwarding headers hands out
// links on nginx's address, so every request of a statement goes through
// nginx, and a multi-page result arrives whole.
func TestStatementThroughNginx(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Flavour: coordinator.Trino, HonourForwarded: true, BatchRows: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := StartT(t, Options{Upstream: c.Addr(), Workers: 1})
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()

	req, _ := http.NewRequest(http.MethodPost, p.URL()+"/v1/statement", strings.NewReader("SELECT * FROM rows(10)"))
	req.Header.Set("X-Trino-User", "alice")
	var page struct {
		NextURI string    `json:"nextUri"`
		Data    [][]int64 `json:"data"`
	}
	var got []int64
	requests := 0
	for {
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		requests++
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", req.Method, req.URL, resp.StatusCode, body)
		}
		page.NextURI, page.Data = "", nil
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		for _, row := range page.Data {
			got = append(got, row[0])
		}
		if page.NextURI == "" {
			break
		}
		if !strings.HasPrefix(page.NextURI, p.URL()+"/") {
			t.Fatalf("nextUri %q is not on nginx's address %s", page.NextURI, p.URL())
		}
		req, _ = http.NewRequest(http.MethodGet, page.NextURI, nil)
		req.Header.Set("X-Trino-User", "alice")
	}
	if len(got) != 10 || got[0] != 1 || got[9] != 10 {
		t.Fatalf("rows = %v, want 1..10", got)
	}
	calls := c.Calls()
	if len(calls) != requests {
		t.Fatalf("the coordinator saw %d requests, the client sent %d through nginx", len(calls), requests)
	}
	for _, call := range calls {
		if call.Forwarded.Get("X-Forwarded-Host") == "" {
			t.Fatalf("a request reached the coordinator without nginx's forwarding headers: %+v", call)
		}
	}
	if len(p.Pids()) < 2 {
		t.Errorf("Pids() = %v, want the master and a worker", p.Pids())
	}
}

func TestCloseStopsNginx(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	Require(t)
	p, err := Start(Options{Upstream: c.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	dir, pids := p.Dir(), p.Pids()
	if b, err := os.ReadFile(dir + "/nginx.pid"); err != nil || strings.TrimSpace(string(b)) == "" {
		t.Fatalf("pid file: %q, %v", b, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still runs after Close", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the directory Start created is still there: %v", err)
	}
}

func TestConfigIsAPlainStreamingProxy(t *testing.T) {
	conf := string(Config(Options{Upstream: "127.0.0.1:8080"}, "127.0.0.1:9000", "/tmp/x"))
	for _, want := range []string{
		"daemon off;", "worker_processes auto;", "pid /tmp/x/nginx.pid;", "error_log /tmp/x/error.log",
		"access_log off;", "server 127.0.0.1:8080;", "keepalive 128;", "listen 127.0.0.1:9000;",
		"proxy_pass http://upstream;", "proxy_http_version 1.1;", "proxy_buffering off;",
		"proxy_set_header X-Forwarded-Host $host;",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	if conf := string(Config(Options{Upstream: "u:1", Workers: 1}, "l:2", "/d")); !strings.Contains(conf, "worker_processes 1;") {
		t.Errorf("Workers 1: %s", conf)
	}
}

func TestAvailableReportsBadOverride(t *testing.T) {
	// Not parallel: it changes the environment.
	missing := t.TempDir() + "/no-nginx"
	t.Setenv(BinaryEnv, missing)
	err := Available()
	if err == nil {
		t.Fatalf("Available() = nil with %s=%s", BinaryEnv, missing)
	}
	for _, want := range []string{missing, "scripts/install-nginx.sh"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Available() = %q, want it to mention %q", err, want)
		}
	}
	if _, err := Start(Options{Upstream: "127.0.0.1:1"}); err == nil {
		t.Errorf("Start succeeded with a missing binary")
	}
}
