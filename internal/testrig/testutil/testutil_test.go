package testutil_test

import (
	"database/sql"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	presto "github.com/prestodb/presto-go-client/v2"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

func TestBufferTakesConcurrentWrites(t *testing.T) {
	var b testutil.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "w%d\n", i)
				_ = b.String() // reads race with the writes
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
}

func TestBufferLoggerWritesDebugRecords(t *testing.T) {
	var b testutil.Buffer
	b.Logger().Debug("hello", "k", "v")
	if got := b.String(); !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "msg=hello k=v") {
		t.Fatalf("logged %q", got)
	}
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	testutil.Eventually(t, 10*time.Second, time.Millisecond, "the third call", func() bool { return calls.Add(1) == 3 })
	if n := calls.Load(); n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}

func TestEventuallyFailsAtTheDeadline(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != rec {
				panic(p)
			}
		}()
		testutil.Eventually(rec, 20*time.Millisecond, time.Millisecond, "never", func() bool { return false })
	}()
	if want := "timed out after 20ms waiting for never"; rec.msg != want {
		t.Fatalf("failure %q, want %q", rec.msg, want)
	}
}

// A NewClient's pooled connection is closed when its test ends, not left
// for the server or the next test.
func TestNewClientClosesItsConnectionsAtTheEnd(t *testing.T) {
	var mu sync.Mutex
	states := map[net.Conn]http.ConnState{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		states[c] = s
		mu.Unlock()
	}
	srv.Start()
	t.Cleanup(srv.Close)
	closed := func() (bool, int) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range states {
			if s != http.StateClosed {
				return false, len(states)
			}
		}
		return true, len(states)
	}
	t.Run("client", func(t *testing.T) {
		resp, err := testutil.NewClient(t).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		testutil.Eventually(t, 5*time.Second, time.Millisecond, "the connection to go idle", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(states) == 1 && slices.Contains(slices.Collect(maps.Values(states)), http.StateIdle)
		})
	})
	testutil.Eventually(t, 5*time.Second, time.Millisecond, "the client's connection to close", func() bool {
		ok, n := closed()
		return ok && n == 1
	})
}

// CheckNumbered passes rows(n) read whole and closes it; it fails on a count
// other than n and on rows that are not one bigint.
func TestCheckNumbered(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{BatchRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	connector, err := presto.NewConnector("presto://alice@"+c.Addr(), presto.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	query := func(stmt string) *sql.Rows {
		rows, err := db.Query(stmt)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}

	rows := query("SELECT * FROM rows(5)")
	testutil.CheckNumbered(t, rows, 5)
	if err := rows.Scan(new(int64)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Scan after CheckNumbered: %v, want the rows closed", err)
	}
	for _, tc := range []struct {
		stmt string
		n    int64
		want string
	}{
		{"SELECT * FROM rows(5)", 4, "5 rows, <nil>; want 4"},
		{"SELECT * FROM rows(3)", 4, "3 rows, <nil>; want 4"},
		{"SELECT who_served_me", 1, "row 1: sql: expected 6 destination arguments"},
	} {
		rec := &fatalRecorder{TB: t}
		func() {
			defer func() {
				if p := recover(); p != nil && p != rec {
					panic(p)
				}
			}()
			testutil.CheckNumbered(rec, query(tc.stmt), tc.n)
		}()
		if !strings.Contains(rec.msg, tc.want) {
			t.Errorf("%s as rows(%d): failure %q, want %q", tc.stmt, tc.n, rec.msg, tc.want)
		}
	}
}

// TransactionNone adds NONE in the request's spelling, and only where the
// request names no transaction.
func TestTransactionNone(t *testing.T) {
	var got []http.Header
	rt := testutil.TransactionNone{Next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.Header)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})}
	for _, h := range []http.Header{
		{"X-Presto-User": {"a"}},
		{"X-Trino-User": {"a"}},
		{"X-Trino-User": {"a"}, "X-Trino-Transaction-Id": {"t1"}},
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/v1/statement", nil)
		req.Header = h
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	if got[0].Get("X-Presto-Transaction-Id") != "NONE" || got[1].Get("X-Trino-Transaction-Id") != "NONE" ||
		got[1].Get("X-Presto-Transaction-Id") != "" || got[2].Get("X-Trino-Transaction-Id") != "t1" {
		t.Fatalf("headers sent: %v", got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestUnreadable(t *testing.T) {
	for out, want := range map[string]string{
		`Query 1 failed: zkpresto gateway: coordinator 127.0.0.1:1 failed`:                  "",
		`HTTP 503 Service Unavailable: ZKPRESTO_GATEWAY: zkpresto gateway is draining`:      "",
		`Error fetching next at http://g/x returned an invalid response: JsonResponse{...}`: "invalid response",
		`[Error: {"id":"q","stats":{"state":"FAILED"}}]`:                                    `{"`,
		`Request failed with status code 500`:                                               "status code 500",
		`zkpresto: statement not run: HTTP 503 Service Unavailable`:                         "HTTP 503 Service Unavailable",
		`zkpresto: statement not run: HTTP 503 Service Unavailable; no other coordinator`:   "HTTP 503 Service Unavailable;",
	} {
		if got := testutil.Unreadable(out); got != want {
			t.Errorf("Unreadable(%q) = %q, want %q", out, got, want)
		}
	}
}
