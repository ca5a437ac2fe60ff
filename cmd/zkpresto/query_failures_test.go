package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/gatewayrig"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// What a new user sees through a gateway when something fails (see
// docs/gateway.md, "What each client shows"): the failure's name or
// message and the coordinator it concerns, never the gateway's raw JSON or
// a bare HTTP status.

// checkReadable fails t unless out, what the command printed and its
// error, says every one of want and shows nothing unreadable.
func checkReadable(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the command's output does not say %q:\n%s", w, out)
		}
	}
	if bad := testutil.Unreadable(out); bad != "" {
		t.Errorf("the command's output shows %q:\n%s", bad, out)
	}
}

// A coordinator killed while the statement's result pages through the
// gateway: the rows so far, then the query's failure naming the
// coordinator, exit status 1.
func TestQueryThroughAGatewayWhoseCoordinatorIsKilled(t *testing.T) {
	rig := gatewayrig.Start(t, gatewayrig.Options{Coordinators: 1, Coordinator: coordinator.Options{BatchRows: 5}})
	c := rig.Coordinators[0]
	type result struct {
		stdout, stderr string
		err            error
	}
	done := make(chan result, 1)
	go func() {
		// Pages come until the coordinator is killed: the statement
		// cannot end first.
		stdout, stderr, err := run([]string{"query", "--server", rig.Front, "--output-format", "CSV",
			"-e", "SELECT * FROM rows(1000000) WHERE slow(20)"}, "")
		done <- result{stdout, stderr, err}
	}()
	testutil.Eventually(t, waitFor, time.Millisecond, "pages to reach the client", func() bool { return len(c.Calls()) >= 4 })
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err == nil {
		t.Fatalf("the statement succeeded after its coordinator was killed: %q", r.stdout)
	}
	if !strings.HasPrefix(r.stdout, "\"1\"\n\"2\"\n") {
		t.Errorf("printed %q, want the rows that came before the kill", r.stdout)
	}
	checkReadable(t, r.stderr+r.err.Error(), "ZKPRESTO_COORDINATOR_FAILED", "coordinator "+c.Addr())
}

// No coordinator to take the statement, past the gateway's grace: the
// NO_NODES_AVAILABLE failure, naming the address it tried.
func TestQueryThroughAGatewayWithNoCoordinator(t *testing.T) {
	rig := gatewayrig.Start(t, gatewayrig.Options{Unreachable: true, NoCoordinatorGrace: -1})
	_, stderr, err := run([]string{"query", "--server", rig.Front, "-e", "SELECT 1"}, "")
	if err == nil {
		t.Fatal("a statement with no coordinator succeeded")
	}
	checkReadable(t, stderr+err.Error(), "NO_NODES_AVAILABLE", rig.Unreachable, "connection refused")
}

// A draining gateway refuses new statements with 503 (so that a client
// behind a load balancer sends it again, to another replica); the driver
// does not send it again to the same address, and says why it was
// refused.
func TestQueryThroughADrainingGateway(t *testing.T) {
	rig := gatewayrig.Start(t, gatewayrig.Options{})
	rig.Drain()
	_, stderr, err := run([]string{"query", "--server", rig.Front, "-e", "SELECT 1"}, "")
	if err == nil {
		t.Fatal("a statement through a draining gateway succeeded")
	}
	checkReadable(t, stderr+err.Error(), "HTTP 503 Service Unavailable: ZKPRESTO_GATEWAY: zkpresto gateway is draining")
	if h := rig.Hits(); h[0]+h[1] != 1 || rig.Statements() != 0 {
		t.Errorf("the gateway got %v requests and the coordinators %d statements; want one refused request", h, rig.Statements())
	}
}
