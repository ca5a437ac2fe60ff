package driver_test

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

func TestWithProgressReportsEachPage(t *testing.T) {
	for _, noGzip := range []bool{false, true} {
		c, err := coordinator.Start(coordinator.Options{NoGzip: noGzip, BatchRows: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		db, err := sql.Open("zkpresto", "presto://"+c.Addr()+"?user=alice")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()

		var mu sync.Mutex
		var got []zkdriver.Progress
		ctx := zkdriver.WithProgress(context.Background(), func(p zkdriver.Progress) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		})
		rows, err := db.QueryContext(ctx, "SELECT * FROM rows(5) WHERE sleep(600) IS NULL")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Close(); err != nil || n != 5 {
			t.Fatalf("gzip=%v: %d rows (%v)", !noGzip, n, err)
		}
		mu.Lock()
		reports := got
		mu.Unlock()
		if len(reports) < 3 {
			t.Fatalf("gzip=%v: %d reports", !noGzip, len(reports))
		}
		running, withPercent := false, false
		for i, p := range reports {
			if p.QueryID == "" || p.QueryID != reports[0].QueryID || p.Coordinator != c.Addr() {
				t.Errorf("gzip=%v: report %d names query %q on %q", !noGzip, i, p.QueryID, p.Coordinator)
			}
			running = running || p.State == "RUNNING" && p.ProcessedRows > 0 && p.TotalSplits > 0
			withPercent = withPercent || p.HasPercentage && p.Percentage > 0
			if i > 0 && p.Elapsed < reports[i-1].Elapsed {
				t.Errorf("gzip=%v: elapsed went back: %v after %v", !noGzip, p.Elapsed, reports[i-1].Elapsed)
			}
		}
		if !running || !withPercent {
			t.Errorf("gzip=%v: no RUNNING report with rows, splits and a percentage: %+v", !noGzip, reports)
		}
		if last := reports[len(reports)-1]; last.State != "FINISHED" {
			t.Errorf("gzip=%v: the last report is %+v", !noGzip, last)
		}
	}
}

func TestWithProgressNamesTheFailedQuery(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	db, err := sql.Open("zkpresto", "presto://"+c.Addr()+"?user=alice")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var last zkdriver.Progress
	ctx := zkdriver.WithProgress(context.Background(), func(p zkdriver.Progress) { last = p })
	_, err = db.QueryContext(ctx, "SELECT fail('no such table')")
	if err == nil || !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("got %v", err)
	}
	reqs := c.Requests()
	if len(reqs) != 1 || last.QueryID != reqs[0].QueryID || last.State != "FAILED" {
		t.Errorf("last report %+v; the coordinator ran %+v", last, reqs)
	}
}
