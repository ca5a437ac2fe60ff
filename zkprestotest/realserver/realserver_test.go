package realserver_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// An empty cache is an error that says how to fill it, never a skip.
func TestStartWithAnEmptyCacheSaysHowToFetch(t *testing.T) {
	for _, f := range []coordinator.Flavour{coordinator.Trino, coordinator.Presto} {
		_, err := realserver.Start(realserver.Options{Flavour: f, Cache: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "scripts/fetch-real-servers.sh") {
			t.Errorf("%s from an empty cache: %v; want an error naming the fetch script", f, err)
		}
	}
}

// A server that is not ready within its bound is killed, and the error
// says so with the tail of its log.
func TestStartNotReadyInTimeFailsWithTheLogTail(t *testing.T) {
	start := time.Now()
	_, err := realserver.Start(realserver.Options{Flavour: coordinator.Presto, Name: "slow", StartTimeout: 3 * time.Second})
	if err == nil {
		t.Fatal("PrestoDB was ready within 3 s; the bound did not bite")
	}
	msg := err.Error()
	if !strings.Contains(msg, "not ready within 3s") || !strings.Contains(msg, "the log ends:") || !strings.Contains(msg, "slow") {
		t.Fatalf("error %q: want the bound, the server's name and its log tail", msg)
	}
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("Start took %s to give up on a 3 s bound", d)
	}
}

// Options the kit cannot honour are refused before anything starts.
func TestBadOptionsRefused(t *testing.T) {
	if _, err := realserver.Start(realserver.Options{Flavour: "mysql"}); err == nil || !strings.Contains(err.Error(), `"mysql"`) {
		t.Errorf("flavour mysql: %v", err)
	}
	if _, err := realserver.StartCluster(realserver.ClusterOptions{Flavour: "mysql"}); err == nil || !strings.Contains(err.Error(), `"mysql"`) {
		t.Errorf("cluster flavour mysql: %v", err)
	}
	if _, err := realserver.StartCluster(realserver.ClusterOptions{Servers: -1}); err == nil {
		t.Error("a cluster of -1 servers started")
	}
	if _, err := realserver.Start(realserver.Options{Flavour: coordinator.Trino, Files: map[string]string{"/etc/passwd": "x"}}); err == nil || !strings.Contains(err.Error(), "relative") {
		t.Errorf("an absolute extra file: %v", err)
	}
}
