package driver_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	zlog "github.com/rs/zerolog/log"

	"github.com/zkpresto/zkpresto/discovery"
	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

// quietPrestoClient captures what presto-go-client writes through zerolog's
// global logger during the test, and fails the test if anything was written:
// the driver must not let the client's retry chatter reach a user's stderr.
func quietPrestoClient(t testing.TB) {
	t.Helper()
	var buf testutil.Buffer
	saved := zlog.Logger
	zlog.Logger = zerolog.New(&buf)
	t.Cleanup(func() {
		zlog.Logger = saved
		if out := buf.String(); out != "" {
			t.Errorf("the Presto client logged through zerolog:\n%s", out)
		}
	})
}

// openConnector opens a pool over a connector for dsn with opts, returning
// both; the pool is closed at the test's end.
func openConnector(t testing.TB, dsn string, opts ...zkdriver.Option) (*sql.DB, *zkdriver.Connector) {
	t.Helper()
	cfg, err := zkdriver.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	connector, err := zkdriver.NewConnector(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	return db, connector
}

func registerAll(t *testing.T, f *fleet.Fleet) {
	t.Helper()
	for _, c := range f.Coordinators {
		if _, err := f.Register(c, discovery.FormatZkpresto, 1); err != nil {
			t.Fatal(err)
		}
	}
}

// accepted counts, per statement text, the submissions coordinators accepted.
func accepted(cs ...*coordinator.Coordinator) map[string]int {
	out := map[string]int{}
	for _, c := range cs {
		for _, r := range c.Requests() {
			if !r.Rejected {
				out[r.SQL]++
			}
		}
	}
	return out
}

// checkAcceptedOnce fails t for each statement the coordinators together
// accepted more than once.
func checkAcceptedOnce(t *testing.T, cs ...*coordinator.Coordinator) {
	t.Helper()
	for q, n := range accepted(cs...) {
		if n != 1 {
			t.Errorf("%q was accepted %d times", q, n)
		}
	}
}

func TestDeadCoordinatorIsEjectedAndStatementsFailOver(t *testing.T) {
	quietPrestoClient(t)
	f := fleet.StartT(t, fleet.Options{Coordinators: 3})
	registerAll(t, f)
	db, connector := openConnector(t, f.DSN(";zooKeeperStrategy=poll?user=alice"))
	dead := f.Coordinators[1]
	if err := dead.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 30 {
		var s served
		q := fmt.Sprintf("SELECT %d", i)
		if err := db.QueryRowContext(ctx, q).Scan(&s.Coordinator, &s.User, &s.Catalog, &s.Schema, &s.Source, &s.Query); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
		if s.Coordinator == dead.Name() {
			t.Fatalf("a stopped coordinator served statement %d", i)
		}
	}
	checkAcceptedOnce(t, f.Coordinators...)
	var ns *zkdriver.NodeStats
	st := connector.Stats()
	for i := range st.Nodes {
		if st.Nodes[i].Node.Addr == dead.Addr() {
			ns = &st.Nodes[i]
		}
	}
	if ns == nil || ns.Ejections == 0 || ns.Failovers == 0 || ns.LastError == "" {
		t.Fatalf("stats for the dead node: %+v", ns)
	}
}

// A starting coordinator and one whose queue is full accept the POST and
// fail the query at its dispatch (SERVER_STARTING_UP, QUERY_QUEUE_FULL;
// PrestoDB's queue at the second GET); one without workers keeps it on
// the queued resource for its wait and fails it there
// (GENERIC_INSUFFICIENT_RESOURCES). None ran, so the statement goes to a
// ready coordinator, once, and none fails while one is ready.
func TestStartingCoordinatorGetsNoStatements(t *testing.T) {
	quietPrestoClient(t)
	f := fleet.StartT(t, fleet.Options{Coordinators: 4, Coordinator: coordinator.Options{RequiredWorkersMaxWait: 100 * time.Millisecond}})
	registerAll(t, f)
	db, _ := openConnector(t, f.DSN(";zooKeeperStrategy=random?user=alice"))
	starting, noWorkers, queueFull := f.Coordinators[0], f.Coordinators[1], f.Coordinators[2]
	starting.SetStarting(true)
	noWorkers.SetNoWorkers(true)
	queueFull.SetQueueFull(true)
	for i := range 30 {
		if got := queryServed(t, db, fmt.Sprintf("SELECT %d", i)).Coordinator; got != f.Coordinators[3].Name() {
			t.Fatalf("statement %d was served by %s, which is not ready", i, got)
		}
		if _, err := db.Exec(fmt.Sprintf("SELECT %d AS exec", i)); err != nil {
			t.Fatalf("Exec %d: %v", i, err)
		}
	}
	checkAcceptedOnce(t, f.Coordinators...)
}

func TestEveryCoordinatorDownListsEachNodeTried(t *testing.T) {
	quietPrestoClient(t)
	f := fleet.StartT(t, fleet.Options{Coordinators: 3})
	registerAll(t, f)
	db, _ := openConnector(t, f.DSN(";zooKeeperStrategy=poll;retries=5?user=alice&password=hunter2-secret"))
	for _, c := range f.Coordinators {
		c.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := db.ExecContext(ctx, "SELECT 1")
	var noCoord *zkdriver.NoCoordinatorError
	if !errors.As(err, &noCoord) {
		t.Fatalf("got %v, want a NoCoordinatorError", err)
	}
	for _, c := range f.Coordinators {
		if !strings.Contains(err.Error(), c.Addr()) {
			t.Errorf("error %q does not name %s", err, c.Addr())
		}
	}
	if strings.Contains(err.Error(), "hunter2-secret") {
		t.Errorf("error %q contains the password", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the statement ran into the test's deadline instead of failing fast")
	}
	// Each coordinator tried, once, with its own cause, reachable through
	// the exported types and errors.Is.
	seen := map[string]bool{}
	for _, tried := range noCoord.Tried {
		if seen[tried.Node] || tried.Err == nil {
			t.Errorf("tried %v twice or without a cause", tried)
		}
		seen[tried.Node] = true
	}
	if len(seen) != len(f.Coordinators) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("tried %v; errors.Is(ECONNREFUSED) = %t", noCoord.Tried, errors.Is(err, syscall.ECONNREFUSED))
	}
}

// WithHealthPolicy's ejection length is the one the connector applies.
func TestWithHealthPolicySetsTheEjection(t *testing.T) {
	quietPrestoClient(t)
	live, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	dead, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	_, connector := openConnector(t, "presto://"+dead.Addr()+","+live.Addr()+"/hive;zooKeeperStrategy=poll?user=alice",
		zkdriver.WithHealthPolicy(health.Policy{BaseEjection: time.Hour, MaxEjection: time.Hour}))
	db := sql.OpenDB(connector)
	defer db.Close()
	for range 2 {
		if _, err := db.Exec("SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range connector.Stats().Nodes {
		if n.Node.Addr == dead.Addr() && (!n.Ejected || time.Until(n.EjectedUntil) < 50*time.Minute) {
			t.Errorf("dead coordinator: ejected %t until %v, want about an hour", n.Ejected, n.EjectedUntil)
		}
	}
}

// resetAfterRead is a coordinator that reads a statement in full and then
// drops the connection without answering: the statement may have started.
type resetAfterRead struct {
	l        net.Listener
	received atomic.Int64
	wg       sync.WaitGroup
}

func startResetAfterRead(t *testing.T) *resetAfterRead {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &resetAfterRead{l: l}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer conn.Close()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				r.received.Add(1)
			}()
		}
	}()
	t.Cleanup(func() { l.Close(); r.wg.Wait() })
	return r
}

func TestStatementThatReachedACoordinatorIsNeverResent(t *testing.T) {
	quietPrestoClient(t)
	bad := startResetAfterRead(t)
	good, err := coordinator.Start(coordinator.Options{Name: "good"})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	// Static mode, poll over two hosts: whichever comes first, half the
	// statements land on the one that drops them after reading.
	db, _ := openConnector(t, "presto://"+bad.l.Addr().String()+","+good.Addr()+";zooKeeperStrategy=poll?user=alice")
	db.SetMaxOpenConns(1)
	var failed int
	for i := range 6 {
		_, err := db.Exec(fmt.Sprintf("SELECT %d", i))
		if err == nil {
			continue
		}
		var se *zkdriver.StatementError
		if !errors.As(err, &se) || se.Node != bad.l.Addr().String() {
			t.Fatalf("statement %d: got %v, want a StatementError for %s", i, err, bad.l.Addr())
		}
		failed++
	}
	if int64(failed) != bad.received.Load() {
		t.Fatalf("%d statements failed but the dropping coordinator read %d: something was sent twice", failed, bad.received.Load())
	}
	if failed == 0 {
		t.Fatal("no statement reached the dropping coordinator")
	}
	for q, n := range accepted(good) {
		if n != 1 {
			t.Errorf("%q accepted %d times by the good coordinator", q, n)
		}
	}
}

func TestJoiningCoordinatorGetsItsShareOfAWarmPool(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 4})
	for _, c := range f.Coordinators[:3] {
		if _, err := f.Register(c, discovery.FormatZkpresto, 1); err != nil {
			t.Fatal(err)
		}
	}
	db, _ := openConnector(t, f.DSN(";zooKeeperStrategy=poll?user=alice"))
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)

	// Steady load on a warm pool: four workers, pooled connections.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var failures atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil && ctx.Err() == nil {
					failures.Add(1)
				}
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()
	waitFor(t, "the pool to warm up", func() bool { return f.Coordinators[0].Statements() > 20 })

	joining := f.Coordinators[3]
	joined := time.Now()
	if _, err := f.Register(joining, discovery.FormatZkpresto, 1); err != nil {
		t.Fatal(err)
	}
	// Its share under poll is a quarter; wait for the pool's next 100
	// statements to show it.
	total := func() int64 {
		var n int64
		for _, c := range f.Coordinators {
			n += c.Statements()
		}
		return n
	}
	waitFor(t, "the joining coordinator to serve", func() bool { return joining.Statements() > 0 })
	base, baseJoin := total(), joining.Statements()
	waitFor(t, "100 more statements", func() bool { return total()-base >= 100 })
	share := float64(joining.Statements()-baseJoin) / float64(total()-base)
	if share < 0.2 {
		t.Fatalf("the joining coordinator got %.0f%% of the next statements, want its quarter", share*100)
	}
	// How fast membership reaches picks is measured by the
	// MembershipLatency benchmark; this bound only catches a pool that
	// does not follow at all (the race detector on a loaded machine makes
	// the 100 statements themselves take seconds).
	if since := time.Since(joined); since > 15*time.Second {
		t.Fatalf("the joining coordinator reached its share after %s, want within 15s", since)
	}
	if failures.Load() != 0 {
		t.Fatalf("%d statements failed under steady load", failures.Load())
	}
}

func TestTransactionStaysOnOneCoordinator(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 3})
	registerAll(t, f)
	db, _ := openConnector(t, f.DSN(";zooKeeperStrategy=poll?user=alice"))
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for i := range 5 {
		var s served
		if err := tx.QueryRow(fmt.Sprintf("SELECT %d", i)).Scan(&s.Coordinator, &s.User, &s.Catalog, &s.Schema, &s.Source, &s.Query); err != nil {
			t.Fatal(err)
		}
		if first == "" {
			first = s.Coordinator
		} else if s.Coordinator != first {
			t.Fatalf("statement %d of the transaction went to %s, the transaction is on %s", i, s.Coordinator, first)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Coordinators {
		for _, r := range c.Requests() {
			if (r.SQL == "START TRANSACTION" || r.SQL == "COMMIT") && c.Name() != first {
				t.Errorf("%s went to %s, not the transaction's %s", r.SQL, c.Name(), first)
			}
		}
	}
	// Outside the transaction, statements spread again.
	seen := map[string]bool{}
	for range 3 {
		seen[queryServed(t, db, "SELECT 1").Coordinator] = true
	}
	if len(seen) != 3 {
		t.Fatalf("after the transaction, poll reached %v", seen)
	}
}

func TestRoutingKeyFromContext(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 3})
	registerAll(t, f)
	db, _ := openConnector(t, f.DSN(";zooKeeperStrategy=user_hash?user=alice"))
	nodes := map[string]bool{}
	// The coordinators' ports, and so the ring, change from run to run:
	// with six keys all landed on one of three now and then; with 32 that
	// is as good as never.
	for i := range 32 {
		key := fmt.Sprintf("tenant-%d", i)
		ctx := zkdriver.WithRoutingKey(context.Background(), key)
		var first string
		for range 3 {
			var s served
			if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&s.Coordinator, &s.User, &s.Catalog, &s.Schema, &s.Source, &s.Query); err != nil {
				t.Fatal(err)
			}
			if first == "" {
				first = s.Coordinator
			} else if s.Coordinator != first {
				t.Fatalf("key %s moved from %s to %s", key, first, s.Coordinator)
			}
		}
		nodes[first] = true
	}
	if len(nodes) < 2 {
		t.Fatalf("32 routing keys all went to %v", nodes)
	}
}

func TestStatsCountPicksAndInFlight(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 2})
	registerAll(t, f)
	db, connector := openConnector(t, f.DSN(";zooKeeperStrategy=poll?user=alice"))
	if st := connector.Stats(); st.Discovery.Open {
		t.Fatalf("discovery open before any connection: %+v", st.Discovery)
	}
	rows, err := db.Query("SELECT n FROM rows(300)")
	if err != nil {
		t.Fatal(err)
	}
	inFlight := int64(0)
	for _, n := range connector.Stats().Nodes {
		inFlight += n.InFlight
	}
	if inFlight != 1 {
		t.Fatalf("in flight while rows are open: %d, want 1", inFlight)
	}
	for rows.Next() {
	}
	rows.Close()
	for range 9 {
		queryServed(t, db, "SELECT 1")
	}
	st := connector.Stats()
	if !st.Discovery.Open || !st.Discovery.Connected || st.Discovery.Nodes != 2 || st.Strategy != "poll" {
		t.Fatalf("discovery stats %+v, strategy %q", st.Discovery, st.Strategy)
	}
	var picks uint64
	for _, n := range st.Nodes {
		picks += n.Picks
		if n.InFlight != 0 || !n.Usable {
			t.Errorf("node stats after the statements: %+v", n)
		}
	}
	if picks != 10 {
		t.Fatalf("%d picks recorded for 10 statements", picks)
	}
}

func TestCancelledStatementIsCancelledOnTheCoordinator(t *testing.T) {
	quietPrestoClient(t)
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	registerAll(t, f)
	c := f.Coordinators[0]
	db, _ := openConnector(t, f.DSN("?user=alice"))

	c.SetLatency(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := db.ExecContext(ctx, "SELECT slow")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the caller's deadline", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("the cancelled statement returned after %s", took)
	}
	waitFor(t, "the coordinator to drop the cancelled query", func() bool { return c.Running() == 0 })
	c.SetLatency(0)

	// Rows closed before the end: the rest of the query is cancelled too.
	rows, err := db.Query("SELECT n FROM rows(1000)")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	if c.Running() != 1 {
		t.Fatalf("%d queries running while rows are open", c.Running())
	}
	rows.Close()
	waitFor(t, "the coordinator to drop the abandoned query", func() bool { return c.Running() == 0 })
}

// gzipCoordinator answers like a coordinator that compresses when asked:
// a submission is QUEUED, every page has rows and a nextUri.
func gzipCoordinator(t *testing.T, deletes *atomic.Int32) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			deletes.Add(1)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next := srv.URL + "/v1/statement/executing/q1/1"
		body := fmt.Sprintf(`{"id":"q1","nextUri":%q,"columns":[{"name":"x","type":"bigint"}],"data":[[1],[2]],"stats":{"state":"RUNNING"}}`, next)
		if r.Method == http.MethodPost {
			body = fmt.Sprintf(`{"id":"q1","nextUri":%q,"stats":{"state":"QUEUED"}}`, next)
		}
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			gz.Write([]byte(body))
			gz.Close()
			return
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRowsClosedEarlyCancelCompressedQuery(t *testing.T) {
	var deletes atomic.Int32
	srv := gzipCoordinator(t, &deletes)
	db, _ := openConnector(t, "presto://"+strings.TrimPrefix(srv.URL, "http://")+"/hive?user=alice")
	rows, err := db.Query("SELECT x")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	rows.Close()
	waitFor(t, "the DELETE that cancels the rest of the query", func() bool { return deletes.Load() > 0 })
}

func TestFollowUp503HonoursTheCallersDeadline(t *testing.T) {
	quietPrestoClient(t)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.WriteHeader(http.StatusServiceUnavailable)
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			fmt.Fprintf(w, `{"id":"q1","nextUri":%q,"stats":{"state":"QUEUED"}}`, srv.URL+"/v1/statement/queued/q1/1")
		}
	}))
	t.Cleanup(srv.Close)
	db, _ := openConnector(t, "presto://"+strings.TrimPrefix(srv.URL, "http://")+"/hive?user=alice")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := db.QueryContext(ctx, "SELECT 1")
	var se *zkdriver.StatementError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a StatementError after the same-node retries", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the 503s were retried into the caller's deadline (the Presto client's own loop)")
	}
}

func TestFailedCommitRetiresTheConnection(t *testing.T) {
	var lastTx atomic.Value
	lastTx.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		lastTx.Store(r.Header.Get("X-Presto-Transaction-Id"))
		switch q := string(body); {
		case strings.HasPrefix(q, "START TRANSACTION"):
			w.Header().Set("X-Presto-Started-Transaction-Id", "tx-1")
		case q == "COMMIT":
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // the coordinator dies after reading COMMIT
			return
		}
		io.WriteString(w, `{"id":"q","stats":{"state":"FINISHED"}}`)
	}))
	t.Cleanup(srv.Close)
	db, _ := openConnector(t, "presto://"+strings.TrimPrefix(srv.URL, "http://")+"/hive?user=alice")
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err == nil {
		t.Fatal("a commit the coordinator never answered succeeded")
	}
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if got := lastTx.Load(); got != "NONE" {
		t.Fatalf("the statement after a failed commit still ran in transaction %q", got)
	}
}

// A statement whose context ends between the POST's answer and the first
// GET of its queued nextUri was never dispatched (the coordinators create
// a query at that GET): the driver still DELETEs the queued nextUri, so
// nothing stays queued there, and never dispatches it. The 204 the DELETE
// gets is no error (presto-go-client v2.1.1's CancelQuery would take it
// for one; the driver sends its own).
func TestCancelledBeforeFirstGetIsCancelledQueued(t *testing.T) {
	quietPrestoClient(t)
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	registerAll(t, f)
	c := f.Coordinators[0]
	db, _ := openConnector(t, f.DSN("?user=alice"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first report is the POST's answer: cancel before anything else is sent.
	ctx = zkdriver.WithProgress(ctx, func(zkdriver.Progress) { cancel() })
	if _, err := db.ExecContext(ctx, "SELECT 1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	waitFor(t, "the queued query to be cancelled", func() bool { return c.Running() == 0 })
	var deletes, gets int
	for _, call := range c.Calls() {
		switch {
		case call.Method == http.MethodDelete && strings.HasPrefix(call.Path, "/v1/statement/queued/"):
			deletes++
			if call.Status != http.StatusNoContent {
				t.Errorf("the DELETE of the queued nextUri was answered %d, want 204", call.Status)
			}
		case call.Method == http.MethodGet:
			gets++
		}
	}
	if deletes != 1 {
		t.Fatalf("%d DELETEs of the queued nextUri, want 1: %+v", deletes, c.Calls())
	}
	if r, q := c.Load(); r != 0 || q != 0 || gets > 1 {
		t.Fatalf("load %d running %d queued after %d GETs: the cancelled statement was dispatched and kept", r, q, gets)
	}
}

// Field order is not a promise: a page whose nextUri comes after its data
// (any JSON writer may order fields so) still tells the driver that the
// query runs on, so rows closed early cancel it, every time.
func TestNextURIAfterDataStillCancels(t *testing.T) {
	quietPrestoClient(t)
	var deletes atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
			deletes.Add(1)
			w.WriteHeader(http.StatusNoContent)
		case http.MethodPost:
			fmt.Fprintf(w, `{"id":"q1","stats":{"state":"QUEUED"},"nextUri":%q}`, srv.URL+"/v1/statement/queued/q1/x/1")
		default:
			fmt.Fprintf(w, `{"id":"q1","columns":[{"name":"x","type":"bigint"}],"data":[[1],[2]],"stats":{"state":"RUNNING"},"nextUri":%q}`,
				srv.URL+"/v1/statement/executing/q1/x/1")
		}
	}))
	t.Cleanup(srv.Close)
	db, _ := openConnector(t, "presto://"+strings.TrimPrefix(srv.URL, "http://")+"/hive?user=alice")
	for i := range 20 {
		rows, err := db.Query("SELECT x")
		if err != nil {
			t.Fatal(err)
		}
		if !rows.Next() {
			t.Fatal(rows.Err())
		}
		rows.Close()
		want := int32(i + 1)
		waitFor(t, "the DELETE of the query closed early", func() bool { return deletes.Load() >= want })
	}
	if n := deletes.Load(); n != 20 {
		t.Fatalf("%d DELETEs for 20 queries closed early", n)
	}
}
