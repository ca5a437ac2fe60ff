package realservers

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/gatewayrig"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// What a new user sees through the gateway when something fails, in the
// Java and Python clients (docs/gateway.md, "What each client shows"): a
// coordinator killed mid-result, no coordinator past the gateway's grace,
// a draining gateway. The coordinators are simulators behind gatewayrig:
// what is under test is the gateway's answers and the clients' reading of
// them, not the servers.

// killedStatement pages until the test kills its coordinator: it cannot
// end first.
const killedStatement = "SELECT * FROM rows(1000000) WHERE slow(20)"

// started is a client run in the background.
type started struct {
	done chan cliRun
}

// startClient runs bin with args in the background, within a minute, and
// returns what waits for its end; the test ends it if it has not.
func startClient(t *testing.T, bin string, args ...string) started {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	s := started{done: make(chan cliRun, 1)}
	go func() {
		defer cancel()
		err := cmd.Wait()
		r := cliRun{stdout: stdout.String(), stderr: stderr.String()}
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit) && ctx.Err() == nil:
			r.exit = exit.ExitCode()
		case err != nil:
			r.exit, r.stderr = -1, r.stderr+"\n"+err.Error()
		}
		s.done <- r
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case r := <-s.done:
			s.done <- r
		case <-time.After(time.Minute):
		}
	})
	return s
}

// wait returns what the client left, failing t when it did not end
// within its minute.
func (s started) wait(t *testing.T) cliRun {
	t.Helper()
	r := <-s.done
	s.done <- r // for the cleanup
	if r.exit < 0 {
		t.Fatalf("the client did not end: %s", r.stderr)
	}
	return r
}

// killMidResult waits until the one coordinator of rig has answered the
// statement and some pages of it, and kills it.
func killMidResult(t *testing.T, rig *gatewayrig.Rig) *coordinator.Coordinator {
	t.Helper()
	c := rig.Coordinators[0]
	testutil.Eventually(t, time.Minute, time.Millisecond, "pages to reach the client", func() bool { return len(c.Calls()) >= 4 })
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	return c
}

// checkReadable fails t unless out says every one of want and shows
// nothing unreadable (testutil.Unreadable).
func checkReadable(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the client's output does not say %q:\n%s", w, out)
		}
	}
	if bad := testutil.Unreadable(out); bad != "" {
		t.Errorf("the client's output shows %q:\n%s", bad, out)
	}
}

// cliArgs are the arguments that run a command-line client against server.
func cliArgs(t *testing.T, c commandLine, server string, args ...string) (string, []string) {
	t.Helper()
	bin, err := realserver.Java(c.flavour)
	if err != nil {
		t.Fatal(err)
	}
	return bin, append([]string{"--enable-native-access=ALL-UNNAMED", "-Dorg.jline.terminal.dumb=true", "-jar", jar(t, c.jar),
		"--server", server, "--user", "alice"}, args...)
}

// trino-cli and presto-cli: a coordinator killed mid-result prints the rows
// so far, then "Query ... failed:" with the gateway's message naming the
// coordinator (they printed the page raw, "returned an invalid response",
// while its failureInfo lacked the lists they require); no coordinator
// prints the NO_NODES_AVAILABLE message (trino-cli said "Query is gone
// (server restarted?)").
func TestCLIsShowTheGatewaysFailures(t *testing.T) {
	for _, c := range commandLines {
		t.Run(c.name, func(t *testing.T) {
			t.Run("killed", func(t *testing.T) {
				rig := gatewayrig.Start(t, gatewayrig.Options{Coordinators: 1, Coordinator: coordinator.Options{Flavour: c.flavour, BatchRows: 5}})
				bin, args := cliArgs(t, c, rig.Front, "--output-format", "CSV", "--execute", killedStatement)
				run := startClient(t, bin, args...)
				victim := killMidResult(t, rig)
				r := run.wait(t)
				if r.exit != 1 || !strings.HasPrefix(r.stdout, "\"1\"\n\"2\"\n") {
					t.Errorf("exit %d, printed %q; want 1, after the rows that came before the kill", r.exit, r.stdout)
				}
				checkReadable(t, r.stderr, "failed: zkpresto gateway: coordinator "+victim.Addr()+" failed for query")
			})
			t.Run("nonodes", func(t *testing.T) {
				rig := gatewayrig.Start(t, gatewayrig.Options{Coordinator: coordinator.Options{Flavour: c.flavour}, Unreachable: true, NoCoordinatorGrace: -1})
				bin, args := cliArgs(t, c, rig.Front, "--execute", "SELECT 1")
				r := startClient(t, bin, args...).wait(t)
				if r.exit != 1 || r.stdout != "" {
					t.Errorf("exit %d, printed %q; want 1 and nothing", r.exit, r.stdout)
				}
				checkReadable(t, r.stderr, "failed: zkpresto gateway: no coordinator of group", rig.Unreachable)
			})
		})
	}
}

// trino-cli sends a statement refused with 503 again until its
// --client-request-timeout (2 minutes by default), and then says only that
// it gave up, without the reason the gateway gave: behind a load
// balancer, one of those requests reaches a replica that is not draining.
func TestTrinoCLIThroughADrainingGateway(t *testing.T) {
	rig := gatewayrig.Start(t, gatewayrig.Options{Coordinator: coordinator.Options{Flavour: coordinator.Trino}})
	rig.Drain()
	c := commandLines[0]
	bin, args := cliArgs(t, c, rig.Front, "--client-request-timeout", "3s", "--execute", "SELECT 1")
	r := startClient(t, bin, args...).wait(t)
	if h := rig.Hits(); r.exit != 1 || !strings.Contains(r.stderr, "Error fetching next (attempts: ") || h[0]+h[1] < 1 || rig.Statements() != 0 {
		t.Errorf("exit %d, stderr %q, %v requests, %d statements run; want exit 1 once the retries ran out, and nothing run", r.exit, r.stderr, h, rig.Statements())
	}
}

// Trino's JDBC driver, what BI tools run: the query's SQLException carries
// the gateway's message naming the coordinator ("Query failed (#id):
// ..."), and its error code.
func TestJDBCShowsTheGatewaysFailures(t *testing.T) {
	bin, err := realserver.Java(coordinator.Trino)
	if err != nil {
		t.Fatal(err)
	}
	jdbcURL := func(rig *gatewayrig.Rig) string {
		return "jdbc:trino://" + strings.TrimPrefix(rig.Front, "http://") + "/hive/default"
	}
	args := func(url, sql string) []string {
		return []string{"-cp", jar(t, realserver.TrinoJDBC), "testdata/JdbcProbe.java", url, sql}
	}
	t.Run("killed", func(t *testing.T) {
		rig := gatewayrig.Start(t, gatewayrig.Options{Coordinators: 1, Coordinator: coordinator.Options{Flavour: coordinator.Trino, BatchRows: 5}})
		run := startClient(t, bin, args(jdbcURL(rig), killedStatement)...)
		victim := killMidResult(t, rig)
		r := run.wait(t)
		if !strings.HasPrefix(r.stdout, "1\t1\n1\t2\n") {
			t.Errorf("printed %q; want the rows that came before the kill", r.stdout)
		}
		checkReadable(t, r.stdout, "\tERROR\tQuery failed (#", "zkpresto gateway: coordinator "+victim.Addr()+" failed for query", "\t66036\t")
	})
	t.Run("nonodes", func(t *testing.T) {
		rig := gatewayrig.Start(t, gatewayrig.Options{Coordinator: coordinator.Options{Flavour: coordinator.Trino}, Unreachable: true, NoCoordinatorGrace: -1})
		r := startClient(t, bin, args(jdbcURL(rig), "SELECT 1")...).wait(t)
		checkReadable(t, r.stdout, "1\tERROR\tQuery failed (#", "zkpresto gateway: no coordinator of group", rig.Unreachable, "\t65541\t")
	})
}

// pythonFailure is what testdata/python_failure.py prints.
type pythonFailure struct {
	Rows    int    `json:"rows"`
	Error   string `json:"error"`
	Message string `json:"message"`
}

// runPythonFailure runs testdata/python_failure.py with sql against the
// rig, and kills its coordinator mid-result when kill is set.
func runPythonFailure(t *testing.T, python string, rig *gatewayrig.Rig, sql string, kill bool) (pythonFailure, *coordinator.Coordinator) {
	t.Helper()
	u, err := url.Parse(rig.Front)
	if err != nil {
		t.Fatal(err)
	}
	run := startClient(t, python, "testdata/python_failure.py", u.Hostname(), u.Port(), sql)
	var victim *coordinator.Coordinator
	if kill {
		victim = killMidResult(t, rig)
	}
	r := run.wait(t)
	var p pythonFailure
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || r.exit != 0 {
		t.Fatalf("python_failure.py: exit %d, printed %q (%v)\n%s", r.exit, r.stdout, err, r.stderr)
	}
	return p, victim
}

// trino-python-client raises the query's failure with its type, name and
// message (TrinoExternalError for the gateway's own, TrinoQueryError for
// NO_NODES_AVAILABLE); through a draining gateway it sends the statement
// three times (its max_attempts) and raises Http503Error "error 503:
// service unavailable", which says nothing of the gateway's reason.
func TestPythonShowsTheGatewaysFailures(t *testing.T) {
	python := pythonClients(t)
	t.Run("killed", func(t *testing.T) {
		rig := gatewayrig.Start(t, gatewayrig.Options{Coordinators: 1, Coordinator: coordinator.Options{Flavour: coordinator.Trino, BatchRows: 5}})
		p, victim := runPythonFailure(t, python, rig, killedStatement, true)
		if p.Rows == 0 || p.Error != "TrinoExternalError" {
			t.Errorf("%+v; want rows, then TrinoExternalError", p)
		}
		checkReadable(t, p.Message, "name=ZKPRESTO_COORDINATOR_FAILED", "zkpresto gateway: coordinator "+victim.Addr()+" failed for query")
	})
	t.Run("nonodes", func(t *testing.T) {
		rig := gatewayrig.Start(t, gatewayrig.Options{Coordinator: coordinator.Options{Flavour: coordinator.Trino}, Unreachable: true, NoCoordinatorGrace: -1})
		p, _ := runPythonFailure(t, python, rig, "SELECT 1", false)
		if p.Error != "TrinoQueryError" {
			t.Errorf("%+v; want TrinoQueryError", p)
		}
		checkReadable(t, p.Message, "name=NO_NODES_AVAILABLE", "zkpresto gateway: no coordinator of group", rig.Unreachable)
	})
	t.Run("draining", func(t *testing.T) {
		rig := gatewayrig.Start(t, gatewayrig.Options{Coordinator: coordinator.Options{Flavour: coordinator.Trino}})
		rig.Drain()
		p, _ := runPythonFailure(t, python, rig, "SELECT 1", false)
		if h := rig.Hits(); p.Error != "Http503Error" || p.Message != "error 503: service unavailable" || h[0]+h[1] != 3 || rig.Statements() != 0 {
			t.Errorf("%+v after %v requests, %d statements run; want Http503Error after 3 attempts, nothing run", p, h, rig.Statements())
		}
	})
}
