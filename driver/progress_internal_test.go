package driver

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/routing"
)

func TestProgressLookupCostsNothingWhenUnused(t *testing.T) {
	a := newAttempt(&routing.Attempt{}, context.Background())
	req, err := http.NewRequestWithContext(a.context(), http.MethodGet, "http://h/", nil)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if fn, _ := req.Context().Value(progressKey{}).(func(Progress)); fn != nil {
			t.Fatal("a progress callback nobody set")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per lookup", allocs)
	}
}

func TestPageEndsFindTheTopLevelStats(t *testing.T) {
	var e pageEnds
	page := `{"id":"q_1","nextUri":"http://h/x","data":[[{"stats":{"state":"DATA"}}],["` +
		strings.Repeat("x", 3*progressTail) + `"]],"stats":{"state":"RUNNING","processedRows":7,"progressPercentage":12.5},"warnings":[]}`
	// In small writes, as a body is read.
	for len(page) > 0 {
		n := min(len(page), 4096)
		e.Write([]byte(page[:n]))
		page = page[n:]
	}
	p, ok := e.progress()
	if !ok || p.QueryID != "q_1" || p.State != "RUNNING" || p.ProcessedRows != 7 || !p.HasPercentage || p.Percentage != 12.5 {
		t.Errorf("got %+v (%v)", p, ok)
	}
	if len(e.head) > progressHead || len(e.tail) > 2*progressTail {
		t.Errorf("kept %d and %d bytes", len(e.head), len(e.tail))
	}
}

func TestPageEndsFindTheUpdateTypeAfterTheStats(t *testing.T) {
	pages := []struct {
		page      string
		wantType  string
		wantCount int64
		hasCount  bool
	}{
		{`{"id":"q","data":[[true]],"stats":{"state":"FINISHED"},"warnings":[],"updateType":"SET SESSION"}`, "SET SESSION", 0, false},
		{`{"id":"q","data":[[5]],"stats":{"state":"FINISHED"},"updateType" : "INSERT","updateCount":5}`, "INSERT", 5, true},
		// The same keys in the data, before the stats, are no update.
		{`{"id":"q","data":[[{"updateType":"DROP","updateCount":1}]],"stats":{"state":"FINISHED"},"warnings":[]}`, "", 0, false},
	}
	for _, tc := range pages {
		var e pageEnds
		e.Write([]byte(tc.page))
		p, ok := e.progress()
		if !ok || p.UpdateType != tc.wantType || p.UpdateCount != tc.wantCount || p.HasUpdateCount != tc.hasCount {
			t.Errorf("%s: got %q %d %v (%v)", tc.page, p.UpdateType, p.UpdateCount, p.HasUpdateCount, ok)
		}
	}
}
