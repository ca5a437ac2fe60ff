package verdict_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/testrig/attemptcases"
)

var writeTable = flag.Bool("write-table", false, "rewrite RELIABILITY.md's table of what an attempt means from the cases")

const (
	reliability = "../../RELIABILITY.md"
	tableBegin  = "<!-- attempt table: made by go test ./internal/verdict -write-table -->\n"
	tableEnd    = "<!-- attempt table: end -->\n"
)

// RELIABILITY.md's table of what an attempt means is the cases' own
// (attemptcases.Table): a case or a kind added, or a row edited by hand,
// fails here until the table is made again with -write-table.
func TestReliabilityTableIsTheCases(t *testing.T) {
	b, err := os.ReadFile(reliability)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no table between %q and %q", reliability, tableBegin, tableEnd)
	}
	want := attemptcases.Table()
	got := doc[i+len(tableBegin) : j]
	if got == want {
		return
	}
	if *writeTable {
		if err := os.WriteFile(reliability, []byte(doc[:i+len(tableBegin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table of what an attempt means is not the cases'; make it again with go test ./internal/verdict -run TestReliabilityTableIsTheCases -write-table. Want:\n%s", reliability, want)
}
