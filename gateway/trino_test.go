package gateway_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// These tests put trino-go-client, a client nobody here wrote, with its own
// defaults (X-Trino-* headers, client capabilities, a query data encoding,
// redirects refused, cancellation by DELETE /v1/query/{id}), in front of
// two gateway replicas and Trino-flavoured coordinators.

func (s *setup) trinoDSN(user string) string {
	return "http://" + user + "@" + strings.TrimPrefix(s.front.URL, "http://") + "?catalog=hive&schema=default"
}

func (s *setup) running() (n int64) {
	for _, c := range s.coords {
		n += c.Running()
	}
	return n
}

func openTrino(t *testing.T, s *setup) *sql.DB {
	t.Helper()
	db, err := sql.Open("trino", s.trinoDSN("alice"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Multi-page results through two replicas, every follow-up on the other
// one, arrive complete and in order; the coordinators, which build their
// URIs from forwarding headers as Trino behind a proxy is often set up to,
// see the client's X-Trino-* session and nothing else.
func TestTrinoClientThroughTwoReplicas(t *testing.T) {
	s := newSetup(t, 2, coordinator.Options{Flavour: coordinator.Trino, BatchRows: 9, HonourForwarded: true})
	db := openTrino(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 3 {
		rows, err := db.QueryContext(ctx, "SELECT * FROM rows(200)")
		if err != nil {
			t.Fatal(err)
		}
		testutil.CheckNumbered(t, rows, 200)
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if s.hits[0].Load() < 20 || s.hits[1].Load() < 20 {
		t.Fatalf("requests per replica %d/%d: both should have served follow-ups", s.hits[0].Load(), s.hits[1].Load())
	}
	var statements int64
	for _, c := range s.coords {
		statements += c.Statements()
		for _, r := range c.Requests() {
			if r.User != "alice" || r.Catalog != "hive" || r.Schema != "default" || !r.Trino || r.PrestoHeaders != 0 {
				t.Fatalf("the coordinator got user %q catalog %q schema %q, %d X-Trino-* and %d X-Presto-* headers",
					r.User, r.Catalog, r.Schema, r.TrinoHeaders, r.PrestoHeaders)
			}
			if r.Forwarded.Get("X-Forwarded-Host") != "" || r.Forwarded.Get("X-Forwarded-Proto") != "" {
				t.Fatalf("the coordinator got forwarding headers %v", r.Forwarded)
			}
		}
	}
	if statements != 3 {
		t.Fatalf("the coordinators got %d statements, want 3", statements)
	}
	if s.running() != 0 {
		t.Fatalf("%d queries still running after every result was read", s.running())
	}
}

// A context cancelled while a statement runs: trino-go-client sends
// DELETE /v1/query/{id} to the front, which lands on either replica, and
// the query stops on its coordinator.
func TestTrinoClientCancelReachesTheCoordinator(t *testing.T) {
	s := newSetup(t, 2, coordinator.Options{Flavour: coordinator.Trino})
	db := openTrino(t, s)
	for i := range 2 {
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
		deadline := time.Now().Add(5 * time.Second)
		for s.running() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d queries running, want 1", i, s.running())
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(150 * time.Millisecond) // a poll or two in flight
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("round %d: the cancelled query ended with %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the query did not return after its context was cancelled", i)
		}
		deadline = time.Now().Add(3 * time.Second)
		for s.running() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d queries still running 3s after the cancel", i, s.running())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var deletes int
	for _, c := range s.coords {
		for _, call := range c.Calls() {
			if call.Method == "DELETE" && strings.HasPrefix(call.Path, "/v1/query/") {
				deletes++
			}
		}
	}
	if deletes != 2 {
		t.Fatalf("%d DELETE /v1/query/{id} reached the coordinators, want 2", deletes)
	}
}

// A query error comes back as trino-go-client's error types, with the
// coordinator's message.
func TestTrinoClientQueryError(t *testing.T) {
	s := newSetup(t, 2, coordinator.Options{Flavour: coordinator.Trino})
	db := openTrino(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int64
	err := db.QueryRowContext(ctx, "SELECT fail('boom')").Scan(&n)
	var failed *trino.ErrQueryFailed
	var te *trino.ErrTrino
	if !errors.As(err, &failed) || !errors.As(err, &te) {
		t.Fatalf("got %T %v, want a *trino.ErrQueryFailed around a *trino.ErrTrino", err, err)
	}
	if te.Message != "boom" || te.ErrorName != "GENERIC_USER_ERROR" || te.ErrorType != "USER_ERROR" {
		t.Fatalf("the error is %+v", te)
	}
}

// Ping, as database/sql pools and many tools call it: /v1/info, then
// HEAD /v1/statement, which the gateway has a coordinator answer, since
// the coordinators check credentials. A Presto coordinator answers 405,
// which clients take as "cannot check", and the gateway passes that on.
func TestTrinoClientPing(t *testing.T) {
	s := newSetup(t, 2, coordinator.Options{Flavour: coordinator.Trino})
	db := openTrino(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		if err := db.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var heads int
	for _, c := range s.coords {
		for _, call := range c.Calls() {
			if call.Method == http.MethodHead && call.Path == "/v1/statement" && call.Status == http.StatusOK {
				heads++
			}
		}
	}
	if heads != 2 {
		t.Fatalf("%d HEAD /v1/statement reached the coordinators, want 2", heads)
	}

	p := newSetup(t, 1, coordinator.Options{})
	if code, _ := do(t, http.MethodHead, p.replicas[0].URL+"/v1/statement"); code != http.StatusMethodNotAllowed {
		t.Fatalf("HEAD /v1/statement with a Presto coordinator: %d, want its 405", code)
	}
	if err := openTrino(t, p).PingContext(ctx); err != nil {
		t.Fatalf("Ping with a Presto coordinator behind: %v", err)
	}
}
