// Package testutil holds the small helpers that the tests of several
// packages share: a buffer that running goroutines may write while the test
// reads it, a bounded wait for a condition, an HTTP client whose
// connections end with the test, a check of the rows a simulated
// coordinator's rows(n) returns, a comparison of the values a driver
// hands out, and a coordinator whose page claims more than it sends, with
// the heap's growth while it is read. Only tests import it.
package testutil

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer safe for concurrent use: a sink for the logs or
// the output of something that keeps running while the test reads what it
// wrote. The zero value is an empty buffer ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Logger returns a logger that writes every record, debug ones included, to
// b in slog's text format, so a test sees all a component says.
func (b *Buffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Eventually calls cond every poll until it returns true, and fails tb if
// it has not within timeout. what names the condition in the failure. cond
// runs on the calling goroutine, so it may itself fail tb.
func Eventually(tb testing.TB, timeout, poll time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(poll)
	}
}

// RequireTool ends a test that needs an outside program (ZooKeeper, nginx)
// when available reports it cannot run here: it skips the test, or fails it
// when the CI environment variable is set, because CI must run these tests
// (its scripts install what they need).
func RequireTool(tb testing.TB, what string, available error) {
	tb.Helper()
	if available == nil {
		return
	}
	if os.Getenv("CI") != "" {
		tb.Fatalf("%s is required in CI: %v", what, available)
	}
	tb.Skipf("skipping: %v", available)
}

// NewClient returns an HTTP client with a transport of its own, a clone of
// http.DefaultTransport, whose idle connections are closed when tb ends so
// that no connection goroutine outlives the test (goleak). Its
// CheckRedirect is the default one, which follows redirects.
func NewClient(tb testing.TB) *http.Client {
	tb.Helper()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	tb.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport}
}

// CheckNumbered reads rows of one bigint column numbered 1 to n, as the
// coordinator simulator's rows(n) returns them, fails tb unless each
// arrives once and in order and nothing else does, and closes rows,
// failing tb if closing them fails (a driver may report an error only
// then).
func CheckNumbered(tb testing.TB, rows *sql.Rows, n int64) {
	tb.Helper()
	defer rows.Close()
	want := int64(1)
	for rows.Next() {
		var got int64
		if err := rows.Scan(&got); err != nil {
			tb.Fatalf("row %d: %v", want, err)
		}
		if got != want {
			tb.Fatalf("row %d arrived as %d", want, got)
		}
		want++
	}
	if err := rows.Err(); err != nil || want != n+1 {
		tb.Fatalf("%d rows, %v; want %d", want-1, err, n)
	}
	if err := rows.Close(); err != nil {
		tb.Fatalf("closing the rows: %v", err)
	}
}

// TransactionNone sends X-*-Transaction-Id: NONE, in the request's own
// spelling, on every request that names no transaction, as JDBC does: the
// servers start a transaction only for a client that sends the header, and
// presto-go-client alone sends none.
type TransactionNone struct{ Next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (n TransactionNone) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("X-Presto-Transaction-Id") == "" && r.Header.Get("X-Trino-Transaction-Id") == "" {
		r = r.Clone(r.Context())
		if r.Header.Get("X-Trino-User") != "" {
			r.Header.Set("X-Trino-Transaction-Id", "NONE")
		} else {
			r.Header.Set("X-Presto-Transaction-Id", "NONE")
		}
	}
	return n.Next.RoundTrip(r)
}

// SameValue compares the values a driver hands out: times as the same
// instant in a zone of the same name, NaN equal to itself, byte slices by
// their bytes (nil apart from empty, as NULL is apart from X”).
func SameValue(got, want any) bool {
	switch w := want.(type) {
	case time.Time:
		g, ok := got.(time.Time)
		return ok && g.Equal(w) && g.Location().String() == w.Location().String()
	case float64:
		g, ok := got.(float64)
		return ok && (g == w || math.IsNaN(g) && math.IsNaN(w))
	case []byte:
		g, ok := got.([]byte)
		return ok && (g == nil) == (w == nil) && bytes.Equal(g, w)
	}
	return reflect.DeepEqual(got, want)
}

// LyingPage starts a coordinator on loopback whose answer claims a
// Content-Length of claimed bytes, sends the first sent bytes of a page
// and holds the rest back; it returns the answer, whose body closes
// blocked when a read waits past those bytes (what a reader reserved for
// the claim is then on the heap), and stop, which ends the answer and
// any read of it (called at the test's end too).
func LyingPage(tb testing.TB, claimed int64, sent int) (resp *http.Response, blocked <-chan struct{}, stop func()) {
	tb.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.FormatInt(claimed, 10))
		page := `{"id":"q","data":[["` + strings.Repeat("x", sent) + `"]]}`
		_, _ = io.WriteString(w, page[:sent])
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	tb.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); close(release) }) }
	tb.Cleanup(stop)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	ch := make(chan struct{})
	resp.Body = &watchedBody{ReadCloser: resp.Body, left: int64(sent), blocked: ch}
	return resp, ch, stop
}

// watchedBody closes blocked at the first read once left bytes were read.
type watchedBody struct {
	io.ReadCloser
	left    int64
	blocked chan struct{}
	once    sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.once.Do(func() { close(b.blocked) })
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// HeapGrowth returns how much the heap's allocated bytes grew from before
// to now, zero when they shrank.
func HeapGrowth(before runtime.MemStats) uint64 {
	var now runtime.MemStats
	runtime.ReadMemStats(&now)
	if now.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return now.HeapAlloc - before.HeapAlloc
}

// unreadableSigns are what a client shows when it could not read a
// failure's answer: the answer's raw JSON, or a bare status.
var unreadableSigns = []*regexp.Regexp{
	regexp.MustCompile(`\{"`),
	regexp.MustCompile(`(?i)status code 5\d\d`),
	regexp.MustCompile(`HTTP 5\d\d(?: [A-Z][a-z]+)*(?:[^:a-zA-Z ]|$)`),
	regexp.MustCompile(`(?i)invalid response`),
}

// Unreadable returns the first sign in out, what a client showed its
// user, that it could not read a failure's answer (raw JSON, "status code
// 500", an "HTTP 503" with no reason after it), or "" when there is none.
func Unreadable(out string) string {
	for _, re := range unreadableSigns {
		if m := re.FindString(out); m != "" {
			return m
		}
	}
	return ""
}
