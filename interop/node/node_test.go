package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/internal/testrig/gatewayrig"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, s := range realServers {
		if err := s.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "node: stopping a real server:", err)
			code = 1
		}
	}
	if code == 0 {
		// The real servers' own checks (realserver.Server.Query) use
		// http.DefaultClient: its idle connections are not a leak.
		http.DefaultClient.CloseIdleConnections()
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "node: goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// clients are the npm clients under test, each with the version
// testdata/package-lock.json pins and the coordinators' flavour it speaks.
var clients = []struct {
	name, version string
	flavour       coordinator.Flavour
}{
	{"presto-client", "1.2.0", coordinator.Presto},
	{"trino-client", "0.2.9", coordinator.Trino},
}

// result is what testdata/clients.js prints: what the client handed back.
type result struct {
	QueryID   string         `json:"queryId"`
	Columns   []string       `json:"columns"`
	Rows      [][]any        `json:"rows"`
	States    []string       `json:"states"`
	Final     string         `json:"final"`
	Error     map[string]any `json:"error"`
	Thrown    map[string]any `json:"thrown"`
	Cancelled bool           `json:"cancelled"`
}

// requireNode ends the test unless node and the client's module at its
// pinned version are installed (scripts/install-npmclients.sh): a skip
// outside CI, a failure under CI.
func requireNode(t *testing.T, name, version string) {
	t.Helper()
	testutil.RequireTool(t, "node and the npm clients (scripts/install-npmclients.sh)", func() error {
		if _, err := exec.LookPath("node"); err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join("testdata", "node_modules", name, "package.json"))
		if err != nil {
			return err
		}
		var pkg struct{ Version string }
		if err := json.Unmarshal(b, &pkg); err != nil {
			return fmt.Errorf("%s's package.json: %w", name, err)
		}
		if pkg.Version != version {
			return fmt.Errorf("%s %s is installed, want %s", name, pkg.Version, version)
		}
		return nil
	}())
}

// run runs scenario with client against server and returns what the
// client handed back; session is the catalog and schema, if not the
// default ones.
func run(t *testing.T, client, server, scenario string, session ...string) result {
	t.Helper()
	return start(t, client, server, scenario, session...)()
}

// start starts scenario with client against server, as run does, and
// returns the function that waits for what the client handed back.
func start(t *testing.T, client, server, scenario string, session ...string) (wait func() result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join("testdata", "clients.js"), client, server, scenario}, session...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("node clients.js %s %s: %v", client, scenario, err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait() // ended already when the test waited for it
	})
	return func() result {
		t.Helper()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("node clients.js %s %s: %v\n%s", client, scenario, err, stderr.String())
		}
		var r result
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatalf("node clients.js %s %s printed %q: %v\n%s", client, scenario, stdout.String(), err, stderr.String())
		}
		return r
	}
}

// each runs test for each client through two gateway replicas in front of
// two coordinators of the client's flavour.
func each(t *testing.T, opts coordinator.Options, test func(t *testing.T, client string, rig *gatewayrig.Rig)) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			requireNode(t, c.name, c.version)
			o := opts
			o.Flavour = c.flavour
			test(t, c.name, gatewayrig.Start(t, gatewayrig.Options{Coordinator: o}))
		})
	}
}

// A statement's one row, with its columns, and the session the client
// sent reached the coordinator.
func TestQuery(t *testing.T) {
	each(t, coordinator.Options{}, func(t *testing.T, client string, rig *gatewayrig.Rig) {
		r := run(t, client, rig.Front, "query")
		if r.Error != nil || r.Thrown != nil || len(r.Rows) != 1 {
			t.Fatalf("got %+v, want one row", r)
		}
		want := []string{"coordinator", "user", "catalog", "schema", "source", "query"}
		if strings.Join(r.Columns, ",") != strings.Join(want, ",") {
			t.Fatalf("columns %v, want %v", r.Columns, want)
		}
		row := r.Rows[0]
		if row[1] != "alice" || row[2] != "hive" || row[3] != "default" || row[5] != "SELECT 1" {
			t.Fatalf("the coordinator saw %v", row)
		}
		if rig.Statements() != 1 || rig.Running() != 0 {
			t.Fatalf("%d statements, %d running", rig.Statements(), rig.Running())
		}
	})
}

// 120 rows in pages of 7 arrive complete and in order, every follow-up
// through the gateway on the other replica.
func TestManyPages(t *testing.T) {
	each(t, coordinator.Options{BatchRows: 7}, func(t *testing.T, client string, rig *gatewayrig.Rig) {
		r := run(t, client, rig.Front, "pages")
		if r.Error != nil || r.Thrown != nil || len(r.Rows) != 120 {
			t.Fatalf("%d rows, error %v %v; want 120", len(r.Rows), r.Error, r.Thrown)
		}
		for i, row := range r.Rows {
			if n, _ := row[0].(float64); int(n) != i+1 {
				t.Fatalf("row %d is %v", i, row)
			}
		}
		if h := rig.Hits(); h[0] < 8 || h[1] < 8 {
			t.Fatalf("requests per replica %v: both should have served follow-ups", h)
		}
		if rig.Statements() != 1 || rig.Running() != 0 {
			t.Fatalf("%d statements, %d running", rig.Statements(), rig.Running())
		}
	})
}

// A failed query reaches the client with the coordinator's error: its
// message, name and type, where the client shows an error.
func TestFailure(t *testing.T) {
	each(t, coordinator.Options{}, func(t *testing.T, client string, rig *gatewayrig.Rig) {
		r := run(t, client, rig.Front, "fail")
		if r.Thrown != nil || r.Error == nil {
			t.Fatalf("got %+v, want the query's error", r)
		}
		if r.Error["message"] != "boom" || r.Error["errorName"] != "GENERIC_USER_ERROR" || r.Error["errorType"] != "USER_ERROR" {
			t.Fatalf("the client shows the error %v", r.Error)
		}
	})
}

// A statement that fails at dispatch, on the queued resource, as one that
// does not parse does on the real servers: each client shows the
// coordinator's error as it shows any failed query's. Through the gateway,
// which makes the first GET itself, that failure must not become the
// POST's answer: trino-client's iterator drops a first answer without a
// nextUri, and the statement looked like an empty success; presto-client
// wrapped it as a failed request.
func TestFailureAtDispatch(t *testing.T) {
	each(t, coordinator.Options{}, func(t *testing.T, client string, rig *gatewayrig.Rig) {
		r := run(t, client, rig.Front, "syntax")
		if r.Thrown != nil || r.Error == nil {
			t.Fatalf("got %+v, want the query's error", r)
		}
		if r.Error["message"] != "line 1:8: mismatched input 'syntax'. Expecting: <query>" || r.Error["errorName"] != "SYNTAX_ERROR" || r.Error["errorType"] != "USER_ERROR" {
			t.Fatalf("the client shows the error %v", r.Error)
		}
	})
}

// A cancel while the statement runs stops it on its coordinator, and the
// client reports it as it does. presto-client asks its cancel callback
// before each poll and then sends DELETE on the query's nextUri (a URI the
// gateway handed out, sent in absolute form as the request target) and
// reports "query fetch canceled by operation"; trino-client's cancel sends
// DELETE /v1/query/{id}, which the gateway passes to the query's
// coordinator, and its next poll shows USER_CANCELED.
func TestCancel(t *testing.T) {
	each(t, coordinator.Options{BatchRows: 10}, func(t *testing.T, client string, rig *gatewayrig.Rig) {
		r := run(t, client, rig.Front, "cancel")
		testutil.Eventually(t, 3*time.Second, 5*time.Millisecond, "the query to stop", func() bool { return rig.Running() == 0 })
		var deletes []coordinator.Call
		for _, call := range rig.Calls() {
			if call.Method == http.MethodDelete {
				deletes = append(deletes, call)
			}
		}
		if r.Thrown != nil || r.Error == nil || len(deletes) != 1 || deletes[0].QueryID != r.QueryID {
			t.Fatalf("got %+v and DELETEs %+v; want the client to report the cancel, and one DELETE of its query", r, deletes)
		}
		switch client {
		case "presto-client":
			if r.Error["message"] != "query fetch canceled by operation" || len(r.Rows) != 0 {
				t.Fatalf("presto-client reported %v after %d rows", r.Error, len(r.Rows))
			}
			if d := deletes[0]; !strings.HasPrefix(d.Path, "/v1/statement/") || (d.Status != http.StatusOK && d.Status != http.StatusNoContent) {
				t.Fatalf("presto-client's DELETE reached the coordinator as %s, answered %d", d.Path, d.Status)
			}
		case "trino-client":
			if r.Error["errorName"] != "USER_CANCELED" || len(r.Rows) == 0 || len(r.Rows) >= 1000 {
				t.Fatalf("trino-client reported %v after %d rows", r.Error, len(r.Rows))
			}
			if d := deletes[0]; d.Path != "/v1/query/"+r.QueryID || d.Status != http.StatusNoContent {
				t.Fatalf("trino-client's DELETE reached the coordinator as %s, answered %d", d.Path, d.Status)
			}
		}
	})
}

// With no coordinator to take a statement, past the gateway's grace, each
// client shows why: a NO_NODES_AVAILABLE query failure that names the
// group and where it looked, where a 503 had presto-client retry for a
// minute and tell its user nothing.
func TestNoCoordinator(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			requireNode(t, c.name, c.version)
			rig := gatewayrig.Start(t, gatewayrig.Options{
				Coordinator:        coordinator.Options{Flavour: c.flavour},
				Unreachable:        true,
				NoCoordinatorGrace: -1, // at once: the grace itself is the gateway's tests'
			})
			r := run(t, c.name, rig.Front, "nonodes")
			if r.Thrown != nil || r.Error == nil {
				t.Fatalf("got %+v, want the query's error", r)
			}
			failure := r.Error
			if nested, ok := r.Error["error"].(map[string]any); ok {
				failure = nested // presto-client wraps the query's error with its status code
			}
			msg, _ := failure["message"].(string)
			if failure["errorName"] != "NO_NODES_AVAILABLE" || !strings.Contains(msg, "gatewayrig") {
				t.Fatalf("the client shows the error %v; want NO_NODES_AVAILABLE naming where the gateway looked", r.Error)
			}
			if bad := testutil.Unreadable(msg); bad != "" {
				t.Fatalf("the client's error shows %q: %s", bad, msg)
			}
		})
	}
}

// queryError is the query's error a client handed back: presto-client
// wraps it with the answer's status code.
func queryError(r result) map[string]any {
	if nested, ok := r.Error["error"].(map[string]any); ok {
		return nested
	}
	return r.Error
}

// A coordinator killed while the result pages through the gateway: each
// client has the rows so far, then the query's failure,
// ZKPRESTO_COORDINATOR_FAILED naming the coordinator, as it shows any
// failed query's, where trino-client once had only "Request failed with
// status code 500".
func TestCoordinatorKilledMidQuery(t *testing.T) {
	each(t, coordinator.Options{BatchRows: 5}, func(t *testing.T, client string, rig *gatewayrig.Rig) {
		// The statement pages until its coordinator is killed: it cannot
		// end first.
		wait := start(t, client, rig.Front, "killed")
		var victim *coordinator.Coordinator
		testutil.Eventually(t, time.Minute, time.Millisecond, "pages to reach the client", func() bool {
			for _, c := range rig.Coordinators {
				if len(c.Calls()) >= 4 {
					victim = c
					return true
				}
			}
			return false
		})
		if err := victim.Stop(); err != nil {
			t.Fatal(err)
		}
		r := wait()
		failure := queryError(r)
		msg, _ := failure["message"].(string)
		if r.Thrown != nil || len(r.Rows) == 0 || failure["errorName"] != "ZKPRESTO_COORDINATOR_FAILED" || !strings.Contains(msg, "coordinator "+victim.Addr()) {
			t.Fatalf("the client handed back %d rows, error %v, thrown %v; want rows, then ZKPRESTO_COORDINATOR_FAILED naming %s", len(r.Rows), r.Error, r.Thrown, victim.Addr())
		}
		if bad := testutil.Unreadable(msg); bad != "" {
			t.Fatalf("the client's error shows %q: %s", bad, msg)
		}
	})
}

// A draining gateway answers a new statement 503, with the reason in a
// Presto error body, so that a client behind a load balancer sends it
// again, to another replica (docs/gateway.md, "What each client shows").
// presto-client does, until its timeout; trino-client does not, and says
// only "Request failed with status code 503", the gateway's reason being
// in the error's response for the program to read.
func TestDrainingGateway(t *testing.T) {
	each(t, coordinator.Options{}, func(t *testing.T, client string, rig *gatewayrig.Rig) {
		rig.Drain()
		r := run(t, client, rig.Front, "draining")
		hits := rig.Hits()
		switch client {
		case "presto-client":
			if r.Error["message"] != "execution error:query timed out" || hits[0]+hits[1] < 2 {
				t.Fatalf("presto-client: %+v after %v requests; want its timeout after sending the statement again", r, hits)
			}
		case "trino-client":
			data, _ := r.Thrown["data"].(map[string]any)
			failure, _ := data["error"].(map[string]any)
			msg, _ := failure["message"].(string)
			if r.Thrown["message"] != "Request failed with status code 503" || !strings.Contains(msg, "zkpresto gateway is draining") || hits[0]+hits[1] != 1 {
				t.Fatalf("trino-client: %+v after %v requests; want the 503, once, with the gateway's reason in its response", r, hits)
			}
		}
		if rig.Statements() != 0 {
			t.Fatalf("%d statements reached the coordinators through a draining gateway", rig.Statements())
		}
	})
}
