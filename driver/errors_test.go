package driver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	presto "github.com/prestodb/presto-go-client/v2"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

// A query's failure reaches the caller as *driver.QueryError, with the
// coordinator's name, code and the line and column it placed the error at,
// the query's id and the coordinator; its text leads with the server's
// name and message (the Presto client put "fetch next batch failed for
// query ..." before them), and it still unwraps to the client's
// *presto.QueryError. Exec, Query, QueryRow and a transaction's statement
// return the same.
func TestQueryErrorCarriesNameCodeAndLocation(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	if _, err := f.Register(f.Coordinators[0], discovery.FormatHostPort, 1); err != nil {
		t.Fatal(err)
	}
	db := openPerStatement(t, f.DSN("?user=alice"))
	const q = "SELECT syntax(2, 8)"
	_, execErr := db.Exec(q)
	_, queryErr := db.Query(q)
	rowErr := db.QueryRow(q).Scan(new(any))
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	_, txErr := tx.Exec(q)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	coordinator := "http://" + f.Coordinators[0].Addr()
	for i, err := range []error{execErr, queryErr, rowErr, txErr} {
		var qe *driver.QueryError
		if !errors.As(err, &qe) {
			t.Fatalf("%d: got %v (%T), want a *driver.QueryError", i, err, err)
		}
		var loc *driver.ErrorLocation = qe.ErrorLocation
		if qe.ErrorName != "SYNTAX_ERROR" || qe.ErrorCode != 1 || qe.ErrorType != "USER_ERROR" || loc == nil || loc.LineNumber != 2 || loc.ColumnNumber != 8 {
			t.Fatalf("%d: got %+v at %v, want SYNTAX_ERROR (1) at line 2:8", i, qe, loc)
		}
		if qe.QueryID == "" || qe.Coordinator != coordinator {
			t.Errorf("%d: query %q on %q, want an id and %s", i, qe.QueryID, qe.Coordinator, coordinator)
		}
		if want := "SYNTAX_ERROR: " + qe.Message + " (query " + qe.QueryID + " on " + coordinator + ")"; err.Error() != want {
			t.Errorf("%d: the error reads %q, want %q", i, err.Error(), want)
		}
		var pe *presto.QueryError
		if !errors.As(err, &pe) || pe.ErrorName != "SYNTAX_ERROR" {
			t.Errorf("%d: %v does not unwrap to the client's *presto.QueryError", i, err)
		}
	}
}

// A statement cancelled while the client polls its nextUri returns an error
// that is context.Canceled and names no slug: the slug lets whoever holds
// the URI read the query's results or cancel it, and the Presto client's
// error names the URI of the request it was making.
func TestCancelledStatementErrorNamesNoSlug(t *testing.T) {
	for _, flavour := range []coordinator.Flavour{coordinator.Trino, coordinator.Presto} {
		t.Run(string(flavour), func(t *testing.T) {
			f := fleet.StartT(t, fleet.Options{Coordinators: 1, Coordinator: coordinator.Options{Flavour: flavour}})
			if _, err := f.Register(f.Coordinators[0], discovery.FormatHostPort, 1); err != nil {
				t.Fatal(err)
			}
			db := openPerStatement(t, f.DSNFor(string(flavour), f.Ensemble(), "?user=alice"))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := db.ExecContext(ctx, "SELECT sleep(60000)")
				done <- err
			}()
			// Cancel once the client polls the query's nextUri, where the
			// slug is.
			for deadline := time.Now().Add(30 * time.Second); !polled(f.Coordinators[0]); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the client never polled its statement")
				}
			}
			cancel()
			err := <-done
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
			if strings.Contains(err.Error(), "slug=x") || !strings.Contains(err.Error(), "REDACTED") {
				t.Fatalf("the error names the nextUri's slug: %v", err)
			}
		})
	}
}

// polled reports whether c answered a GET of a statement URI.
func polled(c *coordinator.Coordinator) bool {
	for _, call := range c.Calls() {
		if call.Method == "GET" && strings.HasPrefix(call.Path, "/v1/statement/") {
			return true
		}
	}
	return false
}
