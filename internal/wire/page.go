package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// pagePool recycles the buffers whole pages are read into; buffers that
// grew past poolLimit are left to the collector, so that one huge page
// does not stay pinned.
var pagePool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const poolLimit = 1 << 20

// ReadPage reads resp's body whole into a pooled buffer and checks it: a
// body cut by the connection, or one that is not a JSON object (an HTML
// error page from a proxy, say), is a *PageError. A compressed body is only
// read, not decoded: its reader checks it. The caller owns the buffer and
// may hand it back with PutPage.
func ReadPage(resp *http.Response) (*bytes.Buffer, error) {
	buf := pagePool.Get().(*bytes.Buffer)
	buf.Reset()
	err := readInto(buf, resp)
	resp.Body.Close()
	if err == nil && resp.Header.Get("Content-Encoding") == "" {
		b := bytes.TrimLeft(buf.Bytes(), " \t\r\n")
		if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
			err = errors.New("the body is not a JSON object")
		}
	}
	if err != nil {
		PutPage(buf)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = fmt.Errorf("connection cut inside the body: %w", err)
		}
		return nil, &PageError{Err: err}
	}
	return buf, nil
}

// pageChunk is the size of the pieces a large page is read in.
const pageChunk = 4 << 20

// maxReserve bounds the buffer a page's announced size (its
// Content-Length) reserves before its bytes arrive: a peer that claims a
// gigabyte and sends a few bytes must not make the reader hold the
// gigabyte. A larger page is read in pieces, as they arrive.
const maxReserve = pageChunk

// readInto reads resp's body into buf. A page of a size the response
// announces, up to maxReserve, gets a buffer of that size. Otherwise up to
// poolLimit is read into buf as it is, and a larger page in pieces of
// pageChunk, copied once into a buffer of the page's size: a buffer grown
// by doubling would end up to twice the page, with its earlier sizes as
// garbage besides. What is held is then about twice what arrived, never
// what was announced.
func readInto(buf *bytes.Buffer, resp *http.Response) error {
	if n := resp.ContentLength; n > 0 && n <= maxReserve {
		buf.Grow(int(n) + bytes.MinRead) // ReadFrom wants MinRead free to see the end
		_, err := buf.ReadFrom(resp.Body)
		return err
	}
	return readPieces(buf, resp.Body)
}

// readPieces reads r to its end into buf: up to poolLimit as buf grows,
// the rest in pieces of pageChunk, copied once into a buffer of the size
// that arrived. On an error buf holds what came before the last piece.
func readPieces(buf *bytes.Buffer, r io.Reader) error {
	if _, err := buf.ReadFrom(io.LimitReader(r, poolLimit)); err != nil || buf.Len() < poolLimit {
		return err
	}
	var chunks [][]byte
	total := buf.Len()
	for done := false; !done; {
		chunk := make([]byte, pageChunk)
		n := 0
		for n < len(chunk) {
			m, err := r.Read(chunk[n:])
			n += m
			if err == io.EOF {
				done = true
				break
			}
			if err != nil {
				return err // a cut body included: io.ErrUnexpectedEOF
			}
		}
		chunks = append(chunks, chunk[:n])
		total += n
	}
	whole := make([]byte, 0, total)
	whole = append(whole, buf.Bytes()...)
	for _, c := range chunks {
		whole = append(whole, c...)
	}
	*buf = *bytes.NewBuffer(whole)
	return nil
}

// ReadAll reads r to its end as a page is read: a buffer of the size
// announced (a Content-Length, or -1 when unknown) up to a few MiB, or
// pieces copied once into a buffer of the size that arrived, so that a
// peer's claim reserves nothing it did not send. On an error it returns
// what it read, or its first MiB.
func ReadAll(r io.Reader, announced int64) ([]byte, error) {
	var buf bytes.Buffer
	if announced > 0 && announced <= maxReserve {
		buf.Grow(int(announced) + bytes.MinRead)
		_, err := buf.ReadFrom(r)
		return buf.Bytes(), err
	}
	err := readPieces(&buf, r)
	return buf.Bytes(), err
}

// maxAnnounced bounds the size a page announces (its gzip trailer's
// decoded size) that a buffer is sized by once the data arrived.
const maxAnnounced = 1 << 30

// PutPage hands a buffer of ReadPage back for reuse; the caller must not
// touch it afterwards. A buffer that grew past the pool's limit is left to
// the collector.
func PutPage(buf *bytes.Buffer) {
	if buf.Cap() <= poolLimit {
		pagePool.Put(buf)
	}
}
