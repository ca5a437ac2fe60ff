package driver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/zkpresto/zkpresto/internal/pool"
	"github.com/zkpresto/zkpresto/internal/wire"
)

// A page's rows are read once, from the page as it came. The transport
// takes the "data" array out of each page of a statement (decoding gzip
// for it, the only decoding of the page), keeps the page and where each
// row lies in it for the driver's rows (values.go), and hands the Presto
// client the rest of the page, with a one-element placeholder for the
// data: the client still does the protocol (ids, nextUri, stats, errors,
// update counts) and decodes a page of a few hundred bytes, so that a page
// is held once, not again in the client's decoder buffer and once more as
// a copy of each row (see BENCHMARKS.md, "Memory while reading a page").

// placeholderData replaces a non-empty "data" array: the client sees one
// row and stops fetching there, as for the page itself.
var placeholderData = []byte(`[0]`)

// pageData is a page's rows, each a slice of the page.
type pageData struct {
	rows []json.RawMessage
}

// attemptPages is the part of an attempt the page splitting uses.
type attemptPages struct {
	// page holds the rows of the latest page the transport split, until
	// the driver takes them.
	page atomic.Pointer[pageData]
}

// takePage returns the rows of the page the client just decoded, or nil
// when the transport did not split it (the client's own Data then holds
// them).
func (a *attemptPages) takePage() *pageData { return a.page.Swap(nil) }

// splitPage reads resp's page whole and, when it has rows, keeps them in
// a and hands the client the page without them. A page the driver cannot
// make out is handed on as it came, decoded, for the client to judge.
func splitPage(resp *http.Response, a *attempt) {
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	gzipped := strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip")
	page, err := readWhole(resp, gzipped)
	orig := resp.Body
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.Uncompressed = resp.Uncompressed || gzipped
	if err != nil {
		b := &splitBody{err: err, orig: orig}
		b.Reset(page)
		resp.Body = b
		resp.ContentLength = -1
		return
	}
	out := page
	if start, end, ok := topLevelValue(page, "data"); ok && page[start] == '[' {
		rows, ok := arrayElements(page[start:end])
		if ok && len(rows) > 0 {
			out = make([]byte, 0, start+len(placeholderData)+len(page)-end)
			out = append(append(append(out, page[:start]...), placeholderData...), page[end:]...)
			a.page.Store(&pageData{rows: rows})
		}
	}
	b := &splitBody{orig: orig}
	b.Reset(out)
	resp.Body = b
	resp.ContentLength = int64(len(out))
}

// readWhole reads resp's body, decoded, and closes it: into a buffer of
// the size the page announces (its Content-Length up to a few MiB, or the
// gzip trailer's once the data arrived), or of the size that arrived.
func readWhole(resp *http.Response, gzipped bool) ([]byte, error) {
	defer resp.Body.Close()
	var raw []byte
	if b, ok := resp.Body.(*pool.Body); ok {
		// The exchange read the page whole already: take it, no copy.
		raw, ok = b.TakePage()
		if ok && !gzipped {
			return raw, nil
		}
	}
	if raw != nil {
		return wire.Gunzip(raw)
	}
	if !gzipped {
		// Sized by what arrives, not by what the Content-Length claims.
		return wire.ReadAll(resp.Body, resp.ContentLength)
	}
	raw, err := wire.ReadAll(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, err
	}
	return wire.Gunzip(raw)
}

// splitBody is the page the client gets; closing it closes the original
// body (closed already, after the page was read: a second Close is
// harmless on every body the transport makes).
type splitBody struct {
	bytes.Reader
	err  error // the original body's read error, after the page
	orig io.ReadCloser
}

func (b *splitBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err == io.EOF && b.err != nil {
		return n, b.err
	}
	return n, err
}

func (b *splitBody) Close() error { return b.orig.Close() }

// topLevelValue returns where the value of the top-level member key of
// the JSON object doc lies; false when doc is not an object or has no such
// member.
func topLevelValue(doc []byte, key string) (start, end int, ok bool) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return 0, 0, false
	}
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return 0, 0, false
	}
	for i < len(doc) {
		if doc[i] != '"' {
			return 0, 0, false
		}
		kend, ok := skipValue(doc, i)
		if !ok {
			return 0, 0, false
		}
		name := doc[i+1 : kend-1]
		i = skipSpace(doc, kend)
		if i >= len(doc) || doc[i] != ':' {
			return 0, 0, false
		}
		vstart := skipSpace(doc, i+1)
		vend, ok := skipValue(doc, vstart)
		if !ok {
			return 0, 0, false
		}
		if string(name) == key {
			return vstart, vend, true
		}
		i = skipSpace(doc, vend)
		if i >= len(doc) || doc[i] != ',' {
			return 0, 0, false
		}
		i = skipSpace(doc, i+1)
	}
	return 0, 0, false
}

// arrayElements returns the elements of the JSON array arr.
func arrayElements(arr []byte) ([]json.RawMessage, bool) {
	i := skipSpace(arr, 1)
	if i < len(arr) && arr[i] == ']' {
		return nil, true
	}
	var out []json.RawMessage
	for i < len(arr) {
		end, ok := skipValue(arr, i)
		if !ok {
			return nil, false
		}
		out = append(out, arr[i:end:end])
		i = skipSpace(arr, end)
		if i >= len(arr) {
			return nil, false
		}
		switch arr[i] {
		case ']':
			return out, true
		case ',':
			i = skipSpace(arr, i+1)
		default:
			return nil, false
		}
	}
	return nil, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at i: a string, an
// object or array (brackets counted outside strings), or a literal. It
// finds the value's extent; json.Unmarshal of each row checks the rest.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, true
			}
		}
		return 0, false
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, ok := skipValue(b, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	j := i
	for j < len(b) && !endsLiteral(b[j]) {
		j++
	}
	return j, j > i
}

func endsLiteral(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
