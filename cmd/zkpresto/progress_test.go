package main

import (
	"io"
	"strings"
	"testing"
	"time"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

func TestRenderProgress(t *testing.T) {
	p := zkdriver.Progress{QueryID: "20240101_120000_00001_abcde", State: "RUNNING", Nodes: 3,
		TotalSplits: 36, CompletedSplits: 18, RunningSplits: 9,
		ProcessedRows: 1_234_567, ProcessedBytes: 23_592_960, Percentage: 45.6, HasPercentage: true}
	got := renderProgress(p, 12*time.Second, 0)
	want := []string{
		"Query 20240101_120000_00001_abcde, RUNNING, 3 nodes, 36 splits",
		"0:12 [1.23M rows, 22.5MB] [102K rows/s, 1.87MB/s] [========>>>>     ] 45%",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Before the first answer, without splits or a percentage, and cut to
	// the terminal's width.
	got = renderProgress(zkdriver.Progress{}, 65*time.Second, 20)
	if got[0] != "Query WAITING" || got[1] != "1:05 [0 rows, 0B] [0" {
		t.Errorf("got %q", got)
	}
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1K"}, {1500, "1.5K"}, {12_345, "12.3K"}, {123_456_789, "123M"}} {
		if got := formatCount(tc.v); got != tc.want {
			t.Errorf("formatCount(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    float64
		want string
	}{{512, "512B"}, {1024, "1kB"}, {1536, "1.5kB"}, {10 << 20, "10MB"}, {3 << 30, "3GB"}} {
		if got := formatBytes(tc.v); got != tc.want {
			t.Errorf("formatBytes(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestProgressIsShownOnlyOnATerminal(t *testing.T) {
	yes := func(io.Writer) bool { return true }
	no := func(io.Writer) bool { return false }
	if !showProgress(true, io.Discard, yes) || showProgress(true, io.Discard, no) || showProgress(false, io.Discard, yes) {
		t.Error("progress must show on a terminal only, unless turned off")
	}
	if writerIsTerminal(&strings.Builder{}) {
		t.Error("a buffer is no terminal")
	}

	// A long statement against a fake terminal: its progress is drawn,
	// redrawn in place, and erased before the results.
	c := startCoordinators(t, 1)[0]
	errOut := &testutil.Buffer{}
	// Batch mode shows it with --progress only, as presto-cli.
	o := queryOptions{server: c.URL(), logLevel: "warn", execute: "SELECT * FROM rows(1) WHERE sleep(1200) IS NULL", isTerminal: yes, progress: true}
	var out strings.Builder
	if err := runQuery(t.Context(), strings.NewReader(""), &out, errOut, o, nil); err != nil {
		t.Fatal(err)
	}
	drawn := errOut.String()
	if out.String() != "\"1\"\n" || !strings.Contains(drawn, ", RUNNING, ") || !strings.Contains(drawn, " rows, ") ||
		strings.Count(drawn, "\r\x1b[K\x1b[1A\x1b[K") < 2 || !strings.HasSuffix(drawn, "\r\x1b[K\x1b[1A\x1b[K") {
		t.Errorf("stdout %q; stderr %q", out.String(), drawn)
	}

	// Batch mode without --progress: nothing on stderr.
	errOut = &testutil.Buffer{}
	o.progress = false
	if err := runQuery(t.Context(), strings.NewReader(""), io.Discard, errOut, o, nil); err != nil || errOut.String() != "" {
		t.Errorf("without --progress, stderr %q (%v)", errOut.String(), err)
	}

	// Not a terminal: nothing on stderr.
	errOut = &testutil.Buffer{}
	o.progress = true
	o.isTerminal = no
	if err := runQuery(t.Context(), strings.NewReader(""), io.Discard, errOut, o, nil); err != nil || errOut.String() != "" {
		t.Errorf("stderr %q (%v)", errOut.String(), err)
	}
}
