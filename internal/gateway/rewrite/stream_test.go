package rewrite

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

const (
	pageHead = `{"id":"20240101_000000_00001_abcde","infoUri":"http://c:8080/ui/query.html?20240101_000000_00001_abcde",` +
		`"nextUri":"http://c:8080/v1/statement/executing/20240101_000000_00001_abcde/y0/2",` +
		`"columns":[{"name":"id","type":"bigint"},{"name":"ts","type":"timestamp(3)"},{"name":"note","type":"varchar"},` +
		`{"name":"price","type":"double"},{"name":"ok","type":"boolean"},{"name":"extra","type":"varchar"}],"data":[`
	pageTail = `],"partialCancelUri":"http://c:8080/v1/statement/executing/partialCancel/20240101_000000_00001_abcde/0/y0/2",` +
		`"stats":{"state":"RUNNING","queued":false,"scheduled":true,"nodes":3,"totalSplits":120,"processedRows":1000000}}`
)

// rows returns n bytes or more of result rows, each followed by a comma:
// timestamps, text with escapes and decoy keys, numbers, literals.
func rows(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `[%d,"2024-01-01 00:%02d:%02d.%03d","row %d says \"nextUri\":\"http:\/\/evil\" \u00e9",%d.%02d,%t,null],`,
			1000000+i, i/60%60, i%60, i%1000, i, i%10000, i%100, i%2 == 0)
	}
	return b.Bytes()
}

// pageReader yields a page of size bytes or more, assembled from a block
// of rows repeated, chunk bytes at a time, without ever holding the page.
type pageReader struct {
	parts [][]byte
	block []byte
	left  int // repeats of block still to come
	chunk int
}

func newPage(size, chunk int) *pageReader {
	block := rows(64 << 10)
	return &pageReader{
		parts: [][]byte{[]byte(pageHead)},
		block: block,
		left:  size/len(block) + 1,
		chunk: chunk,
	}
}

func (p *pageReader) Read(b []byte) (int, error) {
	for len(p.parts) == 0 || len(p.parts[0]) == 0 {
		switch {
		case len(p.parts) > 0:
			p.parts = p.parts[1:]
		case p.left > 1:
			p.left--
			p.parts = append(p.parts, p.block)
		case p.left == 1:
			p.left--
			// The last row has no comma after it.
			p.parts = append(p.parts, p.block[:len(p.block)-1], []byte(pageTail))
		default:
			return 0, io.EOF
		}
	}
	n := min(len(b), p.chunk, len(p.parts[0]))
	copy(b, p.parts[0][:n])
	p.parts[0] = p.parts[0][n:]
	return n, nil
}

// heapSink counts what it is given, keeps its last bytes, and samples
// the heap as the stream goes.
type heapSink struct {
	n, nextSample int64
	tail          []byte
	peakInuse     uint64
}

func (s *heapSink) Write(b []byte) (int, error) {
	s.n += int64(len(b))
	s.tail = append(s.tail, b...)
	if len(s.tail) > 4096 {
		s.tail = append(s.tail[:0], s.tail[len(s.tail)-1024:]...)
	}
	if s.n >= s.nextSample {
		s.nextSample = s.n + 8<<20
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		s.peakInuse = max(s.peakInuse, m.HeapInuse)
	}
	return len(b), nil
}

// A 200 MB page streams through in small chunks while the heap stays
// where it was: nothing grows with the page.
func TestLargePageConstantMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 200 MB")
	}
	const size = 200 << 20
	var rec recorder
	src := newPage(size, 1500)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sink := &heapSink{}
	n, err := io.Copy(sink, New(src, rec.fn))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n < size {
		t.Fatalf("copied %d bytes, want %d or more", n, size)
	}
	if len(rec.calls) != 3 || rec.calls[2].field != PartialCancelURI {
		t.Fatalf("calls: %v", rec.calls)
	}
	wantTail := "null]" + strings.Replace(pageTail, `"partialCancelUri":"`, `"partialCancelUri":"GW/partialCancelUri/`, 1)
	if !bytes.HasSuffix(sink.tail, []byte(wantTail)) {
		t.Fatalf("tail: %s", sink.tail)
	}

	growth := int64(sink.peakInuse) - int64(before.HeapInuse)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d MB through: heap in use %.1f MB before, peak %.1f MB (growth %.2f MB); %.1f KB allocated in all",
		n>>20, float64(before.HeapInuse)/(1<<20), float64(sink.peakInuse)/(1<<20), float64(growth)/(1<<20), float64(allocated)/1024)
	if growth > 16<<20 {
		t.Errorf("heap in use grew by %d bytes, want under 16 MB", growth)
	}
	if allocated > 16<<20 {
		t.Errorf("%d bytes allocated for one page, want under 16 MB", allocated)
	}
}

// plainReader hides a reader's WriteTo, and plainWriter a writer's
// ReadFrom, so that io.Copy moves every byte through its buffer: the
// baseline is a real copy, not a hand-over of one slice.
type plainReader struct{ r io.Reader }

func (p plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

type plainWriter struct{ w io.Writer }

func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }

// BenchmarkStream compares the rewriter's throughput on a 16 MB page of
// rows with a plain io.Copy of the same page, in the same run.
func BenchmarkStream(b *testing.B) {
	r := rows(16 << 20)
	page := append(append([]byte(pageHead), r[:len(r)-1]...), pageTail...)
	if !isObject(page) {
		b.Fatal("the page is not valid JSON")
	}
	gw := func(f Field, u string) (string, error) { return "https://gw/_zk/k.c.m" + u[len("http://c:8080"):], nil }
	b.Run("io.Copy", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			if _, err := io.Copy(plainWriter{io.Discard}, plainReader{bytes.NewReader(page)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rewrite", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			if _, err := io.Copy(plainWriter{io.Discard}, New(plainReader{bytes.NewReader(page)}, gw)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A released Reader's buffers serve the next one, which starts clean: the
// second answer comes out exactly as it would from a fresh Reader, and the
// released one reads nothing more.
func TestReleaseReusesBuffers(t *testing.T) {
	fn := func(_ Field, uri string) (string, error) {
		return "http://gw" + strings.TrimPrefix(uri, "http://c1"), nil
	}
	long := `{"id":"q1","nextUri":"http://c1/v1/statement/q1/1","data":[` + strings.Repeat(`[1],`, 50_000) + `[2]]}`
	short := `{"id":"q2","nextUri":"http://c1/v1/statement/q2/1"}`
	first := New(strings.NewReader(long), fn)
	if _, err := io.ReadAll(first); err != nil {
		t.Fatal(err)
	}
	first.Release()
	if n, err := first.Read(make([]byte, 10)); n != 0 || err == nil {
		t.Fatalf("Read after Release = %d, %v; want an error", n, err)
	}
	first.Release() // twice is harmless
	for range 3 {
		r := New(strings.NewReader(short), fn)
		got, err := io.ReadAll(r)
		r.Release()
		if err != nil || string(got) != `{"id":"q2","nextUri":"http://gw/v1/statement/q2/1"}` {
			t.Fatalf("after a released Reader: %q, %v", got, err)
		}
	}
}
