package driver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"

	presto "github.com/prestodb/presto-go-client/v2"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/verdict"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/routing"
)

// Conn is one database/sql connection. Outside a transaction every statement
// picks its coordinator, so the pool follows membership and load; inside a
// transaction all statements go to the coordinator that started it. The
// Presto client session (user, catalog, schema, session properties,
// transaction id) lives client-side and travels with every request, which is
// what lets one connection use any coordinator.
type Conn struct {
	connector *Connector
	session   driver.Conn // the Presto client connection, configured for placeholderHost
	// ps is that connection's session, on which statements run: the Presto
	// client keeps its headers and transaction id.
	ps     *presto.Session
	pinned *discovery.Node
	last   atomic.Pointer[discovery.Node]
	closed atomic.Bool
	// broken is set when a COMMIT or ROLLBACK failed: the Presto session
	// may still carry the transaction, so the pool must not reuse it.
	broken atomic.Bool
	// beginning is set while BeginTx's START TRANSACTION runs (see
	// txn.go).
	beginning bool

	// clientSession is the Presto session the statements carry and change
	// (see session.go).
	clientSession *clientSession

	// closeConnector is set by Driver.Open, whose connector lives as long as
	// this one connection.
	closeConnector *Connector
}

var (
	_ driver.Conn               = (*Conn)(nil)
	_ driver.QueryerContext     = (*Conn)(nil)
	_ driver.ExecerContext      = (*Conn)(nil)
	_ driver.ConnBeginTx        = (*Conn)(nil)
	_ driver.ConnPrepareContext = (*Conn)(nil)
	_ driver.Validator          = (*Conn)(nil)
	_ driver.SessionResetter    = (*Conn)(nil)
	_ driver.NamedValueChecker  = (*Conn)(nil)
	_ driver.Pinger             = (*Conn)(nil)
)

// Ping proves that a coordinator answers: one GET /v1/info on a coordinator
// the strategy picks (inside a transaction, the transaction's), which must
// say it is ready. A coordinator that does not answer, or says it is
// starting, counts as failed before accepting a statement: it is ejected
// and Ping tries another, as a statement would, up to the DSN's retries.
func (c *Conn) Ping(ctx context.Context) error {
	if c.closed.Load() || c.broken.Load() {
		return driver.ErrBadConn
	}
	a, err := c.connector.routed.Router.Run(ctx, c.connector.requestFor(ctx), c.pinned, func(ra *routing.Attempt) (routing.Outcome, error) {
		base := ra.Node.URL()
		if c.connector.cfg.UsesTLS() {
			base = "https://" + ra.Node.Addr
		}
		info := wire.ProbeInfo(ctx, c.connector.routed.Client, base)
		switch {
		case info.Verdict == wire.Up:
			return routing.Answered, nil
		case ctx.Err() != nil:
			return routing.Abandoned, fmt.Errorf("driver: ping of %s: %w", ra.Node.Addr, ctx.Err())
		}
		return routing.NotSent, info.Err
	})
	if err != nil {
		return err
	}
	a.End(nil)
	return nil
}

// Node returns the coordinator of the connection's latest statement (nil
// before the first). Inside a transaction it is the transaction's
// coordinator. The node is shared and must not be modified.
func (c *Conn) Node() *discovery.Node { return c.last.Load() }

// QueryContext runs a query on a coordinator the strategy picks (failing
// over while the statement provably never reached one). The arguments
// replace the query's ? placeholders (see interpolate).
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := refuseTransactionControl(query); err != nil {
		return nil, err
	}
	query, err := interpolate(query, args)
	if err != nil {
		return nil, err
	}
	var res *resultRows
	a, err := c.submit(ctx, func(ctx context.Context) error {
		qr, _, err := c.ps.Query(ctx, query)
		if err != nil {
			return queryFailed(err, qr, attemptFrom(ctx))
		}
		res, err = newResultRows(ctx, qr)
		return queryFailed(err, qr, attemptFrom(ctx))
	})
	if err != nil {
		return nil, err
	}
	return newRows(res, a, c), nil
}

// ExecContext runs a statement on a coordinator the strategy picks, with
// the arguments in place of its ? placeholders as QueryContext does. It
// reads the statement's pages to the end.
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := refuseTransactionControl(query); err != nil {
		return nil, err
	}
	query, err := interpolate(query, args)
	if err != nil {
		return nil, err
	}
	return c.exec(ctx, query)
}

// exec runs a statement, its arguments in place, and reads its pages to
// the end.
func (c *Conn) exec(ctx context.Context, query string) (driver.Result, error) {
	var res result
	a, err := c.submit(ctx, func(ctx context.Context) error {
		qr, _, err := c.ps.Query(ctx, query)
		if err != nil {
			return queryFailed(err, qr, attemptFrom(ctx))
		}
		for qr.HasMoreBatch() {
			qr.Data = nil
			attemptFrom(ctx).takePage() // rows nobody reads
			if err := qr.FetchNextBatch(ctx); err != nil {
				return queryFailed(err, qr, attemptFrom(ctx))
			}
		}
		res.updateCount = qr.UpdateCount
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.End(nil)
	return res, nil
}

// result is what a statement run by ExecContext reports.
type result struct{ updateCount *int64 }

// LastInsertId implements driver.Result: Presto has no generated keys.
func (r result) LastInsertId() (int64, error) {
	return 0, errors.New("driver: LastInsertId is not supported by Presto")
}

// RowsAffected implements driver.Result: the coordinator's update count,
// 0 when it reports none.
func (r result) RowsAffected() (int64, error) {
	if r.updateCount == nil {
		return 0, nil
	}
	return *r.updateCount, nil
}

// submit runs one statement through the routing core: it picks a
// coordinator, runs do under a context that routes the statement there, and
// when the transport proves the statement never reached that coordinator,
// the core ejects it and tries another, up to the DSN's retries. On success
// the attempt's load is still open for statements that stream rows; the
// caller ends it.
func (c *Conn) submit(ctx context.Context, do func(context.Context) error) (*attempt, error) {
	if c.closed.Load() || c.broken.Load() {
		return nil, driver.ErrBadConn
	}
	var last *attempt
	_, err := c.connector.routed.Router.Run(ctx, c.connector.requestFor(ctx), c.pinned, func(ra *routing.Attempt) (routing.Outcome, error) {
		c.last.Store(ra.Node)
		a := newAttempt(ra, ctx)
		a.session = c.clientSession
		a.tls = c.connector.routed.TLS
		a.WholePages = true // the Presto client decodes whole pages anyway
		a.splitPages = true
		if last != nil {
			a.JoinDialRace(&last.Exchange)
		}
		last = a
		err := do(a.context())
		if err == nil {
			return routing.Answered, nil
		}
		if ctx.Err() != nil {
			// The caller gave up: stop the query on the coordinator too.
			c.connector.cancelQuery(a)
		}
		v := classifyAttempt(err, ctx, a)
		return v.Kind.Routing(), v.Err
	})
	if last != nil {
		last.EndDialRace()
	}
	c.retireUnpinnedTransaction(last)
	if err != nil {
		return nil, redactSlugs(err)
	}
	return last, nil
}

// classifyAttempt is the verdict on an attempt whose statement failed
// with err, ctx the caller's: verdict.Of on its facts, with the caller's
// reason on the error of a statement it gave up.
func classifyAttempt(err error, ctx context.Context, a *attempt) verdict.Verdict {
	v := verdict.Of(attemptFacts(err, ctx, a))
	if v.Kind == verdict.Abandoned || v.Kind == verdict.Unanswered {
		v.Err = callerError(a, v.Err, ctx)
	}
	return v
}

// attemptFacts gathers what an attempt of a statement left for the
// verdict (verdict.Of): err is the Presto client's error, ctx the
// caller's. An error without a transport failure recorded came from an
// answer the client read (a query error, whose name says whether the
// query never ran); the caller giving up aborts the attempt, and its
// deadline after the statement's last bytes left leaves it unanswered.
func attemptFacts(err error, ctx context.Context, a *attempt) verdict.Facts {
	failure, sent := a.Failure()
	f := verdict.Facts{
		Err:       err,
		Answered:  failure == nil,
		Failure:   failure,
		Sent:      sent,
		Written:   a.Written(),
		Invalid:   a.Invalid(),
		Aborted:   ctx.Err() != nil,
		Deadline:  a.unanswered.Load(),
		HeadBytes: a.headBytes,
	}
	var qe *presto.QueryError
	if failure == nil && errors.As(err, &qe) {
		f.ErrorName = qe.ErrorName
		if wire.NeverRan(qe.ErrorName, true) {
			// Only then does the queued resource matter, and its URI is
			// parsed.
			f.Queued = wire.QueuedURI(a.LastURL())
		}
	}
	return f
}

// callerError is the error of a statement whose caller gave up: err when
// it already says why (errors.Is finds the deadline or the cancellation),
// else err with the caller's reason attached.
func callerError(a *attempt, err error, ctx context.Context) error {
	if errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("driver: statement on %s: %w (%w)", a.Node.Addr, ctx.Err(), err)
}

// NoCoordinatorError reports a statement that was sent nowhere: every
// coordinator tried failed before it could accept the statement.
type NoCoordinatorError = routing.NoCoordinatorError

// StatementError reports a statement whose coordinator failed after the
// statement may have reached it. The driver does not send it again, since
// it may be running; the caller decides.
type StatementError = routing.StatementError

// NodeFailure is one coordinator's failure to accept a statement.
type NodeFailure = routing.NodeFailure

// Prepare returns a statement that runs through this connection.
func (c *Conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext returns a statement that runs through this connection.
// Presto has no server-side prepare step the client uses; parameters are
// interpolated by the driver at execution.
func (c *Conn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	if c.closed.Load() || c.broken.Load() {
		return nil, driver.ErrBadConn
	}
	return &stmt{conn: c, query: query}, nil
}

// BeginTx starts a transaction on a picked coordinator and keeps every
// statement of the transaction there.
func (c *Conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.pinned != nil {
		return nil, errors.New("driver: a transaction is already open on this connection")
	}
	begin, err := startTransaction(opts)
	if err != nil {
		return nil, err
	}
	c.beginning = true
	_, err = c.exec(ctx, begin)
	c.beginning = false
	if err != nil {
		return nil, c.beginFailed(err)
	}
	c.pinned = c.last.Load()
	return &tx{conn: c}, nil
}

// Begin starts a transaction; use BeginTx.
func (c *Conn) Begin() (driver.Tx, error) { return c.BeginTx(context.Background(), driver.TxOptions{}) }

// startTransaction renders Presto's START TRANSACTION for opts.
func startTransaction(opts driver.TxOptions) (string, error) {
	var modes []string
	if level := sql.IsolationLevel(opts.Isolation); level != sql.LevelDefault {
		words, ok := isolationLevels[level]
		if !ok {
			return "", fmt.Errorf("driver: isolation level %s is not supported by Presto", level)
		}
		modes = append(modes, "ISOLATION LEVEL "+words)
	}
	if opts.ReadOnly {
		modes = append(modes, "READ ONLY")
	}
	if len(modes) == 0 {
		return "START TRANSACTION", nil
	}
	return "START TRANSACTION " + strings.Join(modes, ", "), nil
}

// tx ends a transaction on its coordinator.
type tx struct{ conn *Conn }

func (t *tx) Commit() error   { return t.finish("COMMIT") }
func (t *tx) Rollback() error { return t.finish("ROLLBACK") }

func (t *tx) finish(statement string) error {
	defer func() { t.conn.pinned = nil }()
	if _, err := t.conn.exec(context.Background(), statement); err != nil {
		t.conn.broken.Store(true)
		return fmt.Errorf("%s: %w", strings.ToLower(statement), err)
	}
	return nil
}

// IsValid reports whether the pool may reuse the connection.
func (c *Conn) IsValid() bool {
	return !c.closed.Load() && !c.broken.Load() && !c.connector.routed.Router.Closed()
}

// ResetSession is called before a pooled connection is reused: the session
// goes back to the DSN's (see Session), so that one caller's USE or SET
// SESSION never reaches another caller's statements.
func (c *Conn) ResetSession(ctx context.Context) error {
	if !c.IsValid() {
		return driver.ErrBadConn
	}
	c.resetClientSession()
	if r, ok := c.session.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

// Close closes the connection.
func (c *Conn) Close() error {
	c.closed.Store(true)
	err := c.session.Close()
	if c.closeConnector != nil {
		if cerr := c.closeConnector.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// stmt is a prepared statement; each execution is a statement of its own,
// picked and failed over like any other.
type stmt struct {
	conn  *Conn
	query string
}

func (s *stmt) Close() error  { return nil }
func (s *stmt) NumInput() int { return -1 }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.conn.ExecContext(ctx, s.query, args)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.conn.QueryContext(ctx, s.query, args)
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

// rows ends the statement's load record when the rows are done, and
// cancels the query on the coordinator when they are closed before the end
// (the Presto client leaves it running until the coordinator abandons it).
type rows struct {
	*resultRows
	a    *attempt
	conn *Conn
	done bool // io.EOF or an error was returned
}

func newRows(r *resultRows, a *attempt, conn *Conn) *rows {
	return &rows{resultRows: r, a: a, conn: conn}
}

// end ends the statement's load record, and retires the connection when a
// page read after Query returned started a transaction (see
// retireUnpinnedTransaction).
func (r *rows) end(err error) {
	r.conn.retireUnpinnedTransaction(r.a)
	r.a.End(err)
}

func (r *rows) Next(dest []driver.Value) error {
	err := r.resultRows.Next(dest)
	switch {
	case err == nil:
	case err == io.EOF:
		r.done = true
		r.end(nil)
	default:
		r.done = true
		failure, _ := r.a.Failure()
		switch {
		case r.a.caller.Err() != nil:
			r.conn.connector.cancelQuery(r.a)
		case failure != nil && r.qr.Id != "" && connectionLost(failure):
			err = r.a.FailedWhileRunning(failure, r.qr.Id, r.pagesRead)
		case failure != nil:
			err = r.a.Failed(failure)
		case r.running():
			// A value the driver cannot read ends the result: the query
			// would run on unread otherwise.
			r.conn.connector.cancelQuery(r.a)
		}
		r.end(err)
	}
	return redactSlugs(err)
}

// connectionLost reports whether err is the coordinator's connection
// failing (refused, reset, cut short), not an answer it gave: what says
// the coordinator went away while its query ran.
func connectionLost(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// running reports whether the query may still run on the coordinator: the
// latest page the client decoded names a nextUri. It is known from the
// decoded page, so a compressed page is not decoded a second time to learn
// it.
func (r *rows) running() bool { return r.qr.NextUri != nil }

// Close ends the statement. Outside a transaction a query still running
// is cancelled. Inside one the rest of its result is read and dropped
// instead: Trino and PrestoDB abort the transaction of a query that is
// cancelled or fails (its later statements get TRANSACTION_ALREADY_ABORTED,
// its COMMIT fails), and QueryRow closes its rows after the first row, with
// the query's last page often unread.
func (r *rows) Close() error {
	var err error
	if !r.done && r.running() {
		if r.conn.pinned != nil {
			err = r.drain()
		} else {
			r.conn.connector.cancelQuery(r.a)
		}
	}
	r.done = true
	r.end(err)
	if cerr := r.resultRows.Close(); err == nil {
		err = cerr
	}
	return err
}

// drain reads the query's remaining pages to its end, dropping their rows.
// When that fails (the caller gave up, the query failed, the coordinator is
// gone) the query is cancelled, and the error says the transaction may be
// aborted.
func (r *rows) drain() error {
	for r.qr.HasMoreBatch() {
		r.qr.Data, r.data = nil, nil
		if err := r.qr.FetchNextBatch(r.ctx); err != nil {
			r.conn.connector.cancelQuery(r.a)
			err = queryFailed(err, r.qr, r.a)
			if errors.As(err, new(*QueryError)) {
				// The server's words first.
				return fmt.Errorf("%w (reading the rest of a result closed early in a transaction: the transaction may be aborted)", err)
			}
			return redactSlugs(fmt.Errorf("driver: reading the rest of a result closed early in a transaction (the transaction may be aborted): %w", err))
		}
		if r.pages != nil {
			r.pages.takePage()
		}
	}
	r.qr.Data, r.data = nil, nil
	return nil
}
