package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// response is the http.ResponseWriter and http.Flusher of one request.
type response struct {
	c      *conn
	req    *http.Request
	body   *requestBody
	header http.Header // the handler's
	sent   http.Header // as of WriteHeader: later changes have no effect

	status      int
	wroteHeader bool  // WriteHeader (or a Write) was called
	committed   bool  // the status line and headers are in c.bw
	chunked     bool  // the body is framed in chunks
	length      int64 // the body's declared length; -1 when none
	written     int64 // body bytes the handler wrote
	pending     []byte
	closeAfter  bool
	sniff       []byte // the first write, when it is not held
	err         error  // the first write error: the connection is broken

	cancel context.CancelFunc // ends the request's context
	gone   atomic.Bool        // the client has gone: a write failed, or a look found it so
	ended  atomic.Bool        // the handler has returned
}

// commitAfter is how much of a body is held before the head is written:
// an answer that fits and is complete when the handler returns goes out
// with a Content-Length, in one write.
const commitAfter = 2048

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic("server: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.wroteHeader = true
	w.status = code
	w.sent = w.header.Clone()
	if w.sent == nil {
		w.sent = http.Header{}
	}
	w.length = -1
	if cl := w.sent.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err == nil && n >= 0 {
			w.length = n
		} else {
			w.sent.Del("Content-Length")
		}
	}
}

// writeInformational sends a 1xx answer at once, with the headers set so
// far (as net/http does for 103 Early Hints).
func (w *response) writeInformational(code int) {
	bw := w.c.bw
	writeStatusLine(w, code)
	validHeader(w.header).Write(bw)
	bw.WriteString("\r\n")
	if err := bw.Flush(); err != nil && w.err == nil {
		w.err = err
	}
}

// bodyAllowed says whether the status allows a body.
func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified && (status < 100 || status >= 200)
}

func (w *response) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	if !w.committed {
		if len(w.pending)+len(p) <= commitAfter {
			w.pending = append(w.pending, p...)
			return len(p), nil
		}
		if len(w.pending) == 0 {
			w.sniff = p
		}
		w.commit(false)
	}
	w.writeBody(p)
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

func (w *response) writeBody(p []byte) {
	if len(p) == 0 || w.err != nil {
		return
	}
	bw := w.c.bw
	if w.chunked {
		var size [16]byte
		bw.Write(strconv.AppendInt(size[:0], int64(len(p)), 16))
		bw.WriteString("\r\n")
		bw.Write(p)
		_, w.err = bw.WriteString("\r\n")
	} else {
		_, w.err = bw.Write(p)
	}
	if w.err != nil {
		w.markGone()
	}
}

// Flush sends what was written so far.
func (w *response) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false)
	}
	if w.err == nil {
		if w.err = w.c.bw.Flush(); w.err != nil {
			w.markGone()
		}
	}
}

// commit writes the status line and headers, then what was held of the
// body. final says the handler has returned: the whole body is held, and
// its length known.
func (w *response) commit(final bool) {
	w.committed = true
	h := w.sent
	if connectionClose(h) || w.req.Close || w.c.srv.closing.Load() || w.body.continueNeeded {
		// A client told "100 Continue" by no one may still send the body.
		w.closeAfter = true
	}
	// The answer has begun: a 100 Continue now would land inside it.
	w.body.continueNeeded = false
	body := bodyAllowed(w.status)
	switch {
	case !body:
		h.Del("Content-Length")
		h.Del("Transfer-Encoding")
	case w.length >= 0:
		h.Del("Transfer-Encoding")
	case w.req.Method == http.MethodHead:
		// A HEAD answer has no body, so no framing of one; a length it
		// can know is the GET's.
		h.Del("Transfer-Encoding")
		if final && w.written > 0 {
			w.length = w.written
			h["Content-Length"] = []string{strconv.FormatInt(w.written, 10)}
		}
	case final:
		w.length = w.written
		h["Content-Length"] = []string{strconv.FormatInt(w.written, 10)}
		h.Del("Transfer-Encoding")
	case w.req.ProtoAtLeast(1, 1):
		w.chunked = true
		h["Transfer-Encoding"] = []string{"chunked"}
	default:
		// An HTTP/1.0 client without a length: the body ends with the
		// connection.
		w.closeAfter = true
		h.Del("Transfer-Encoding")
	}
	sniff := w.pending
	if len(sniff) == 0 {
		sniff = w.sniff
	}
	w.sniff = nil
	if _, ok := h["Content-Type"]; !ok && body && len(sniff) > 0 && h.Get("Content-Encoding") == "" {
		h["Content-Type"] = []string{http.DetectContentType(sniff)}
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = []string{httpDate()}
	}
	if w.closeAfter {
		h["Connection"] = []string{"close"}
	} else if !w.req.ProtoAtLeast(1, 1) {
		h["Connection"] = []string{"keep-alive"}
	}
	bw := w.c.bw
	writeStatusLine(w, w.status)
	validHeader(h).Write(bw)
	_, w.err = bw.WriteString("\r\n")
	p := w.pending
	w.pending = nil
	w.writeBody(p)
}

// validHeader is h as a client can parse it: a field whose name is not a
// token is left out, and a control byte in a value (a NUL a handler copied
// from a decoded path, say) becomes a space, as http.Header.Write already
// does for CR and LF. h itself is returned when it needs neither, which is
// the ordinary case.
func validHeader(h http.Header) http.Header {
	clean := true
check:
	for name, values := range h {
		if !httpguts.ValidHeaderFieldName(name) {
			clean = false
			break
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				clean = false
				break check
			}
		}
	}
	if clean {
		return h
	}
	out := make(http.Header, len(h))
	for name, values := range h {
		if !httpguts.ValidHeaderFieldName(name) {
			continue
		}
		vs := make([]string, len(values))
		for i, v := range values {
			vs[i] = strings.Map(func(r rune) rune {
				if r != '\t' && (r < ' ' || r == 0x7f) {
					return ' '
				}
				return r
			}, v)
		}
		out[name] = vs
	}
	return out
}

func connectionClose(h http.Header) bool {
	for _, v := range h["Connection"] {
		if hasToken(v, "close") {
			return true
		}
	}
	return false
}

func writeStatusLine(w *response, code int) {
	bw := w.c.bw
	var line [32]byte
	bw.Write(strconv.AppendInt(append(line[:0], "HTTP/1.1 "...), int64(code), 10))
	bw.WriteByte(' ')
	if text := http.StatusText(code); text != "" {
		bw.WriteString(text)
	} else {
		bw.WriteString("status code " + strconv.Itoa(code))
	}
	bw.WriteString("\r\n")
}

// finish ends the response after the handler returned; an error means the
// connection cannot carry another one.
func (w *response) finish() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(true)
	}
	if w.chunked && w.err == nil {
		_, w.err = w.c.bw.WriteString("0\r\n\r\n")
	}
	if w.err == nil {
		w.err = w.c.bw.Flush()
	}
	if w.err != nil {
		w.markGone()
		return w.err
	}
	if w.length >= 0 && w.written < w.length && bodyAllowed(w.status) && w.req.Method != http.MethodHead {
		// Fewer bytes than declared: the client waits for the rest.
		w.closeAfter = true
	}
	return nil
}

// The Date header, formatted once a second.
type dateText struct {
	sec  int64
	text string
}

var lastDate atomic.Pointer[dateText]

func httpDate() string {
	t := time.Now()
	if d := lastDate.Load(); d != nil && d.sec == t.Unix() {
		return d.text
	}
	d := &dateText{sec: t.Unix(), text: t.UTC().Format(http.TimeFormat)}
	lastDate.Store(d)
	return d.text
}
