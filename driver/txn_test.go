package driver_test

import (
	"context"
	"database/sql"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// START TRANSACTION, COMMIT and ROLLBACK run as statements (as mysql and
// pgx users do by hand) would leave the session holding a transaction the
// driver does not pin: they are refused with a clear error before anything
// is sent, in Exec, Query and inside a transaction alike; statements that
// merely mention the words run. So are the spellings the servers upper-case
// to those words ('ſ' is an S to Java's Character.toUpperCase, 'ı' an I,
// the Kelvin sign a K), which would otherwise commit behind the driver's Tx.
func TestTransactionStatementsOutsideBeginTxAreRefused(t *testing.T) {
	cs, err := coordinator.StartFleet(2, coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	db := openPerStatement(t, "presto://"+cs[0].Addr()+","+cs[1].Addr()+"/hive/default?user=alice&strategy=round_robin")
	refused := []string{"START TRANSACTION", "start transaction read only", "  -- why\n/* not */ Commit", "COMMIT WORK", "rollback", "\tROLLBACK WORK",
		"ſtart transaction", "commıt", "COMMıT WORK", "rollbac\u212a", "-- why\rCOMMIT", "ﬆart TRANSACTİON", "ROLLBAC\u212a WORK"}
	for _, q := range refused {
		if _, err := db.Exec(q); err == nil || !strings.Contains(err.Error(), "use db.BeginTx") {
			t.Errorf("Exec(%q): %v", q, err)
		}
		if _, err := db.Query(q); err == nil || !strings.Contains(err.Error(), "use db.BeginTx") {
			t.Errorf("Query(%q): %v", q, err)
		}
	}
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"COMMIT", "commıt", "ſtart transaction", "rollbac\u212a"} {
		if _, err := tx.Exec(q); err == nil || !strings.Contains(err.Error(), "use db.BeginTx") {
			t.Errorf("tx.Exec(%q): %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, c := range cs {
		for _, r := range c.Requests() {
			if r.SQL != "" {
				sent = append(sent, r.SQL)
			}
		}
	}
	if want := []string{"START TRANSACTION", "COMMIT"}; !reflect.DeepEqual(sent, want) {
		t.Fatalf("sent %q, want only BeginTx's and Commit's %q", sent, want)
	}
	for _, q := range []string{"SELECT 'COMMIT'", "SELECT 1 -- ROLLBACK", "STARTED", "COMMITTED", "ſtarted"} {
		if err := refuseTransactionControlVia(db, q); err != nil {
			t.Errorf("%q refused: %v", q, err)
		}
	}
}

// refuseTransactionControlVia runs q and returns its error only if it is
// the refusal.
func refuseTransactionControlVia(db *sql.DB, q string) error {
	_, err := db.Exec(q)
	if err != nil && strings.Contains(err.Error(), "use db.BeginTx") {
		return err
	}
	return nil
}

// A START TRANSACTION that fails after the coordinator started the
// transaction (its id is in the answer's headers, the page says FAILED)
// retires the connection: the next statement, on the same pool, carries no
// transaction id.
func TestFailedBeginTxRetiresTheConnection(t *testing.T) {
	s := newPageServer(t, false)
	s.answer("START TRANSACTION",
		`{"id":"q1","infoUri":"http://x/q1","error":{"message":"boom","errorCode":65536,"errorName":"GENERIC_INTERNAL_ERROR","errorType":"INTERNAL_ERROR"},"stats":{"state":"FAILED"}}`,
		http.Header{"X-Presto-Started-Transaction-Id": {"c0ffee00-0000-4000-8000-000000000001"}})
	db, err := sql.Open("zkpresto", "presto://"+strings.TrimPrefix(s.URL, "http://")+"/hive/default?user=alice")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if _, err := db.BeginTx(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("BeginTx: %v", err)
	}
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if got := s.transactions(); len(got) != 2 || got[1] != "NONE" {
		t.Fatalf("transaction ids sent %q: the statement after a failed BeginTx carried one", got)
	}
}

// A transaction started by a statement the refusal cannot see (EXECUTE of
// a prepared START TRANSACTION) retires the connection too: the next
// statement carries no transaction id.
func TestTransactionStartedByAnotherStatementRetiresTheConnection(t *testing.T) {
	s := newPageServer(t, false)
	s.answer("EXECUTE begin",
		`{"id":"q1","infoUri":"http://x/q1","updateType":"START TRANSACTION","stats":{"state":"FINISHED"}}`,
		http.Header{"X-Presto-Started-Transaction-Id": {"c0ffee00-0000-4000-8000-000000000002"}})
	db, err := sql.Open("zkpresto", "presto://"+strings.TrimPrefix(s.URL, "http://")+"/hive/default?user=alice")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if _, err := db.Exec("EXECUTE begin"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if got := s.transactions(); len(got) != 2 || got[1] != "NONE" {
		t.Fatalf("transaction ids sent %q: the statement after carried one", got)
	}
	// BeginTx's own START TRANSACTION keeps its connection.
	s.answer("START TRANSACTION", `{"id":"q2","infoUri":"http://x/q2","updateType":"START TRANSACTION","stats":{"state":"FINISHED"}}`,
		http.Header{"X-Presto-Started-Transaction-Id": {"c0ffee00-0000-4000-8000-000000000003"}})
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("SELECT 2"); err != nil {
		t.Fatal(err)
	}
	if got := s.transactions(); got[len(got)-1] != "c0ffee00-0000-4000-8000-000000000003" {
		t.Fatalf("transaction ids sent %q: the transaction's statement did not carry its id", got)
	}
	tx.Rollback()
}

// Rows closed before their end inside a transaction (QueryRow does it
// after the first row) are read to the end, not cancelled: the servers
// abort the transaction of a cancelled query, so the next statement and
// the COMMIT would fail with TRANSACTION_ALREADY_ABORTED (seen on Trino
// 476 and PrestoDB 0.287, interop/realservers). Outside a transaction the
// query is still cancelled.
func TestRowsClosedEarlyInATransactionKeepIt(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{BatchRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	db := openPerStatement(t, "presto://"+c.Addr()+"/hive/default?user=alice")
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		var n int64
		if err := tx.QueryRowContext(ctx, "SELECT n FROM rows(9)").Scan(&n); err != nil || n != 1 {
			t.Fatalf("QueryRow %d in the transaction: n=%d, %v", i, n, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit after early-closed rows: %v", err)
	}
	if n := c.Transactions(); n != 0 {
		t.Fatalf("%d transactions open after COMMIT", n)
	}
	var cancels int
	for _, call := range c.Calls() {
		if call.Method == http.MethodDelete {
			cancels++
		}
	}
	if cancels != 0 {
		t.Fatalf("%d DELETEs in the transaction: a query was cancelled", cancels)
	}
	// Outside a transaction, the same early close cancels the query.
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT n FROM rows(9)").Scan(&n); err != nil {
		t.Fatal(err)
	}
	// The driver sends the DELETE in the background.
	deadline := time.Now().Add(10 * time.Second)
	for cancels == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		for _, call := range c.Calls() {
			if call.Method == http.MethodDelete {
				cancels++
			}
		}
	}
	if cancels == 0 {
		t.Fatal("a query closed early outside a transaction was not cancelled")
	}
}
