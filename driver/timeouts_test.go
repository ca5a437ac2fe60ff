//go:build linux

package driver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/deadpeer"
	"github.com/zkpresto/zkpresto/zkprestotest/tcpproxy"
)

// nodeStats returns the connector's figures for addr.
func nodeStats(t *testing.T, connector *zkdriver.Connector, addr string) zkdriver.NodeStats {
	t.Helper()
	for _, n := range connector.Stats().Nodes {
		if n.Node.Addr == addr {
			return n
		}
	}
	t.Fatalf("no stats for %s in %+v", addr, connector.Stats().Nodes)
	return zkdriver.NodeStats{}
}

// execBounded runs query without a caller deadline, as a caller that set
// none would, and fails the test if it does not end within limit (which
// is what it did before the driver had time limits of its own: it hung).
func execBounded(t *testing.T, db *sql.DB, query string, limit time.Duration) (time.Duration, error) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := db.ExecContext(context.Background(), query)
		done <- err
	}()
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(limit):
		t.Fatalf("%.40q without a deadline still running after %v", query, limit)
		return 0, nil
	}
}

func startCoordinator(t testing.TB, name string) *coordinator.Coordinator {
	t.Helper()
	c, err := coordinator.Start(coordinator.Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A coordinator whose SYNs are dropped costs a statement dialTimeout, not
// Go's 30 s, and is failed over and ejected.
func TestDialTimeoutFailsOverAndEjects(t *testing.T) {
	quietPrestoClient(t)
	dead := deadpeer.SYNDrop(t)
	good := startCoordinator(t, "good")
	db, connector := openConnector(t, "presto://"+dead+","+good.Addr()+";zooKeeperStrategy=poll;dialTimeout=300ms?user=alice")
	var slowest time.Duration
	for i := range 2 {
		// Two statements under poll: one of them picks the dead
		// coordinator first.
		elapsed, err := execBounded(t, db, fmt.Sprintf("SELECT %d", i), 10*time.Second)
		if err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
		slowest = max(slowest, elapsed)
	}
	if slowest < 300*time.Millisecond || slowest > 3*time.Second {
		t.Errorf("the failed-over statement took %v, want about the 300ms dial timeout", slowest)
	}
	ns := nodeStats(t, connector, dead)
	if !ns.Ejected || ns.Failovers != 1 || !strings.Contains(ns.LastError, "timeout") {
		t.Errorf("stats of the coordinator that cannot be dialled: %+v, want ejected after one failover on a timeout", ns)
	}
	checkAcceptedOnce(t, good)
	t.Logf("failed over in %v; %s: ejected %t, failovers %d, last error %q", slowest, dead, ns.Ejected, ns.Failovers, ns.LastError)
}

// When the caller's deadline ends the statement before the dial times out,
// the transport dials on, and the dial's failure still counts against the
// coordinator: three such statements eject it.
func TestDialFailureAfterTheCallersDeadlineCounts(t *testing.T) {
	quietPrestoClient(t)
	dead := deadpeer.SYNDrop(t)
	db, connector := openConnector(t, "presto://"+dead+";dialTimeout=500ms?user=alice")
	start := time.Now()
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := db.ExecContext(ctx, fmt.Sprintf("SELECT %d", i))
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("statement %d: %v, want the caller's deadline", i, err)
		}
	}
	callers := time.Since(start)
	// What is charged is the dial's own failure, never the caller's
	// deadline: on a loaded machine the first dials may have timed out
	// already, so a failure may be there, but only a dial's.
	if ns := nodeStats(t, connector, dead); ns.LastError != "" && !strings.Contains(ns.LastError, "i/o timeout") {
		t.Fatalf("a failure other than a dial's timeout was recorded: %+v", ns)
	}
	testutil.Eventually(t, 5*time.Second, 20*time.Millisecond, "the coordinator ejected", func() bool { return nodeStats(t, connector, dead).Ejected })
	ns := nodeStats(t, connector, dead)
	if !strings.Contains(ns.LastError, "timeout") || ns.Failovers != 0 {
		t.Errorf("stats: %+v, want ejected on dial timeouts without failovers", ns)
	}
	t.Logf("3 statements ended by their 100ms deadlines in %v; %s ejected %v later: %q",
		callers, dead, time.Since(start)-callers, ns.LastError)
}

// A coordinator that accepts the connection and never reads it fails the
// write of a statement too large for the socket buffers at writeTimeout;
// the statement was not fully written, so it fails over.
func TestWriteTimeoutFailsOver(t *testing.T) {
	quietPrestoClient(t)
	stalled := deadpeer.NeverReads(t)
	good := startCoordinator(t, "good")
	db, connector := openConnector(t, "presto://"+stalled.Addr()+","+good.Addr()+
		";zooKeeperStrategy=poll;writeTimeout=300ms;responseTimeout=1m?user=alice",
		// Statements this large are slow under the race detector: keep the
		// ejection until the end.
		zkdriver.WithHealthPolicy(health.Policy{BaseEjection: time.Hour}))
	// More than the client's send buffer can grow to, plus a megabyte.
	padding := strings.Repeat("x", sendBufferMax(t)+1<<20)
	for i := range 2 {
		// Two statements under poll: one of them picks the stalled
		// coordinator first.
		elapsed, err := execBounded(t, db, fmt.Sprintf("SELECT %d -- %s", i, padding), 60*time.Second)
		if err != nil {
			t.Fatalf("statement %d: %.200v", i, err)
		}
		t.Logf("statement %d of %d bytes: %v", i, len(padding), elapsed)
	}
	ns := nodeStats(t, connector, stalled.Addr())
	if !ns.Ejected || ns.Failovers != 1 || !strings.Contains(ns.LastError, "timeout") {
		t.Errorf("stats of the coordinator that never reads: %+v, want ejected after one failover on a write timeout", ns)
	}
	// The time the statement spent on the stalled coordinator.
	if ns.Latency < 300*time.Millisecond || ns.Latency > 3*time.Second {
		t.Errorf("the attempt on the stalled coordinator took %v, want about the 300ms write timeout", ns.Latency)
	}
	if stalled.Accepted() == 0 {
		t.Error("no statement reached the coordinator that never reads")
	}
	checkAcceptedOnce(t, good)
	t.Logf("lost %v on the stalled coordinator before failing over; last error %q", ns.Latency, ns.LastError)
}

// sendBufferMax is the most a TCP send buffer grows to (tcp_wmem's third
// field).
func sendBufferMax(t *testing.T) int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(data))
	if len(fields) != 3 {
		t.Fatalf("tcp_wmem: %q", data)
	}
	n, err := strconv.Atoi(fields[2])
	if err != nil || n > 12<<20 {
		t.Skipf("tcp_wmem %q: send buffers too large for a statement to fill", data)
	}
	return n
}

// A coordinator that reads the statement and never answers fails it at
// responseTimeout with a StatementError: it may be running, so it is never
// resent. Three such failures eject the coordinator.
func TestResponseTimeoutIsAStatementError(t *testing.T) {
	quietPrestoClient(t)
	hung := deadpeer.NeverAnswers(t)
	good := startCoordinator(t, "good")
	db, connector := openConnector(t, "presto://"+hung.Addr()+","+good.Addr()+
		";zooKeeperStrategy=poll;responseTimeout=300ms?user=alice")
	failed := 0
	for i := 0; failed < 3 && i < 10; i++ {
		elapsed, err := execBounded(t, db, fmt.Sprintf("SELECT %d", i), 10*time.Second)
		if err == nil {
			continue
		}
		var se *zkdriver.StatementError
		if !errors.As(err, &se) || se.Node != hung.Addr() || !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("statement %d: %v, want a StatementError for %s on a timeout", i, err, hung.Addr())
		}
		if elapsed < 300*time.Millisecond || elapsed > 3*time.Second {
			t.Errorf("statement %d failed after %v, want about the 300ms response timeout", i, elapsed)
		}
		failed++
		t.Logf("statement %d: %v after %v", i, err, elapsed)
	}
	if failed != 3 || hung.Requests() != 3 {
		t.Fatalf("%d statements failed, the hung coordinator read %d: want 3 and 3 (none resent)", failed, hung.Requests())
	}
	ns := nodeStats(t, connector, hung.Addr())
	if !ns.Ejected || ns.Failovers != 0 {
		t.Errorf("stats of the hung coordinator: %+v, want ejected after 3 failures, no failover", ns)
	}
	checkAcceptedOnce(t, good)
}

// A statement without a deadline whose coordinator stops answering while
// its results are fetched ends within the documented bound: the GET of the
// nextUri times out, is tried twice more (after 50 and 100 ms), and fails.
func TestStatementWithoutDeadlineEndsWhenTheCoordinatorStops(t *testing.T) {
	quietPrestoClient(t)
	c, err := coordinator.Start(coordinator.Options{Name: "c", BatchRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	proxy := tcpproxy.StartT(t, c.Addr())
	const response = 300 * time.Millisecond
	db, _ := openConnector(t, "presto://"+proxy.Addr()+";dialTimeout=300ms;writeTimeout=300ms;responseTimeout="+response.String()+"?user=alice")
	rows, err := db.QueryContext(context.Background(), "SELECT rows(1000000)")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for range 20 {
		if !rows.Next() {
			t.Fatalf("rows ended early: %v", rows.Err())
		}
	}
	proxy.Stall()
	stalled := time.Now()
	done := make(chan error, 1)
	go func() {
		for rows.Next() {
		}
		done <- rows.Err()
	}()
	// The documented bound: three tries of the GET, each at worst a dial,
	// a write and a response timeout (the stalled proxy accepts new
	// connections and reads), plus one response timeout for the
	// transport's own retry of a GET that failed on a reused connection,
	// plus the 50 and 100 ms between tries.
	bound := 3*(300*time.Millisecond+300*time.Millisecond+response) + response + 150*time.Millisecond
	select {
	case err = <-done:
	case <-time.After(bound + 5*time.Second):
		t.Fatalf("the statement was still running %v after its coordinator stopped answering", time.Since(stalled))
	}
	elapsed := time.Since(stalled)
	var se *zkdriver.StatementError
	if !errors.As(err, &se) || se.Node != proxy.Addr() {
		t.Fatalf("got %v, want a StatementError for %s", err, proxy.Addr())
	}
	if elapsed < 3*response || elapsed > bound+time.Second {
		t.Errorf("ended %v after the coordinator stopped, want between %v (three response timeouts) and the bound %v", elapsed, 3*response, bound)
	}
	proxy.Heal()
	t.Logf("ended %v after the coordinator stopped (bound %v): %v", elapsed, bound, err)
}

// A coordinator whose SYNs are dropped costs a statement the dial race's
// delay, not dialTimeout, with the caller's deadline at 3 s and without:
// no statement fails while another coordinator is up, each goes there
// provably unsent, and the dead one is ejected within the first three
// statements picked for it (each lost race charges it a failure), after
// which no statement is picked for it.
func TestDialRaceFailsOverFromADeadCoordinator(t *testing.T) {
	for _, deadline := range []time.Duration{3 * time.Second, 0} {
		t.Run(fmt.Sprintf("deadline %v", deadline), func(t *testing.T) {
			quietPrestoClient(t)
			dead := deadpeer.SYNDrop(t)
			good := startCoordinator(t, "good")
			db, connector := openConnector(t, "presto://"+dead+","+good.Addr()+
				";zooKeeperStrategy=poll;dialRaceDelay=50ms;dialTimeout=1s?user=alice",
				zkdriver.WithHealthPolicy(health.Policy{BaseEjection: time.Hour}))
			var slowest time.Duration
			for i := range 10 {
				ctx := context.Background()
				if deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, deadline)
					defer cancel()
				}
				start := time.Now()
				if _, err := db.ExecContext(ctx, fmt.Sprintf("SELECT %d", i)); err != nil {
					t.Fatalf("statement %d: %v", i, err)
				}
				slowest = max(slowest, time.Since(start))
			}
			ns := nodeStats(t, connector, dead)
			// Three lost races eject it; a dial's own timeout, if the
			// machine is slow enough for one to come first, counts too.
			if !ns.Ejected || ns.Failovers < 1 || ns.Failovers > 3 || ns.Picks != ns.Failovers {
				t.Errorf("stats of the coordinator that drops SYNs: %+v, want ejected within 3 statements picked for it, each failed over", ns)
			}
			if n := len(good.Requests()); n != 10 {
				t.Errorf("the healthy coordinator read %d statements, want 10", n)
			}
			checkAcceptedOnce(t, good)
			t.Logf("slowest statement %v; %s: %+v", slowest, dead, ns)
		})
	}
}

// A coordinator that accepts connections and never reads them, with the
// caller's deadline at 3 s: a statement larger than the socket buffers
// cannot be written there, and at half the caller's remaining time, its
// last bytes still held back, it goes to the other coordinator, unsent,
// well before the deadline and long before writeTimeout (10 s). Each
// such statement charges the stalled coordinator a failure: it is ejected
// within the first three statements picked for it.
func TestStalledWriteFailsOverWithinTheCallersDeadline(t *testing.T) {
	quietPrestoClient(t)
	stalled := deadpeer.NeverReads(t)
	good := startCoordinator(t, "good")
	db, connector := openConnector(t, "presto://"+stalled.Addr()+","+good.Addr()+";zooKeeperStrategy=poll?user=alice",
		zkdriver.WithHealthPolicy(health.Policy{BaseEjection: time.Hour}))
	padding := strings.Repeat("x", sendBufferMax(t)+1<<20)
	late := 0
	for i := range 6 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := db.ExecContext(ctx, fmt.Sprintf("SELECT %d -- %s", i, padding))
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded) && strings.Contains(err.Error(), good.Addr()):
			// Failed over in time; the healthy coordinator then took
			// longer than the half left (megabytes under the race
			// detector on a loaded machine).
			late++
		default:
			t.Fatalf("statement %d: %.300v; want it run, or at worst late on the healthy coordinator", i, err)
		}
	}
	ns := nodeStats(t, connector, stalled.Addr())
	if !ns.Ejected || ns.Failovers < 1 || ns.Failovers > 3 || ns.Picks != ns.Failovers || !strings.Contains(ns.LastError, "not complete") {
		t.Errorf("stats of the coordinator that never reads: %+v, want ejected within 3 statements picked for it, each failed over on a stalled write", ns)
	}
	if n := len(good.Requests()); n < 6-late || n > 6 {
		t.Errorf("the healthy coordinator read %d statements, want %d to 6", n, 6-late)
	}
	checkAcceptedOnce(t, good)
	t.Logf("%d of 6 statements ended late on the healthy coordinator", late)
}

// A coordinator that reads statements and never answers, with the caller's
// deadline at 3 s: each statement picked for it is lost to it (it may have
// started there, so it is not sent again) and charges it a failure; after
// three it is ejected, and the statements that follow all run elsewhere.
// (Without a deadline, responseTimeout ends such a statement: see
// TestResponseTimeoutIsAStatementError.)
func TestSilentCoordinatorIsEjectedAfterThreeDeadlines(t *testing.T) {
	quietPrestoClient(t)
	hung := deadpeer.NeverAnswers(t)
	good := startCoordinator(t, "good")
	db, connector := openConnector(t, "presto://"+hung.Addr()+","+good.Addr()+";zooKeeperStrategy=poll?user=alice",
		zkdriver.WithHealthPolicy(health.Policy{BaseEjection: time.Hour}))
	lost := 0
	for i := range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := db.ExecContext(ctx, fmt.Sprintf("SELECT %d", i))
		cancel()
		if err == nil {
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), hung.Addr()) {
			t.Fatalf("statement %d: %v, want the caller's deadline on %s", i, err, hung.Addr())
		}
		lost++
	}
	if lost == 0 || lost > 3 || hung.Requests() != int64(lost) {
		t.Errorf("%d statements lost, the silent coordinator read %d: want 1 to 3, and as many", lost, hung.Requests())
	}
	ns := nodeStats(t, connector, hung.Addr())
	if !ns.Ejected || ns.Failovers != 0 {
		t.Errorf("stats of the silent coordinator: %+v, want ejected, no failover", ns)
	}
	if n := len(good.Requests()); n != 10-lost {
		t.Errorf("the healthy coordinator read %d statements, want %d", n, 10-lost)
	}
	checkAcceptedOnce(t, good)
}
