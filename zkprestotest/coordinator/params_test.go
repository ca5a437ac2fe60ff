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
			// An unreadable maxWait: Trino takes the default, PrestoDB answers 404.
			if flavour == Presto {
				if s, _ := rawStatus(t, http.MethodGet, page.NextURI+maxWaitParam(page.NextURI, "soon")); s != http.StatusNotFound {
					t.Fatalf("maxWait=soon: %d, want PrestoDB's 404", s)
				}
			} else if s, _ := rawStatus(t, http.MethodGet, page.NextURI+maxWaitParam(page.NextURI, "soon")); s != http.StatusOK {
				t.Fatalf("maxWait=soon: %d, want Trino's 200", s)
			}

			c = start(t, Options{Flavour: flavour, BatchRows: 100})
			// The first page is PrestoDB's queued resource's, whose target result size is
			// its own (queuedPageParams): one batch on both flavours.
			exec = dispatch(t, submit(t, c, "SELECT * FROM rows(350)", http.StatusOK))
			getJSON(t, exec, http.StatusOK, &page)
			if len(page.Data) != 100 || page.Data[0][0] != float64(1) {
				t.Fatalf("the first page: %d rows, want one batch of 100 from 1", len(page.Data))
			}
			// Rows 101..109 are 6 bytes of JSON each, [n] and a comma: 30B holds 5 of them.
			getJSON(t, page.NextURI+sizeParam(page.NextURI, "30B"), http.StatusOK, &page)
			if len(page.Data) != 5 || page.Data[0][0] != float64(101) {
				t.Fatalf("targetResultSize=30B: %d rows, want 5 from 101", len(page.Data))
			}
			getJSON(t, page.NextURI+sizeParam(page.NextURI, "1B"), http.StatusOK, &page)
			if len(page.Data) != 1 || page.Data[0][0] != float64(106) {
				t.Fatalf("targetResultSize=1B: %v, want one row, 106", page.Data)
			}
			// Without it, or larger than a batch: one batch (Options.BatchRows).
			getJSON(t, page.NextURI+sizeParam(page.NextURI, "1MB"), http.StatusOK, &page)
			if len(page.Data) != 100 || page.Data[0][0] != float64(107) {
				t.Fatalf("targetResultSize=1MB: %d rows from %v, want 100 from 107", len(page.Data), page.Data[0][0])
			}
			// An unreadable targetResultSize: PrestoDB answers 404, Trino takes the default:
			// a whole batch.
			if flavour == Presto {
				if s, _ := rawStatus(t, http.MethodGet, page.NextURI+sizeParam(page.NextURI, "lots")); s != http.StatusNotFound {
					t.Fatalf("targetResultSize=lots: %d, want PrestoDB's 404", s)
				}
			} else if getJSON(t, page.NextURI+sizeParam(page.NextURI, "lots"), http.StatusOK, &page); len(page.Data) != 100 || page.Data[0][0] != float64(207) {
				t.Fatalf("targetResultSize=lots on Trino: %d rows, want the default batch of 100 from 207", len(page.Data))
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

// A path no resource serves is 404, text/plain on Trino and Jetty's HTML page on PrestoDB;
// a statement link of an unknown query is 404 text/plain on both ("Query not found").
func TestUnknownPathIsPlainText(t *testing.T) {
	for flavour, want := range map[Flavour]string{Trino: "text/plain", Presto: "text/html"} {
		c := start(t, Options{Flavour: flavour})
		resp, body := exchange(t, http.MethodGet, c.URL()+"/v1/nothing/here", nil, "")
		if resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), want) || strings.HasPrefix(string(body), "{") {
			t.Fatalf("%s: unknown path: %d %q %q, want 404 %s", flavour, resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
		}
		link := c.URL() + "/v1/statement/executing/20260101_000000_00000_nosuch/ynope/1"
		if flavour == Presto {
			link = c.URL() + "/v1/statement/executing/20260101_000000_00000_nosuch/1?slug=xnope"
		}
		resp, body = exchange(t, http.MethodGet, link, nil, "")
		if resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || string(body) != "Query not found\n" {
			t.Fatalf("%s: unknown query: %d %q %q, want 404 text/plain Query not found", flavour, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
}
