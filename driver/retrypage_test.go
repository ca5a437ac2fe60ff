package driver_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	zkdriver "github.com/zkpresto/zkpresto/driver"
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

// A coordinator that goes away while the result is read: the error says
// so, with the query's id and the page lost, not as a statement refused
// at its dial; and the statement is not sent again.
func TestCoordinatorGoneWhileTheResultIsRead(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Name: "c", BatchRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	db, _ := openConnector(t, "presto://"+c.Addr()+";zooKeeperStrategy=poll?user=alice")
	rows, err := db.QueryContext(context.Background(), "SELECT * FROM rows(20)")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for range 4 {
		if !rows.Next() {
			t.Fatalf("the result ended early: %v", rows.Err())
		}
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	var se *zkdriver.StatementError
	if !errors.As(rows.Err(), &se) {
		t.Fatalf("reading on after the coordinator stopped: %v, want a StatementError", rows.Err())
	}
	calls := c.Calls()
	if len(calls) == 0 || se.QueryID != calls[0].QueryID || se.PagesRead < 2 {
		t.Fatalf("StatementError names query %q after %d pages; want the query's id and the pages read", se.QueryID, se.PagesRead)
	}
	msg := se.Error()
	for _, want := range []string{"went away while query " + se.QueryID + " ran", fmt.Sprintf("page %d of its rows was lost", se.PagesRead+1), c.Addr()} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if n := c.Statements(); n != 1 {
		t.Fatalf("the statement reached the coordinator %d times, want once", n)
	}
}
