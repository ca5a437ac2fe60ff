package main

import (
	"context"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

// presto-cli runs START TRANSACTION, the statements after it and COMMIT
// in one transaction on one coordinator; so does zkpresto query, whose
// driver refuses those statements except through BeginTx, Commit and
// Rollback: under round robin every statement of the transaction reaches
// the coordinator that began it, inside it, and nothing is left open.
func TestBatchTransactionRunsAsPrestoCLIs(t *testing.T) {
	cs, dsn := twoInTurn(t)
	o := queryOptions{dsn: dsn, logLevel: "warn", execute: "START TRANSACTION READ ONLY; SELECT * FROM rows(1); SELECT * FROM rows(2); COMMIT; SELECT 1"}
	out, errOut := &testutil.Buffer{}, &testutil.Buffer{}
	if err := runQuery(context.Background(), strings.NewReader(""), out, errOut, o, nil); err != nil {
		t.Fatalf("%v\nstderr: %s", err, errOut)
	}
	var in []string // the coordinators that ran the transaction's statements
	for i, c := range cs {
		for _, r := range c.Requests() {
			if r.TransactionID != "" && strings.HasPrefix(r.SQL, "SELECT * FROM rows(") {
				in = append(in, string(rune('0'+i)))
			}
		}
		if n := c.Transactions(); n != 0 {
			t.Errorf("coordinator %d has %d transactions open", i, n)
		}
	}
	if len(in) != 2 || in[0] != in[1] {
		t.Fatalf("the transaction's two statements ran in it on coordinators %v, want both on the one that began it", in)
	}
	if e := errOut.String(); !strings.Contains(e, "START TRANSACTION\n") || !strings.Contains(e, "COMMIT\n") {
		t.Errorf("stderr %q, want START TRANSACTION and COMMIT as presto-cli prints them", e)
	}
	if r := latest(cs); r.SQL != "SELECT 1" || r.TransactionID != "" {
		t.Errorf("the statement after COMMIT reached a coordinator as %+v, want outside any transaction", r)
	}
	o.execute = "COMMIT"
	if err := runQuery(context.Background(), strings.NewReader(""), out, errOut, o, nil); err == nil || !strings.Contains(err.Error(), "no transaction is open") {
		t.Errorf("COMMIT with no transaction: %v", err)
	}
}
