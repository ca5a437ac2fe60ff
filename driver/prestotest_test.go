package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	presto "github.com/prestodb/presto-go-client/v2"
	"github.com/prestodb/presto-go-client/v2/prestotest"

	"github.com/zkpresto/zkpresto/discovery"
	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

// These tests run the driver's core paths against presto-go-client's own
// test server (prestotest.MockPrestoServer, in the module the driver
// builds on), a second coordinator double that nobody here wrote. It
// differs from our simulator in ways a driver must not depend on: nextUri
// carries the state in its path and the slug in its query string
// (/v1/statement/QUEUED/{id}/0?slug=…), a query queues for a configurable
// number of polls, it has no /v1/info and no DELETE /v1/query/{id}, a
// DELETE on nextUri answers 200 with the CANCELLED page, and every server
// numbers its queries from 1, so two servers hand out the same query ids.

// prestotestServers starts n prestotest servers, each answering "SELECT
// name" with its own name (p1..pn, in address order as discovery sorts
// them) besides templates, and registers them in f's namespace in format.
func prestotestServers(t *testing.T, f *fleet.Fleet, n int, format discovery.Format, templates ...*prestotest.MockQueryTemplate) []*prestotest.MockPrestoServer {
	t.Helper()
	servers := make([]*prestotest.MockPrestoServer, n)
	for i := range servers {
		servers[i] = prestotest.NewMockPrestoServer()
		t.Cleanup(servers[i].Close)
	}
	slices.SortFunc(servers, func(a, b *prestotest.MockPrestoServer) int { return strings.Compare(hostOf(t, a), hostOf(t, b)) })
	for i, s := range servers {
		s.AddQuery(&prestotest.MockQueryTemplate{
			SQL:     "SELECT name",
			Columns: []presto.Column{{Name: "name", Type: "varchar"}},
			Data:    [][]any{{fmt.Sprintf("p%d", i+1)}},
		})
		for _, tmpl := range templates {
			copied := *tmpl
			s.AddQuery(&copied)
		}
		name, data, flags, err := fleet.Znode(format, discovery.Node{Addr: hostOf(t, s), Weight: 1, Version: "0.289"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Conn().Create("/"+f.Namespace+"/"+name, data, flags, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	return servers
}

func hostOf(t *testing.T, s *prestotest.MockPrestoServer) string {
	t.Helper()
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// queryInfo is what a prestotest server says at /v1/query/{id}: the
// query's state and text while it is active; FINISHED and no text once it
// is forgotten (finished, failed or cancelled).
func queryInfo(t *testing.T, s *prestotest.MockPrestoServer, id string) (state, query string) {
	t.Helper()
	resp, err := http.Get(s.URL() + "/v1/query/" + url.PathEscape(id))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct{ State, Query string }
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	return info.State, info.Query
}

// TestPrestotest runs each part against its own prestotest servers, in a
// namespace of its own on one ZooKeeper.
func TestPrestotest(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{})
	for _, part := range []struct {
		name string
		test func(*testing.T, *fleet.Fleet)
	}{
		{"DSN", testPrestotestDSN},
		{"PollAcrossServers", testPrestotestPollAcrossServers},
		{"Paging", testPrestotestPaging},
		{"Cancel", testPrestotestCancel},
		{"PingNeedsInfo", testPrestotestPing},
	} {
		t.Run(part.name, func(t *testing.T) {
			useNamespace(t, f, "prestotest-"+part.name)
			part.test(t, f)
		})
	}
}

// useNamespace creates the namespace /name and makes it f's.
func useNamespace(t *testing.T, f *fleet.Fleet, name string) {
	t.Helper()
	f.Namespace = name
	if err := fleet.CreatePath(f.Conn(), "/"+name); err != nil {
		t.Fatal(err)
	}
}

// The DSN in each registration format and with each part a user sets
// (catalog and schema in the path, user, source and session properties)
// opens a pool whose statements run on a prestotest server.
func testPrestotestDSN(t *testing.T, f *fleet.Fleet) {
	parent := f.Namespace
	for _, format := range allFormats {
		t.Run(format.String(), func(t *testing.T) {
			useNamespace(t, f, parent+"-"+format.String())
			prestotestServers(t, f, 1, format)
			for _, extra := range []string{"", "?user=alice", ";zooKeeperStrategy=poll?user=alice&source=etl&sessionProperties=query_max_run_time:1h"} {
				db := openPerStatement(t, f.DSN(extra))
				var name string
				if err := db.QueryRowContext(context.Background(), "SELECT name").Scan(&name); err != nil || name != "p1" {
					t.Fatalf("DSN %q: %q, %v", f.DSN(extra), name, err)
				}
			}
		})
	}
}

// poll sends each statement to the next prestotest server in address
// order, and every pick's result comes from the server picked.
func testPrestotestPollAcrossServers(t *testing.T, f *fleet.Fleet) {
	prestotestServers(t, f, 3, discovery.FormatZkpresto)
	db := openPerStatement(t, f.DSN(";zooKeeperStrategy=poll?user=alice"))
	var got []string
	for range 9 {
		var name string
		if err := db.QueryRowContext(context.Background(), "SELECT name").Scan(&name); err != nil {
			t.Fatal(err)
		}
		got = append(got, name)
	}
	if want := "p1 p2 p3 p1 p2 p3 p1 p2 p3"; strings.Join(got, " ") != want {
		t.Fatalf("poll served %v, want %s", got, want)
	}
}

// A result of many pages, after several polls in the queue, arrives
// complete and in order; an UPDATE's count and a failed query's error come
// back as the server sent them.
func testPrestotestPaging(t *testing.T, f *fleet.Fleet) {
	rows := make([][]any, 1000)
	for i := range rows {
		rows[i] = []any{i + 1}
	}
	count := int64(42)
	prestotestServers(t, f, 2, discovery.FormatZkpresto,
		&prestotest.MockQueryTemplate{SQL: "SELECT n", Columns: []presto.Column{{Name: "n", Type: "bigint"}}, Data: rows, DataBatches: 50, QueueBatches: 3},
		&prestotest.MockQueryTemplate{SQL: "DELETE FROM t", Columns: []presto.Column{{Name: "rows", Type: "bigint"}}, UpdateCount: &count, QueueBatches: 2},
		&prestotest.MockQueryTemplate{SQL: "SELECT broken", Columns: []presto.Column{{Name: "n", Type: "bigint"}}, QueueBatches: 2,
			Error: &presto.QueryError{Message: "line 1:8: Column 'broken' cannot be resolved", ErrorCode: 47, ErrorName: "COLUMN_NOT_FOUND", ErrorType: "USER_ERROR"}},
		// The error on the submission's own answer, and on a page after rows.
		&prestotest.MockQueryTemplate{SQL: "SELECT at once", Columns: []presto.Column{{Name: "n", Type: "bigint"}},
			Error: &presto.QueryError{Message: "line 1:1: mismatched input", ErrorCode: 1, ErrorName: "SYNTAX_ERROR", ErrorType: "USER_ERROR"}},
		&prestotest.MockQueryTemplate{SQL: "SELECT n, late", Columns: []presto.Column{{Name: "n", Type: "bigint"}}, Data: rows[:10], DataBatches: 2,
			Error: &presto.QueryError{Message: "Division by zero", ErrorCode: 8, ErrorName: "DIVISION_BY_ZERO", ErrorType: "USER_ERROR"}},
	)
	db := openPerStatement(t, f.DSN(";zooKeeperStrategy=poll?user=alice"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 2 { // once on each server
		r, err := db.QueryContext(ctx, "SELECT n")
		if err != nil {
			t.Fatal(err)
		}
		testutil.CheckNumbered(t, r, 1000)
	}
	res, err := db.ExecContext(ctx, "DELETE FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 42 {
		t.Fatalf("rows affected %d, %v; want 42", n, err)
	}
	var n int64
	err = db.QueryRowContext(ctx, "SELECT broken").Scan(&n)
	var qe *presto.QueryError
	if !errors.As(err, &qe) || qe.ErrorName != "COLUMN_NOT_FOUND" || !strings.Contains(err.Error(), "Column 'broken' cannot be resolved") {
		t.Fatalf("got %T %v, want the server's COLUMN_NOT_FOUND", err, err)
	}
	checkServerError(t, err, "COLUMN_NOT_FOUND: line 1:8: Column 'broken' cannot be resolved")
	_, err = db.ExecContext(ctx, "SELECT at once")
	checkServerError(t, err, "SYNTAX_ERROR: line 1:1: mismatched input")
	r, err := db.QueryContext(ctx, "SELECT n, late")
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for r.Next() {
		read++
	}
	if read == 0 {
		t.Errorf("no row came before the error")
	}
	checkServerError(t, r.Err(), "DIVISION_BY_ZERO: Division by zero")
	r.Close()
}

// checkServerError checks that err is a *driver.QueryError whose text is
// want, the server's name and message, then the query's id and the
// coordinator.
func checkServerError(t *testing.T, err error, want string) {
	t.Helper()
	var qe *zkdriver.QueryError
	if !errors.As(err, &qe) {
		t.Fatalf("got %T %v, want a *driver.QueryError", err, err)
	}
	if qe.QueryID == "" || !strings.HasPrefix(qe.Coordinator, "http://") {
		t.Errorf("%v: query %q on %q, want the query's id and its coordinator", err, qe.QueryID, qe.Coordinator)
	}
	if want += " (query " + qe.QueryID + " on " + qe.Coordinator + ")"; err.Error() != want {
		t.Errorf("the error reads %q, want %q", err.Error(), want)
	}
}

// recorder is an http.RoundTripper that records each request's method,
// path, query string and answer status, so a test sees what the driver sent
// to a prestotest server (which records nothing itself).
type recorder struct {
	next  *http.Transport
	mu    sync.Mutex
	calls []recorded
}

type recorded struct {
	method, host, path, query string
	status                    int
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{next: &http.Transport{}}
	t.Cleanup(r.next.CloseIdleConnections)
	return r
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	call := recorded{method: req.Method, host: req.URL.Host, path: req.URL.Path, query: req.URL.RawQuery}
	if err == nil {
		call.status = resp.StatusCode
	}
	r.mu.Lock()
	r.calls = append(r.calls, call)
	r.mu.Unlock()
	return resp, err
}

// deletes returns the DELETE requests recorded for query id on host.
func (r *recorder) deletes(host, id string) []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recorded
	for _, c := range r.calls {
		if c.method == http.MethodDelete && c.host == host && strings.Contains(c.path, "/"+id+"/") {
			out = append(out, c)
		}
	}
	return out
}

// A context cancelled while the query queues, and rows closed before the
// end: the driver returns at once and cancels the query on the server
// that runs it with DELETE on the query's nextUri, its query string (the
// slug) kept, and the server forgets the query. prestotest hands out the
// same query ids on every server, so the cancel must go to the right
// one: the same query id runs on the other server too, and is left alone.
//
// /v1/query/{id} is asked only where no cancel can be in flight:
// prestotest's handler reads the query's state after releasing its lock,
// a data race with a concurrent cancel that -race reports.
func testPrestotestCancel(t *testing.T, f *fleet.Fleet) {
	rows := make([][]any, 100)
	for i := range rows {
		rows[i] = []any{i + 1}
	}
	servers := prestotestServers(t, f, 2, discovery.FormatZkpresto,
		// 200 polls of 50 ms each: 10 s unless cancelled.
		&prestotest.MockQueryTemplate{SQL: "SELECT slow", Columns: []presto.Column{{Name: "n", Type: "bigint"}}, Data: rows, DataBatches: 100, QueueBatches: 100, Latency: 10 * time.Second},
		// 101 polls of 50 ms each, rows from the second on.
		&prestotest.MockQueryTemplate{SQL: "SELECT pages", Columns: []presto.Column{{Name: "n", Type: "bigint"}}, Data: rows, DataBatches: 100, QueueBatches: 1, Latency: 5050 * time.Millisecond},
	)
	rec := newRecorder(t)
	db, _ := openConnector(t, f.DSN(";zooKeeperStrategy=poll?user=alice"), zkdriver.WithHTTPClient(&http.Client{Transport: rec}))
	db.SetMaxIdleConns(0)

	type started struct {
		id, coordinator string
		cancel          context.CancelFunc
		done            chan error
	}
	start := func(sql string, read bool) *started {
		ctx, cancel := context.WithCancel(context.Background())
		s := &started{cancel: cancel, done: make(chan error, 1)}
		var once sync.Once
		ids := make(chan struct{})
		ctx = zkdriver.WithProgress(ctx, func(p zkdriver.Progress) {
			once.Do(func() {
				s.id, s.coordinator = p.QueryID, p.Coordinator
				close(ids)
			})
		})
		go func() {
			r, err := db.QueryContext(ctx, sql)
			if err == nil {
				if read {
					for r.Next() {
					}
					err = r.Err()
				}
				r.Close()
			}
			s.done <- err
		}()
		select {
		case <-ids:
		case <-time.After(5 * time.Second):
			t.Fatal("no progress report of the query's id")
		}
		return s
	}
	serverOf := func(s *started) (*prestotest.MockPrestoServer, *prestotest.MockPrestoServer) {
		if s.coordinator == hostOf(t, servers[0]) {
			return servers[0], servers[1]
		}
		return servers[1], servers[0]
	}
	// cancelled waits for the driver's DELETE of s's query on its server,
	// answered (prestotest has forgotten the query by then), and checks
	// that the server knows it no more.
	cancelled := func(s *started) {
		t.Helper()
		on, _ := serverOf(s)
		testutil.Eventually(t, 3*time.Second, 5*time.Millisecond, "the DELETE of query "+s.id, func() bool {
			d := rec.deletes(s.coordinator, s.id)
			return len(d) > 0 && d[0].status != 0
		})
		d := rec.deletes(s.coordinator, s.id)
		// A poll still in flight when the DELETE marks the query
		// cancelled forgets the query first, and the DELETE then gets 404
		// ("Query removed during processing"): either way it is gone.
		if len(d) != 1 || (d[0].status != http.StatusOK && d[0].status != http.StatusNotFound) || !strings.HasPrefix(d[0].path, "/v1/statement/") || !strings.HasPrefix(d[0].query, "slug=") {
			t.Fatalf("the driver's DELETEs of query %s: %+v; want one on its nextUri, slug kept, answered 200 (or 404)", s.id, d)
		}
		if _, q := queryInfo(t, on, s.id); q != "" {
			t.Fatalf("the server still has query %s after its cancel", s.id)
		}
	}

	// Two statements, one on each server, with the same query id.
	a, b := start("SELECT slow", true), start("SELECT slow", true)
	if a.id != b.id || a.coordinator == b.coordinator {
		t.Fatalf("queries %s on %s and %s on %s: want one id on two servers", a.id, a.coordinator, b.id, b.coordinator)
	}
	a.cancel()
	select {
	case err := <-a.done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled query ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the query did not return after its context was cancelled")
	}
	cancelled(a)
	_, onB := serverOf(a)
	if state, q := queryInfo(t, onB, b.id); q != "SELECT slow" || state != "QUEUED" {
		t.Fatalf("the other server's query %s with the same id is %s %q after the cancel", b.id, state, q)
	}
	if d := rec.deletes(b.coordinator, b.id); len(d) != 0 {
		t.Fatalf("the other server's query %s got DELETEs %+v", b.id, d)
	}
	b.cancel()
	<-b.done
	cancelled(b)

	// Rows closed before they are read: the driver cancels the query.
	c := start("SELECT pages", false)
	if err := <-c.done; err != nil {
		t.Fatalf("closing the rows: %v", err)
	}
	cancelled(c)
}

// Ping asks a coordinator's /v1/info whether it is ready; prestotest has
// none (404), so Ping fails, naming the server, while statements run.
func testPrestotestPing(t *testing.T, f *fleet.Fleet) {
	servers := prestotestServers(t, f, 1, discovery.FormatZkpresto)
	db := openPerStatement(t, f.DSN("?user=alice"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := db.PingContext(ctx)
	if err == nil || !strings.Contains(err.Error(), hostOf(t, servers[0])) {
		t.Fatalf("Ping: %v; want a failure naming %s", err, hostOf(t, servers[0]))
	}
	var name string
	if err := db.QueryRowContext(ctx, "SELECT name").Scan(&name); err != nil || name != "p1" {
		t.Fatalf("a statement after the failed Ping: %q, %v", name, err)
	}
}
