package driver_test

import (
	"context"
	"testing"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/lostpage"
)

// Every executing page's first answer is lost after the coordinator sent it: the driver
// retries the same token, the coordinator replays the page, and the rows arrive each once,
// in order; the statement ran once.
func TestRetriedPageNeitherLostNorDuplicated(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Name: "c", BatchRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := lostpage.StartT(t, c.Addr())
	db, _ := openConnector(t, "presto://"+p.Addr()+";zooKeeperStrategy=poll?user=alice")
	rows, err := db.QueryContext(context.Background(), "SELECT * FROM rows(20)")
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckNumbered(t, rows, 20)
	if d := p.Lost(); d < 7 {
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
