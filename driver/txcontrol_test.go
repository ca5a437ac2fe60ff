package driver

import (
	"database/sql"
	"database/sql/driver"
	"testing"
)

// ParseTransactionControl reads what BeginTx writes, and what users type.
func TestParseTransactionControl(t *testing.T) {
	for _, c := range []struct {
		query string
		want  TxControl
		opts  *sql.TxOptions
	}{
		{"SELECT 1", NoTxControl, nil},
		{"START", NoTxControl, nil},
		{"commit", Commit, nil},
		{"ROLLBACK WORK;", Rollback, nil},
		{"/* c */ start transaction", StartTransaction, &sql.TxOptions{}},
		{"START TRANSACTION READ ONLY", StartTransaction, &sql.TxOptions{ReadOnly: true}},
		{"-- START TRANSACTION READ ONLY\nSTART TRANSACTION ISOLATION LEVEL  serializable , READ WRITE;", StartTransaction, &sql.TxOptions{Isolation: sql.LevelSerializable}},
		// What the servers upper-case to the keywords (see foldKeyword).
		{"ſtart transaction ıSOLATION LEVEL ſerializable", StartTransaction, &sql.TxOptions{Isolation: sql.LevelSerializable}},
		{"ﬆart tranſaction read only", StartTransaction, &sql.TxOptions{ReadOnly: true}},
		{"COMMıT WORK", Commit, nil},
		{"rollbac\u212a", Rollback, nil},
		{"--\rcommİt", Commit, nil},
		{"COMMITTED", NoTxControl, nil},
		{"ßtart transaction", NoTxControl, nil},
		{"C\u00d8MMIT", NoTxControl, nil},
	} {
		got, opts, err := ParseTransactionControl(c.query)
		if err != nil || got != c.want || (opts == nil) != (c.opts == nil) || opts != nil && *opts != *c.opts {
			t.Errorf("ParseTransactionControl(%q) = %v, %+v, %v; want %v, %+v", c.query, got, opts, err, c.want, c.opts)
		}
	}
	// What BeginTx sends parses back to its options.
	for _, opts := range []sql.TxOptions{{}, {ReadOnly: true}, {Isolation: sql.LevelReadCommitted, ReadOnly: true}, {Isolation: sql.LevelRepeatableRead}} {
		q, err := startTransaction(driver.TxOptions{Isolation: driver.IsolationLevel(opts.Isolation), ReadOnly: opts.ReadOnly})
		if err != nil {
			t.Fatal(err)
		}
		if got, back, err := ParseTransactionControl(q); err != nil || got != StartTransaction || *back != opts {
			t.Errorf("%q parses to %v %+v %v, want %+v", q, got, back, err, opts)
		}
	}
	for _, bad := range []string{"START TRANSACTION ISOLATION LEVEL SNAPSHOT", "START TRANSACTION READ SOMETIMES"} {
		if _, _, err := ParseTransactionControl(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
