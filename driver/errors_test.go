package driver_test

import (
	"errors"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

// A query's failure reaches the caller as *driver.QueryError, with the
// coordinator's name, code and the line and column it placed the error at.
func TestQueryErrorCarriesNameCodeAndLocation(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	if _, err := f.Register(f.Coordinators[0], discovery.FormatHostPort, 1); err != nil {
		t.Fatal(err)
	}
	db := openPerStatement(t, f.DSN("?user=alice"))
	_, err := db.Exec("SELECT syntax(2, 8)")
	var qe *driver.QueryError
	if !errors.As(err, &qe) {
		t.Fatalf("got %v (%T), want a *driver.QueryError", err, err)
	}
	var loc *driver.ErrorLocation = qe.ErrorLocation
	if qe.ErrorName != "SYNTAX_ERROR" || qe.ErrorCode != 1 || loc == nil || loc.LineNumber != 2 || loc.ColumnNumber != 8 {
		t.Fatalf("got %+v at %v, want SYNTAX_ERROR (1) at line 2:8", qe, loc)
	}
}
