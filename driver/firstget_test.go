package driver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// PrestoDB's queued resource answers the executing resource's first page
// once the query is dispatched, rows included (the simulator as the server:
// interop/realservers TestDifferentialFirstGetCarriesRows): the driver's
// page loop keeps the rows of its first GET, whether that page points on or
// is the last, and never asks the executing resource for it.
func TestRowsOnThePrestoFirstGETAreRead(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Name: "c", Flavour: coordinator.Presto, BatchRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	db, _ := openConnector(t, "presto://"+c.Addr()+";zooKeeperStrategy=poll?user=alice")
	for _, n := range []int64{5, 2} {
		sql := fmt.Sprintf("SELECT * FROM rows(%d)", n)
		rows, err := db.QueryContext(context.Background(), sql)
		if err != nil {
			t.Fatal(err)
		}
		testutil.CheckNumbered(t, rows, n)
		var id string
		for _, r := range c.Requests() {
			if r.SQL == sql {
				id = r.QueryID
			}
		}
		queued := 0
		for _, call := range c.Calls() {
			if call.QueryID != id {
				continue
			}
			if strings.HasSuffix(call.Path, "/executing/"+id+"/0") {
				t.Errorf("%s: the executing resource's first page was asked for, want it from the queued resource", sql)
			}
			if strings.Contains(call.Path, "/queued/") {
				queued++
			}
		}
		if id == "" || queued == 0 {
			t.Fatalf("%s: query %q, %d GETs of the queued resource", sql, id, queued)
		}
	}
}
