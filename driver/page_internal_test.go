package driver

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

// A page that claims a gigabyte and sends 200 bytes reserves nothing for
// the claim, compressed or not: while the coordinator holds the rest back,
// the heap has grown by a few MiB at most.
func TestReadWholeReservesWhatArrivesNotWhatIsClaimed(t *testing.T) {
	for _, gzipped := range []bool{false, true} {
		resp, blocked, stop := testutil.LyingPage(t, 1_000_000_000, 200)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make(chan error, 1)
		go func() {
			_, err := readWhole(resp, gzipped)
			done <- err
		}()
		<-blocked
		grown := testutil.HeapGrowth(before)
		stop()
		if err := <-done; err == nil {
			t.Errorf("gzip %v: a page cut short of its Content-Length was read without an error", gzipped)
		}
		if grown > 8<<20 {
			t.Errorf("gzip %v: reading a page that claims 1 GB and sent 200 bytes grew the heap by %d MiB, want at most 8", gzipped, grown>>20)
		}
	}
}

// splitPage takes the rows out of a page however it is laid out: "data"
// inside strings, brackets and escaped quotes inside values, white space,
// data before the columns; and hands on, as they came, pages it cannot
// make out or that have no rows.
func TestSplitPage(t *testing.T) {
	for _, tc := range []struct {
		name, page string
		rows       []string // nil: not split
		rest       string   // what the client gets, when split
	}{
		{"plain", `{"id":"q","columns":[],"data":[[1,"a"],[2,"b"]],"stats":{}}`,
			[]string{`[1,"a"]`, `[2,"b"]`}, `{"id":"q","columns":[],"data":[0],"stats":{}}`},
		{"key in a string", `{"id":"\"data\":[9]","data":[["]\"[{"]]}`,
			[]string{`["]\"[{"]`}, `{"id":"\"data\":[9]","data":[0]}`},
		{"nested and spaced", " {\n \"data\" : [ [ {\"a\":[1,{\"b\":\"}\"}]} ] , [null] ] ,\"nextUri\":\"u\"}",
			[]string{`[ {"a":[1,{"b":"}"}]} ]`, `[null]`}, " {\n \"data\" : [0] ,\"nextUri\":\"u\"}"},
		{"a nested data member is not the page's", `{"stats":{"data":[[1]]},"id":"q"}`, nil, ""},
		{"empty data", `{"id":"q","data":[]}`, nil, ""},
		{"data not an array", `{"id":"q","data":"x"}`, nil, ""},
		{"cut", `{"id":"q","data":[[1],[2`, nil, ""},
		{"not an object", `<html>oops</html>`, nil, ""},
	} {
		for _, gzipped := range []bool{false, true} {
			body := []byte(tc.page)
			h := http.Header{}
			if gzipped {
				var b bytes.Buffer
				zw := gzip.NewWriter(&b)
				zw.Write(body)
				zw.Close()
				body = b.Bytes()
				h.Set("Content-Encoding", "gzip")
			}
			resp := &http.Response{Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
			a := &attempt{}
			splitPage(resp, a)
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if resp.Header.Get("Content-Encoding") != "" || resp.ContentLength != int64(len(got)) {
				t.Errorf("%s: headers %v, length %d of %d", tc.name, resp.Header, resp.ContentLength, len(got))
			}
			p := a.takePage()
			if tc.rows == nil {
				if p != nil || string(got) != tc.page {
					t.Errorf("%s (gzip %v): split into %v and %q, want it as it came", tc.name, gzipped, p, got)
				}
				continue
			}
			if p == nil {
				t.Errorf("%s (gzip %v): not split", tc.name, gzipped)
				continue
			}
			var rows []string
			for _, r := range p.rows {
				rows = append(rows, string(r))
			}
			if strings.Join(rows, "|") != strings.Join(tc.rows, "|") || string(got) != tc.rest {
				t.Errorf("%s (gzip %v): rows %q, rest %q; want %q, %q", tc.name, gzipped, rows, got, tc.rows, tc.rest)
			}
		}
	}
}

// A body that fails while it is read hands the client what came and then
// the error.
func TestSplitPageReadError(t *testing.T) {
	resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(io.MultiReader(strings.NewReader(`{"data":[[1]`), failing{})), ContentLength: -1}
	a := &attempt{}
	splitPage(resp, a)
	got, err := io.ReadAll(resp.Body)
	if err != errBroken || string(got) != `{"data":[[1]` || a.takePage() != nil {
		t.Fatalf("got %q, %v", got, err)
	}
}

type failing struct{}

var errBroken = io.ErrClosedPipe

func (failing) Read([]byte) (int, error) { return 0, errBroken }
