package protocol

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

// readPage reads resp's body whole into a pooled buffer and checks it: a
// body cut by the connection, or one that is not a JSON object (an HTML
// error page from a proxy, say), is a *PageError. A compressed body is only
// read, not decoded: its reader checks it. The caller owns the buffer.
func readPage(resp *http.Response) (*bytes.Buffer, error) {
	buf := pagePool.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err == nil && resp.Header.Get("Content-Encoding") == "" {
		b := bytes.TrimLeft(buf.Bytes(), " \t\r\n")
		if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
			err = errors.New("the body is not a JSON object")
		}
	}
	if err != nil {
		putPage(buf)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = fmt.Errorf("connection cut inside the body: %w", err)
		}
		return nil, &PageError{Err: err}
	}
	return buf, nil
}

func putPage(buf *bytes.Buffer) {
	if buf.Cap() <= poolLimit {
		pagePool.Put(buf)
	}
}
