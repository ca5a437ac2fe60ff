package gateway

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"
)

// The time limits of the server zkpresto gateway runs (NewServer), each the
// default of its nginx counterpart or longer.
const (
	// DefaultReadHeaderTimeout bounds the time from a request's first byte
	// to the end of its headers, TLS handshake included (nginx:
	// client_header_timeout, 60 s).
	DefaultReadHeaderTimeout = 30 * time.Second
	// DefaultIdleTimeout bounds the time a kept-alive connection waits for
	// its next request (nginx: keepalive_timeout, 75 s).
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultBodyTimeout bounds the time between two reads of a request's
	// body; a statement that stalls longer gets 408 and its connection is
	// closed (nginx: client_body_timeout, 60 s).
	DefaultBodyTimeout = 60 * time.Second
	// DefaultWriteTimeout bounds the time between two writes of an answer
	// to a client that does not read it; the handler then gives up and the
	// connection is closed (nginx: send_timeout, 60 s). A long answer that
	// the client reads is never cut.
	DefaultWriteTimeout = 60 * time.Second
)

// ServerLimits are the limits NewServer configures; zero means the
// default of each.
type ServerLimits struct {
	// Header, Idle, Body and Write are the time limits: DefaultReadHeaderTimeout,
	// DefaultIdleTimeout, DefaultBodyTimeout and DefaultWriteTimeout.
	Header, Idle, Body, Write time.Duration
	// HeadBytesInFlight bounds the bytes of request heads held at once
	// over all connections (DefaultHeadBytesInFlight); a head that would
	// go past it gets 400 and its connection closed.
	HeadBytesInFlight int64
	// MaxHeaderFields bounds the header fields of one request head
	// (DefaultMaxHeaderFields); a head with more gets 431 and its
	// connection closed. Over plaintext the fields are counted as the head
	// arrives, before net/http parses them; under TLS, which the count
	// cannot see through, only once it has.
	MaxHeaderFields int
}

// Server is net/http's server as the gateway configures it (see
// NewServer). Serve and ServeTLS keep its bound on the heads in flight.
type Server struct {
	*http.Server
	heads     *headBudget
	maxFields int
}

// Serve serves on ln; see http.Server.Serve.
func (s *Server) Serve(ln net.Listener) error {
	return s.Server.Serve(budgetListener{Listener: ln, b: s.heads, maxFields: s.maxFields})
}

// ServeTLS serves https on ln; see http.Server.ServeTLS.
func (s *Server) ServeTLS(ln net.Listener, certFile, keyFile string) error {
	return s.Server.ServeTLS(budgetListener{Listener: ln, b: s.heads, maxFields: s.maxFields, tls: true}, certFile, keyFile)
}

// NewServer returns the net/http server zkpresto gateway serves h with:
// HTTP/1.1 (no HTTP/2, which every Presto and Trino client can do
// without), heads of at most MaxHeaderBytes and t.MaxHeaderFields fields
// (larger ones get 431) and at most t.HeadBytesInFlight of them at once
// over all connections, each field charged what parsing it costs, the read
// and write limits of t, and its errors (a failed TLS handshake, a handler's
// panic) logged to logger at warn level (nil: none). Serve it with Serve or
// ServeTLS; its TLSConfig is the caller's to set.
//
// The server reads a request body under a deadline that each read moves on
// (t.Body), so a client that stops sending a statement gets 408; and it
// writes an answer under a deadline that each write moves on (t.Write), so
// a handler streaming to a client that stopped reading ends instead of
// waiting for ever. A departed client ends the request's context.
//
// What net/http does not refuse: a request with both Content-Length and
// Transfer-Encoding: chunked is read as chunked, Content-Length ignored
// (RFC 9112 §6.3 allows either refusing it or this); a front that read it
// by its Content-Length would disagree about where the request ends.
// Debian's nginx refuses such a request with 400 (nginx 1.21.1 and later)
// and sends the gateway only requests it framed itself, so behind nginx
// the question does not arise (TestNginxRefusesAmbiguousFraming).
func NewServer(h http.Handler, logger *slog.Logger, t ServerLimits) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	heads := &headBudget{}
	heads.left.Store(t.HeadBytesInFlight)
	if t.HeadBytesInFlight <= 0 {
		heads.left.Store(DefaultHeadBytesInFlight)
	}
	maxFields := t.MaxHeaderFields
	if maxFields <= 0 {
		maxFields = DefaultMaxHeaderFields
	}
	return &Server{Server: &http.Server{
		Handler:           deadlines{h: h, body: orDefault(t.Body, DefaultBodyTimeout), write: orDefault(t.Write, DefaultWriteTimeout), maxFields: maxFields},
		ReadHeaderTimeout: orDefault(t.Header, DefaultReadHeaderTimeout),
		IdleTimeout:       orDefault(t.Idle, DefaultIdleTimeout),
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ConnContext:       budgetConnContext,
		// A non-nil empty map turns HTTP/2 off: the budget of heads counts
		// one request at a time per connection.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}, heads: heads, maxFields: maxFields}
}

// tooManyFields reports whether h holds more than limit fields.
func tooManyFields(h http.Header, limit int) bool {
	n := 0
	for _, vs := range h {
		if n += len(vs); n > limit {
			return true
		}
	}
	return false
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// deadlines serves h with a rolling read deadline on the request body and
// a rolling write deadline on the answer.
type deadlines struct {
	h           http.Handler
	body, write time.Duration
	maxFields   int
}

func (d deadlines) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer inHandler(r)()
	if r.TLS != nil && tooManyFields(r.Header, d.maxFields) {
		// Under TLS the fields cannot be counted before net/http parses
		// them (see budgetConn): refused here, after the parse.
		w.Header().Set("Connection", "close")
		http.Error(w, "431 Request Header Fields Too Large: too many header fields", http.StatusRequestHeaderFieldsTooLarge)
		return
	}
	rc := http.NewResponseController(w)
	// No deadline of the connection's previous request carries over.
	_ = rc.SetWriteDeadline(time.Time{})
	if r.Body != nil && r.Body != http.NoBody {
		_ = rc.SetReadDeadline(time.Now().Add(d.body))
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, d: d.body}
	}
	d.h.ServeHTTP(&rollingWriter{ResponseWriter: w, rc: rc, d: d.write}, r)
}

// deadlineBody moves the connection's read deadline on at each read of
// the body, and lifts it at the body's end: net/http then reads on in the
// background to notice a client that leaves, and a deadline passing there
// would read as a departure.
type deadlineBody struct {
	io.ReadCloser
	rc *http.ResponseController
	d  time.Duration
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == nil:
		_ = b.rc.SetReadDeadline(time.Now().Add(b.d))
	case !errors.Is(err, os.ErrDeadlineExceeded):
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// bodyTimedOut reports whether err is a request body's read deadline
// passing.
func bodyTimedOut(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// rollingWriter moves the connection's write deadline on before each
// write, at most every d/4 (a deadline costs a timer update): a write may
// wait between 3/4 d and d for a client that does not read.
type rollingWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	d       time.Duration
	renewAt time.Time
}

func (w *rollingWriter) extend() {
	if now := time.Now(); !now.Before(w.renewAt) {
		_ = w.rc.SetWriteDeadline(now.Add(w.d))
		w.renewAt = now.Add(w.d / 4)
	}
}

func (w *rollingWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *rollingWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

// Flush implements http.Flusher.
func (w *rollingWriter) Flush() {
	w.extend()
	_ = w.rc.Flush()
}

// Unwrap gives http.ResponseController the server's ResponseWriter.
func (w *rollingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
