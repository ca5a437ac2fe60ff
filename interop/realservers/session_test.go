package realservers

import (
	"context"
	"database/sql"
	"math"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// sessionQueryer is what runs a statement: a *sql.Conn, a *sql.DB or a
// *sql.Tx.
type sessionQueryer interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

// sessionValue is the Value column of SHOW SESSION for the property name:
// both servers answer Name, Value, Default, Type, Description
// (trino ShowQueriesRewrite.visitShowSession; PrestoDB the same class).
func sessionValue(t *testing.T, c context.Context, q sessionQueryer, name string) string {
	t.Helper()
	rows, err := q.QueryContext(c, "SHOW SESSION")
	if err != nil {
		t.Fatalf("SHOW SESSION: %v", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]sql.NullString, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			t.Fatalf("SHOW SESSION: %v", err)
		}
		if vals[0].String == name {
			return vals[1].String
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("SHOW SESSION: %v", err)
	}
	t.Fatalf("SHOW SESSION lists no %s", name)
	return ""
}

// nodeOf is the coordinator that ran conn's latest statement.
func nodeOf(t *testing.T, conn *sql.Conn) string {
	t.Helper()
	var addr string
	if err := conn.Raw(func(dc any) error {
		addr = dc.(*driver.Conn).Node().Addr
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return addr
}

// sessionOf is conn's driver session.
func sessionOf(t *testing.T, conn *sql.Conn) driver.Session {
	t.Helper()
	var s driver.Session
	if err := conn.Raw(func(dc any) error {
		s = dc.(*driver.Conn).Session()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// USE, SET SESSION and RESET SESSION on one *sql.Conn apply to its later
// statements on both coordinators (poll alternates them), as
// docs/sessions.md promises: the servers answer Set-Catalog, Set-Schema,
// Set-Session and Clear-Session (trino QueryResultsResponse, PrestoDB
// QueryResourceUtil), the driver sends the session with every statement.
// The connection goes back to the pool reset to the DSN's session, and a
// session changed through the *sql.DB itself reaches no later statement.
func TestDriverSessionOnAConnAcrossCoordinators(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		db := open(t, f, ";zooKeeperStrategy=poll?user=alice")
		// One connection, so that the pool's reset is seen on the very
		// connection that changed its session.
		db.SetMaxOpenConns(1)
		c := ctx(t)
		conn, err := db.Conn(c)
		if err != nil {
			t.Fatal(err)
		}
		defaultRunTime := sessionValue(t, c, conn, "query_max_run_time")

		if _, err := conn.ExecContext(c, "USE tpch.sf1"); err != nil {
			t.Fatalf("USE tpch.sf1: %v", err)
		}
		if _, err := conn.ExecContext(c, "SET SESSION query_max_run_time = '1h'"); err != nil {
			t.Fatalf("SET SESSION: %v", err)
		}
		if _, err := conn.ExecContext(c, "SET SESSION join_distribution_type = 'BROADCAST'"); err != nil {
			t.Fatalf("SET SESSION: %v", err)
		}
		ran := map[string]int{}
		for i := range 4 {
			// An unqualified table is sf1's after USE: 150,000 customers
			// (the DSN's tiny has 1,500).
			var n int64
			if err := conn.QueryRowContext(c, "SELECT count(*) FROM customer").Scan(&n); err != nil || n != 150000 {
				t.Fatalf("statement %d after USE tpch.sf1: count(*) FROM customer = %d, %v; want 150000", i, n, err)
			}
			ran[nodeOf(t, conn)]++
			if v := sessionValue(t, c, conn, "query_max_run_time"); v != "1h" {
				t.Fatalf("statement %d: query_max_run_time is %q on %s, want 1h", i, v, nodeOf(t, conn))
			}
			ran[nodeOf(t, conn)]++
		}
		if len(ran) != 2 {
			t.Fatalf("the session's statements ran on %v, want both coordinators", ran)
		}
		// Statements that fail change nothing: the servers answer a failed
		// USE or SET SESSION without Set-* headers.
		if _, err := conn.ExecContext(c, "USE no_such_catalog.x"); err == nil {
			t.Fatal("USE of an unknown catalog ran")
		}
		if _, err := conn.ExecContext(c, "SET SESSION query_max_run_time = 'banana'"); err == nil {
			t.Fatal("SET SESSION of a malformed duration ran")
		}
		s := sessionOf(t, conn)
		if s.Catalog != "tpch" || s.Schema != "sf1" || s.Properties["query_max_run_time"] != "1h" || s.Properties["join_distribution_type"] != "BROADCAST" {
			t.Fatalf("the connection's session is %+v, want tpch.sf1 with the two properties", s)
		}

		if _, err := conn.ExecContext(c, "RESET SESSION query_max_run_time"); err != nil {
			t.Fatalf("RESET SESSION: %v", err)
		}
		for i := range 2 {
			if v := sessionValue(t, c, conn, "query_max_run_time"); v != defaultRunTime {
				t.Fatalf("after RESET SESSION, statement %d: query_max_run_time is %q on %s, want the default %q", i, v, nodeOf(t, conn), defaultRunTime)
			}
			if v := sessionValue(t, c, conn, "join_distribution_type"); v != "BROADCAST" {
				t.Fatalf("after RESET SESSION of another property, statement %d: join_distribution_type is %q, want BROADCAST", i, v)
			}
		}
		if err := conn.Close(); err != nil {
			t.Fatal(err)
		}

		// The same connection, back from the pool: the DSN's session.
		conn, err = db.Conn(c)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := conn.QueryRowContext(c, "SELECT count(*) FROM customer").Scan(&n); err != nil || n != 1500 {
			t.Fatalf("a connection back from the pool: count(*) FROM customer = %d, %v; want tiny's 1500", n, err)
		}
		if v := sessionValue(t, c, conn, "join_distribution_type"); v == "BROADCAST" {
			t.Fatalf("a connection back from the pool still has join_distribution_type = BROADCAST")
		}
		if err := conn.Close(); err != nil {
			t.Fatal(err)
		}

		// Through the *sql.DB, a USE reaches no later statement, even on the
		// pool's only connection.
		if _, err := db.ExecContext(c, "USE tpch.sf1"); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(c, "SELECT count(*) FROM customer").Scan(&n); err != nil || n != 1500 {
			t.Fatalf("after db.Exec(USE tpch.sf1): count(*) FROM customer = %d, %v; want tiny's 1500", n, err)
		}
	})
}

// PREPARE on a *sql.Conn with several parameters: the servers answer
// Added-Prepare (name=URL-encoded text; trino PrepareTask and
// QueryResultsResponse, PrestoDB PrepareTask and QueryResourceUtil), the
// driver sends it back in Prepared-Statement with every later statement,
// so EXECUTE ... USING runs on both coordinators, with literal values and
// with database/sql's ? arguments; DEALLOCATE PREPARE drops it everywhere,
// and a connection back from the pool has none.
func TestDriverPrepareExecuteAcrossCoordinators(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		db := open(t, f, ";zooKeeperStrategy=poll?user=alice")
		db.SetMaxOpenConns(1)
		c := ctx(t)
		conn, err := db.Conn(c)
		if err != nil {
			t.Fatal(err)
		}
		// No arguments: the ? are the server's parameters, kept as they are.
		if _, err := conn.ExecContext(c, "PREPARE pick FROM SELECT name, regionkey + ?, concat(?, comment) FROM nation WHERE nationkey = ? AND name <> '?'"); err != nil {
			t.Fatalf("PREPARE: %v", err)
		}
		text, ok := sessionOf(t, conn).PreparedStatements["pick"]
		if !ok || !strings.Contains(text, "regionkey") {
			t.Fatalf("the session's prepared statements are %v, want pick", sessionOf(t, conn).PreparedStatements)
		}
		ran := map[string]int{}
		check := func(what, query string, args ...any) {
			t.Helper()
			var name, prefixed string
			var region int64
			if err := conn.QueryRowContext(c, query, args...).Scan(&name, &region, &prefixed); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			// Nation 7 is GERMANY, in region 3.
			if name != "GERMANY" || region != 103 || !strings.HasPrefix(prefixed, "it's: ") {
				t.Fatalf("%s = %q, %d, %q; want GERMANY, 103, \"it's: ...\"", what, name, region, prefixed)
			}
			ran[nodeOf(t, conn)]++
		}
		for i := range 2 {
			check("EXECUTE with literals", "EXECUTE pick USING 100, 'it''s: ', 7")
			check("EXECUTE with ? arguments", "EXECUTE pick USING ?, ?, ?", int64(100), "it's: ", int64(7))
			_ = i
		}
		if ran := len(ran); ran != 2 {
			t.Fatalf("EXECUTE ran on %d coordinators, want both", ran)
		}
		if _, err := conn.ExecContext(c, "DEALLOCATE PREPARE pick"); err != nil {
			t.Fatalf("DEALLOCATE PREPARE: %v", err)
		}
		if ps := sessionOf(t, conn).PreparedStatements; len(ps) != 0 {
			t.Fatalf("after DEALLOCATE PREPARE the session has %v", ps)
		}
		for i := range 2 {
			_, err := conn.ExecContext(c, "EXECUTE pick USING 1, 'x', 1")
			if err == nil || !strings.Contains(err.Error(), "pick") {
				t.Fatalf("EXECUTE %d after DEALLOCATE PREPARE = %v; want the server's error naming pick", i, err)
			}
		}

		if _, err := conn.ExecContext(c, "PREPARE again FROM SELECT ?"); err != nil {
			t.Fatalf("PREPARE: %v", err)
		}
		if err := conn.Close(); err != nil {
			t.Fatal(err)
		}
		conn, err = db.Conn(c)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if ps := sessionOf(t, conn).PreparedStatements; len(ps) != 0 {
			t.Fatalf("a connection back from the pool has prepared statements %v", ps)
		}
		if _, err := conn.ExecContext(c, "EXECUTE again USING 1"); err == nil {
			t.Fatalf("EXECUTE of a statement prepared before the connection went back to the pool ran")
		}
	})
}

// database/sql's ? arguments reach both servers as literals, a ? inside a
// string literal or a comment left alone; an int64 is a number literal,
// which both read as an INTEGER when it fits one (trino
// sql/tree/LongLiteral and ExpressionAnalyzer.visitLongLiteral; PrestoDB
// the same), as docs/types.md says.
func TestDriverArgumentsOnRealServers(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		db := open(t, f, "?user=alice")
		var (
			n       int64
			x       float64
			s, kept string
			b       bool
			null    sql.NullString
			bin     []byte
			types   string
		)
		err := db.QueryRowContext(ctx(t), `SELECT ?, ?, ?, '? kept', ?, ?, ?, -- a ? in a comment
			typeof(?) || ',' || typeof(?) || ',' || typeof(?) || ',' || typeof(?)`,
			int64(1)<<62, 0.25, "it's ?", true, nil, []byte{0, 1, 255}, int64(1), int64(1)<<31, 0.5, "v",
		).Scan(&n, &x, &s, &kept, &b, &null, &bin, &types)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1<<62 || x != 0.25 || s != "it's ?" || kept != "? kept" || !b || null.Valid || string(bin) != "\x00\x01\xff" {
			t.Fatalf("the arguments came back as %d, %v, %q, %q, %v, %v, %x", n, x, s, kept, b, null, bin)
		}
		if types != "integer,bigint,double,varchar(1)" {
			t.Fatalf("the arguments' types are %s, want integer,bigint,double,varchar(1)", types)
		}

		// A negative number keeps the type its literal has, -2147483648
		// being a BIGINT as 2147483648 is; after a minus it is still a
		// number, and after a name it is no call's argument.
		var diff int64
		err = db.QueryRowContext(ctx(t), `SELECT 0-?, typeof(?) || ',' || typeof(?) || ',' || typeof(?) || ',' || typeof(?)`,
			int64(-5), int64(-5), int64(-1)<<31, -0.5, math.Inf(-1)).Scan(&diff, &types)
		if err != nil {
			t.Fatal(err)
		}
		if diff != 5 || types != "integer,bigint,double,double" {
			t.Fatalf("0-? with -5 = %d and the negatives' types are %s, want 5 and integer,bigint,double,double", diff, types)
		}
		if err := db.QueryRowContext(ctx(t), "SELECT abs ?", int64(-5)).Scan(&diff); err == nil {
			t.Fatalf("SELECT abs ? with -5 ran, as abs(-5) = %d; want a syntax error as with 5", diff)
		}
	})
}

// A *sql.Stmt prepared on the pool (db.Prepare) with several parameters
// runs on both coordinators with new arguments each time: the driver
// interpolates them per execution, and each execution is a statement of
// its own, picked like any other.
func TestDriverPoolStatementAcrossCoordinators(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		db := open(t, f, ";zooKeeperStrategy=poll?user=alice")
		c := ctx(t)
		stmt, err := db.PrepareContext(c, "SELECT node_id, ? + ?, concat(?, name) FROM system.runtime.nodes CROSS JOIN tpch.tiny.nation WHERE nationkey = ?")
		if err != nil {
			t.Fatal(err)
		}
		defer stmt.Close()
		ran := map[string]int{}
		for i := range int64(4) {
			var node, named string
			var sum int64
			if err := stmt.QueryRowContext(c, i, int64(10), "n: ", i).Scan(&node, &sum, &named); err != nil {
				t.Fatalf("execution %d: %v", i, err)
			}
			if sum != i+10 || !strings.HasPrefix(named, "n: ") {
				t.Fatalf("execution %d = %d, %q", i, sum, named)
			}
			ran[node]++
		}
		if len(ran) != 2 {
			t.Fatalf("the executions ran on %v, want both coordinators", ran)
		}
	})
}

// A statement of 100 kB (the text is the POST's body, never a header) runs
// on both coordinators of each flavour.
func TestDriverLongStatementText(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		db := open(t, f, ";zooKeeperStrategy=poll?user=alice")
		long := strings.Repeat("x", 100_000)
		for i := range 2 {
			var n int64
			if err := db.QueryRowContext(ctx(t), "SELECT length('"+long+"')").Scan(&n); err != nil || n != 100_000 {
				t.Fatalf("statement %d of 100 kB: length = %d, %v", i, n, err)
			}
			var m int64
			if err := db.QueryRowContext(ctx(t), "SELECT length(?)", long).Scan(&m); err != nil || m != 100_000 {
				t.Fatalf("statement %d with a 100 kB argument: length = %d, %v", i, m, err)
			}
		}
	})
}

// A prepared statement's text travels in headers: Added-Prepare in the
// answer to PREPARE, Prepared-Statement in every later request of the
// connection (trino QueryResultsResponse and HttpRequestSessionContextFactory;
// PrestoDB QueryResourceUtil and HttpRequestSessionContext). Trino 476
// takes one of 100 kB, on both coordinators. PrestoDB 0.287 answers the
// PREPARE of a statement of 8 kB with HTTP 500 and an empty body (the
// Added-Prepare header passes Jetty's 8 kB response header buffer,
// http-server.max-response-header-size), so the statement is not prepared;
// one of 7 kB is.
func TestDriverLongPreparedStatement(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		db := open(t, f, ";zooKeeperStrategy=poll?user=alice")
		c := ctx(t)
		conn, err := db.Conn(c)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		prepared := func(size int) error {
			t.Helper()
			_, err := conn.ExecContext(c, "PREPARE long FROM SELECT length('"+strings.Repeat("x", size)+"') + ?")
			if err != nil {
				return err
			}
			for i := range 2 {
				var n int64
				if err := conn.QueryRowContext(c, "EXECUTE long USING 1").Scan(&n); err != nil || n != int64(size)+1 {
					t.Fatalf("EXECUTE %d of a statement of %d bytes = %d, %v", i, size, n, err)
				}
			}
			if _, err := conn.ExecContext(c, "DEALLOCATE PREPARE long"); err != nil {
				t.Fatal(err)
			}
			return nil
		}
		if f.flavour == coordinator.Trino {
			if err := prepared(100_000); err != nil {
				t.Fatalf("PREPARE of 100 kB: %v", err)
			}
			return
		}
		if err := prepared(7_000); err != nil {
			t.Fatalf("PREPARE of 7 kB: %v", err)
		}
		err = prepared(8_000)
		if err == nil || !strings.Contains(err.Error(), "500") {
			t.Fatalf("PREPARE of 8 kB on PrestoDB = %v, want its HTTP 500", err)
		}
		if ps := sessionOf(t, conn).PreparedStatements; len(ps) != 0 {
			t.Fatalf("after the failed PREPARE the session holds %d prepared statements", len(ps))
		}
	})
}
