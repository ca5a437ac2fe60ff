package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// twoInTurn starts two coordinators and returns a DSN that sends the
// statements to them in turn: a session change is answered by one and
// must reach the next statement, which runs on the other.
func twoInTurn(t *testing.T) ([]*coordinator.Coordinator, string) {
	t.Helper()
	cs := startCoordinators(t, 2)
	return cs, "presto://" + cs[0].Addr() + "," + cs[1].Addr() + "/hive/web;zooKeeperStrategy=ROUND_ROBIN?user=alice"
}

// latest is the latest statement either coordinator received.
func latest(cs []*coordinator.Coordinator) coordinator.Request {
	var last coordinator.Request
	for _, c := range cs {
		for _, r := range c.Requests() {
			if r.Time.After(last.Time) {
				last = r
			}
		}
	}
	return last
}

func TestBatchStatementsShareTheSessionAndPrintUpdates(t *testing.T) {
	cs, dsn := twoInTurn(t)
	o := queryOptions{dsn: dsn, logLevel: "warn", execute: "USE tpch.tiny; SET SESSION query_max_run_time = '1h'; SELECT * FROM rows(1)"}
	out, errOut := &testutil.Buffer{}, &testutil.Buffer{}
	if err := runQuery(context.Background(), strings.NewReader(""), out, errOut, o, nil); err != nil {
		t.Fatalf("%v\nstderr: %s", err, errOut)
	}
	r := latest(cs)
	if r.SQL != "SELECT * FROM rows(1)" || r.Catalog != "tpch" || r.Schema != "tiny" || r.SessionProperties["query_max_run_time"] != "1h" {
		t.Fatalf("the last statement reached the coordinator as %+v", r)
	}
	// presto-cli prints what a statement that is no query did on stderr,
	// and no result for it.
	if got := errOut.String(); got != "USE\nSET SESSION\n" {
		t.Errorf("stderr %q, want USE and SET SESSION", got)
	}
	if got := out.String(); got != "\"1\"\n" {
		t.Errorf("stdout %q, want only the SELECT's row", got)
	}
}

func TestShellStatementsShareTheSession(t *testing.T) {
	cs, dsn := twoInTurn(t)
	t.Setenv("ZKPRESTO_HISTORY", t.TempDir()+"/history")
	stdin, typing := io.Pipe()
	defer typing.Close()
	o := queryOptions{dsn: dsn, logLevel: "warn", shell: true, interrupts: make(chan os.Signal, 1)}
	out, errOut := &testutil.Buffer{}, &testutil.Buffer{}
	done := make(chan error, 1)
	go func() { done <- runQuery(context.Background(), stdin, out, errOut, o, nil) }()
	for _, line := range []string{"USE tpch.tiny;", "SET SESSION hive.x = 'a b';", "SELECT * FROM rows(1);"} {
		if _, err := io.WriteString(typing, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the result", func() bool { return strings.Contains(out.String(), "(1 row)") })
	r := latest(cs)
	if r.Catalog != "tpch" || r.Schema != "tiny" || r.SessionProperties["hive.x"] != "a b" {
		t.Fatalf("the shell's third statement reached the coordinator as %+v", r)
	}
	if got := errOut.String(); !strings.Contains(got, "USE\n") || !strings.Contains(got, "SET SESSION\n") {
		t.Errorf("stderr %q lacks USE and SET SESSION", got)
	}
	if strings.Contains(out.String(), "true") {
		t.Errorf("stdout %q shows the result of a session statement", out.String())
	}
	typing.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestUpdateStatusIsPrestoCLIs(t *testing.T) {
	for _, tc := range []struct {
		p    zkdriver.Progress
		want string
	}{
		{zkdriver.Progress{UpdateType: "SET SESSION"}, "SET SESSION"},
		{zkdriver.Progress{UpdateType: "INSERT", UpdateCount: 5, HasUpdateCount: true}, "INSERT: 5 rows"},
		{zkdriver.Progress{UpdateType: "DELETE", UpdateCount: 1, HasUpdateCount: true}, "DELETE: 1 row"},
		{zkdriver.Progress{UpdateType: "INSERT", HasUpdateCount: true}, "INSERT: 0 rows"},
	} {
		if got := updateStatus(tc.p); got != tc.want {
			t.Errorf("updateStatus(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}
