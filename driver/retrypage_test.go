package driver_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// answerDropper stands between the driver and a coordinator and cuts the connection of the
// first GET of each executing nextUri after the coordinator answered it: the page is lost
// on the way, and the driver's retry of the same token must get it again.
type answerDropper struct {
	srv     *httptest.Server
	tr      *http.Transport
	target  string
	mu      sync.Mutex
	seen    map[string]bool
	dropped atomic.Int64
}

func startAnswerDropper(t *testing.T, target string) *answerDropper {
	t.Helper()
	p := &answerDropper{tr: &http.Transport{}, target: target, seen: map[string]bool{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.srv.Close()
		p.tr.CloseIdleConnections()
	})
	return p
}

func (p *answerDropper) serve(w http.ResponseWriter, r *http.Request) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL = &url.URL{Scheme: "http", Host: p.target, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	out.Host = r.Host // the coordinator builds its links on the proxy's address
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/executing/") {
		p.mu.Lock()
		first := !p.seen[r.URL.String()]
		p.seen[r.URL.String()] = true
		p.mu.Unlock()
		if first {
			p.dropped.Add(1)
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
				conn.Close()
			}
			return
		}
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// Every executing page's first answer is lost after the coordinator sent it: the driver
// retries the same token, the coordinator replays the page, and the rows arrive each once,
// in order; the statement ran once.
func TestRetriedPageNeitherLostNorDuplicated(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Name: "c", BatchRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := startAnswerDropper(t, c.Addr())
	db, _ := openConnector(t, "presto://"+strings.TrimPrefix(p.srv.URL, "http://")+";zooKeeperStrategy=poll?user=alice")
	rows, err := db.QueryContext(context.Background(), "SELECT * FROM rows(20)")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := int64(1)
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Fatalf("row %d arrived as %d", want, n)
		}
		want++
	}
	if err := rows.Err(); err != nil || want != 21 {
		t.Fatalf("%d rows, %v; want 20", want-1, err)
	}
	if d := p.dropped.Load(); d < 7 {
		t.Fatalf("%d answers dropped, want one for each of the 7 pages", d)
	}
	if n := c.Statements(); n != 1 {
		t.Fatalf("the statement reached the coordinator %d times, want once", n)
	}
}

// An INSERT's answers carry updateType on every executing page and updateCount from the
// page of its count on, the last one included, as the servers send them: RowsAffected is
// that count.
func TestRowsAffectedIsTheUpdateCount(t *testing.T) {
	c := startCoordinator(t, "c")
	db, _ := openConnector(t, "presto://"+c.Addr()+";zooKeeperStrategy=poll?user=alice")
	for stmt, want := range map[string]int64{
		"INSERT INTO t SELECT * FROM rows(7)":      7,
		"CREATE TABLE u AS SELECT * FROM rows(12)": 12,
		"SELECT 1": 0,
	} {
		res, err := db.ExecContext(context.Background(), stmt)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != want {
			t.Errorf("%s: RowsAffected %d, %v; want %d", stmt, n, err, want)
		}
	}
}
