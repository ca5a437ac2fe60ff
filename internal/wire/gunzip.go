package wire

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"sync"
)

// maxDeflateRatio is the most deflate can expand its input (about
// 1032:1, for a long run of one byte): no honest trailer says more.
const maxDeflateRatio = 1032

// Gunzip decodes the gzip data raw whole, into a buffer of the size its
// trailer gives, with a pooled decoder: a decoder costs a few allocations
// and tens of KiB to make, and every compressed page needs one.
func Gunzip(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	if len(raw) >= 18 {
		// ISIZE, the last four bytes: the decoded size modulo 2^32. A
		// wrong or hostile one reserves no more than the data could
		// decode to; beyond that the buffer grows as the data comes.
		if n := int64(binary.LittleEndian.Uint32(raw[len(raw)-4:])); n <= maxAnnounced && n <= int64(len(raw))*maxDeflateRatio {
			buf.Grow(int(n) + bytes.MinRead)
		}
	}
	d := gunzippers.Get().(*gunzipper)
	defer gunzippers.Put(d)
	d.src.Reset(raw)
	if err := d.zr.Reset(&d.src); err != nil {
		return nil, err
	}
	_, err := buf.ReadFrom(&d.zr)
	return buf.Bytes(), err
}

// GunzipHead returns up to n decoded bytes from the start of the gzip
// data b; what it could decode when the data is cut or broken.
func GunzipHead(b []byte, n int) []byte {
	d := gunzippers.Get().(*gunzipper)
	defer gunzippers.Put(d)
	out := make([]byte, n)
	d.src.Reset(b)
	if err := d.zr.Reset(&d.src); err != nil {
		return out[:0]
	}
	m, _ := io.ReadFull(&d.zr, out)
	return out[:m]
}

// gunzipper is a gzip decoder over a byte slice.
type gunzipper struct {
	src bytes.Reader
	zr  gzip.Reader
}

var gunzippers = sync.Pool{New: func() any { return new(gunzipper) }}
