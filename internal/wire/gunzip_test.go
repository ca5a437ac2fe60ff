package wire_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/zkpresto/zkpresto/internal/wire"
)

// A page whose gzip trailer claims far more than its data could decode
// to (a hostile or broken coordinator) does not make Gunzip reserve that
// much: the decoded size is still read from the data.
func TestGunzipDoesNotTrustAnImpossibleTrailer(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(`{"id":"q1","data":[[1]]}`))
	zw.Close()
	raw := b.Bytes()
	honest, err := wire.Gunzip(bytes.Clone(raw))
	if err != nil {
		t.Fatal(err)
	}
	// 512 MiB in ISIZE; the decoder then reports the mismatch, as it
	// checks ISIZE only at the end.
	binary.LittleEndian.PutUint32(raw[len(raw)-4:], 512<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, _ := wire.Gunzip(raw)
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("Gunzip of %d bytes claiming 512 MiB allocated %d MiB", len(raw), grew>>20)
	}
	if !bytes.Equal(got, honest) {
		t.Errorf("decoded %q, want %q", got, honest)
	}
}
