package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	zkdriver "github.com/zkpresto/zkpresto/driver"
)

// heldConn is the one connection zkpresto query runs its statements on,
// and the transaction open on it, if any. The driver runs START
// TRANSACTION, COMMIT and ROLLBACK only through BeginTx, Commit and
// Rollback (they keep the transaction on its coordinator); typed as
// statements, as presto-cli users type them, they go that way here.
type heldConn struct {
	conn *sql.Conn
	// ctx is the run's: a transaction outlives the statement that began it
	// (database/sql rolls back a transaction whose context ends).
	ctx context.Context
	tx  *sql.Tx
}

// query runs a statement in the open transaction, if any.
func (c *heldConn) query(ctx context.Context, query string) (*sql.Rows, error) {
	if c.tx != nil {
		return c.tx.QueryContext(ctx, query)
	}
	return c.conn.QueryContext(ctx, query)
}

// control runs query when it is a transaction-control statement, prints
// what it did as presto-cli does, and reports whether it was one.
func (c *heldConn) control(query string, errOut io.Writer) (bool, error) {
	kind, opts, err := zkdriver.ParseTransactionControl(query)
	switch {
	case kind == zkdriver.NoTxControl:
		return false, nil
	case err != nil:
		return true, err
	case kind == zkdriver.StartTransaction:
		if c.tx != nil {
			return true, errors.New("a transaction is already open: COMMIT or ROLLBACK it first")
		}
		tx, err := c.conn.BeginTx(c.ctx, opts)
		if err != nil {
			return true, err
		}
		c.tx = tx
		fmt.Fprintln(errOut, "START TRANSACTION")
		return true, nil
	}
	if c.tx == nil {
		return true, errors.New("no transaction is open (START TRANSACTION begins one)")
	}
	tx := c.tx
	c.tx = nil
	if kind == zkdriver.Commit {
		if err := tx.Commit(); err != nil {
			return true, err
		}
		fmt.Fprintln(errOut, "COMMIT")
		return true, nil
	}
	if err := tx.Rollback(); err != nil {
		return true, err
	}
	fmt.Fprintln(errOut, "ROLLBACK")
	return true, nil
}

// end rolls back a transaction left open when the run ends, and says so.
func (c *heldConn) end(errOut io.Writer) {
	if c.tx != nil {
		if err := c.tx.Rollback(); err == nil {
			fmt.Fprintln(errOut, "ROLLBACK (the transaction was still open)")
		}
		c.tx = nil
	}
}
