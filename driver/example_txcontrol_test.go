package driver_test

import (
	"fmt"

	"github.com/zkpresto/zkpresto/driver"
)

// A shell that takes SQL from its users runs the transaction statements
// through BeginTx, Commit and Rollback, which the driver requires.
func ExampleParseTransactionControl() {
	for _, q := range []string{"START TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY", "SELECT 1", "commit"} {
		kind, opts, err := driver.ParseTransactionControl(q)
		switch {
		case err != nil:
			fmt.Println(err)
		case kind == driver.StartTransaction:
			fmt.Printf("BeginTx: isolation %v, read only %v\n", opts.Isolation, opts.ReadOnly)
		case kind == driver.Commit:
			fmt.Println("tx.Commit")
		case kind == driver.Rollback:
			fmt.Println("tx.Rollback")
		default:
			fmt.Println("a statement:", q)
		}
	}
	// Output:
	// BeginTx: isolation Read Committed, read only true
	// a statement: SELECT 1
	// tx.Commit
}
