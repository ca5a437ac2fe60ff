package driver_test

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/tcpproxy"
)

// timedQuery runs one statement under ctx and returns the coordinator that
// served it and how long it took, failing on any error.
func timedQuery(t *testing.T, ctx context.Context, db *sql.DB) (string, time.Duration) {
	t.Helper()
	var s served
	start := time.Now()
	err := db.QueryRowContext(ctx, "SELECT 1").Scan(&s.Coordinator, &s.User, &s.Catalog, &s.Schema, &s.Source, &s.Query)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("statement after %v: %v", elapsed, err)
	}
	return s.Coordinator, elapsed
}

// TestGlobalPollBlackHoledZooKeeper black-holes ZooKeeper (a proxy that
// holds every packet and resets nothing) under global_poll: statements must
// not wait on the counter znode beyond their deadline or
// strategy.GlobalPollBudget, and they go round the coordinators on the
// process-local counter instead.
func TestGlobalPollBlackHoledZooKeeper(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 3})
	registerAll(t, f)
	inTurn := sortedByAddr(f.Coordinators)
	proxy := tcpproxy.StartT(t, f.Ensemble())
	dsn := "presto://" + proxy.Addr() + "/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=" + f.Namespace +
		";zooKeeperStrategy=global_poll?user=alice"
	logs := &testutil.Buffer{}
	db, _ := openLogged(t, dsn, logs)
	// A second connector joins the same ZooKeeper session with a counter of
	// its own, to see a fresh pick wait out the budget.
	other, _ := openLogged(t, dsn, &testutil.Buffer{})
	// Healthy: the shared counter znode sets the turn (it starts at 0).
	for i := range 3 {
		if got, _ := timedQuery(t, context.Background(), db); got != inTurn[i] {
			t.Fatalf("healthy statement %d served by %s, want %s", i, got, inTurn[i])
		}
	}
	if _, err := other.Conn(context.Background()); err != nil {
		t.Fatal(err)
	}

	proxy.Stall()
	defer proxy.Heal() // so that closing the sessions does not wait on the black hole

	// A statement with a 2s deadline: the pick gives up on the counter at
	// the budget, well within the deadline, and the statement succeeds.
	const deadline = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var servedBy []string
	got, elapsed := timedQuery(t, ctx, db)
	servedBy = append(servedBy, got)
	t.Logf("black-holed: the statement with a %v deadline took %v", deadline, elapsed)
	if elapsed > strategy.GlobalPollBudget+500*time.Millisecond {
		t.Errorf("black-holed: the statement with a %v deadline took %v, want about the %v budget", deadline, elapsed, strategy.GlobalPollBudget)
	}
	// Without a deadline: while that counter call is still waiting on
	// ZooKeeper the picks go local at once.
	for range 3 {
		got, elapsed := timedQuery(t, context.Background(), db)
		servedBy = append(servedBy, got)
		t.Logf("black-holed: a statement without a deadline took %v", elapsed)
		if elapsed > strategy.GlobalPollBudget {
			t.Errorf("black-holed: a statement without a deadline took %v, want less than the %v budget", elapsed, strategy.GlobalPollBudget)
		}
	}
	// The process-local counter starts at 0 too: the same turn.
	if want := append(slices.Clone(inTurn), inTurn[0]); !slices.Equal(servedBy, want) {
		t.Errorf("black-holed: served by %v, want the local turn %v", servedBy, want)
	}
	// A connector whose counter has no call outstanding waits the budget,
	// no more, without a deadline of its own.
	_, elapsed = timedQuery(t, context.Background(), other)
	t.Logf("black-holed: a first statement without a deadline took %v", elapsed)
	if elapsed < strategy.GlobalPollBudget || elapsed > strategy.GlobalPollBudget+500*time.Millisecond {
		t.Errorf("black-holed: a first statement without a deadline took %v, want the %v budget", elapsed, strategy.GlobalPollBudget)
	}
	if out := logs.String(); !strings.Contains(out, "this pick uses the local counter") || !strings.Contains(out, "-counter") {
		t.Errorf("logs lack the local-counter warning naming the counter znode:\n%s", out)
	}
}
