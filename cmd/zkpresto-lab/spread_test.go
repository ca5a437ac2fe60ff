package main

import (
	"io"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/cli"
)

// Bad settings are refused before anything is built or started.
func TestSpreadRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"spread", "--zkpresto", "/nonexistent", "--pools", "-1"}, "clients"},
		{[]string{"spread", "--zkpresto", "/nonexistent", "--duration", "1h"}, "duration"},
		{[]string{"spread-pool", "--dsn", "presto://127.0.0.1:1", "--rate", "0"}, "rate"},
	} {
		if _, _, err := run(tc.args, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// A pool's bad DSN names the program once: the lab opens the driver
// through its connector, not through sql.Open, whose edge says it too.
func TestSpreadPoolBadDSNNamesTheProgramOnce(t *testing.T) {
	var stderr strings.Builder
	root := newRootCommand()
	root.SetArgs([]string{"spread-pool", "--dsn", "presto://zk1:99999/;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto"})
	root.SetOut(io.Discard)
	root.SetErr(&stderr)
	if code := cli.Execute(root); code != 1 {
		t.Fatalf("exit status %d, want 1; stderr %q", code, stderr.String())
	}
	got := stderr.String()
	if !strings.HasPrefix(got, "zkpresto-lab: dsn: ") || strings.Contains(got, "zkpresto: ") || !strings.Contains(got, "99999") {
		t.Fatalf("stderr %q: want it to start %q, name the port and say zkpresto: nowhere", got, "zkpresto-lab: dsn: ")
	}
}
