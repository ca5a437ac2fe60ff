package realservers

import (
	"bufio"
	"context"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// trino-python-client's cancel raises on any answer but 204
// (trino/client.py, TrinoQuery.cancel). Through the gateway, the cancel of
// a query whose coordinator has gone (its process no longer listens) is
// answered 204, since nothing is left running, and the client's cancel
// returns. The coordinator is a simulator: what is under test is the
// gateway's answer when no server is left to ask.
func TestPythonCancelOfAQueryWhoseCoordinatorIsGone(t *testing.T) {
	python := pythonClients(t)
	c, err := coordinator.Start(coordinator.Options{Flavour: coordinator.Trino, BatchRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r, err := routing.New(routing.Config{Discoverer: discovery.NewStatic("static:"+c.Addr(), []discovery.Node{{Addr: c.Addr()}}), Strategy: strategy.Named("poll")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	g, err := gateway.New(gateway.Config{Router: r, Keys: gatewayKeys, Flavour: gateway.Trino})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	run, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(run, python, "testdata/python_cancel.py", u.Hostname(), u.Port())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "READY" {
		_ = cmd.Wait()
		t.Fatalf("python_cancel.py did not start its query: %q\n%s", lines.Text(), stderr.String())
	}
	if c.Running() != 1 {
		t.Fatalf("the coordinator runs %d queries, want the script's one", c.Running())
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	said := ""
	if lines.Scan() {
		said = lines.Text()
	}
	if err := cmd.Wait(); err != nil || said != "CANCELLED" {
		t.Fatalf("trino-python-client's cancel of a query whose coordinator is gone: %v, printed %q\n%s", err, said, stderr.String())
	}
}
