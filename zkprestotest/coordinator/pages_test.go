package coordinator

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestBigrowsThroughClient(t *testing.T) {
	c := start(t, Options{BatchRows: 3})
	db := openDB(t, c, "presto", "alice", "/hive/default")
	const n, width = 8, 100_000
	rows, err := db.Query(fmt.Sprintf("SELECT * FROM bigrows(%d, %d)", n, width))
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	defer rows.Close()
	var want int64 = 1
	for rows.Next() {
		var got int64
		var s string
		if err := rows.Scan(&got, &s); err != nil {
			t.Fatalf("scan: %v", err)
		}
		if got != want || s != BigrowsValue(want, width) {
			t.Fatalf("row %d = %d with %d bytes starting %.3q", want, got, len(s), s)
		}
		want++
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("rows: %v", err)
	}
	if want-1 != n {
		t.Fatalf("read %d rows, want %d", want-1, n)
	}
	if r := lastRequest(t, c); !r.AcceptGzip || !r.Gzipped {
		t.Errorf("presto-go-client request: AcceptGzip %v, Gzipped %v; want both", r.AcceptGzip, r.Gzipped)
	}
}

// plainClient neither asks for nor decodes gzip, so the page sizes are the wire sizes.
var plainClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true}}

func TestLargePageIsStreamedWhole(t *testing.T) {
	// Trino: PrestoDB's first GET answers the first page with a target result size of 1 MB.
	c := start(t, Options{Flavour: Trino, BatchRows: 2})
	const width = 16 << 20 // two rows make one 32 MB page
	first := submit(t, c, fmt.Sprintf("SELECT * FROM bigrows(2, %d)", width), http.StatusOK)
	resp, err := plainClient.Get(dispatch(t, first))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("answered with Content-Encoding %q without being asked", resp.Header.Get("Content-Encoding"))
	}
	// Read the page as a stream: look at its start and end, count the rest.
	head := make([]byte, 4096)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatal(err)
	}
	var tail tailBuffer
	rest, err := io.Copy(&tail, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(head)) + rest
	if size < 2*width || size > 2*width+8192 {
		t.Fatalf("page of %d bytes, want just over %d", size, 2*width)
	}
	if !bytes.Contains(head, []byte(`"data":[[1,"aaaa`)) || !bytes.Contains(head, []byte(`"columns":[`)) {
		t.Fatalf("page starts %s", head[:200])
	}
	if end := string(tail.last); !strings.Contains(end, `bbbb"]]`) || !strings.Contains(end, `"state":"FINISHED"`) {
		t.Fatalf("page ends %s", end)
	}
	// Presto's field order: the links come before the data, the stats after it.
	if i, j := bytes.Index(head, []byte(`"infoUri"`)), bytes.Index(head, []byte(`"data"`)); i < 0 || i > j {
		t.Fatalf("infoUri is not before data: %s", head[:200])
	}
}

// tailBuffer keeps the last bytes written to it.
type tailBuffer struct{ last []byte }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.last = append(b.last, p...)
	if len(b.last) > 4096 {
		b.last = append([]byte(nil), b.last[len(b.last)-4096:]...)
	}
	return len(p), nil
}

// pollTimes polls a statement to the end and returns how long each poll took.
func pollTimes(t *testing.T, c *Coordinator, stmt string) []time.Duration {
	t.Helper()
	first := submit(t, c, stmt, http.StatusOK)
	var took []time.Duration
	// The first poll counts from the first GET: PrestoDB's answers the first page.
	began := time.Now()
	for uri := dispatch(t, first); uri != ""; began = time.Now() {
		var page wireResults
		getJSON(t, uri, http.StatusOK, &page)
		took = append(took, time.Since(began))
		uri = page.NextURI
	}
	return took
}

func TestSlowPages(t *testing.T) {
	c := start(t, Options{BatchRows: 1, PageDelay: 60 * time.Millisecond})
	for i, d := range pollTimes(t, c, "SELECT * FROM rows(3)") {
		if d < 60*time.Millisecond {
			t.Errorf("poll %d took %v with PageDelay 60ms", i, d)
		}
	}
	// slow(ms) wins over the option, also when it is shorter.
	for i, d := range pollTimes(t, c, "SELECT * FROM rows(2) WHERE slow(150)") {
		if d < 150*time.Millisecond {
			t.Errorf("poll %d of slow(150) took %v", i, d)
		}
	}
	c.SetPageDelay(0)
	began := time.Now()
	pollTimes(t, c, "SELECT * FROM rows(3) WHERE slow(0)")
	pollTimes(t, c, "SELECT * FROM rows(3)")
	if d := time.Since(began); d > 500*time.Millisecond {
		t.Errorf("polls without delay took %v", d)
	}
}

// progressPage is the part of an answer a progress display reads.
type progressPage struct {
	NextURI string `json:"nextUri"`
	Stats   struct {
		State              string   `json:"state"`
		TotalSplits        int      `json:"totalSplits"`
		CompletedSplits    int      `json:"completedSplits"`
		RunningSplits      int      `json:"runningSplits"`
		QueuedSplits       int      `json:"queuedSplits"`
		ProcessedRows      int64    `json:"processedRows"`
		ProcessedBytes     int64    `json:"processedBytes"`
		ProgressPercentage *float64 `json:"progressPercentage"`
	} `json:"stats"`
	Error *struct {
		ErrorName string `json:"errorName"`
	} `json:"error"`
}

func TestSleepReportsProgress(t *testing.T) {
	c := start(t, Options{})
	began := time.Now()
	first := submit(t, c, "SELECT * FROM rows(2) WHERE sleep(600)", http.StatusOK)
	var pages []progressPage
	for uri := first.NextURI; uri != ""; {
		var p progressPage
		getJSON(t, uri, http.StatusOK, &p)
		pages = append(pages, p)
		uri = p.NextURI
	}
	if d := time.Since(began); d < 600*time.Millisecond {
		t.Fatalf("sleep(600) finished after %v", d)
	}
	running := 0
	var lastPct float64 = -1
	var lastRows int64 = -1
	for _, p := range pages {
		s := p.Stats
		if s.State != "RUNNING" {
			continue
		}
		if s.ProgressPercentage == nil {
			if s.CompletedSplits < s.TotalSplits {
				t.Fatalf("running page without progressPercentage: %+v", s)
			}
			continue
		}
		running++
		if *s.ProgressPercentage < lastPct || s.ProcessedRows < lastRows {
			t.Fatalf("progress went back: %+v after %v%%, %d rows", s, lastPct, lastRows)
		}
		if s.TotalSplits != progressSplits || s.CompletedSplits+s.RunningSplits+s.QueuedSplits != s.TotalSplits || s.ProcessedBytes != s.ProcessedRows*progressRowBytes {
			t.Fatalf("inconsistent splits or bytes: %+v", s)
		}
		lastPct, lastRows = *s.ProgressPercentage, s.ProcessedRows
	}
	if running < 3 || lastPct <= 0 {
		t.Fatalf("%d running pages with progress, last at %v%%; want several, growing", running, lastPct)
	}
	last := pages[len(pages)-1].Stats
	if last.State != "FINISHED" || last.ProgressPercentage == nil || *last.ProgressPercentage != 100 || last.CompletedSplits != progressSplits {
		t.Fatalf("final stats = %+v", last)
	}
}

func TestSleepCanceledThroughClient(t *testing.T) {
	// The client reports the cancellation it sends at debug level; keep it out of the output.
	level := zerolog.GlobalLevel()
	zerolog.SetGlobalLevel(zerolog.InfoLevel)
	defer zerolog.SetGlobalLevel(level)

	c := start(t, Options{})
	db := openDB(t, c, "presto", "alice", "/hive/default")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := queryDescribe(ctx, db, "SELECT sleep(60000)")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("query error = %v, want the deadline", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	waitFor(t, "the sleeping query to be canceled", func() bool { return c.Running() == 0 })
}

func TestGzipAnswers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     Options
		accept   string
		wantGzip bool
	}{
		{"asked", Options{}, "gzip", true},
		{"asked among others", Options{}, "br;q=1.0, gzip;q=0.5", true},
		{"refused", Options{}, "gzip;q=0", false},
		{"not asked", Options{}, "", false},
		{"turned off", Options{NoGzip: true}, "gzip", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t, tc.opts)
			get := func(method, uri, body string) ([]byte, http.Header) {
				req, err := http.NewRequest(method, uri, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("X-Presto-User", "u")
				if tc.accept != "" {
					req.Header.Set("Accept-Encoding", tc.accept)
				}
				resp, err := plainClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var r io.Reader = resp.Body
				if resp.Header.Get("Content-Encoding") == "gzip" {
					gz, err := gzip.NewReader(resp.Body)
					if err != nil {
						t.Fatalf("gzip: %v", err)
					}
					r = gz
				}
				b, err := io.ReadAll(r)
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				return b, resp.Header
			}
			body, h := get(http.MethodPost, c.URL()+"/v1/statement", "SELECT * FROM bigrows(3, 1000)")
			for {
				if got := h.Get("Content-Encoding") == "gzip"; got != tc.wantGzip {
					t.Fatalf("Content-Encoding = %q, want gzip %v", h.Get("Content-Encoding"), tc.wantGzip)
				}
				var page wireResults
				if err := json.Unmarshal(body, &page); err != nil {
					t.Fatalf("decode %.200s: %v", body, err)
				}
				if page.NextURI == "" {
					break
				}
				body, h = get(http.MethodGet, page.NextURI, "")
			}
			if r := lastRequest(t, c); r.Gzipped != tc.wantGzip || r.AcceptGzip != (tc.wantGzip || tc.opts.NoGzip) {
				t.Errorf("request: AcceptGzip %v, Gzipped %v", r.AcceptGzip, r.Gzipped)
			}
			for _, call := range c.Calls() {
				if call.Status == http.StatusOK && call.Gzipped != tc.wantGzip {
					t.Errorf("call %s %s: Gzipped %v", call.Method, call.Path, call.Gzipped)
				}
			}
		})
	}
}
