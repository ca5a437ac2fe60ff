package realservers

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// createSlowTable creates on every server of f the slowTable of 100,000 s (more than a day)
// (a blackhole table lives on its coordinator only): a query of it runs
// until it is cancelled. It returns the table's name, the same on each.
func createSlowTable(t *testing.T, f *flavourFleet) string {
	t.Helper()
	name := ""
	for _, s := range f.servers {
		name = slowTable(t, s, 100000)
	}
	return name
}

var cancelTags atomic.Int64

// cancelTag is a tag unique to one statement of this test binary, to find
// it in system.runtime.queries.
func cancelTag() string {
	return fmt.Sprintf("zkcancel-%d-%d", time.Now().UnixNano(), cancelTags.Add(1))
}

// serverQuery is one query a coordinator lists.
type serverQuery struct {
	server    *realserver.Server
	id, state string
	errorName string // of the query's failure, "" for none
	// queuedUnlisted: system.runtime.queries does not list it (PrestoDB
	// lists the queries of its query manager only, not those still
	// queued in a resource group: presto-main-base
	// connector/system/QuerySystemTable reads QueryManager.getQueries).
	queuedUnlisted bool
}

// queriesTagged lists the queries whose text holds tag, on every server of
// f: system.runtime.queries (trino connector/system/QuerySystemTable,
// PrestoDB the same) for their ids and states, and GET /v1/query
// (QueryResource, both: BasicQueryInfo) for their errors and for the
// queries PrestoDB's table leaves out. The table's listing spells the tag
// split in two, so it never finds itself.
func queriesTagged(t *testing.T, f *flavourFleet, tag string) []serverQuery {
	t.Helper()
	half := len(tag) / 2
	var out []serverQuery
	for _, s := range f.servers {
		res, err := s.Query(ctx(t), "SELECT query_id, state FROM system.runtime.queries WHERE strpos(query, '"+tag[:half]+"' || '"+tag[half:]+"') > 0")
		if err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
		listed := map[string]string{}
		for _, row := range res.Rows {
			listed[row[0].(string)] = row[1].(string)
		}
		for _, q := range restQueries(t, s) {
			if !strings.Contains(q.Query, tag) {
				continue
			}
			sq := serverQuery{server: s, id: q.QueryID, state: q.State}
			if q.ErrorCode != nil {
				sq.errorName = q.ErrorCode.Name
			}
			if st, ok := listed[q.QueryID]; ok {
				sq.state = st
				delete(listed, q.QueryID)
			} else {
				sq.queuedUnlisted = true
			}
			out = append(out, sq)
		}
		for id, st := range listed {
			out = append(out, serverQuery{server: s, id: id, state: st})
		}
	}
	return out
}

// restQueries is GET /v1/query on s.
func restQueries(t *testing.T, s *realserver.Server) []realserver.QueryInfo {
	t.Helper()
	qs, err := s.Queries(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

// waitForQuery polls the servers of f until the one query tagged tag is in
// one of states, and returns it.
func waitForQuery(t *testing.T, f *flavourFleet, tag string, states ...string) serverQuery {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		qs := queriesTagged(t, f, tag)
		if len(qs) > 1 {
			t.Fatalf("%d queries are tagged %s, want one: %+v", len(qs), tag, qs)
		}
		if len(qs) == 1 {
			for _, st := range states {
				if qs[0].state == st {
					return qs[0]
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the query tagged %s is %+v after a minute, want one in %v", tag, qs, states)
		}
		time.Sleep(100 * time.Millisecond) // polling the servers, not waiting for time to pass
	}
}

// endedCancelled checks, within cancelBound, that every query tagged tag
// on f's servers failed with USER_CANCELED (a query a coordinator never
// listed never ran).
func endedCancelled(t *testing.T, f *flavourFleet, tag string) []serverQuery {
	t.Helper()
	start := time.Now()
	deadline := start.Add(cancelBound)
	for {
		qs := queriesTagged(t, f, tag)
		done := true
		for _, q := range qs {
			if q.state != "FAILED" || q.errorName != "USER_CANCELED" {
				done = false
			}
		}
		if done {
			t.Logf("the queries tagged %s ended within %v: %+v", tag, time.Since(start).Round(10*time.Millisecond), qs)
			return qs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the cancellation the queries tagged %s are %+v, want FAILED with USER_CANCELED", cancelBound, tag, qs)
		}
		time.Sleep(100 * time.Millisecond) // polling the servers
	}
}

// cancelBound bounds how long a cancelled statement may take to return,
// and its query to end on its coordinator: the queries here would run for
// a day otherwise.
const cancelBound = 15 * time.Second

// outcome is what a statement run in the background returned.
type outcome struct {
	err   error
	rows  int
	ended time.Time
}

// runInBackground runs query on db under c, reading every row, and sends
// what it returned.
func runInBackground(c context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() { o.ended = time.Now(); done <- o }()
		rows, err := db.QueryContext(c, query)
		if err != nil {
			o.err = err
			return
		}
		defer rows.Close()
		for rows.Next() {
			o.rows++
		}
		o.err = rows.Err()
	}()
	return done
}

// returnedCancelled checks that the statement of done returned within
// cancelBound of cancelled, with an error that is want.
func returnedCancelled(t *testing.T, done <-chan outcome, cancelled time.Time, want error) {
	t.Helper()
	select {
	case o := <-done:
		if !errors.Is(o.err, want) {
			t.Fatalf("the cancelled statement returned %d rows and %v (%T), want %v", o.rows, o.err, o.err, want)
		}
		// The error names the URI it was polling, without its slug.
		if text := o.err.Error(); strings.Contains(text, "/v1/statement/") && !strings.Contains(text, "REDACTED") {
			t.Fatalf("the cancelled statement's error names its nextUri's slug: %v", o.err)
		}
		t.Logf("the statement returned %v after the cancellation: %v", o.ended.Sub(cancelled).Round(time.Millisecond), o.err)
	case <-time.After(cancelBound):
		t.Fatalf("the statement had not returned %s after its context was cancelled", cancelBound)
	}
}

// A statement cancelled by its context while it waits in its resource
// group's queue returns context.Canceled at once, and its query ends on the
// coordinator FAILED with USER_CANCELED without running: the driver sends
// DELETE on the queued nextUri (trino QueuedStatementResource.cancelQuery,
// DispatchManager.cancelQuery; PrestoDB the same).
func TestDriverCancelWhileQueued(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		table := createSlowTable(t, f)
		// The tight group of each coordinator runs one statement: with one
		// of its own on each, the driver's waits in the queue wherever it
		// goes.
		for _, s := range f.servers {
			running := submitRaw(t, s.URL(), s.Flavour(), queueSource, "SELECT count(*) FROM "+table)
			running.advanceUntil("RUNNING")
		}
		db := open(t, f, "?user=alice&source="+queueSource)
		tag := cancelTag()
		c, cancel := context.WithCancel(ctx(t))
		defer cancel()
		done := runInBackground(c, db, "SELECT count(*) FROM "+table+" /* "+tag+" */")
		q := waitForQuery(t, f, tag, "QUEUED")
		cancelled := time.Now()
		cancel()
		returnedCancelled(t, done, cancelled, context.Canceled)
		for _, q := range endedCancelled(t, f, tag) {
			t.Logf("%s: query %s %s %s", q.server.Name(), q.id, q.state, q.errorName)
		}
		t.Logf("queued on %s as %s (left out of system.runtime.queries: %v)", q.server.Name(), q.id, q.queuedUnlisted)
	})
}

// A statement cancelled by its context while it runs (a count of the slow
// table: no row before its end) returns context.Canceled at once, and its
// query ends FAILED with USER_CANCELED: the driver sends DELETE on the
// executing nextUri (trino ExecutingStatementResource.cancelQuery,
// protocol Query.cancel; PrestoDB the same). A deadline does the same with
// context.DeadlineExceeded.
func TestDriverCancelWhileRunning(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		table := createSlowTable(t, f)
		db := open(t, f, "?user=alice")
		t.Run("cancel", func(t *testing.T) {
			// On one connection whose session USE changed: the session
			// outlives the cancelled statement.
			conn, err := db.Conn(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx(t), "USE blackhole.default"); err != nil {
				t.Fatal(err)
			}
			tag := cancelTag()
			c, cancel := context.WithCancel(ctx(t))
			defer cancel()
			bare := strings.TrimPrefix(table, "blackhole.default.")
			done := runInBackground(c, conn, "SELECT count(*) FROM "+bare+" /* "+tag+" */")
			waitForQuery(t, f, tag, "RUNNING")
			cancelled := time.Now()
			cancel()
			returnedCancelled(t, done, cancelled, context.Canceled)
			endedCancelled(t, f, tag)
			var n int64
			if err := conn.QueryRowContext(ctx(t), "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", bare).Scan(&n); err != nil || n != 1 {
				t.Fatalf("after the cancellation the connection's catalog has %d tables %s (%v), want blackhole's 1", n, bare, err)
			}
		})
		t.Run("deadline", func(t *testing.T) {
			tag := cancelTag()
			c := newExpiring(ctx(t))
			done := runInBackground(c, db, "SELECT count(*) FROM "+table+" /* "+tag+" */")
			waitForQuery(t, f, tag, "RUNNING")
			expired := time.Now()
			c.expire()
			returnedCancelled(t, done, expired, context.DeadlineExceeded)
			endedCancelled(t, f, tag)
		})
	})
}

// Rows closed after their first row end their query: the driver sends
// DELETE on the executing nextUri, and the query ends FAILED with
// USER_CANCELED (as TestDriverCancelWhileRunning) while Close returns at
// once.
func TestDriverRowsClosedEarlyCancelTheQuery(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		table := createSlowTable(t, f)
		db := open(t, f, "?user=alice")
		tag := cancelTag()
		rows, err := db.QueryContext(ctx(t), "SELECT x FROM "+table+" /* "+tag+" */")
		if err != nil {
			t.Fatal(err)
		}
		if !rows.Next() {
			t.Fatalf("no first row: %v", rows.Err())
		}
		waitForQuery(t, f, tag, "RUNNING")
		start := time.Now()
		if err := rows.Close(); err != nil {
			t.Fatalf("Rows.Close: %v", err)
		}
		if took := time.Since(start); took > cancelBound {
			t.Fatalf("Rows.Close took %s", took)
		}
		endedCancelled(t, f, tag)
	})
}

// expiring is a context whose deadline passes when the test says, so that
// it passes while the query runs however long the server took to start it.
type expiring struct {
	context.Context
	done    chan struct{}
	expired atomic.Bool
}

func newExpiring(parent context.Context) *expiring {
	return &expiring{Context: parent, done: make(chan struct{})}
}

// expire makes the deadline pass.
func (e *expiring) expire() {
	if e.expired.CompareAndSwap(false, true) {
		close(e.done)
	}
}

func (e *expiring) Done() <-chan struct{} { return e.done }

func (e *expiring) Err() error {
	if e.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

// queryInfoAt is the state and error name GET /v1/query/{id} reports at
// baseURL (QueryResource.getQueryInfo, both servers and the simulator).
func queryInfoAt(t *testing.T, baseURL string, f *flavourFleet, id string) (state, errorName string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodGet, baseURL+"/v1/query/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(f.flavour.HeaderPrefix()+"User", "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/query/%s: %v", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/v1/query/%s: %s", baseURL, id, resp.Status)
	}
	var q realserver.QueryInfo
	if err := json.NewDecoder(resp.Body).Decode(&q); err != nil {
		t.Fatalf("GET /v1/query/%s: %v", id, err)
	}
	if q.ErrorCode != nil {
		errorName = q.ErrorCode.Name
	}
	return q.State, errorName
}

// endedAt polls GET /v1/query/{id} at baseURL until the query is done,
// and returns its state and error name.
func endedAt(t *testing.T, baseURL string, f *flavourFleet, id string) string {
	t.Helper()
	deadline := time.Now().Add(cancelBound)
	for {
		state, name := queryInfoAt(t, baseURL, f, id)
		if state == "FAILED" || state == "FINISHED" {
			return state + " " + name
		}
		if time.Now().After(deadline) {
			t.Fatalf("query %s at %s is %s %s %s after its DELETE", id, baseURL, state, name, cancelBound)
		}
		time.Sleep(50 * time.Millisecond) // polling the server
	}
}

// Differential: a DELETE of a statement's nextUri, while it waits in its
// resource group's queue and while it runs, ends its query FAILED with
// USER_CANCELED on the simulator as on the real server of each flavour
// (trino QueuedStatementResource.cancelQuery and
// ExecutingStatementResource.cancelQuery, DispatchManager.cancelQuery;
// PrestoDB the same).
func TestDifferentialCancelEndsTheQueryQueuedOrRunning(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		slow := "SELECT count(*) FROM " + createSlowTable(t, f)
		real := f.servers[0]
		sim, err := coordinator.Start(coordinator.Options{Flavour: f.flavour, MaxRunning: 1, Latency: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sim.Close() })
		outcomes := func(url, sql string) (queued, running string) {
			run := submitRaw(t, url, f.flavour, queueSource, sql)
			run.advanceUntil("RUNNING")
			wait := submitRaw(t, url, f.flavour, queueSource, sql)
			wait.advance()
			if p := wait.advanceUntil("QUEUED"); !strings.Contains(p.NextURI, "/v1/statement/queued/") {
				t.Fatalf("%s: the second statement of the tight group is %s at %s, want QUEUED", url, p.Stats.State, p.NextURI)
			}
			wait.cancel()
			run.cancel()
			return endedAt(t, url, f, wait.last.ID), endedAt(t, url, f, run.last.ID)
		}
		realQueued, realRunning := outcomes(real.URL(), slow)
		simQueued, simRunning := outcomes(sim.URL(), "SELECT 1")
		want := "FAILED USER_CANCELED"
		if realQueued != want || realRunning != want {
			t.Errorf("%s: a statement cancelled while queued ended %s, while running %s; want %s", real.Name(), realQueued, realRunning, want)
		}
		if simQueued != realQueued || simRunning != realRunning {
			t.Errorf("the simulator ends a cancelled statement %s while queued and %s while running, the real server %s and %s", simQueued, simRunning, realQueued, realRunning)
		}
	})
}
