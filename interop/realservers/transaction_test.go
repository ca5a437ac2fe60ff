package realservers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// The servers start a transaction only for a client that sends
// X-*-Transaction-Id (NONE outside a transaction, as JDBC does); the
// Presto Go client alone sends none, so the driver adds it. With the
// poll strategy, which alternates coordinators statement by statement,
// every statement of a transaction still runs on the coordinator that
// started it, and both COMMIT and ROLLBACK end it there.
func TestDriverTransactionsStayOnTheirCoordinator(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		db := open(t, f, ";zooKeeperStrategy=poll?user=alice")
		c := ctx(t)
		for round, commit := range []bool{true, false, true, false} {
			tx, err := db.BeginTx(c, nil)
			if err != nil {
				t.Fatalf("round %d: BeginTx: %v", round, err)
			}
			seen := servingNodes(t, c, tx, 4, fmt.Sprintf("round %d, in the transaction", round))
			var n int64
			if err := tx.QueryRowContext(c, "SELECT count(*) FROM tpch.tiny.nation").Scan(&n); err != nil || n != 25 {
				t.Fatalf("round %d: count of tpch.tiny.nation in the transaction = %d, %v; want 25", round, n, err)
			}
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatalf("round %d: ending the transaction (commit %v): %v", round, commit, err)
			}
			if len(seen) != 1 {
				t.Fatalf("round %d: the statements of one transaction ran on %v; want one coordinator", round, seen)
			}
		}
		// Outside a transaction poll still reaches both.
		seen := servingNodes(t, c, db, 4, "after the transactions")
		if len(seen) != 2 {
			t.Fatalf("after the transactions poll ran on %v; want both coordinators", seen)
		}
	})
}

// Trino's memory connector writes in autocommit only: an INSERT inside a
// transaction fails with AUTOCOMMIT_WRITE_CONFLICT, and the driver hands
// the server's error name to the caller and leaves the table as it was.
// (PrestoDB 0.287 accepts the INSERT and keeps the row after ROLLBACK,
// so the promise of atomicity there is the server's, not testable here.)
func TestDriverWriteInTransactionRefusedByTrinoMemory(t *testing.T) {
	f := fleet(t, coordinator.Trino)
	db := open(t, f, "?user=alice")
	c := ctx(t)
	table := "memory.default.txn_refused"
	for _, s := range f.servers {
		if _, err := s.Query(c, "CREATE TABLE "+table+" (x bigint)"); err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
		t.Cleanup(func() { _, _ = s.Query(context.Background(), "DROP TABLE "+table) })
	}
	tx, err := db.BeginTx(c, nil)
	if err != nil {
		t.Fatalf("BeginTx: %v", err)
	}
	_, err = tx.ExecContext(c, "INSERT INTO "+table+" VALUES (1)")
	if err == nil || !strings.Contains(err.Error(), "AUTOCOMMIT_WRITE_CONFLICT") {
		t.Fatalf("INSERT into the memory connector in a transaction = %v; want AUTOCOMMIT_WRITE_CONFLICT", err)
	}
	_ = tx.Rollback()
	// Outside a transaction the same INSERT lands.
	if _, err := db.ExecContext(c, "INSERT INTO "+table+" VALUES (2)"); err != nil {
		t.Fatalf("INSERT in autocommit: %v", err)
	}
	var total int64
	for _, s := range f.servers {
		res, err := s.Query(c, "SELECT coalesce(sum(x), 0) FROM "+table)
		if err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
		total += int64(res.Rows[0][0].(float64))
	}
	if total != 2 {
		t.Fatalf("sum of x over both coordinators = %d, want 2 (the autocommit row only)", total)
	}
}

// Differential: START TRANSACTION without a transaction header fails the
// same way on the simulator and on the real server of each flavour.
func TestDifferentialStartTransactionNeedsTheHeader(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		sim, prefix := simulatorOf(t, f.flavour)
		for _, headers := range [][]string{nil, {prefix + "Transaction-Id", "NONE"}} {
			_, realErr := realserver.QueryAt(ctx(t), f.servers[0].URL(), f.flavour, "START TRANSACTION", headers...)
			_, simErr := realserver.QueryAt(ctx(t), sim.URL(), f.flavour, "START TRANSACTION", headers...)
			real, simulated := queryError(t, realErr), queryError(t, simErr)
			if real != simulated {
				t.Errorf("START TRANSACTION with %q: the real server says %+v, the simulator %+v", headers, real, simulated)
			}
		}
		// A spelling that Java's Character.toUpperCase folds to the
		// keyword ('ſ' is an S) starts a transaction on PrestoDB 0.287,
		// whose parser upper-cases that way; Trino 476's generated
		// case-insensitive lexer does not fold it and refuses the
		// statement. The driver refuses it before sending (driver
		// TestTransactionStatementsOutsideBeginTxAreRefused).
		const folded = "ſtart transaction"
		res, err := realserver.QueryAt(ctx(t), f.servers[0].URL(), f.flavour, folded, prefix+"Transaction-Id", "NONE")
		started := res != nil && res.Header.Get(prefix+"Started-Transaction-Id") != ""
		switch qe := queryError(t, err); {
		case f.flavour == coordinator.Presto && (!started || qe.Name != ""):
			t.Errorf("%q: transaction started %v, error %+v; want a transaction, as for START TRANSACTION", folded, started, qe)
		case f.flavour == coordinator.Trino && (started || qe.Name != "SYNTAX_ERROR"):
			t.Errorf("%q: transaction started %v, error %+v; want SYNTAX_ERROR", folded, started, qe)
		}
	})
}

// queryError is a statement's failure as name and code, or the zero value
// when it succeeded.
func queryError(t *testing.T, err error) realserver.QueryError {
	t.Helper()
	var qe *realserver.QueryError
	if err == nil {
		return realserver.QueryError{}
	}
	if !errors.As(err, &qe) {
		t.Fatal(err)
	}
	return realserver.QueryError{Name: qe.Name, Code: qe.Code, Message: qe.Message}
}

// Differential: a statement that fails inside a transaction aborts it. The
// next statement fails with TRANSACTION_ALREADY_ABORTED, COMMIT fails and
// ends the transaction, ROLLBACK ends it, on the simulator as on the real
// server of each flavour. (The failing statement differs: the simulator
// has no tables, so it fails by fail('m').)
func TestDifferentialAbortedTransaction(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		sim, prefix := simulatorOf(t, f.flavour)
		steps := func(url, failing, end string) []realserver.QueryError {
			c := ctx(t)
			res, err := realserver.QueryAt(c, url, f.flavour, "START TRANSACTION", prefix+"Transaction-Id", "NONE")
			if err != nil {
				t.Fatalf("%s: START TRANSACTION: %v", url, err)
			}
			id := res.Header.Get(prefix + "Started-Transaction-Id")
			if id == "" {
				t.Fatalf("%s: START TRANSACTION answered no transaction id: %v", url, res.Header)
			}
			var got []realserver.QueryError
			for _, sql := range []string{failing, "SELECT 1", end, "SELECT 2"} {
				_, err := realserver.QueryAt(c, url, f.flavour, sql, prefix+"Transaction-Id", id)
				qe := queryError(t, err)
				if qe.Name == "UNKNOWN_TRANSACTION" {
					qe.Message = "" // it names the transaction id
				}
				got = append(got, qe)
			}
			got[0] = realserver.QueryError{Name: got[0].Name} // the failure itself differs
			return got
		}
		for _, end := range []string{"COMMIT", "ROLLBACK"} {
			real := steps(f.servers[0].URL(), "SELECT * FROM tpch.tiny.no_such_table", end)
			simulated := steps(sim.URL(), "SELECT fail('no such table')", end)
			if real[0].Name == "" || simulated[0].Name == "" {
				t.Fatalf("the failing statement did not fail: real %+v, simulated %+v", real[0], simulated[0])
			}
			for i := 1; i < len(real); i++ {
				if real[i] != simulated[i] {
					t.Errorf("%s, step %d: the real server says %+v, the simulator %+v", end, i, real[i], simulated[i])
				}
			}
			if real[1].Name != "TRANSACTION_ALREADY_ABORTED" || real[3].Name != "UNKNOWN_TRANSACTION" {
				t.Errorf("%s: the real server's answers changed: %+v", end, real)
			}
		}
	})
}

// simulatorOf starts a simulator of the flavour for a differential test and
// returns it with the flavour's header prefix.
func simulatorOf(t *testing.T, f coordinator.Flavour) (*coordinator.Coordinator, string) {
	t.Helper()
	sim, err := coordinator.Start(coordinator.Options{Flavour: f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim, f.HeaderPrefix()
}
