package driver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// hostile is a coordinator whose every answer a test writes: it counts the
// requests it got by method.
type hostile struct {
	srv                  *httptest.Server
	posts, gets, deletes atomic.Int32
}

func startHostile(t *testing.T, tls bool, handle func(h *hostile, w http.ResponseWriter, r *http.Request)) *hostile {
	t.Helper()
	h := &hostile{}
	fn := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			h.posts.Add(1)
		case http.MethodGet:
			h.gets.Add(1)
		case http.MethodDelete:
			h.deletes.Add(1)
		}
		io.Copy(io.Discard, r.Body)
		handle(h, w, r)
	})
	if tls {
		h.srv = httptest.NewTLSServer(fn)
	} else {
		h.srv = httptest.NewServer(fn)
	}
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hostile) addr() string {
	return strings.TrimPrefix(strings.TrimPrefix(h.srv.URL, "https://"), "http://")
}

// next is a nextUri on this coordinator.
func (h *hostile) next(token int) string {
	return fmt.Sprintf("%s/v1/statement/executing/q1/x/%d", h.srv.URL, token)
}

// answer writes a Presto answer: queued with a nextUri, or the final page.
func answer(w http.ResponseWriter, next string) {
	w.Header().Set("Content-Type", "application/json")
	if next != "" {
		fmt.Fprintf(w, `{"id":"q1","infoUri":"http://x/ui","nextUri":%q,"stats":{"state":"QUEUED"}}`, next)
		return
	}
	io.WriteString(w, `{"id":"q1","infoUri":"http://x/ui","columns":[{"name":"x","type":"bigint","typeSignature":{"rawType":"bigint","arguments":[]}}],"data":[[1]],"stats":{"state":"FINISHED"}}`)
}

// serveQuery answers a POST with a nextUri and the GET of it with one row.
func serveQuery(h *hostile, w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		answer(w, h.next(1))
		return
	}
	answer(w, "")
}

// cut answers 200 with a Content-Length longer than what it writes, then
// closes the connection: a body cut by the network.
func cut(w http.ResponseWriter, partial string) {
	w.Header().Set("Content-Length", "4096")
	io.WriteString(w, partial)
	w.(http.Flusher).Flush()
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

func statementError(t *testing.T, err error, node string) *zkdriver.StatementError {
	t.Helper()
	var se *zkdriver.StatementError
	if !errors.As(err, &se) || se.Node != node {
		t.Fatalf("got %v, want a StatementError for %s", err, node)
	}
	return se
}

// 1. A redirect of the submission, absolute or relative, is never
// followed: the statement reaches one coordinator once, and the caller
// gets an error saying why.
func TestRedirectedSubmissionIsNeverFollowed(t *testing.T) {
	quietPrestoClient(t)
	other := startHostile(t, false, serveQuery)
	for _, tc := range []struct{ name, location string }{
		{"absolute 307", other.srv.URL + "/v1/statement"},
		{"relative 308", "/v1/statement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := http.StatusTemporaryRedirect
			if strings.HasPrefix(tc.name, "relative") {
				status = http.StatusPermanentRedirect
			}
			h := startHostile(t, false, func(h *hostile, w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tc.location, status)
			})
			db, _ := openConnector(t, "presto://"+h.addr()+"/hive;retries=3?user=alice")
			_, err := db.Exec("SELECT 1")
			se := statementError(t, err, h.addr())
			var re *wire.RedirectError
			if !errors.As(se, &re) || re.Status != status || !strings.Contains(err.Error(), "not followed") {
				t.Fatalf("got %v, want a RedirectError %d", err, status)
			}
			if h.posts.Load() != 1 || other.posts.Load() != 0 {
				t.Fatalf("the statement reached the redirecting coordinator %d times and the target %d times, want 1 and 0",
					h.posts.Load(), other.posts.Load())
			}
		})
	}
	// A redirect of a follow-up is not followed either.
	h := startHostile(t, false, func(h *hostile, w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			answer(w, h.next(1))
			return
		}
		http.Redirect(w, r, other.next(1), http.StatusFound)
	})
	db, _ := openConnector(t, "presto://"+h.addr()+"/hive?user=alice")
	_, err := db.Exec("SELECT 1")
	var re *wire.RedirectError
	if statementError(t, err, h.addr()); !errors.As(err, &re) || other.gets.Load() != 0 {
		t.Fatalf("follow-up redirect: %v; the target got %d GETs", err, other.gets.Load())
	}
}

// 2. A nextUri on another host is never requested: the error names both,
// and the other host never sees the user's credentials. With ssl_* keys,
// nothing goes over plain http.
func TestFollowUpsOnlyGoToThePickedCoordinator(t *testing.T) {
	quietPrestoClient(t)
	var sawAuth atomic.Bool
	other := startHostile(t, false, func(h *hostile, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			sawAuth.Store(true)
		}
		answer(w, "")
	})
	h := startHostile(t, false, func(h *hostile, w http.ResponseWriter, r *http.Request) {
		answer(w, other.next(1))
	})
	db, _ := openConnector(t, "presto://alice:s3cret-pass@"+h.addr()+"/hive")
	_, err := db.Exec("SELECT 1")
	statementError(t, err, h.addr())
	var fe *wire.ForeignURIError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), h.addr()) || !strings.Contains(err.Error(), other.addr()) {
		t.Fatalf("got %v, want a ForeignURIError naming %s and %s", err, h.addr(), other.addr())
	}
	if other.gets.Load() != 0 || sawAuth.Load() {
		t.Fatalf("the other host got %d requests (credentials: %t)", other.gets.Load(), sawAuth.Load())
	}
	if strings.Contains(err.Error(), "s3cret-pass") {
		t.Fatalf("error %q holds the password", err)
	}

	// https coordinator handing out an http nextUri on its own host.
	tlsHost := startHostile(t, true, func(h *hostile, w http.ResponseWriter, r *http.Request) {
		answer(w, strings.Replace(h.next(1), "https://", "http://", 1))
	})
	db, _ = openConnector(t, "presto://"+tlsHost.addr()+"/hive?user=alice&ssl_skip_verify=true")
	_, err = db.Exec("SELECT 1")
	if !errors.As(err, &fe) || !strings.Contains(fe.URI, "http://") || tlsHost.gets.Load() != 0 {
		t.Fatalf("downgrade: got %v; GETs %d", err, tlsHost.gets.Load())
	}
}

// 4. A body cut by the network, or a 200 that is not JSON: a
// StatementError on the submission (it may have run), counted as a failure
// of the coordinator; a GET is retried on the same coordinator.
func TestCutAndMalformedPages(t *testing.T) {
	quietPrestoClient(t)
	for _, tc := range []struct {
		name  string
		write func(w http.ResponseWriter)
	}{
		{"cut body", func(w http.ResponseWriter) { cut(w, `{"id":"q1","nextUri":"`) }},
		{"HTML page", func(w http.ResponseWriter) { io.WriteString(w, "<html><body>proxy error</body></html>") }},
		{"truncated JSON", func(w http.ResponseWriter) { io.WriteString(w, `{"id":"q1","stats":{`) }},
	} {
		t.Run("submission "+tc.name, func(t *testing.T) {
			h := startHostile(t, false, func(h *hostile, w http.ResponseWriter, r *http.Request) { tc.write(w) })
			db, connector := openConnector(t, "presto://"+h.addr()+"/hive?user=alice")
			_, err := db.Exec("SELECT 1")
			statementError(t, err, h.addr())
			var pe *wire.PageError
			if !errors.As(err, &pe) || h.posts.Load() != 1 {
				t.Fatalf("got %v after %d POSTs, want one POST and a PageError", err, h.posts.Load())
			}
			if st := connector.Stats(); st.Nodes[0].Failures != 1 || st.Nodes[0].LastError == "" {
				t.Fatalf("the coordinator's failure was not counted: %+v", st.Nodes[0])
			}
		})
		t.Run("follow-up "+tc.name, func(t *testing.T) {
			var bad atomic.Int32
			h := startHostile(t, false, func(h *hostile, w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					answer(w, h.next(1))
					return
				}
				if bad.Add(1) == 1 {
					tc.write(w)
					return
				}
				answer(w, "")
			})
			db, _ := openConnector(t, "presto://"+h.addr()+"/hive?user=alice")
			var x int64
			if err := db.QueryRow("SELECT 1").Scan(&x); err != nil || x != 1 {
				t.Fatalf("got %d, %v; want the retried page", x, err)
			}
			if h.gets.Load() != 2 || h.posts.Load() != 1 {
				t.Fatalf("%d POSTs and %d GETs, want 1 and 2 (one retry on the same coordinator)", h.posts.Load(), h.gets.Load())
			}
		})
	}
}

// 5. A coordinator (or its proxy) that answers every submission with 429,
// 502 or 504 is ejected like one that refuses, and the statement runs
// elsewhere.
func TestRefusalsEjectLike503(t *testing.T) {
	quietPrestoClient(t)
	good := startHostile(t, false, serveQuery)
	for _, status := range []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			bad := startHostile(t, false, func(h *hostile, w http.ResponseWriter, r *http.Request) {
				http.Error(w, "busy", status)
			})
			db, connector := openConnector(t, "presto://"+bad.addr()+","+good.addr()+"/hive;zooKeeperStrategy=poll?user=alice")
			for i := range 4 {
				if _, err := db.Exec("SELECT 1"); err != nil {
					t.Fatalf("statement %d: %v", i, err)
				}
			}
			for _, n := range connector.Stats().Nodes {
				if n.Node.Addr == bad.addr() && (n.Ejections == 0 || n.Failovers == 0) {
					t.Fatalf("a coordinator answering %d was not ejected: %+v", status, n)
				}
			}
		})
	}
}

// 7. A deadline that fires while a page is read is a deadline, not a
// cancellation.
func TestDeadlineDuringABodyIsADeadline(t *testing.T) {
	quietPrestoClient(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	h := startHostile(t, false, func(h *hostile, w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			serveQuery(h, w, r)
			return
		}
		w.Header().Set("Content-Length", "4096")
		io.WriteString(w, `{"id":"q1",`)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	db, _ := openConnector(t, "presto://"+h.addr()+"/hive?user=alice")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var x int64
	err := db.QueryRowContext(ctx, "SELECT 1").Scan(&x)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want an error that is context.DeadlineExceeded and not Canceled", err)
	}
}

// 6. Every query a coordinator accepted receives its DELETE, wherever the
// caller gave up: before the POST was answered (the coordinator is slow to
// answer it), between pages, or never. After a storm of cancellations,
// none is left running.
func TestCancellationStormLeavesNothingRunning(t *testing.T) {
	quietPrestoClient(t)
	c, err := coordinator.Start(coordinator.Options{Latency: 60 * time.Millisecond, BatchRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetAnswerDelay(25 * time.Millisecond)
	db, _ := openConnector(t, "presto://"+c.Addr()+"/hive?user=alice")
	db.SetMaxOpenConns(32)
	const statements = 1000
	rng := rand.New(rand.NewPCG(1, 2))
	delays := make([]time.Duration, statements)
	for i := range delays {
		delays[i] = time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var completed atomic.Int32
	for i := range statements {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), delays[i])
			defer cancel()
			rows, err := db.QueryContext(ctx, "SELECT * FROM rows(30)")
			if err != nil {
				return
			}
			defer rows.Close()
			for rows.Next() {
			}
			if rows.Err() == nil {
				completed.Add(1)
			}
		})
	}
	wg.Wait()
	// The cancels of up to 32 statements go out in the background; on a
	// loaded machine the last take longer than waitFor's 15 s. The
	// simulator drops an unpolled query only after a minute, so a cancel
	// that never came still fails within this wait.
	testutil.Eventually(t, 45*time.Second, time.Millisecond, "every accepted query to be cancelled or finished", func() bool { return c.Running() == 0 })
	if c.Statements() == 0 || completed.Load() == statements {
		t.Fatalf("the storm did not storm: %d submissions reached the coordinator, %d of %d completed", c.Statements(), completed.Load(), statements)
	}
	t.Logf("%d submissions reached the coordinator, %d statements completed, 0 left running", c.Statements(), completed.Load())
}

// 8. db.Close while statements page through large results: once they
// end, no connection to the coordinator stays open.
func TestCloseLeavesNoConnectionOpen(t *testing.T) {
	quietPrestoClient(t)
	c, err := coordinator.Start(coordinator.Options{BatchRows: 50})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	db, _ := openConnector(t, "presto://"+c.Addr()+"/hive?user=alice")
	const statements = 20
	var started, wg sync.WaitGroup
	started.Add(statements)
	errs := make(chan error, statements)
	for range statements {
		wg.Go(func() {
			rows, err := db.Query("SELECT * FROM rows(5000)")
			started.Done()
			if err != nil {
				errs <- err
				return
			}
			defer rows.Close()
			for rows.Next() {
			}
			errs <- rows.Err()
		})
	}
	started.Wait()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the connections to close", func() bool { return c.OpenConns() == 0 })
}
