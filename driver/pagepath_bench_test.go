package driver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	presto "github.com/prestodb/presto-go-client/v2"

	"github.com/zkpresto/zkpresto/internal/wire"
)

// BenchmarkPagePath measures what a statement's pages cost between the
// transport and the rows, the network left out: canned pages served from
// memory, read by the path the driver takes today (path=client: the
// Presto client's Session.Query and FetchNextBatch over a transport that
// rewrites the placeholder host and takes each page's rows out, as
// routingTransport and splitPage do) and by the loop the driver would own
// instead (path=own: a POST, then a GET of each nextUri, each page read
// whole, its rows taken out the same way and the rest decoded once into
// a wire.Answer). Both hand the same rows, as slices of the page, to the
// same row decoding (values.go), which is left out. rows is the rows per
// page; a statement is the queued answer and four pages (one for rows=1).
// It reports ns/page besides the figures per statement. See
// docs/upstream-presto-go-client.md for the comparison.
func BenchmarkPagePath(b *testing.B) {
	for _, rows := range []int{1, 1000} {
		pages := 4
		if rows == 1 {
			pages = 1
		}
		served := cannedStatement(rows, pages)
		for _, path := range []string{"client", "own"} {
			b.Run(fmt.Sprintf("rows=%d/path=%s", rows, path), func(b *testing.B) {
				run := pagePathClient(served)
				if path == "own" {
					run = pagePathOwn(served)
				}
				if got, err := run(); err != nil || got != rows*pages {
					b.Fatalf("%d rows, %v; want %d", got, err, rows*pages)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := run(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(pages+1)), "ns/page")
			})
		}
	}
}

// cannedStatement is a coordinator's answers to one statement: the queued
// answer to its POST, then pages of rows rows each, the last without a
// nextUri, as Trino writes them (columns, data, stats).
func cannedStatement(rows, pages int) *cannedTransport {
	const base = "http://c1:8080"
	columns := `[{"name":"id","type":"bigint","typeSignature":{"rawType":"bigint","arguments":[]}},` +
		`{"name":"name","type":"varchar","typeSignature":{"rawType":"varchar","arguments":[]}},` +
		`{"name":"score","type":"double","typeSignature":{"rawType":"double","arguments":[]}},` +
		`{"name":"ok","type":"boolean","typeSignature":{"rawType":"boolean","arguments":[]}},` +
		`{"name":"at","type":"timestamp","typeSignature":{"rawType":"timestamp","arguments":[]}},` +
		`{"name":"note","type":"varchar","typeSignature":{"rawType":"varchar","arguments":[]}}]`
	stats := func(state string) string {
		return `{"state":"` + state + `","queued":false,"scheduled":true,"nodes":1,"totalSplits":4,"queuedSplits":0,` +
			`"runningSplits":0,"completedSplits":4,"cpuTimeMillis":3,"wallTimeMillis":5,"queuedTimeMillis":1,` +
			`"elapsedTimeMillis":9,"processedRows":10,"processedBytes":100,"peakMemoryBytes":0}`
	}
	t := &cannedTransport{pages: map[string][]byte{}}
	id := "20260101_000000_00001_bench"
	t.pages["POST /v1/statement"] = []byte(`{"id":"` + id + `","infoUri":"` + base + `/ui/query.html?` + id +
		`","nextUri":"` + base + `/v1/statement/queued/` + id + `/y1/1","stats":` + stats("QUEUED") + `,"warnings":[]}`)
	for p := 1; p <= pages; p++ {
		var data strings.Builder
		data.WriteByte('[')
		for r := range rows {
			if r > 0 {
				data.WriteByte(',')
			}
			fmt.Fprintf(&data, `[%d,"name-%d",%d.5,true,"2024-05-06 07:08:09.123",null]`, p*rows+r, r, r)
		}
		data.WriteByte(']')
		next, state := fmt.Sprintf(`"nextUri":"%s/v1/statement/executing/%s/y%d/%d",`, base, id, p+1, p+1), "RUNNING"
		if p == pages {
			next, state = "", "FINISHED"
		}
		path := fmt.Sprintf("GET /v1/statement/queued/%s/y1/1", id)
		if p > 1 {
			path = fmt.Sprintf("GET /v1/statement/executing/%s/y%d/%d", id, p, p)
		}
		t.pages[path] = []byte(`{"id":"` + id + `","infoUri":"` + base + `/ui/query.html?` + id + `",` + next +
			`"columns":` + columns + `,"data":` + data.String() + `,"stats":` + stats(state) + `,"warnings":[]}`)
	}
	return t
}

// cannedTransport answers from memory, as a coordinator on an idle
// connection would.
type cannedTransport struct {
	pages map[string][]byte
}

func (t *cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	page, ok := t.pages[req.Method+" "+req.URL.Path]
	if !ok {
		return nil, fmt.Errorf("no canned answer to %s %s", req.Method, req.URL.Path)
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(page)),
		ContentLength: int64(len(page)),
		Request:       req,
	}, nil
}

// pagePathClient is the driver's path today: the Presto client on a
// placeholder host, a transport that rewrites it and splits each page.
func pagePathClient(canned *cannedTransport) func() (int, error) {
	a := &attempt{}
	split := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		r := req.WithContext(req.Context())
		if req.URL.Hostname() == placeholderHost {
			u := *req.URL
			u.Host, u.Scheme = "c1:8080", "http"
			r.URL, r.Host = &u, u.Host
		}
		resp, err := canned.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		splitPage(resp, a)
		return resp, nil
	})
	client, err := presto.NewClient("http://" + placeholderHost + ":8080")
	if err != nil {
		panic(err)
	}
	client.HTTPClient(&http.Client{Transport: split})
	s := client.Session.User("bench")
	return func() (int, error) {
		ctx := context.Background()
		qr, _, err := s.Query(ctx, "SELECT 1")
		if err != nil {
			return 0, err
		}
		n := 0
		for qr.HasMoreBatch() {
			qr.Data = nil
			if err := qr.FetchNextBatch(ctx); err != nil {
				return n, err
			}
			if p := a.takePage(); p != nil {
				n += len(p.rows)
			}
		}
		return n, nil
	}
}

// pagePathOwn is the loop the driver would own: a POST, then a GET of
// each nextUri, each page read whole, its rows taken out as splitPage
// does and the rest decoded once.
func pagePathOwn(canned *cannedTransport) func() (int, error) {
	client := &http.Client{Transport: canned}
	return func() (int, error) {
		ctx := context.Background()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://c1:8080/v1/statement", strings.NewReader("SELECT 1"))
		if err != nil {
			return 0, err
		}
		req.Header.Set("X-Presto-User", "bench")
		n := 0
		for {
			resp, err := client.Do(req)
			if err != nil {
				return n, err
			}
			page, err := readWhole(resp, false)
			if err != nil {
				return n, err
			}
			rest := page
			if start, end, ok := topLevelValue(page, "data"); ok && page[start] == '[' {
				rows, ok := arrayElements(page[start:end])
				if !ok {
					return n, fmt.Errorf("bad data array")
				}
				n += len(rows)
				rest = append(append(append(make([]byte, 0, start+2+len(page)-end), page[:start]...), "[]"...), page[end:]...)
			}
			ans, err := wire.DecodeAnswer(rest)
			if err != nil {
				return n, err
			}
			if ans.Error != nil {
				return n, fmt.Errorf("%s: %s", ans.Error.ErrorName, ans.Error.Message)
			}
			if ans.Ended() {
				return n, nil
			}
			u, err := url.Parse(ans.NextURI)
			if err != nil {
				return n, err
			}
			req = &http.Request{Method: http.MethodGet, URL: u, Host: u.Host, Header: http.Header{"X-Presto-User": {"bench"}}}
			req = req.WithContext(ctx)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
