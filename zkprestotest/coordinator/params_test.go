package coordinator

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// maxWait bounds how long an executing poll waits for data, and is itself bounded by the
// servers' 1 s; targetResultSize bounds the bytes of rows of a page, at least one row.
func TestMaxWaitAndTargetResultSize(t *testing.T) {
	for _, flavour := range []Flavour{Presto, Trino} {
		t.Run(string(flavour), func(t *testing.T) {
			c := start(t, Options{Flavour: flavour, Latency: time.Hour, BatchRows: 100})
			exec := dispatch(t, submit(t, c, "SELECT 1", http.StatusOK))
			began := time.Now()
			var page wireResults
			getJSON(t, exec+maxWaitParam(exec, "20ms"), http.StatusOK, &page)
			if took := time.Since(began); page.Stats.State != "RUNNING" || took > 900*time.Millisecond {
				t.Fatalf("maxWait=20ms: %s after %v, want RUNNING well before the default 1 s", page.Stats.State, took)
			}
			// A larger maxWait than the servers allow is cut to 1 s: the poll answers.
			began = time.Now()
			getJSON(t, page.NextURI+maxWaitParam(page.NextURI, "1h"), http.StatusOK, &page)
			if took := time.Since(began); page.Stats.State != "RUNNING" || took > 30*time.Second {
				t.Fatalf("maxWait=1h: %s after %v", page.Stats.State, took)
			}
			if s, body := rawStatus(t, http.MethodGet, page.NextURI+maxWaitParam(page.NextURI, "soon")); s != http.StatusBadRequest || !strings.Contains(body, "maxWait") {
				t.Fatalf("maxWait=soon: %d %q, want 400 naming maxWait", s, body)
			}

			c = start(t, Options{Flavour: flavour, BatchRows: 100})
			exec = dispatch(t, submit(t, c, "SELECT * FROM rows(250)", http.StatusOK))
			// Rows 1..9 are 4 bytes of JSON each, [n] and a comma: 20B holds 5 of them.
			getJSON(t, exec+sizeParam(exec, "20B"), http.StatusOK, &page)
			if len(page.Data) != 5 || page.Data[0][0] != float64(1) {
				t.Fatalf("targetResultSize=20B: %d rows, want 5 from 1", len(page.Data))
			}
			getJSON(t, page.NextURI+sizeParam(page.NextURI, "1B"), http.StatusOK, &page)
			if len(page.Data) != 1 || page.Data[0][0] != float64(6) {
				t.Fatalf("targetResultSize=1B: %v, want one row, 6", page.Data)
			}
			// Without it, or larger than a batch: one batch (Options.BatchRows).
			getJSON(t, page.NextURI+sizeParam(page.NextURI, "1MB"), http.StatusOK, &page)
			if len(page.Data) != 100 || page.Data[0][0] != float64(7) {
				t.Fatalf("targetResultSize=1MB: %d rows from %v, want 100 from 7", len(page.Data), page.Data[0][0])
			}
			if s, body := rawStatus(t, http.MethodGet, page.NextURI+sizeParam(page.NextURI, "lots")); s != http.StatusBadRequest || !strings.Contains(body, "targetResultSize") {
				t.Fatalf("targetResultSize=lots: %d %q, want 400 naming it", s, body)
			}
			if last := drain(t, page); last.Stats.State != "FINISHED" {
				t.Fatalf("last answer %+v", last)
			}
		})
	}
}

func sizeParam(link, size string) string {
	return strings.Replace(maxWaitParam(link, size), "maxWait", "targetResultSize", 1)
}

// A path no resource serves is 404 with a text/plain body, as JAX-RS answers it.
func TestUnknownPathIsPlainText(t *testing.T) {
	c := start(t, Options{})
	resp, body := exchange(t, http.MethodGet, c.URL()+"/v1/nothing/here", nil, "")
	if resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || strings.HasPrefix(string(body), "{") {
		t.Fatalf("unknown path: %d %q %q, want 404 text/plain", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}
