package driver

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/zkpresto/zkpresto/discovery"
)

// Conn is a connection bound to one coordinator. It delegates statements to
// the Presto Go client and tells database/sql when the coordinator has left
// discovery, so that the pool drops it.
type Conn struct {
	conn      driver.Conn
	node      *discovery.Node
	connector *Connector

	// closeConnector is set by Driver.Open, whose connector lives as long as
	// this one connection.
	closeConnector *Connector
}

var (
	_ driver.Conn               = (*Conn)(nil)
	_ driver.QueryerContext     = (*Conn)(nil)
	_ driver.ExecerContext      = (*Conn)(nil)
	_ driver.ConnBeginTx        = (*Conn)(nil)
	_ driver.Validator          = (*Conn)(nil)
	_ driver.SessionResetter    = (*Conn)(nil)
	_ driver.ConnPrepareContext = (*Conn)(nil)
)

// errNotSupported is returned when the Presto client's connection lacks an
// interface; the Presto Go client v2 implements all of them.
var errNotSupported = errors.New("zkpresto: not supported by the Presto client connection")

// Node returns the coordinator the connection is bound to. The node is
// shared and must not be modified.
func (c *Conn) Node() *discovery.Node { return c.node }

// Prepare returns a prepared statement on the bound coordinator.
func (c *Conn) Prepare(query string) (driver.Stmt, error) { return c.conn.Prepare(query) }

// PrepareContext returns a prepared statement on the bound coordinator.
func (c *Conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if p, ok := c.conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.conn.Prepare(query)
}

// QueryContext runs a query on the bound coordinator.
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	return q.QueryContext(ctx, query, args)
}

// ExecContext runs a statement on the bound coordinator.
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	return e.ExecContext(ctx, query, args)
}

// BeginTx starts a transaction on the bound coordinator.
func (c *Conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	b, ok := c.conn.(driver.ConnBeginTx)
	if !ok {
		return nil, errNotSupported
	}
	return b.BeginTx(ctx, opts)
}

// Begin starts a transaction; use BeginTx.
func (c *Conn) Begin() (driver.Tx, error) { return c.BeginTx(context.Background(), driver.TxOptions{}) }

// IsValid reports whether the pool may reuse the connection: false once the
// coordinator has left discovery.
func (c *Conn) IsValid() bool {
	return c.connector.stillListed(c.node)
}

// ResetSession is called before a pooled connection is reused; a connection
// whose coordinator has left is refused with driver.ErrBadConn.
func (c *Conn) ResetSession(ctx context.Context) error {
	if !c.IsValid() {
		return driver.ErrBadConn
	}
	if r, ok := c.conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

// Close closes the Presto client connection.
func (c *Conn) Close() error {
	err := c.conn.Close()
	if c.closeConnector != nil {
		if cerr := c.closeConnector.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
