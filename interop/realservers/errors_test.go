package realservers

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// wantedError is what a statement's error must carry.
type wantedError struct {
	name, errType string
	code          int
	line, column  int // 0: no location
	message       string
}

// A syntax error and a semantic one reach the caller as *driver.QueryError
// with what the server sent: its name, code, type, message and, where the
// server gives one, the line and column in the statement's text (client
// QueryError and ErrorLocation; trino ExecutionFailureInfo.getErrorLocation,
// PrestoDB the same). Trino places an unknown table (TABLE_NOT_FOUND, its
// StandardErrorCode 46, from StatementAnalyzer's semanticException);
// PrestoDB 0.287 reports it as SYNTAX_ERROR without a location (its
// SemanticException is a PrestoException of SYNTAX_ERROR), the table in
// the message. The same error comes from Exec, Query and QueryRow.
func TestDriverErrorsCarryWhatTheServersSend(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		db := open(t, f, "?user=alice")
		syntax := wantedError{name: "SYNTAX_ERROR", errType: "USER_ERROR", code: 1, line: 3, column: 1, message: "line 3:1: mismatched input ')'"}
		unknown := wantedError{name: "TABLE_NOT_FOUND", errType: "USER_ERROR", code: 46, line: 2, column: 8, message: "line 2:8: Table 'tpch.tiny.no_such_table' does not exist"}
		if f.flavour == coordinator.Presto {
			unknown = wantedError{name: "SYNTAX_ERROR", errType: "USER_ERROR", code: 1, message: "Table tpch.tiny.no_such_table does not exist"}
		}
		for _, c := range []struct {
			sql  string
			want wantedError
		}{{"SELECT 1\nFROM\n)", syntax}, {"SELECT name\n  FROM no_such_table", unknown}} {
			_, execErr := db.ExecContext(ctx(t), c.sql)
			_, queryErr := db.QueryContext(ctx(t), c.sql)
			rowErr := db.QueryRowContext(ctx(t), c.sql).Scan(new(any))
			for _, err := range []error{execErr, queryErr, rowErr} {
				checkQueryError(t, c.sql, err, c.want)
			}
		}
	})
}

func checkQueryError(t *testing.T, sql string, err error, want wantedError) {
	t.Helper()
	var qe *driver.QueryError
	if !errors.As(err, &qe) {
		t.Fatalf("%q: %v (%T) is no *driver.QueryError", sql, err, err)
	}
	if qe.ErrorName != want.name || qe.ErrorCode != want.code || qe.ErrorType != want.errType || !strings.HasPrefix(qe.Message, want.message) {
		t.Errorf("%q: the error is %s %d %s %q, want %s %d %s %q...", sql, qe.ErrorName, qe.ErrorCode, qe.ErrorType, qe.Message, want.name, want.code, want.errType, want.message)
	}
	switch loc := qe.ErrorLocation; {
	case want.line == 0 && loc != nil:
		t.Errorf("%q: the error is placed at %s, want no location", sql, loc)
	case want.line != 0 && (loc == nil || loc.LineNumber != want.line || loc.ColumnNumber != want.column):
		t.Errorf("%q: the error is placed at %v, want line %d:%d", sql, loc, want.line, want.column)
	}
	if !strings.Contains(err.Error(), want.name+": "+want.message) {
		t.Errorf("%q: the error's text %q does not name the server's error", sql, err)
	}
}
