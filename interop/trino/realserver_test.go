package trino_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/zkpresto/zkpresto/internal/testrig/gatewayrig"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// realTrino is the real Trino 476 (scripts/fetch-real-servers.sh) these
// tests share: started by the first of them, stopped by TestMain. Under CI
// a server that cannot start fails them; elsewhere a cache without it
// skips them.
var realTrino = &realserver.Shared{Options: realserver.Options{Flavour: coordinator.Trino}}

// realTargets are the real server behind two gateway replicas (the
// deployment of the simulator tests, with the real server as the only
// coordinator), and the real server directly.
func realTargets(t *testing.T) []target {
	t.Helper()
	server := realTrino.Server(t)
	rig := gatewayrig.Start(t, gatewayrig.Options{
		Addrs:       []string{server.Addr()},
		Coordinator: coordinator.Options{Flavour: coordinator.Trino},
	})
	return []target{
		{name: "gateway", base: rig.Front, rig: rig},
		{name: "direct", base: server.URL()},
	}
}

// A result larger than a page: Trino answers at most targetResultSize of
// rows a page (16 MB by default, trino `ExecutingStatementResource`
// `DEFAULT_TARGET_RESULT_SIZE`, counted as the pages' logical size in
// `server/protocol/Query.java` `removePagesFromExchange`), and 10,000 rows
// of 2,000 characters are 20 MB, so at least two pages. Every row arrives
// once and in order, whole.
func TestRealTrinoManyPages(t *testing.T) {
	for _, tg := range realTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			db := tg.openIn(t, "tpch", "tiny", "")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var before [2]int64
			if tg.rig != nil {
				before = tg.rig.Hits()
			}
			rows, err := db.QueryContext(ctx, "SELECT n, rpad(CAST(n AS varchar), 2000, 'x') FROM UNNEST(sequence(1, 10000)) AS t(n) ORDER BY n")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			want := int64(0)
			for rows.Next() {
				var n int64
				var s string
				if err := rows.Scan(&n, &s); err != nil {
					t.Fatal(err)
				}
				want++
				if n != want || len(s) != 2000 || !strings.HasPrefix(s, fmt.Sprint(n)+"x") {
					t.Fatalf("row %d is %d, %.20q… (%d characters)", want, n, s, len(s))
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if want != 10000 {
				t.Fatalf("%d rows, want 10000", want)
			}
			if tg.rig != nil {
				// The POST, then a GET per page: two pages at least.
				after := tg.rig.Hits()
				n := after[0] + after[1] - before[0] - before[1]
				if n < 3 {
					t.Fatalf("%d requests through the gateway, want the POST and a GET for each of two pages at least", n)
				}
				t.Logf("%d requests through the gateway", n)
			}
		})
	}
}

// Values of Trino's types as trino-go-client v1.5.0 reads them, the same
// through the gateway as directly: bigints past 2^53 exact, NaN, a
// decimal as its text, timestamp(6) with its microseconds (the client
// announces PARAMETRIC_DATETIME, trino `ProtocolHeaders`
// `X-Trino-Client-Capabilities`, `ClientCapabilities`), timestamp with a
// named zone in that zone, varbinary, arrays, NULL.
func TestRealTrinoTypes(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range realTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			db := tg.openIn(t, "tpch", "tiny", "")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var (
				big, null   sql.NullInt64
				nan, double float64
				dec, text   string
				flag        bool
				day, ts6    time.Time
				tstz        time.Time
				bin         []byte
				arr         trino.NullSlice[sql.NullInt64]
			)
			err := db.QueryRowContext(ctx, `SELECT
				BIGINT '9007199254740993', CAST(NULL AS bigint), nan(), 0.1E0 + 0.2E0,
				DECIMAL '12345678901234567890.12', 'zkpresto ✓', true,
				DATE '2024-02-29', TIMESTAMP '2024-05-06 07:08:09.123456',
				TIMESTAMP '2024-05-06 07:08:09.123 Europe/Paris',
				X'00ff10', ARRAY[1, NULL, 3]`).Scan(
				&big, &null, &nan, &double, &dec, &text, &flag, &day, &ts6, &tstz, &bin, &arr)
			if err != nil {
				t.Fatal(err)
			}
			if !big.Valid || big.Int64 != 9007199254740993 || null.Valid {
				t.Errorf("bigints %v and %v", big, null)
			}
			// The double sum, not 0.3: every bit of a double arrives.
			if !math.IsNaN(nan) || double != 0.30000000000000004 {
				t.Errorf("doubles %v and %v", nan, double)
			}
			if dec != "12345678901234567890.12" || text != "zkpresto ✓" || !flag {
				t.Errorf("decimal %q, varchar %q, boolean %v", dec, text, flag)
			}
			if got := day.Format(time.DateOnly); got != "2024-02-29" {
				t.Errorf("date %s", got)
			}
			if got := ts6.Format("2006-01-02 15:04:05.000000"); got != "2024-05-06 07:08:09.123456" {
				t.Errorf("timestamp(6) %s", got)
			}
			if want := time.Date(2024, 5, 6, 7, 8, 9, 123e6, paris); !tstz.Equal(want) || tstz.Location().String() != "Europe/Paris" {
				t.Errorf("timestamp with time zone %s, want %s", tstz, want)
			}
			if string(bin) != "\x00\xff\x10" {
				t.Errorf("varbinary %x", bin)
			}
			if !arr.Valid || len(arr.Slice) != 3 || arr.Slice[0] != (sql.NullInt64{Int64: 1, Valid: true}) ||
				arr.Slice[1].Valid || arr.Slice[2] != (sql.NullInt64{Int64: 3, Valid: true}) {
				t.Errorf("array %+v", arr)
			}
		})
	}
}

// A context cancelled while the real server runs the statement: the
// client returns context.Canceled and sends DELETE /v1/query/{id} (through
// the gateway, which passes it to the query's coordinator), and Trino
// fails the query with USER_CANCELED (trino `QueryResource.cancelQuery`,
// `QueryStateMachine.transitionToCanceled`), as system.runtime.queries
// then shows.
func TestRealTrinoCancel(t *testing.T) {
	server := realTrino.Server(t)
	for _, tg := range realTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			db := tg.openIn(t, "tpch", "tiny", "")
			// Never ends on its own: sf1000's lineitem is 6 billion rows.
			statement := "SELECT count(*) FROM tpch.sf1000.lineitem WHERE comment <> 'cancelled " + tg.name + "'"
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var before [2]int64
			if tg.rig != nil {
				before = tg.rig.Hits()
			}
			done := make(chan error, 1)
			go func() {
				var n int64
				done <- db.QueryRowContext(ctx, statement).Scan(&n)
			}()
			state := func() (string, string) {
				res, err := server.Query(context.Background(),
					"SELECT state, coalesce(error_code, '') FROM system.runtime.queries WHERE query = '"+strings.ReplaceAll(statement, "'", "''")+"'")
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Rows) != 1 {
					return "", ""
				}
				return fmt.Sprint(res.Rows[0][0]), fmt.Sprint(res.Rows[0][1])
			}
			// The client has the query's id once it polls: directly, that is
			// before the query runs (Trino creates it at the first GET,
			// `QueuedStatementResource`); through the gateway, which makes
			// that GET itself, once a request follows the POST.
			testutil.Eventually(t, time.Minute, 20*time.Millisecond, "the statement to run and the client to poll it", func() bool {
				s, _ := state()
				if tg.rig == nil {
					return s == "RUNNING"
				}
				after := tg.rig.Hits()
				return s == "RUNNING" && after[0]+after[1]-before[0]-before[1] >= 2
			})
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("the cancelled statement ended with %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the statement did not return after its context was cancelled")
			}
			var s, code string
			testutil.Eventually(t, time.Minute, 20*time.Millisecond, "the query to end on the server", func() bool {
				s, code = state()
				return s == "FAILED" || s == "FINISHED"
			})
			if s != "FAILED" || code != "USER_CANCELED" {
				t.Fatalf("the query ended %s %q, want FAILED USER_CANCELED", s, code)
			}
		})
	}
}
