package coordinator

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	presto "github.com/prestodb/presto-go-client/v2"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// start starts a coordinator that is closed when the test ends.
func start(t *testing.T, opts Options) *Coordinator {
	t.Helper()
	c, err := Start(opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// openDB opens the presto driver on c; scheme is presto or trino. Each database gets its
// own HTTP transport: a pooled connection to a coordinator that was stopped, or to an
// earlier one on a reused port, would make the client retry with a back-off.
func openDB(t *testing.T, c *Coordinator, scheme, user, pathAndQuery string) *sql.DB {
	t.Helper()
	db, _ := openDBWithTransport(t, c, scheme, user, pathAndQuery)
	return db
}

func openDBWithTransport(t *testing.T, c *Coordinator, scheme, user, pathAndQuery string) (*sql.DB, *http.Transport) {
	t.Helper()
	return openDBThrough(t, c, scheme, user, pathAndQuery, nil)
}

// openDBVia is openDB with the Presto client's requests passed through wrap.
func openDBVia(t *testing.T, c *Coordinator, scheme, user, pathAndQuery string, wrap func(http.RoundTripper) http.RoundTripper) *sql.DB {
	t.Helper()
	db, _ := openDBThrough(t, c, scheme, user, pathAndQuery, wrap)
	return db
}

func openDBThrough(t *testing.T, c *Coordinator, scheme, user, pathAndQuery string, wrap func(http.RoundTripper) http.RoundTripper) (*sql.DB, *http.Transport) {
	t.Helper()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	var rt http.RoundTripper = transport
	if wrap != nil {
		rt = wrap(transport)
	}
	connector, err := presto.NewConnector(scheme+"://"+user+"@"+c.Addr()+pathAndQuery,
		presto.WithHTTPClient(&http.Client{Transport: rt}))
	if err != nil {
		t.Fatalf("presto.NewConnector: %v", err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() {
		_ = db.Close()
		transport.CloseIdleConnections()
	})
	return db, transport
}

// pollInProgress reports whether a poll of the query is being served, waiting out latency.
func pollInProgress(c *Coordinator, id string) bool {
	q, _ := c.lookup(id)
	if q == nil {
		return false
	}
	// A poll holds the query's lock while it waits.
	if q.mu.TryLock() {
		q.mu.Unlock()
		return false
	}
	return true
}

// describeRow mirrors the default result row.
type describeRow struct {
	Coordinator string `db:"coordinator"`
	User        string `db:"user"`
	Catalog     string `db:"catalog"`
	Schema      string `db:"schema"`
	Source      string `db:"source"`
	Query       string `db:"query"`
}

func queryDescribe(ctx context.Context, db *sql.DB, stmt string) (describeRow, error) {
	var r describeRow
	err := db.QueryRowContext(ctx, stmt).Scan(&r.Coordinator, &r.User, &r.Catalog, &r.Schema, &r.Source, &r.Query)
	return r, err
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, 5*time.Millisecond, what, cond)
}

func TestDefaultRowDescribesRequest(t *testing.T) {
	c := start(t, Options{Name: "node-a"})
	db := openDB(t, c, "presto", "alice", "/hive/default?source=t&client_tags=x,y&query_max_run_time=1h&client_info=ci&timezone=UTC")

	const stmt = "SELECT whoami FROM anywhere"
	got, err := queryDescribe(context.Background(), db, stmt)
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	want := describeRow{"node-a", "alice", "hive", "default", "t", stmt}
	if got != want {
		t.Fatalf("row = %+v, want %+v", got, want)
	}

	reqs := c.Requests()
	if len(reqs) != 1 {
		t.Fatalf("Requests() has %d entries, want 1", len(reqs))
	}
	r := reqs[0]
	if r.SQL != stmt || r.User != "alice" || r.Catalog != "hive" || r.Schema != "default" || r.Source != "t" ||
		r.ClientInfo != "ci" || r.TimeZone != "UTC" || r.Trino || r.Rejected || r.QueryID == "" {
		t.Errorf("recorded request = %+v", r)
	}
	if !slices.Equal(r.ClientTags, []string{"x", "y"}) {
		t.Errorf("ClientTags = %q, want [x y]", r.ClientTags)
	}
	if r.SessionProperties["query_max_run_time"] != "1h" || len(r.SessionProperties) != 1 {
		t.Errorf("SessionProperties = %v, want query_max_run_time=1h", r.SessionProperties)
	}
	if n := c.Statements(); n != 1 {
		t.Errorf("Statements() = %d, want 1", n)
	}
	if n := c.Running(); n != 0 {
		t.Errorf("Running() = %d after the query finished, want 0", n)
	}
}

func TestSqlxSelectsIntoStruct(t *testing.T) {
	c := start(t, Options{Name: "node-b"})
	db := sqlx.NewDb(openDB(t, c, "presto", "bob", "/tpch/tiny?source=sqlx"), "presto")

	var rows []describeRow
	if err := db.Select(&rows, "SELECT ?", "it's"); err != nil {
		t.Fatalf("Select: %v", err)
	}
	want := []describeRow{{"node-b", "bob", "tpch", "tiny", "sqlx", "SELECT 'it''s'"}}
	if !slices.Equal(rows, want) {
		t.Fatalf("rows = %+v, want %+v", rows, want)
	}
}

func TestTrinoHeadersAccepted(t *testing.T) {
	c := start(t, Options{})
	db := openDB(t, c, "trino", "carol", "/tpch/sf1?source=trino-test")
	got, err := queryDescribe(context.Background(), db, "SELECT 1")
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	if got.User != "carol" || got.Catalog != "tpch" || got.Schema != "sf1" || got.Source != "trino-test" || got.Coordinator != DefaultName {
		t.Fatalf("row = %+v", got)
	}
	if reqs := c.Requests(); len(reqs) != 1 || !reqs[0].Trino {
		t.Fatalf("Requests() = %+v, want one request marked Trino", reqs)
	}
}

func TestRowsArriveInOrderAcrossBatches(t *testing.T) {
	for _, n := range []int64{0, 1, 99, 100, 101, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := start(t, Options{})
			db := openDB(t, c, "presto", "alice", "/hive/default")
			rows, err := db.Query(fmt.Sprintf("SELECT n FROM rows(%d)", n))
			if err != nil {
				t.Fatalf("query: %v", err)
			}
			defer rows.Close()
			if cols, err := rows.Columns(); err != nil || !slices.Equal(cols, []string{"n"}) {
				t.Fatalf("Columns() = %q, %v; want [n]", cols, err)
			}
			var want int64 = 1
			for rows.Next() {
				var got int64
				if err := rows.Scan(&got); err != nil {
					t.Fatalf("scan: %v", err)
				}
				if got != want {
					t.Fatalf("row %d holds %d", want, got)
				}
				want++
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("rows: %v", err)
			}
			if want-1 != n {
				t.Fatalf("got %d rows, want %d", want-1, n)
			}
			if r := c.Running(); r != 0 {
				t.Fatalf("Running() = %d after all rows were read, want 0", r)
			}
		})
	}
}

func TestFailSurfacesQueryError(t *testing.T) {
	c := start(t, Options{})
	db := openDB(t, c, "presto", "alice", "/hive/default")

	_, err := queryDescribe(context.Background(), db, "SELECT fail('it''s broken') FROM rows(5)")
	if err == nil {
		t.Fatal("query succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "it's broken") {
		t.Errorf("error %q does not carry the message", err)
	}
	var qe *presto.QueryError
	if !errors.As(err, &qe) {
		t.Fatalf("error %v (%T) is not a *presto.QueryError", err, err)
	}
	if qe.Message != "it's broken" || qe.ErrorType != "USER_ERROR" || qe.ErrorName != "GENERIC_USER_ERROR" {
		t.Errorf("QueryError = %+v", qe)
	}
	if r := c.Running(); r != 0 {
		t.Errorf("Running() = %d after the failure, want 0", r)
	}
}

func TestCountsUnderConcurrency(t *testing.T) {
	c := start(t, Options{Latency: 20 * time.Millisecond})
	const workers, users = 50, 5
	dbs := make([]*sql.DB, users)
	for u := range dbs {
		dbs[u] = openDB(t, c, "presto", fmt.Sprintf("user%d", u), "/hive/default")
	}

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() {
			db := dbs[i%users]
			if i%2 == 0 {
				row, err := queryDescribe(context.Background(), db, fmt.Sprintf("SELECT %d", i))
				if err == nil && row.User != fmt.Sprintf("user%d", i%users) {
					err = fmt.Errorf("worker %d served as %q", i, row.User)
				}
				errs <- err
				return
			}
			var count int
			rows, err := db.Query("SELECT n FROM rows(250)")
			if err == nil {
				for rows.Next() {
					count++
				}
				err = errors.Join(rows.Err(), rows.Close())
			}
			if err == nil && count != 250 {
				err = fmt.Errorf("worker %d read %d rows, want 250", i, count)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}

	if n := c.Statements(); n != workers {
		t.Errorf("Statements() = %d, want %d", n, workers)
	}
	got := c.Users()
	for u := range users {
		if got[fmt.Sprintf("user%d", u)] != workers/users {
			t.Errorf("Users() = %v, want %d per user", got, workers/users)
			break
		}
	}
	if len(got) != users {
		t.Errorf("Users() has %d users, want %d", len(got), users)
	}
	if n := len(c.Requests()); n != workers {
		t.Errorf("Requests() has %d entries, want %d", n, workers)
	}
	if r := c.Running(); r != 0 {
		t.Errorf("Running() = %d, want 0", r)
	}
}

func TestStopRefusesAndRestartReusesPort(t *testing.T) {
	c := start(t, Options{Name: "phoenix"})
	db, transport := openDBWithTransport(t, c, "presto", "alice", "/hive/default")
	if _, err := queryDescribe(context.Background(), db, "SELECT 1"); err != nil {
		t.Fatalf("query before Stop: %v", err)
	}
	addr := c.Addr()

	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	// Only a plain dial here: the client would retry a refused statement for minutes.
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = conn.Close()
		t.Fatalf("dial %s succeeded after Stop", addr)
	}
	if c.Addr() != addr {
		t.Fatalf("Addr() = %s after Stop, want %s", c.Addr(), addr)
	}

	// Connections pooled before Stop are dead; a real client finds out by a failed request.
	transport.CloseIdleConnections()
	if err := c.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if c.Addr() != addr {
		t.Fatalf("Addr() = %s after Restart, want %s", c.Addr(), addr)
	}
	row, err := queryDescribe(context.Background(), db, "SELECT 2")
	if err != nil {
		t.Fatalf("query after Restart: %v", err)
	}
	if row.Coordinator != "phoenix" {
		t.Fatalf("served by %q", row.Coordinator)
	}
	if n := c.Statements(); n != 2 {
		t.Fatalf("Statements() = %d, want 2", n)
	}
}

func TestStopAbortsWaitingPoll(t *testing.T) {
	c := start(t, Options{Latency: time.Hour})
	first := submit(t, c, "SELECT 1", http.StatusOK)
	done := make(chan error, 1)
	// The page of token 0 answers once the poll's wait is over (on PrestoDB, the first GET
	// has waited it already); the next one is the poll that waits.
	var page0 wireResults
	getJSON(t, dispatch(t, first), http.StatusOK, &page0)
	exec := page0.NextURI
	go func() {
		resp, err := rawClient.Get(exec)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("poll answered %s after Stop", resp.Status)
		}
		done <- err
	}()
	// The poll blocks for up to a second; Stop must break it rather than let it answer.
	waitFor(t, "the poll to reach the coordinator", func() bool { return pollInProgress(c, first.ID) })
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := <-done; err == nil {
		t.Fatal("poll succeeded")
	}
	if r := c.Running(); r != 0 {
		t.Fatalf("Running() = %d after Stop, want 0", r)
	}
}

func TestRestartAfterCloseFails(t *testing.T) {
	c, err := Start(Options{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := c.Restart(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Restart after Close = %v, want ErrClosed", err)
	}
}

type nodeInfo struct {
	NodeVersion struct {
		Version string `json:"version"`
	} `json:"nodeVersion"`
	Environment string `json:"environment"`
	Coordinator bool   `json:"coordinator"`
	Starting    bool   `json:"starting"`
	Uptime      string `json:"uptime"`
}

func getInfo(t *testing.T, c *Coordinator) nodeInfo {
	t.Helper()
	var info nodeInfo
	getJSON(t, c.URL()+"/v1/info", http.StatusOK, &info)
	return info
}

func TestStartingFailsAtDispatch(t *testing.T) {
	c := start(t, Options{Starting: true, Version: "9.9", RequiredWorkersMaxWait: 300 * time.Millisecond})
	info := getInfo(t, c)
	if !info.Starting || !info.Coordinator || info.NodeVersion.Version != "9.9" || info.Environment != "sim" || info.Uptime == "" {
		t.Fatalf("/v1/info while starting = %+v", info)
	}
	var state string
	getJSON(t, c.URL()+"/v1/info/state", http.StatusOK, &state)
	if state != "INACTIVE" {
		t.Fatalf("/v1/info/state = %q while starting", state)
	}
	// Accepted like any statement, failed at dispatch, never run: no 503.
	first := submit(t, c, "SELECT 1", http.StatusOK)
	if first.Stats.State != "QUEUED" || first.NextURI == "" {
		t.Fatalf("POST while starting answered %+v, want QUEUED with a nextUri", first)
	}
	var failed wireResults
	getJSON(t, first.NextURI, http.StatusOK, &failed)
	if failed.Stats.State != "FAILED" || failed.NextURI != "" || len(failed.Columns) != 0 || failed.Error == nil ||
		failed.Error.ErrorName != "SERVER_STARTING_UP" || failed.Error.ErrorCode != 65548 || failed.Error.ErrorType != "INTERNAL_ERROR" ||
		failed.Error.Message != "Presto server is still initializing" {
		t.Fatalf("first GET while starting = %+v, want FAILED with SERVER_STARTING_UP", failed)
	}
	if n := c.Statements(); n != 1 {
		t.Fatalf("Statements() = %d, want 1", n)
	}
	if reqs := c.Requests(); len(reqs) != 1 || !reqs[0].Rejected {
		t.Fatalf("Requests() = %+v, want one rejected request", reqs)
	}
	if r := c.Running(); r != 0 {
		t.Fatalf("Running() = %d, want 0", r)
	}
	// Without workers: QUEUED on the queued resource up to RequiredWorkersMaxWait, then
	// GENERIC_INSUFFICIENT_RESOURCES there, never run; /v1/info says nothing.
	c.SetStarting(false)
	c.SetNoWorkers(true)
	if info := getInfo(t, c); info.Starting {
		t.Fatalf("/v1/info without workers = %+v", info)
	}
	lonely := submit(t, c, "SELECT 'lonely'", http.StatusOK)
	next, polls := lonely.NextURI, 0
	for {
		var r wireResults
		getJSON(t, next+maxWaitParam(next, "100ms"), http.StatusOK, &r)
		polls++
		if r.Error != nil || r.NextURI == "" {
			failed = r
			break
		}
		if r.Stats.State != "QUEUED" || !strings.Contains(r.NextURI, "/v1/statement/queued/") {
			t.Fatalf("poll %d without workers = %+v, want QUEUED on the queued resource", polls, r)
		}
		next = r.NextURI
	}
	if failed.Stats.State != "FAILED" || failed.Error == nil || failed.Error.ErrorName != "GENERIC_INSUFFICIENT_RESOURCES" ||
		failed.Error.ErrorCode != 131072 || failed.Error.ErrorType != "INSUFFICIENT_RESOURCES" ||
		!strings.Contains(failed.Error.Message, "Waited 0.30s for at least 1 workers, but only 0 workers are active") {
		t.Fatalf("without workers, after the wait: %+v, want FAILED with GENERIC_INSUFFICIENT_RESOURCES", failed)
	}
	if polls < 3 {
		t.Fatalf("failed after %d polls of at most 100ms, before the 300ms wait", polls)
	}
	// A worker back within the wait: the statement runs.
	patient := submit(t, c, "SELECT 'patient'", http.StatusOK)
	var r wireResults
	getJSON(t, patient.NextURI+maxWaitParam(patient.NextURI, "20ms"), http.StatusOK, &r)
	if r.Stats.State != "QUEUED" || r.Error != nil {
		t.Fatalf("without workers = %+v, want QUEUED", r)
	}
	c.SetNoWorkers(false)
	if exec := dispatch(t, r); exec == "" {
		t.Fatal("a statement whose worker came back did not run")
	}

	// Decided at dispatch, not at the POST: submitted while starting and fetched once
	// started, it runs; submitted once started and fetched while starting, it fails.
	c.SetStarting(true)
	early := submit(t, c, "SELECT 'early'", http.StatusOK)
	c.SetStarting(false)
	if exec := dispatch(t, early); exec == "" {
		t.Fatal("a statement submitted while starting and dispatched after did not run")
	}
	late := submit(t, c, "SELECT 'late'", http.StatusOK)
	c.SetStarting(true)
	getJSON(t, late.NextURI, http.StatusOK, &failed)
	if failed.Error == nil || failed.Error.ErrorName != "SERVER_STARTING_UP" {
		t.Fatalf("dispatched while starting = %+v, want SERVER_STARTING_UP", failed)
	}
	for _, r := range c.Requests() {
		if want := r.SQL == "SELECT 'late'" || r.SQL == "SELECT 1" || r.SQL == "SELECT 'lonely'"; r.Rejected != want {
			t.Errorf("%q: Rejected %v, want %v", r.SQL, r.Rejected, want)
		}
	}

	c.SetStarting(false)
	if info := getInfo(t, c); info.Starting || info.NodeVersion.Version != "9.9" {
		t.Fatalf("/v1/info after start-up = %+v", info)
	}
	getJSON(t, c.URL()+"/v1/info/state", http.StatusOK, &state)
	if state != "ACTIVE" {
		t.Fatalf("/v1/info/state = %q after start-up", state)
	}
	db := openDB(t, c, "presto", "alice", "/hive/default")
	if _, err := queryDescribe(context.Background(), db, "SELECT 1"); err != nil {
		t.Fatalf("query after start-up: %v", err)
	}
}

// wireResults is the part of QueryResults the protocol tests look at.
type wireResults struct {
	ID      string            `json:"id"`
	NextURI string            `json:"nextUri"`
	Columns []json.RawMessage `json:"columns"`
	Data    [][]any           `json:"data"`
	Stats   struct {
		State string `json:"state"`
	} `json:"stats"`
	Error *presto.QueryError `json:"error"`
}

// rawClient sends the protocol tests' plain requests. It keeps no idle connections, so none
// can outlive a test's coordinator and confuse a later one on the same port.
var rawClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// submit posts a statement with a plain HTTP client and decodes a 200 answer.
func submit(t *testing.T, c *Coordinator, stmt string, wantStatus int) wireResults {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.URL()+"/v1/statement", strings.NewReader(stmt))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Presto-User", "raw")
	return do(t, req, wantStatus)
}

func do(t *testing.T, req *http.Request, wantStatus int) wireResults {
	t.Helper()
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s %s: %v", req.Method, req.URL, err)
	}
	if resp.StatusCode != wantStatus {
		t.Fatalf("%s %s: status %d (%s), want %d", req.Method, req.URL, resp.StatusCode, body, wantStatus)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" && resp.StatusCode == http.StatusOK {
		t.Fatalf("%s %s: Content-Type %q", req.Method, req.URL, ct)
	}
	var r wireResults
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
	}
	return r
}

// rawStatus sends a bodiless request and returns the status and body of the answer.
func rawStatus(t *testing.T, method, uri string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, uri, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s %s: %v", method, uri, err)
	}
	return resp.StatusCode, string(body)
}

// drain follows a submission's nextUris to the end and returns the last answer.
func drain(t *testing.T, first wireResults) wireResults {
	t.Helper()
	page := first
	for page.NextURI != "" {
		uri := page.NextURI
		page = wireResults{}
		getJSON(t, uri, http.StatusOK, &page)
	}
	return page
}

// dispatch makes the first GET of a submission's queued nextUri, which creates the query,
// and returns the executing nextUri of token 0: on Trino the one its QUEUED answer points
// to; on PrestoDB, whose first GET answers the executing resource's first page itself, the
// link of that page, which a GET answers again.
func dispatch(t *testing.T, first wireResults) string {
	t.Helper()
	var r wireResults
	getJSON(t, first.NextURI, http.StatusOK, &r)
	if strings.Contains(first.NextURI, "?slug=") { // PrestoDB's links
		if r.Stats.State == "QUEUED" || (r.NextURI != "" && !strings.Contains(r.NextURI, "/v1/statement/executing/")) {
			t.Fatalf("first GET of %s = %+v, want the executing resource's first page", first.NextURI, r)
		}
		return executingZero(t, first.NextURI)
	}
	if r.Stats.State != "QUEUED" || len(r.Data) != 0 || !strings.Contains(r.NextURI, "/v1/statement/executing/") {
		t.Fatalf("first GET of %s = %+v, want QUEUED pointing to an executing nextUri", first.NextURI, r)
	}
	return r.NextURI
}

// executingZero is the executing link of token 0 of the PrestoDB query whose queued link
// is queued: /v1/statement/queued/{id}/{token}?slug=... made
// /v1/statement/executing/{id}/0?slug=...
func executingZero(t *testing.T, queued string) string {
	t.Helper()
	u, err := url.Parse(queued)
	if err != nil {
		t.Fatalf("parse %s: %v", queued, err)
	}
	parts := strings.Split(u.Path, "/")
	if len(parts) != 6 || parts[3] != "queued" {
		t.Fatalf("%s is not a PrestoDB queued link", queued)
	}
	parts[3], parts[5] = "executing", "0"
	u.Path = strings.Join(parts, "/")
	return u.String()
}

func getJSON(t *testing.T, url string, wantStatus int, v any) []byte {
	t.Helper()
	resp, err := rawClient.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	if resp.StatusCode != wantStatus {
		t.Fatalf("GET %s: status %d (%s), want %d", url, resp.StatusCode, body, wantStatus)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
	}
	return body
}

func TestProtocolPagingAndReplay(t *testing.T) {
	c := start(t, Options{BatchRows: 300})
	first := submit(t, c, "SELECT * FROM rows(1000)", http.StatusOK)
	if first.Stats.State != "QUEUED" || first.NextURI == "" || len(first.Data) != 0 || first.ID == "" {
		t.Fatalf("first answer = %+v, want QUEUED with a nextUri and no data", first)
	}
	if !strings.HasPrefix(first.NextURI, c.URL()+"/") {
		t.Fatalf("nextUri %q is not absolute on %s", first.NextURI, c.URL())
	}
	if r := c.Running(); r != 1 {
		t.Fatalf("Running() = %d, want 1", r)
	}

	var batches []int
	var next int64 = 1
	uri, prev := dispatch(t, first), ""
	for uri != "" {
		var page wireResults
		body := getJSON(t, uri, http.StatusOK, &page)
		if page.ID != first.ID || len(page.Columns) != 1 || page.Error != nil {
			t.Fatalf("page = %s", body)
		}
		// A retried poll gets the same answer again.
		if again := getJSON(t, uri, http.StatusOK, nil); string(again) != string(body) {
			t.Fatalf("replayed poll answered %s, want %s", again, body)
		}
		if prev != "" {
			getJSON(t, prev, http.StatusGone, nil)
		}
		for _, row := range page.Data {
			if len(row) != 1 || row[0] != float64(next) {
				t.Fatalf("row %d = %v", next, row)
			}
			next++
		}
		batches = append(batches, len(page.Data))
		if page.NextURI == "" && page.Stats.State != "FINISHED" {
			t.Fatalf("last page in state %s", page.Stats.State)
		}
		prev, uri = uri, page.NextURI
	}
	if !slices.Equal(batches, []int{300, 300, 300, 100}) {
		t.Fatalf("batch sizes = %v, want [300 300 300 100]", batches)
	}
	if r := c.Running(); r != 0 {
		t.Fatalf("Running() = %d after the last page, want 0", r)
	}
	// The final answer stays available for a retry; older tokens are gone.
	getJSON(t, prev, http.StatusOK, nil)
	getJSON(t, strings.Replace(prev, "/3?", "/1?", 1), http.StatusGone, nil)
	getJSON(t, strings.Replace(prev, "/3?", "/4?", 1), http.StatusNotFound, nil)
}

func TestLatencyAndCancel(t *testing.T) {
	c := start(t, Options{})
	c.SetLatency(time.Hour)
	first := submit(t, c, "SELECT 1", http.StatusOK)
	var page wireResults
	getJSON(t, dispatch(t, first), http.StatusOK, &page)
	if page.Stats.State != "RUNNING" || len(page.Data) != 0 || page.NextURI == "" {
		t.Fatalf("poll before the latency passed = %+v, want RUNNING without data", page)
	}

	// A cancel answers 204 without a body (trino: ExecutingStatementResource.cancelQuery).
	if status, body := rawStatus(t, http.MethodDelete, page.NextURI); status != http.StatusNoContent || body != "" {
		t.Fatalf("cancel answered %d %q, want 204 without a body", status, body)
	}
	if r := c.Running(); r != 0 {
		t.Fatalf("Running() = %d after cancel, want 0", r)
	}
	var after wireResults
	getJSON(t, page.NextURI, http.StatusOK, &after)
	if after.Stats.State != "FAILED" || after.Error == nil || after.Error.ErrorName != "USER_CANCELED" || after.NextURI != "" {
		t.Fatalf("poll after cancel = %+v, want FAILED with USER_CANCELED", after)
	}
}

func TestClientContextCancelsQuery(t *testing.T) {
	// The client reports the cancellation it sends at debug level; keep it out of the output.
	level := zerolog.GlobalLevel()
	zerolog.SetGlobalLevel(zerolog.InfoLevel)
	defer zerolog.SetGlobalLevel(level)

	c := start(t, Options{Latency: time.Hour})
	db := openDB(t, c, "presto", "alice", "/hive/default")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := queryDescribe(ctx, db, "SELECT slow")
		errc <- err
	}()
	// Cancel while the client polls: only then does it send DELETE.
	waitFor(t, "the client to poll", func() bool {
		reqs := c.Requests()
		return len(reqs) == 1 && pollInProgress(c, reqs[0].QueryID)
	})
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("query error = %v, want context.Canceled", err)
	}
	// The client cancels the query with DELETE once its context is done.
	waitFor(t, "the query to be canceled", func() bool { return c.Running() == 0 })
}

func TestAbandonedQueriesAreDropped(t *testing.T) {
	c := start(t, Options{AbandonAfter: 20 * time.Millisecond})
	left := submit(t, c, "SELECT * FROM rows(10)", http.StatusOK)
	waitFor(t, "the unpolled query to be dropped", func() bool {
		// Each submission sweeps; finish the new query so only the abandoned one can remain.
		drain(t, submit(t, c, "SELECT 1", http.StatusOK))
		return c.Running() == 0
	})
	var page wireResults
	getJSON(t, left.NextURI, http.StatusOK, &page)
	if page.Error == nil || page.Error.ErrorName != "ABANDONED_QUERY" {
		t.Fatalf("poll of the dropped query = %+v, want ABANDONED_QUERY", page)
	}
}

func TestUnknownQueryIs404(t *testing.T) {
	c := start(t, Options{})
	first := submit(t, c, "SELECT 1", http.StatusOK)
	for _, path := range []string{
		"/v1/statement/executing/nope/1?slug=x",
		"/v1/statement/queued/" + first.ID + "/1?slug=wrongslug",
		"/v1/statement/queued/" + first.ID + "/1",
		"/v1/statement/finished/" + first.ID + "/1?slug=x",
		"/v1/unknown",
	} {
		getJSON(t, c.URL()+path, http.StatusNotFound, nil)
		req, err := http.NewRequest(http.MethodDelete, c.URL()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		do(t, req, http.StatusNotFound)
	}
	// A token that is not a number is a path no resource serves (JAX-RS cannot convert it).
	getJSON(t, c.URL()+"/v1/statement/executing/"+first.ID+"/notanumber?slug=x", http.StatusNotFound, nil)
	submit(t, c, "   ", http.StatusBadRequest)
	if r := c.Running(); r != 1 {
		t.Fatalf("Running() = %d, want the one valid query", r)
	}
}

func TestPreMintedID(t *testing.T) {
	c := start(t, Options{})
	put := func(want int) wireResults {
		req, err := http.NewRequest(http.MethodPut, c.URL()+"/v1/statement/my_query_1?slug=s", strings.NewReader("SELECT 1"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Presto-User", "raw")
		return do(t, req, want)
	}
	if r := put(http.StatusOK); r.ID != "my_query_1" || r.Stats.State != "QUEUED" {
		t.Fatalf("PUT answered %+v", r)
	}
	put(http.StatusConflict)
	req, err := http.NewRequest(http.MethodPut, c.URL()+"/v1/statement/bad%20id", strings.NewReader("SELECT 1"))
	if err != nil {
		t.Fatal(err)
	}
	do(t, req, http.StatusBadRequest)
	if n := c.Statements(); n != 3 {
		t.Fatalf("Statements() = %d, want 3", n)
	}
	if r := c.Running(); r != 1 {
		t.Fatalf("Running() = %d, want 1", r)
	}
}

func TestCancelRacesWithPolls(t *testing.T) {
	c := start(t, Options{BatchRows: 10})
	const queries, rows = 20, 2000
	var wg sync.WaitGroup
	errs := make(chan error, 2*queries)
	for range queries {
		first := submit(t, c, fmt.Sprintf("SELECT * FROM rows(%d)", rows), http.StatusOK)
		wg.Go(func() { // reads pages until the query ends one way or the other
			var read int
			for uri := first.NextURI; uri != ""; {
				page, err := fetch(http.MethodGet, uri)
				if err != nil {
					errs <- err
					return
				}
				read += len(page.Data)
				switch {
				case page.Error != nil && page.Error.ErrorName != "USER_CANCELED":
					errs <- fmt.Errorf("query %s failed: %v", first.ID, page.Error)
					return
				case page.NextURI == "" && page.Error == nil && read != rows:
					errs <- fmt.Errorf("query %s finished after %d rows", first.ID, read)
					return
				}
				uri = page.NextURI
			}
		})
		wg.Go(func() {
			if _, err := fetch(http.MethodDelete, first.NextURI); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if r := c.Running(); r != 0 {
		t.Fatalf("Running() = %d, want 0", r)
	}
}

// fetch sends a GET or DELETE to a query link and decodes the 200 answer.
func fetch(method, uri string) (wireResults, error) {
	var r wireResults
	req, err := http.NewRequest(method, uri, nil)
	if err != nil {
		return r, err
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	if method == http.MethodDelete && resp.StatusCode == http.StatusNoContent {
		return r, nil
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return r, fmt.Errorf("%s %s: status %d: %s", method, uri, resp.StatusCode, body)
	}
	return r, json.NewDecoder(resp.Body).Decode(&r)
}

func TestRequestsKeepsTheMostRecent(t *testing.T) {
	c := start(t, Options{RecordLimit: 3})
	for i := range 5 {
		submit(t, c, fmt.Sprintf("SELECT %d", i), http.StatusOK)
	}
	var got []string
	for _, r := range c.Requests() {
		got = append(got, r.SQL)
	}
	if want := []string{"SELECT 2", "SELECT 3", "SELECT 4"}; !slices.Equal(got, want) {
		t.Fatalf("Requests() SQL = %q, want %q", got, want)
	}
	if n := c.Statements(); n != 5 {
		t.Fatalf("Statements() = %d, want 5", n)
	}
}

func TestStartFleet(t *testing.T) {
	fleet, err := StartFleet(3, Options{})
	if err != nil {
		t.Fatalf("StartFleet: %v", err)
	}
	t.Cleanup(func() {
		for _, c := range fleet {
			_ = c.Close()
		}
	})
	seen := map[string]bool{}
	for i, c := range fleet {
		if want := fmt.Sprintf("c%d", i+1); c.Name() != want {
			t.Fatalf("fleet[%d].Name() = %q, want %q", i, c.Name(), want)
		}
		if seen[c.Addr()] {
			t.Fatalf("address %s used twice", c.Addr())
		}
		seen[c.Addr()] = true
		db := openDB(t, c, "presto", "alice", "/hive/default")
		row, err := queryDescribe(context.Background(), db, "SELECT 1")
		if err != nil {
			t.Fatalf("query on %s: %v", c.Name(), err)
		}
		if row.Coordinator != c.Name() {
			t.Fatalf("query on %s served by %q", c.Name(), row.Coordinator)
		}
	}
}

func TestStartFleetClosesStartedOnError(t *testing.T) {
	// Every member asks for the same fixed port, so the second cannot listen.
	taken, err := Start(Options{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	addr := taken.Addr()
	if err := taken.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := StartFleet(2, Options{Addr: addr}); err == nil {
		t.Fatal("StartFleet on one fixed port succeeded")
	}
	// The first member was closed again, so the port is free.
	again, err := Start(Options{Addr: addr})
	if err != nil {
		t.Fatalf("port %s still taken after the failed fleet: %v", addr, err)
	}
	if err := again.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                       "0.00ns",
		1500 * time.Millisecond: "1.50s",
		90 * time.Second:        "1.50m",
		36 * time.Hour:          "1.50d",
		250 * time.Microsecond:  "250.00us",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func BenchmarkDescribeStatement(b *testing.B) {
	c, err := Start(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	db, err := sql.Open("presto", "presto://bench@"+c.Addr()+"/hive/default")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := queryDescribe(ctx, db, "SELECT 1"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// With Options.TLS the coordinator serves https only, and every link it
// hands out says https.
func TestTLSServesHTTPSLinks(t *testing.T) {
	certs, err := testtls.Generate(t.TempDir(), "coordinator")
	if err != nil {
		t.Fatal(err)
	}
	serve, err := certs.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	c := start(t, Options{TLS: serve})
	if !strings.HasPrefix(c.URL(), "https://") {
		t.Fatalf("URL %s, want https://", c.URL())
	}
	trust, err := certs.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	transport := &http.Transport{TLSClientConfig: trust}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	req, _ := http.NewRequest(http.MethodPost, c.URL()+"/v1/statement", strings.NewReader("SELECT 1"))
	req.Header.Set("X-Presto-User", "alice")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		NextURI string `json:"nextUri"`
		InfoURI string `json:"infoUri"`
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil || !strings.HasPrefix(answer.NextURI, "https://"+c.Addr()+"/") || !strings.HasPrefix(answer.InfoURI, "https://") {
		t.Fatalf("answer %+v (%v): want https links to %s", answer, err, c.Addr())
	}
	plain, err := http.Post("http://"+c.Addr()+"/v1/statement", "text/plain", strings.NewReader("SELECT 1"))
	if err == nil {
		plain.Body.Close()
		if plain.StatusCode != http.StatusBadRequest {
			t.Errorf("plain http to a TLS coordinator: status %d, want Go's 400 for http to https", plain.StatusCode)
		}
	}
}

// While resetting, a submission is read whole, recorded as reset, and its
// connection reset without an answer; other requests are served, and
// statements are accepted again once it is off.
func TestResettingReadsThenResets(t *testing.T) {
	c := start(t, Options{})
	c.SetResetting(true)
	resp, err := http.Post(c.URL()+"/v1/statement", "text/plain", strings.NewReader("SELECT 1"))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a submission while resetting got an answer: %s", resp.Status)
	}
	if !errors.Is(err, syscall.ECONNRESET) && !strings.Contains(err.Error(), "EOF") {
		t.Errorf("submission while resetting: %v, want the connection reset", err)
	}
	if reqs := c.Requests(); len(reqs) != 1 || !reqs[0].Reset || reqs[0].SQL != "SELECT 1" || reqs[0].Rejected {
		t.Fatalf("Requests() = %+v, want one reset request", reqs)
	}
	if info := getInfo(t, c); info.Starting {
		t.Fatalf("/v1/info while resetting = %+v", info)
	}
	c.SetResetting(false)
	submit(t, c, "SELECT 2", http.StatusOK)
	if reqs := c.Requests(); len(reqs) != 2 || reqs[1].Reset {
		t.Fatalf("Requests() = %+v, want the second accepted", reqs)
	}
}
