package rewrite

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// Field names which URI of an answer the rewrite function is given, so
// that it can route each kind differently (a follow-up, a cancel, the UI
// page, a spooled segment of the storage or of the coordinator).
type Field int

// The URIs that are rewritten. The zero Field is none of them.
const (
	// NextURI is the top-level nextUri: the next page or the final state.
	NextURI Field = iota + 1
	// PartialCancelURI is the top-level partialCancelUri.
	PartialCancelURI
	// InfoURI is the top-level infoUri, the coordinator UI's query page.
	InfoURI
	// SegmentURI is a spooled segment's uri (where its data is fetched).
	SegmentURI
	// SegmentAckURI is a spooled segment's ackUri (where its fetch is
	// acknowledged so that the coordinator can delete it).
	SegmentAckURI
)

// String gives the JSON key the field is found under.
func (f Field) String() string {
	switch f {
	case NextURI:
		return "nextUri"
	case PartialCancelURI:
		return "partialCancelUri"
	case InfoURI:
		return "infoUri"
	case SegmentURI:
		return "uri"
	case SegmentAckURI:
		return "ackUri"
	}
	return fmt.Sprintf("Field(%d)", int(f))
}

// MaxURI bounds the raw (still escaped) bytes of one URI value, the only
// thing held whole besides the buffer: a coordinator's URIs are well under
// a kilobyte and presigned storage URIs a few, so a longer one is a broken
// or hostile answer and must not grow a proxy's memory.
const MaxURI = 64 << 10

// MaxSegmentHold bounds what is held of a segment whose uri comes before
// its "type" (Trino writes "type" first, so this is for other writers):
// whether to rewrite the uri is known only once the type is, so the bytes
// from the uri to the type (or to the segment's end) wait.
const MaxSegmentHold = 64 << 10

// MaxDepth is the deepest nesting of objects and arrays accepted; it is
// encoding/json's, so that the two agree on what is well-formed and the
// nesting stack stays small.
const MaxDepth = 10000

// bufSize is the fixed read buffer: large enough that the per-Read cost
// is amortised, small enough to be nothing per proxied query.
const bufSize = 32 << 10

// ErrTooLong is wrapped by the error returned when a URI value is longer
// than MaxURI or a segment's held bytes pass MaxSegmentHold.
var ErrTooLong = errors.New("value too long to rewrite")

// SyntaxError is a body that is not one well-formed JSON object.
type SyntaxError struct {
	// Offset is the number of input bytes before the offending one (the
	// input's length when it ends too early).
	Offset int64
	msg    string
	cut    bool
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("rewrite: malformed JSON at offset %d: %s", e.Offset, e.msg)
}

// Unwrap makes errors.Is(err, io.ErrUnexpectedEOF) hold for a body that
// was cut short, which a proxy reports differently from a broken one.
func (e *SyntaxError) Unwrap() error {
	if e.cut {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// Func is given each URI found, decoded from its JSON escapes, and returns
// its replacement (plain text: it is escaped as JSON needs). Returning uri
// unchanged keeps the original bytes. An error stops the stream and is
// returned by Read, wrapped. Calls come in document order and on the
// reading goroutine.
type Func func(field Field, uri string) (string, error)

// Reader is the rewritten stream of one answer body.
type Reader struct {
	src    io.Reader
	s      scanner
	buf    []byte
	bufs   *readerBuffers // nil once released
	off    int            // read position in s.out
	err    error
	nilRds int
}

// New returns a Reader of r's JSON object with every URI value at the
// paths in the package doc passed through fn. A nil fn changes nothing,
// which still checks that the body is well-formed.
func New(r io.Reader, fn Func) *Reader {
	b, _ := buffers.Get().(*readerBuffers)
	if b == nil {
		b = &readerBuffers{read: make([]byte, bufSize)}
	}
	rd := &Reader{src: r, buf: b.read, bufs: b}
	rd.s.out = b.out[:0]
	rd.s.init(fn)
	return rd
}

// Release gives the Reader's buffers to the next Reader New makes: a proxy
// makes one per answer, and 32 KB per answer is most of what it allocates.
// The Reader must not be used after.
func (r *Reader) Release() {
	b := r.bufs
	if b == nil {
		return
	}
	r.bufs, r.buf, r.src = nil, nil, nil
	if cap(r.s.out) <= maxPooledOut {
		b.out = r.s.out[:0]
	} else {
		b.out = nil // grown for a large answer: not worth keeping
	}
	r.s.out, r.off = nil, 0
	r.err = errReleased
	buffers.Put(b)
}

// readerBuffers are the buffers a Reader takes from the pool.
type readerBuffers struct {
	read []byte // bufSize
	out  []byte
}

// maxPooledOut is the largest output buffer kept for the next Reader.
const maxPooledOut = 4 * bufSize

var buffers sync.Pool

var errReleased = errors.New("rewrite: read after Release")

// Read implements io.Reader. After the source's EOF it returns io.EOF
// only if the body was one complete object; otherwise a *SyntaxError.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for r.off == len(r.s.out) {
		if r.err != nil {
			return 0, r.err
		}
		if !r.fill() {
			return 0, io.ErrNoProgress
		}
	}
	n := copy(p, r.s.out[r.off:])
	r.off += n
	if r.off == len(r.s.out) && r.err == io.EOF {
		// The last bytes come with the EOF, as net/http's bodies give
		// theirs: the relay then knows the answer is complete and ends it
		// without first flushing it as if the coordinator had paused.
		return n, io.EOF
	}
	return n, nil
}

// WriteTo implements io.WriterTo, so that io.Copy writes straight from
// the rewritten buffer instead of copying it once more.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if r.off < len(r.s.out) {
			n, err := w.Write(r.s.out[r.off:])
			total += int64(n)
			r.off += n
			if err != nil {
				return total, err
			}
			if r.off < len(r.s.out) {
				return total, io.ErrShortWrite
			}
		}
		if r.err != nil {
			if r.err == io.EOF {
				return total, nil
			}
			return total, r.err
		}
		if !r.fill() {
			return total, io.ErrNoProgress
		}
	}
}

// fill reads once from the source and scans what came. It reports false
// when a source keeps returning nothing and no error, as bufio does.
func (r *Reader) fill() bool {
	r.s.out = r.s.out[:0]
	r.off = 0
	n, err := r.src.Read(r.buf)
	if n > 0 {
		r.nilRds = 0
		if e := r.s.scan(r.buf[:n]); e != nil {
			r.err = e
			return true
		}
	}
	switch {
	case err == io.EOF:
		if e := r.s.finish(); e != nil {
			r.err = e
		} else {
			r.err = io.EOF
		}
	case err != nil:
		r.err = err
	case n == 0:
		r.nilRds++
		return r.nilRds < 100
	}
	return true
}

// errFound stops FirstURI's scan at the first URI.
var errFound = errors.New("found")

// FirstURI reports the first URI (at the paths in the package doc) in a
// body's first bytes, for the cheap check of whether the coordinator
// already built its URIs from the gateway's forwarded prefix (and the
// body may then stream untouched): the coordinator builds all of an
// answer's URIs from the same request headers, and Trino and PrestoDB
// write infoUri or nextUri within the first few hundred bytes. ok is false
// when prefix holds no complete URI value or is not the start of a JSON
// object.
func FirstURI(prefix []byte) (field Field, uri string, ok bool) {
	var s scanner
	s.init(func(f Field, u string) (string, error) {
		field, uri = f, u
		return u, errFound
	})
	s.discard = true
	if err := s.scan(prefix); errors.Is(err, errFound) {
		return field, uri, true
	}
	return 0, "", false
}
