package main

import (
	"encoding/csv"
	"encoding/json"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

func TestQueryPrintsEachFormat(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	c := f.Coordinators[0]
	if _, err := f.Register(c, discovery.FormatZkpresto, 1); err != nil {
		t.Fatal(err)
	}
	dsn := f.DSN("?user=alice")

	out, errOut, err := run([]string{"query", "--dsn", dsn, "SELECT", "*", "FROM", "rows(3);"}, "")
	if err != nil {
		t.Fatalf("table: %v\n%s", err, errOut)
	}
	if out != "n\n1\n2\n3\n" {
		t.Errorf("table printed %q", out)
	}

	// The describing row: several columns, aligned.
	out, _, err = run([]string{"query", "--dsn", dsn, "SELECT 'hello'"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^coordinator\s+user\s+catalog\s+schema\s+source\s+query\s*$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^c1\s+alice\s+hive\s+default\s+(\S+\s+)?SELECT 'hello'\s*$`).MatchString(out) {
		t.Errorf("table printed:\n%s", out)
	}

	out, _, err = run([]string{"query", "--dsn", dsn, "--format", "csv", "SELECT * FROM rows(2)"}, "")
	if err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(records) != 3 || records[0][0] != "n" || records[1][0] != "1" || records[2][0] != "2" {
		t.Errorf("csv printed %q (%v)", out, err)
	}

	out, _, err = run([]string{"query", "--dsn", dsn, "-f", "json", "SELECT 'q'"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var objects []map[string]any
	if err := json.Unmarshal([]byte(out), &objects); err != nil || len(objects) != 1 ||
		objects[0]["coordinator"] != "c1" || objects[0]["user"] != "alice" {
		t.Fatalf("json printed %q (%v)", out, err)
	}
	if !strings.HasPrefix(out, "[\n  {\"coordinator\": \"c1\", \"user\": \"alice\", \"catalog\"") {
		t.Errorf("json keys are not in column order: %q", out)
	}

	out, _, err = run([]string{"query", "--dsn", dsn, "-f", "json", "SELECT * FROM rows(0)"}, "")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("an empty result printed %q (%v)", out, err)
	}
}

func TestQueryReadsStdinAndShowsTheCoordinator(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	c := f.Coordinators[0]
	if _, err := f.Register(c, discovery.FormatHive, 1); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ZKPRESTO_DSN", f.DSN("?user=bob"))
	out, errOut, err := run([]string{"query", "--show-coordinator", "--format", "csv"}, "SELECT *\nFROM rows(1);\n")
	if err != nil {
		t.Fatal(err)
	}
	if out != "n\n1\n" {
		t.Errorf("stdout %q", out)
	}
	if errOut != "coordinator: "+c.URL()+"\n" {
		t.Errorf("stderr %q, want the coordinator %s", errOut, c.URL())
	}
	if got := c.Requests(); len(got) != 1 || got[0].User != "bob" {
		t.Errorf("the coordinator saw %+v", got)
	}
}

func TestQueryFailsWithPrestosMessage(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	c := f.Coordinators[0]
	if _, err := f.Register(c, discovery.FormatZkpresto, 1); err != nil {
		t.Fatal(err)
	}
	out, _, err := run([]string{"query", "--dsn", f.DSN("?user=alice"), "SELECT fail('the table is on holiday')"}, "")
	if err == nil {
		t.Fatalf("a failing statement succeeded and printed %q", out)
	}
	if !strings.Contains(err.Error(), "the table is on holiday") || !strings.Contains(err.Error(), c.Addr()) {
		t.Errorf("error %q lacks Presto's message or the coordinator", err)
	}
}

func TestQueryRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"query", "SELECT 1"}, "", "--dsn"},
		{[]string{"query", "--dsn", "presto://127.0.0.1:1"}, "  ;\n", "no SQL given"},
		{[]string{"query", "--dsn", "presto://127.0.0.1:1", "--format", "xml", "SELECT 1"}, "", `--format "xml"`},
		{[]string{"query", "--dsn", "presto://127.0.0.1:1;zooKeeperNamespace=a//b", "SELECT 1"}, "", "zooKeeperNamespace"},
	} {
		_, _, err := run(tc.args, tc.stdin)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestQueryTakesPrestoCLIFlags(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	out, errOut, err := run([]string{"query", "--server", c.URL(), "--catalog", "tpch", "--schema", "tiny",
		"--user", "carol", "--source", "nightly", "--session", "query_max_run_time=1h", "--session", "a.b=x=y",
		"-e", "SELECT 'who'"}, "")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	// presto-cli's batch default: CSV, no header, every value quoted.
	if !strings.HasPrefix(out, `"c1","carol","tpch","tiny","nightly"`) {
		t.Errorf("--execute printed %q", out)
	}
	reqs := c.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the coordinator saw %d statements", len(reqs))
	}
	r := reqs[0]
	if r.User != "carol" || r.Catalog != "tpch" || r.Schema != "tiny" || r.Source != "nightly" ||
		r.SessionProperties["query_max_run_time"] != "1h" || r.SessionProperties["a.b"] != "x=y" {
		t.Errorf("the coordinator saw %+v", r)
	}

	file := t.TempDir() + "/q.sql"
	if err := os.WriteFile(file, []byte("SELECT * FROM rows(2);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", file}, "\"1\"\n\"2\"\n"},
		{[]string{"--file", file, "--output-format", "CSV_HEADER"}, "\"n\"\n\"1\"\n\"2\"\n"},
		{[]string{"-e", "SELECT * FROM rows(2)", "--output-format", "aligned"}, " n \n---\n 1 \n 2 \n(2 rows)\n"},
		{[]string{"-e", "SELECT * FROM rows(1)", "--output-format", "JSON"}, "{\"n\":1}\n"},
		{[]string{"-e", "SELECT * FROM rows(3)", "--output-format", "NULL"}, ""},
		// The original formats stay the default for SQL in arguments.
		{[]string{"SELECT * FROM rows(1)"}, "n\n1\n"},
	} {
		out, errOut, err := run(append([]string{"query", "--server", c.URL()}, tc.args...), "")
		if err != nil || out != tc.want {
			t.Errorf("%v: printed %q (%v, %s), want %q", tc.args, out, err, errOut, tc.want)
		}
	}

	// A location on the command line wins over $ZKPRESTO_DSN.
	t.Setenv("ZKPRESTO_DSN", "presto://127.0.0.1:1")
	if out, _, err := run([]string{"query", "--server", c.Addr(), "-e", "SELECT * FROM rows(1)"}, ""); err != nil || out != "\"1\"\n" {
		t.Errorf("--server with $ZKPRESTO_DSN set: %q (%v)", out, err)
	}
}

func TestQueryDiscoversThroughZooKeeperFlags(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 1, Namespace: "prod"})
	if _, err := f.Register(f.Coordinators[0], discovery.FormatZkpresto, 1); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run([]string{"query", "--zookeeper", f.Ensemble(), "--namespace", "prod", "--strategy", "round_robin",
		"--user", "dan", "--output-format", "TSV", "-e", "SELECT 'z'"}, "")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.HasPrefix(out, "c1\tdan\t") {
		t.Errorf("printed %q", out)
	}
}

func TestQueryRejectsBadPrestoCLIFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"query", "--server", "h:1", "--zookeeper", "z:2181", "-e", "SELECT 1"}, "exclude each other"},
		{[]string{"query", "--server", "ftp://h", "-e", "SELECT 1"}, `--server "ftp://h"`},
		{[]string{"query", "--server", "h1:1,h2:2", "-e", "SELECT 1"}, "want one"},
		{[]string{"query", "--server", "h:1", "--namespace", "x", "-e", "SELECT 1"}, "--namespace"},
		{[]string{"query", "--server", "h:1", "--session", "novalue", "-e", "SELECT 1"}, `--session "novalue"`},
		{[]string{"query", "--server", "h:1", "--output-format", "XML", "-e", "SELECT 1"}, `--output-format "XML"`},
		{[]string{"query", "--server", "h:1", "--output-format", "CSV", "--format", "csv", "-e", "SELECT 1"}, "exclude each other"},
		{[]string{"query", "--server", "h:1", "-e", "SELECT 1", "SELECT 2"}, "--execute excludes"},
		{[]string{"query", "--server", "h:1", "-f", "/nonexistent/q.sql"}, "--file"},
		{[]string{"query", "--server", "h:1", "--schema", "s", "-e", "SELECT 1"}, "--catalog"},
		{[]string{"query", "--server", "http://u:s3cret@h:1", "-e", "SELECT 1"}, "no user info"},
		{[]string{"query", "--zookeeper", "u:s3cret@z:2181", "-e", "SELECT 1"}, "no user info"},
	} {
		_, _, err := run(tc.args, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%v: got %v, want an error containing %q (and no password)", tc.args, err, tc.want)
		}
	}
}

func TestQueryRunsStatementsInTurnAndStopsAtTheFirstFailure(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	out, errOut, err := run([]string{"query", "--server", c.URL(), "-e",
		"SELECT * FROM rows(1); SELECT 'a;b' FROM rows(2) -- not; here\n; SELECT fail('stop; here'); SELECT * FROM rows(9)"}, "")
	if err == nil {
		t.Fatalf("a failing statement succeeded: %q", out)
	}
	if out != "\"1\"\n\"1\"\n\"2\"\n" {
		t.Errorf("printed %q (%s)", out, errOut)
	}
	reqs := c.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the coordinator ran %d statements, want 3 (none after the failure)", len(reqs))
	}
	if reqs[1].SQL != "SELECT 'a;b' FROM rows(2) -- not; here" || reqs[2].SQL != "SELECT fail('stop; here')" {
		t.Errorf("statements as split: %q, %q", reqs[1].SQL, reqs[2].SQL)
	}
	// presto-cli's "Query <id> failed: ...", with the coordinator.
	want := "query " + reqs[2].QueryID + " failed on coordinator " + c.URL() + ": "
	if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "stop; here") {
		t.Errorf("error %q, want it to start %q and carry Presto's message", err, want)
	}

	// From stdin, in the original formats, too.
	out, _, err = run([]string{"query", "--server", c.URL(), "--format", "csv"}, "SELECT * FROM rows(1);\nSELECT * FROM rows(2);\n")
	if err != nil || out != "n\n1\nn\n1\n2\n" {
		t.Errorf("stdin printed %q (%v)", out, err)
	}
}

func TestQueryTimeoutSaysWhatTimedOut(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	for _, sql := range []string{"SELECT sleep(60000)", "SELECT slow(60000) FROM rows(3)"} {
		_, _, err := run([]string{"query", "--server", c.URL(), "--timeout", "300ms", "-e", sql}, "")
		if err == nil {
			t.Fatalf("%s outlived --timeout", sql)
		}
		msg := err.Error()
		for _, want := range []string{"timed out", "--timeout 300ms", "cancelled on coordinator " + c.URL()} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q does not say %q", sql, msg, want)
			}
		}
		for _, internal := range []string{"deadline exceeded", "/v1/statement", "slug"} {
			if strings.Contains(msg, internal) {
				t.Errorf("%s: %q shows the internal %q", sql, msg, internal)
			}
		}
	}
	// A deadline of the caller's own is not --timeout's.
	_, _, err := run([]string{"query", "--server", c.URL(), "-e", "SELECT fail('not a timeout')"}, "")
	if err == nil || strings.Contains(err.Error(), "timed out") {
		t.Errorf("a failure without --timeout: %v", err)
	}
}

func TestQueryNamesAnUnknownStrategy(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	_, errOut, err := run([]string{"query", "--dsn", "presto://" + c.Addr() + ";zooKeeperStrategy=leastactive", "-e", "SELECT 1"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "strategy: random (fallback for unknown 'leastactive'); did you mean least_active?") {
		t.Errorf("stderr %q does not name the fallback", errOut)
	}
	_, _, err = run([]string{"query", "--dsn", "presto://" + c.Addr() + ";zooKeeperStrategy=leastactive;strictStrategy=true", "-e", "SELECT 1"}, "")
	if err == nil || !strings.Contains(err.Error(), "did you mean least_active?") {
		t.Errorf("strictStrategy: %v", err)
	}
}

func TestQueryToADeadServerSaysSoOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	_, errOut, err := run([]string{"query", "--server", "http://" + dead, "-e", "SELECT 1"}, "")
	if err == nil {
		t.Fatal("a query to a closed port succeeded")
	}
	for _, want := range []string{dead, "1 coordinator tried, it did not accept it", "connection refused", "no other coordinator is listed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// The operators' warnings (ejections, failovers) are not the user's.
	if strings.Contains(errOut, "level=WARN") || strings.Contains(errOut, "ejected") {
		t.Errorf("stderr holds operators' warnings:\n%s", errOut)
	}
}

// SQL on stdin (not a terminal) is batch mode: CSV by default, as
// trino-cli's; SQL given as arguments keeps the original table.
func TestQueryStdinDefaultsToCSV(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	out, stderr, err := run([]string{"query", "--server", c.URL()}, "SELECT * FROM rows(2);\n")
	if err != nil || out != "\"1\"\n\"2\"\n" {
		t.Errorf("stdin printed %q, want CSV (%v, %s)", out, err, stderr)
	}
	out, stderr, err = run([]string{"query", "--server", c.URL(), "SELECT", "*", "FROM", "rows(2)"}, "")
	if err != nil || out != "n\n1\n2\n" {
		t.Errorf("arguments printed %q, want the table (%v, %s)", out, err, stderr)
	}
	out, stderr, err = run([]string{"query", "--server", c.URL(), "--output-format", "CSV_HEADER"}, "SELECT * FROM rows(1)")
	if err != nil || out != "\"n\"\n\"1\"\n" {
		t.Errorf("stdin with --output-format printed %q (%v, %s)", out, err, stderr)
	}
}
