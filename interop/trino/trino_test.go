package trino_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"
	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/internal/testrig/gatewayrig"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// These tests run trino-go-client v1.5.0, the client users have, with its
// defaults: X-Trino-* headers, the spooling protocol asked for
// (X-Trino-Query-Data-Encoding: json), cancellation by
// DELETE /v1/query/{id}, redirects refused, encoding/json/v2 (which, unlike
// encoding/json, matches field names exactly and refuses duplicate names
// and invalid UTF-8), and Ping by /v1/info then HEAD /v1/statement. Each
// runs through two gateway replicas, every request on the other one than
// the request before, and directly against a simulated coordinator, so
// that a difference between the two is the gateway's.

func TestMain(m *testing.M) {
	code := m.Run()
	if err := realTrino.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "trino: stopping the real server:", err)
		code = 1
	}
	if code == 0 {
		// The real server's own checks (realserver.Server.Query) use
		// http.DefaultClient: its idle connections are not a leak.
		http.DefaultClient.CloseIdleConnections()
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "trino: goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// target is where a test points the client: the gateway rig's front, or
// one simulated coordinator directly.
type target struct {
	name   string
	base   string
	coords []*coordinator.Coordinator
	rig    *gatewayrig.Rig // nil when direct
}

// targets starts both: coordinators with opts behind two gateway
// replicas, and one more coordinator with opts on its own.
func targets(t *testing.T, opts coordinator.Options) []target {
	t.Helper()
	opts.Flavour = coordinator.Trino
	rig := gatewayrig.Start(t, gatewayrig.Options{Coordinator: opts})
	direct, err := coordinator.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	return []target{
		{name: "gateway", base: rig.Front, coords: rig.Coordinators, rig: rig},
		{name: "direct", base: direct.URL(), coords: []*coordinator.Coordinator{direct}},
	}
}

func (tg target) open(t *testing.T, params string) *sql.DB {
	t.Helper()
	return tg.openIn(t, "hive", "default", params)
}

// openIn is open with the client's catalog and schema.
func (tg target) openIn(t *testing.T, catalog, schema, params string) *sql.DB {
	t.Helper()
	dsn := "http://alice@" + strings.TrimPrefix(tg.base, "http://") + "?catalog=" + catalog + "&schema=" + schema
	if params != "" {
		dsn += "&" + params
	}
	db, err := sql.Open("trino", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func (tg target) running() (n int64) {
	for _, c := range tg.coords {
		n += c.Running()
	}
	return n
}

func (tg target) calls() []coordinator.Call {
	var calls []coordinator.Call
	for _, c := range tg.coords {
		calls = append(calls, c.Calls()...)
	}
	return calls
}

// A result of many pages (inline rows: the coordinators do not spool)
// arrives complete and in order, every follow-up through the gateway on
// the other replica, and nothing is left running.
func TestManyPages(t *testing.T) {
	for _, tg := range targets(t, coordinator.Options{BatchRows: 7}) {
		t.Run(tg.name, func(t *testing.T) {
			db := tg.open(t, "")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for range 3 {
				rows, err := db.QueryContext(ctx, "SELECT * FROM rows(150)")
				if err != nil {
					t.Fatal(err)
				}
				testutil.CheckNumbered(t, rows, 150)
			}
			if tg.rig != nil {
				if h := tg.rig.Hits(); h[0] < 20 || h[1] < 20 {
					t.Fatalf("requests per replica %v: both should have served follow-ups", h)
				}
			}
			var statements int64
			for _, c := range tg.coords {
				statements += c.Statements()
			}
			if statements != 3 || tg.running() != 0 {
				t.Fatalf("%d statements, %d still running; want 3 and 0", statements, tg.running())
			}
		})
	}
}

// The spooling protocol as trino-go-client speaks it by default, in each
// of the coordinator's retrieval modes: every row once and in order, each
// segment downloaded once and acknowledged, and, with a short heartbeat
// interval and slow pages, the client's HEAD heartbeats on the current
// nextUri answered 200 (through the gateway, on a URI it handed out).
func TestSpooling(t *testing.T) {
	for _, mode := range []coordinator.SpoolingMode{coordinator.SpoolingCoordinator, coordinator.SpoolingStorage, coordinator.SpoolingRedirect} {
		t.Run(string(mode), func(t *testing.T) {
			for _, tg := range targets(t, coordinator.Options{Spooling: mode, NoInlining: true, BatchRows: 10}) {
				t.Run(tg.name, func(t *testing.T) {
					db := tg.open(t, "heartbeat_interval=20ms")
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					rows, err := db.QueryContext(ctx, "SELECT * FROM rows(100) WHERE slow(30)")
					if err != nil {
						t.Fatal(err)
					}
					testutil.CheckNumbered(t, rows, 100)
					var fromCoordinator, fromStorage, acked int64
					segments := func() bool {
						fromCoordinator, fromStorage, acked = 0, 0, 0
						for _, c := range tg.coords {
							a, b, n := c.SegmentDownloads()
							fromCoordinator, fromStorage, acked = fromCoordinator+a, fromStorage+b, acked+n
						}
						return acked >= 10
					}
					// The client acknowledges each segment from a goroutine of
					// its own that Close does not wait for (only a progress
					// callback makes it wait), so the last acknowledgements
					// may arrive after the rows are read.
					testutil.Eventually(t, 5*time.Second, 5*time.Millisecond, "10 acknowledgements", segments)
					if fromCoordinator+fromStorage != 10 || acked != 10 {
						t.Fatalf("%d segments from the coordinator, %d from storage, %d acknowledged; want 10 downloads and 10 acks",
							fromCoordinator, fromStorage, acked)
					}
					// A heartbeat on a token the client has already moved past
					// (its tick races with the next GET) gets 410, as from
					// Trino for an older token; the client counts it as a
					// failed heartbeat. Any other status is a defect.
					var ok, stale int
					for _, call := range tg.calls() {
						if call.Method != http.MethodHead || !strings.HasPrefix(call.Path, "/v1/statement/") {
							continue
						}
						switch call.Status {
						case http.StatusOK:
							ok++
						case http.StatusGone:
							stale++
						default:
							t.Errorf("heartbeat HEAD %s answered %d", call.Path, call.Status)
						}
					}
					if ok == 0 {
						t.Fatalf("no heartbeat answered 200 (%d answered 410)", stale)
					}
					if tg.running() != 0 {
						t.Fatalf("%d queries still running", tg.running())
					}
				})
			}
		})
	}
}

// Small pages come inline, as Trino sends them below its inlining limits: trino-go-client
// decodes the segments' base64 data, every row once and in order, nothing downloaded.
func TestInlineSegments(t *testing.T) {
	for _, tg := range targets(t, coordinator.Options{Spooling: coordinator.SpoolingCoordinator, BatchRows: 10}) {
		t.Run(tg.name, func(t *testing.T) {
			db := tg.open(t, "")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rows, err := db.QueryContext(ctx, "SELECT * FROM rows(100)")
			if err != nil {
				t.Fatal(err)
			}
			testutil.CheckNumbered(t, rows, 100)
			spooled := false
			for _, c := range tg.coords {
				for _, r := range c.Requests() {
					spooled = spooled || strings.Contains(r.QueryDataEncoding, "json")
				}
				if a, b, n := c.SegmentDownloads(); a+b+n != 0 {
					t.Fatalf("%d downloads and %d acks of inline segments", a+b, n)
				}
			}
			if !spooled {
				t.Fatal("the client did not ask for the spooling protocol")
			}
		})
	}
}

// A query error comes back as trino-go-client's error types, with the
// coordinator's message, name and type.
func TestQueryError(t *testing.T) {
	for _, tg := range targets(t, coordinator.Options{}) {
		t.Run(tg.name, func(t *testing.T) {
			db := tg.open(t, "")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var n int64
			err := db.QueryRowContext(ctx, "SELECT fail('boom: it''s broken')").Scan(&n)
			var failed *trino.ErrQueryFailed
			var te *trino.ErrTrino
			if !errors.As(err, &failed) || !errors.As(err, &te) {
				t.Fatalf("got %T %v, want a *trino.ErrQueryFailed around a *trino.ErrTrino", err, err)
			}
			if te.Message != "boom: it's broken" || te.ErrorName != "GENERIC_USER_ERROR" || te.ErrorType != "USER_ERROR" {
				t.Fatalf("the error is %+v", te)
			}
		})
	}
}

// A context cancelled while a statement runs: the client returns
// context.Canceled, sends DELETE /v1/query/{id} (through the gateway, to
// either replica), and the query stops on its coordinator.
func TestCancel(t *testing.T) {
	for _, tg := range targets(t, coordinator.Options{}) {
		t.Run(tg.name, func(t *testing.T) {
			db := tg.open(t, "")
			for round := range 2 {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					rows, err := db.QueryContext(ctx, "SELECT * FROM rows(3) WHERE sleep(5000)")
					if err == nil {
						for rows.Next() {
						}
						err = rows.Err()
						rows.Close()
					}
					done <- err
				}()
				// Once the client polls, it knows the query's id: a cancel
				// during its POST leaves it none to send a DELETE for (and
				// nobody else can tell whether it read the answer). Behind
				// the gateway the first GET of a statement is the
				// gateway's own, made before it answers the POST
				// (gateway/dispatch.go): the client's is the one after.
				own := 1
				if tg.rig != nil {
					own = 2
				}
				polls := func() (n int) {
					for _, call := range tg.calls() {
						if call.Method == http.MethodGet && strings.HasPrefix(call.Path, "/v1/statement/") {
							n++
						}
					}
					return n
				}
				before := polls()
				testutil.Eventually(t, 5*time.Second, 5*time.Millisecond, "the client to poll the running query", func() bool {
					return tg.running() == 1 && polls() >= before+own
				})
				cancel()
				select {
				case err := <-done:
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("round %d: the cancelled query ended with %v", round, err)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("round %d: the query did not return after its context was cancelled", round)
				}
				testutil.Eventually(t, 3*time.Second, 5*time.Millisecond, "the query to stop", func() bool { return tg.running() == 0 })
			}
			var deletes int
			for _, call := range tg.calls() {
				if call.Method == http.MethodDelete && strings.HasPrefix(call.Path, "/v1/query/") && call.Status == http.StatusNoContent {
					deletes++
				}
			}
			if deletes != 2 {
				t.Fatalf("%d DELETE /v1/query/{id} answered 204 on the coordinators, want 2", deletes)
			}
		})
	}
}

// Ping: /v1/info (whose uptime the client parses in Airlift's format,
// and which must not say starting) and HEAD /v1/statement, which the
// gateway has a coordinator answer. A starting coordinator fails Ping
// directly; behind the gateway, Ping succeeds while another is ready.
func TestPing(t *testing.T) {
	for _, tg := range targets(t, coordinator.Options{}) {
		t.Run(tg.name, func(t *testing.T) {
			db := tg.open(t, "")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for range 2 {
				if err := db.PingContext(ctx); err != nil {
					t.Fatal(err)
				}
			}
			var heads int
			for _, call := range tg.calls() {
				if call.Method == http.MethodHead && call.Path == "/v1/statement" && call.Status == http.StatusOK {
					heads++
				}
			}
			if heads != 2 {
				t.Fatalf("%d HEAD /v1/statement reached the coordinators, want 2", heads)
			}
			info := serverInfo(t, db)
			if !info.Coordinator || info.Starting || info.Uptime <= 0 || info.Uptime > time.Minute || info.NodeVersion == "" {
				t.Fatalf("server info %+v", info)
			}
		})
	}
}

// serverInfo is trino-go-client's reading of /v1/info.
func serverInfo(t *testing.T, db *sql.DB) trino.ServerInfo {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var info trino.ServerInfo
	if err := conn.Raw(func(dc any) (err error) {
		info, err = dc.(*trino.Conn).ServerInfo(context.Background())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return info
}

// timestamp(3) with time zone, as Trino types it: trino-go-client v1.5.0
// picks each column's decoder from typeSignature.rawType ("timestamp with
// time zone", the precision an argument), where v1.1.0 read the type
// name; every value arrives in its zone, NULL as NULL.
func TestTimestampWithTimeZone(t *testing.T) {
	for _, tg := range targets(t, coordinator.Options{}) {
		t.Run(tg.name, func(t *testing.T) {
			db := tg.open(t, "")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for _, zone := range []string{"Europe/Paris", "+02:00", "UTC"} {
				want := coordinator.TstzValues(zone)
				rows, err := db.QueryContext(ctx, "SELECT * FROM tstz('"+zone+"')")
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for rows.Next() {
					var n int64
					var ts sql.NullTime
					if err := rows.Scan(&n, &ts); err != nil {
						t.Fatalf("%s: %v", zone, err)
					}
					if ts.Valid {
						got = append(got, ts.Time.Format("2006-01-02 15:04:05.000 -07:00"))
					} else {
						got = append(got, "NULL")
					}
				}
				if err := rows.Err(); err != nil {
					t.Fatalf("%s: %v", zone, err)
				}
				rows.Close()
				if len(got) != len(want) {
					t.Fatalf("%s: %d rows, want %d", zone, len(got), len(want))
				}
				for i, row := range want {
					if w := wantTime(t, row[1]); got[i] != w {
						t.Fatalf("%s row %d: %s, want %s", zone, i, got[i], w)
					}
				}
			}
		})
	}
}

// wantTime is the instant a tstz value written as Presto writes it
// ("2024-05-06 07:08:09.123 Europe/Paris") stands for, in the layout
// TestTimestampWithTimeZone formats what it reads in; NULL for nil.
func wantTime(t *testing.T, v any) string {
	t.Helper()
	text, ok := v.(string)
	if !ok {
		return "NULL"
	}
	cut := strings.LastIndexByte(text, ' ')
	wall, zone := text[:cut], text[cut+1:]
	var loc *time.Location
	if zone[0] == '+' || zone[0] == '-' {
		offset, err := time.Parse("-07:00", zone)
		if err != nil {
			t.Fatal(err)
		}
		_, secs := offset.Zone()
		loc = time.FixedZone(zone, secs)
	} else {
		var err error
		if loc, err = time.LoadLocation(zone); err != nil {
			t.Fatal(err)
		}
	}
	at, err := time.ParseInLocation("2006-01-02 15:04:05.000", wall, loc)
	if err != nil {
		t.Fatal(err)
	}
	return at.Format("2006-01-02 15:04:05.000 -07:00")
}

// Rows closed after the first row, with many pages still to come: the
// client sends DELETE /v1/query/{id} (v1.5.0 does it from Close itself),
// and the query stops on its coordinator.
func TestCloseEarly(t *testing.T) {
	for _, tg := range targets(t, coordinator.Options{BatchRows: 5}) {
		t.Run(tg.name, func(t *testing.T) {
			db := tg.open(t, "")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rows, err := db.QueryContext(ctx, "SELECT * FROM rows(1000)")
			if err != nil {
				t.Fatal(err)
			}
			if !rows.Next() {
				t.Fatalf("no first row: %v", rows.Err())
			}
			if tg.running() != 1 {
				t.Fatalf("%d queries running after the first page, want 1", tg.running())
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, 3*time.Second, 5*time.Millisecond, "the query to stop", func() bool { return tg.running() == 0 })
			var deletes int
			for _, call := range tg.calls() {
				if call.Method == http.MethodDelete && strings.HasPrefix(call.Path, "/v1/query/") {
					deletes++
				}
			}
			if deletes != 1 {
				t.Fatalf("%d DELETE /v1/query/{id} reached the coordinators, want 1", deletes)
			}
		})
	}
}

// v1.5.0 retries a 502, 503 or 504 answer to any request, the POST of a
// statement included. A coordinator that dies after it accepted the
// statement, before it answered, may have run it: the gateway answers a
// query that fails (a final page, never retried), so the statement is not
// sent again, to it or to the other coordinator.
func TestNotRetriedOnceSent(t *testing.T) {
	rig := gatewayrig.Start(t, gatewayrig.Options{Coordinator: coordinator.Options{Flavour: coordinator.Trino}})
	for _, c := range rig.Coordinators {
		c.SetAnswerDelay(time.Minute)
	}
	tg := target{name: "gateway", base: rig.Front, coords: rig.Coordinators, rig: rig}
	db := tg.open(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)")
		done <- err
	}()
	testutil.Eventually(t, 5*time.Second, 5*time.Millisecond, "the statement to reach a coordinator", func() bool { return rig.Statements() == 1 })
	for _, c := range rig.Coordinators {
		if c.Statements() == 1 {
			c.Stop()
		}
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the statement did not fail after its coordinator died")
	}
	var failed *trino.ErrQueryFailed
	if !errors.As(err, &failed) || failed.StatusCode != http.StatusOK || !strings.Contains(err.Error(), "it may have run; not sent again") {
		t.Fatalf("got %v, want the query failed with the gateway's message that the statement may have run", err)
	}
	if n := rig.Statements(); n != 1 {
		t.Fatalf("the coordinators got the statement %d times, want once", n)
	}
}

// With every coordinator down, the gateway answers 503 (nothing ran),
// which v1.5.0 retries: here twice (request_retry_max_attempts=2), after
// which it fails with the gateway's status.
func TestNoCoordinator(t *testing.T) {
	rig := gatewayrig.Start(t, gatewayrig.Options{Coordinator: coordinator.Options{Flavour: coordinator.Trino}})
	for _, c := range rig.Coordinators {
		c.Stop()
	}
	tg := target{name: "gateway", base: rig.Front, coords: rig.Coordinators, rig: rig}
	db := tg.open(t, "request_retry_max_attempts=2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := rig.Hits()
	_, err := db.ExecContext(ctx, "SELECT 1")
	var failed *trino.ErrQueryFailed
	if !errors.As(err, &failed) || failed.StatusCode != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "giving up after 2 attempts") {
		t.Fatalf("got %v, want a 503 given up on after 2 attempts", err)
	}
	after := rig.Hits()
	if sent := after[0] + after[1] - before[0] - before[1]; sent != 2 {
		t.Fatalf("the client sent %d requests, want 2", sent)
	}
}

// trino-go-client v1.5.0 through a gateway in front of Presto
// coordinators (Flavour Presto, which renames the client's X-Trino-*
// headers on the way in and the coordinators' X-Presto-* answers on the
// way out): many pages, a session property set and sent back, a query
// error, and timestamp with time zone values (Presto's type, without a
// precision).
func TestPrestoCoordinatorsBehindTheGateway(t *testing.T) {
	rig := gatewayrig.Start(t, gatewayrig.Options{Coordinator: coordinator.Options{BatchRows: 9}})
	tg := target{name: "gateway", base: rig.Front, coords: rig.Coordinators, rig: rig}
	db := tg.open(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT * FROM rows(100)")
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckNumbered(t, rows, 100)
	// The client resets a connection's session when it goes back to the
	// pool (ResetSession): session state lives on a pinned *sql.Conn.
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION query_max_run_time = '1h'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	var sent bool
	for _, c := range rig.Coordinators {
		for _, r := range c.Requests() {
			if r.SQL == "SELECT 1" {
				sent = r.SessionProperties["query_max_run_time"] == "1h" && r.PrestoHeaders > 0 && r.TrinoHeaders == 0
				if !sent {
					t.Fatalf("the coordinator got session %v, %d X-Presto-* and %d X-Trino-* headers", r.SessionProperties, r.PrestoHeaders, r.TrinoHeaders)
				}
			}
		}
	}
	if !sent {
		t.Fatal("the statement after SET SESSION did not reach a coordinator")
	}
	var n int64
	err = db.QueryRowContext(ctx, "SELECT fail('boom')").Scan(&n)
	var te *trino.ErrTrino
	if !errors.As(err, &te) || te.Message != "boom" || te.ErrorName != "GENERIC_USER_ERROR" {
		t.Fatalf("got %v, want the coordinator's error", err)
	}
	r, err := db.QueryContext(ctx, "SELECT * FROM tstz('Europe/Paris')")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for r.Next() {
		var ts sql.NullTime
		if err := r.Scan(&n, &ts); err != nil {
			t.Fatal(err)
		}
		if ts.Valid {
			got = append(got, ts.Time.Format("2006-01-02 15:04:05.000 -07:00"))
		} else {
			got = append(got, "NULL")
		}
	}
	r.Close()
	want := coordinator.TstzValues("Europe/Paris")
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i, row := range want {
		if w := wantTime(t, row[1]); got[i] != w {
			t.Fatalf("row %d: %s, want %s", i, got[i], w)
		}
	}
}
