package wire

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

// A page that claims a gigabyte and sends 200 bytes reserves nothing for
// the claim: while the coordinator holds the rest back, the heap has grown
// by a few MiB at most (twice what arrived, and one piece).
func TestReadPageReservesWhatArrivesNotWhatIsClaimed(t *testing.T) {
	resp, blocked, stop := testutil.LyingPage(t, 1_000_000_000, 200)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan error, 1)
	go func() {
		_, err := ReadPage(resp)
		done <- err
	}()
	<-blocked
	grown := testutil.HeapGrowth(before)
	stop()
	if err := <-done; err == nil {
		t.Error("a page cut short of its Content-Length was read without an error")
	}
	if grown > 8<<20 {
		t.Errorf("reading a page that claims 1 GB and sent 200 bytes grew the heap by %d MiB, want at most 8", grown>>20)
	}
}

// A page larger than the pooled buffer is read whole, exactly, into a
// buffer of its size, whatever the reads' sizes; one cut inside, at a
// piece's boundary or not, is a *PageError; one whose length is
// announced gets a buffer of that size.
func TestReadPageLarge(t *testing.T) {
	big := `{"data":["` + strings.Repeat("x", 3*pageChunk+12345) + `"]}`
	for _, tc := range []struct {
		name   string
		body   io.Reader
		length int64
		cut    bool
	}{
		{"chunked", strings.NewReader(big), -1, false},
		{"dribbled", &dribble{r: strings.NewReader(big), n: 777}, -1, false},
		{"announced", strings.NewReader(big), int64(len(big)), false},
		{"exactly the pooled size", strings.NewReader(`{"a":"` + strings.Repeat("y", poolLimit-8) + `"}`), -1, false},
		{"cut", io.MultiReader(strings.NewReader(big[:2*pageChunk+poolLimit]), cutReader{}), -1, true},
		{"cut mid-piece", io.MultiReader(strings.NewReader(big[:pageChunk+99]), cutReader{}), -1, true},
	} {
		resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(tc.body), ContentLength: tc.length}
		buf, err := ReadPage(resp)
		var pe *PageError
		if tc.cut {
			if !errors.As(err, &pe) || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s: %v, want a PageError for a cut body", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := big
		if tc.name == "exactly the pooled size" {
			want = `{"a":"` + strings.Repeat("y", poolLimit-8) + `"}`
		}
		if !bytes.Equal(buf.Bytes(), []byte(want)) {
			t.Errorf("%s: %d bytes read, want %d", tc.name, buf.Len(), len(want))
		}
		if len(want) > poolLimit && buf.Cap() > len(want)+64<<10 { // the allocator rounds up
			t.Errorf("%s: a buffer of %d for a page of %d", tc.name, buf.Cap(), len(want))
		}
	}
}

type dribble struct {
	r io.Reader
	n int
}

func (d *dribble) Read(p []byte) (int, error) { return d.r.Read(p[:min(len(p), d.n)]) }

type cutReader struct{}

func (cutReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
