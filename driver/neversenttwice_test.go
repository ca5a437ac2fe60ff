//go:build linux

package driver_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/deadpeer"
)

// neverTwiceStatements is how many statements TestStatementIsNeverReadByTwoCoordinators
// sends: enough that the race of a reset with the end of a write, which
// once sent one statement in thirty to a second coordinator, has
// thousands of chances every run.
const neverTwiceStatements = 10000

// The first promise, tried the way it broke: coordinators that reset their
// connections (SO_LINGER 0) before reading, after half the statement and
// right after reading all of it, beside a healthy one, under poll, through
// database/sql, half of the statements with a caller's deadline (their
// body passes the gate) and half without. Whatever the order in which the
// write, the reset and the transport report, a statement a coordinator
// read whole is read by no other: each coordinator records the statements
// it read (each is unique), and none is in two records. The faulty ones
// are ejected for a microsecond at most, so that every statement may meet them.
func TestStatementIsNeverReadByTwoCoordinators(t *testing.T) {
	quietPrestoClient(t)
	before := deadpeer.Resets(t, deadpeer.ResetBeforeRead)
	half := deadpeer.Resets(t, deadpeer.ResetAfterHalf)
	after := deadpeer.Resets(t, deadpeer.ResetAfterRead)
	good, err := coordinator.Start(coordinator.Options{Name: "good", RecordLimit: 2 * neverTwiceStatements, NoGzip: true})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	dsn := fmt.Sprintf("presto://%s,%s,%s,%s;zooKeeperStrategy=poll?user=alice", before.Addr(), half.Addr(), after.Addr(), good.Addr())
	db, _ := openConnector(t, dsn, zkdriver.WithHealthPolicy(health.Policy{ConsecutiveFailures: 1 << 30, BaseEjection: time.Microsecond, MaxEjection: time.Microsecond}))
	// Four statements at a time: the race wants the coordinator's reset
	// and the transport's reader to run between a write and what follows
	// it on the writer's goroutine, which more workers than that on two
	// cores leave too little room for (the code before the fix read one
	// statement twice in about a thousand at four, and none at eight).
	const workers = 4
	db.SetMaxOpenConns(workers)
	errs := make([]error, neverTwiceStatements)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < neverTwiceStatements; i += workers {
				ctx := context.Background()
				if i%2 == 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
					defer cancel()
				}
				_, errs[i] = db.ExecContext(ctx, fmt.Sprintf("SELECT %d", i))
			}
		}()
	}
	wg.Wait()

	readBy := map[string][]string{}
	for _, sql := range after.Bodies() {
		readBy[sql] = append(readBy[sql], "the coordinator that resets after reading")
	}
	for _, r := range good.Requests() {
		readBy[r.SQL] = append(readBy[r.SQL], "the healthy coordinator")
	}
	twice := 0
	for sql, by := range readBy {
		if len(by) > 1 {
			twice++
			if twice <= 10 {
				t.Errorf("%q was read by %v", sql, by)
			}
		}
	}
	if twice > 0 {
		t.Fatalf("%d of %d statements were read by two coordinators", twice, neverTwiceStatements)
	}
	var ok, failed int
	for i, err := range errs {
		sql := fmt.Sprintf("SELECT %d", i)
		var se *zkdriver.StatementError
		switch {
		case err == nil:
			ok++
			if len(readBy[sql]) != 1 || readBy[sql][0] != "the healthy coordinator" {
				t.Errorf("%q succeeded, read by %v", sql, readBy[sql])
			}
		case errors.As(err, &se):
			failed++
			if se.Node == good.Addr() {
				t.Errorf("%q failed on the healthy coordinator: %v", sql, err)
			}
		default:
			t.Errorf("%q: %v; want a success, or a StatementError of a faulty coordinator", sql, err)
		}
	}
	// The race was provoked: the coordinator that resets after reading
	// read many statements whole, and statements went through each
	// faulty coordinator to the healthy one.
	t.Logf("%d statements: %d ran, %d failed after they may have been sent; read whole by the resetting coordinator: %d; connections reset before reading: %d, after half: %d",
		neverTwiceStatements, ok, failed, len(after.Bodies()), before.Accepted(), half.Accepted())
	if n := len(after.Bodies()); n < neverTwiceStatements/10 {
		t.Errorf("the coordinator that resets after reading read %d statements whole, want at least %d", n, neverTwiceStatements/10)
	}
	if before.Accepted() < neverTwiceStatements/10 || half.Accepted() < neverTwiceStatements/10 {
		t.Errorf("connections: %d reset before reading, %d after half; want at least %d each", before.Accepted(), half.Accepted(), neverTwiceStatements/10)
	}
}
