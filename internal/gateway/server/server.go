// Package server is the gateway's HTTP/1.1 server: an http.Handler served
// on each connection's own goroutine, one request after another, with no
// other goroutine, timer or deadline per request.
//
// net/http's server starts a goroutine for every request, to notice a
// client that leaves while the handler runs, and stops it with a read
// deadline in the past when the handler returns; each start and stop can
// wake a thread. In the gateway's round-trip benchmark that was about 10
// of the 24 context switches of a statement, and most of what the gateway
// adds to a statement's latency is such switches. This server finds a
// departed client by looking at its socket where a handler asks
// (ClientGone), or by a write that fails; only on TLS, where a look cannot
// tell, does a handler's WatchClient start a read in the background. Its
// time limits are kept by one sweep a second over all connections instead
// of deadlines per request.
//
// What it serves: HTTP/1.0 and 1.1, keep-alive, request bodies of either
// framing (net/http's parser, http.ReadRequest, and net/http's checks of
// the request line, headers and Host), "Expect: 100-continue", responses
// with a Content-Length (set by the handler, or computed for a short
// answer complete when the handler returns), chunked or close-delimited,
// HEAD, 1xx, Flush. Not served: HTTP/2, upgrades, CONNECT, Hijack,
// trailers; pipelined requests are answered one after another.
package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkpresto/zkpresto/internal/protocol"
)

// Server serves an http.Handler over HTTP/1.1. Set its fields before
// Serve; they are not changed after.
type Server struct {
	// Handler answers every request.
	Handler http.Handler
	// ReadHeaderTimeout bounds the time from a request's first byte to the
	// end of its headers (and a TLS handshake); zero means 30 seconds.
	ReadHeaderTimeout time.Duration
	// IdleTimeout bounds the time a connection waits for its next
	// request; zero means 2 minutes.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers; zero means
	// http.DefaultMaxHeaderBytes. Longer ones get 431.
	MaxHeaderBytes int
	// Logger gets the handlers' panics and the connections' errors that
	// no client sees; nil means slog.Default().
	Logger *slog.Logger
	// TLSConfig, when set, makes Serve speak TLS with it on every
	// connection it accepts, over the socket made raw (protocol.RawIO),
	// which a TLS listener handed to Serve would hide from it.
	TLSConfig *tls.Config

	mu         sync.Mutex
	listeners  map[*net.Listener]struct{}
	conns      map[*conn]struct{}
	closing    atomic.Bool
	sweeping   bool
	sweepEvery time.Duration // sweepInterval unless set (by tests)
	stopSweep  chan struct{}
	done       sync.WaitGroup
}

// ErrServerClosed is what Serve returns after Shutdown or Close.
var ErrServerClosed = http.ErrServerClosed

// Serve accepts connections on ln and serves each on a goroutine of its
// own until Shutdown or Close; it closes ln when it returns.
func (s *Server) Serve(ln net.Listener) error {
	defer ln.Close()
	if !s.track(&ln, true) {
		return ErrServerClosed
	}
	defer s.track(&ln, false)
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.logger().Warn("accepting a connection failed; retrying", "err", err, "in", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		nc = protocol.RawIO(nc)
		if s.TLSConfig != nil {
			nc = tls.Server(nc, s.TLSConfig)
		}
		c := s.newConn(nc)
		if c == nil {
			nc.Close()
			return ErrServerClosed
		}
		go c.serve()
	}
}

// Shutdown stops accepting, closes every idle connection and waits until
// the others have finished the request they serve (each is closed after
// it), or until ctx ends: then it closes them all, ends the contexts of
// their requests and returns ctx's error without waiting for their
// handlers.
func (s *Server) Shutdown(ctx context.Context) error {
	s.beginClose()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.closeIdle() == 0 {
			s.done.Wait()
			s.stopSweeping()
			return nil
		}
		select {
		case <-ctx.Done():
			s.closeAll() // and not wait: a handler may be stuck
			s.stopSweeping()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Close stops accepting, closes every connection at once and ends the
// contexts of the requests they serve, then waits for their handlers to
// return.
func (s *Server) Close() error {
	s.beginClose()
	s.closeAll()
	s.stopSweeping()
	s.done.Wait()
	return nil
}

func (s *Server) beginClose() {
	s.closing.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	for ln := range s.listeners {
		(*ln).Close()
	}
}

// stopSweeping ends the sweep once no connection needs it.
func (s *Server) stopSweeping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sweeping {
		close(s.stopSweep)
		s.sweeping = false
	}
}

func (s *Server) track(ln *net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.closing.Load() {
			return false
		}
		if s.listeners == nil {
			s.listeners = map[*net.Listener]struct{}{}
		}
		s.listeners[ln] = struct{}{}
		return true
	}
	delete(s.listeners, ln)
	return true
}

func (s *Server) newConn(nc net.Conn) *conn {
	c := &conn{srv: s, nc: nc}
	c.state.Store(int32(stateIdle))
	c.since.Store(now())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return nil
	}
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	s.done.Add(1)
	if !s.sweeping {
		s.sweeping = true
		s.stopSweep = make(chan struct{})
		interval := sweepInterval
		if s.sweepEvery > 0 {
			interval = s.sweepEvery
		}
		go s.sweep(s.stopSweep, interval)
	}
	return c
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.done.Done()
}

// sweep enforces the time limits, every interval.
func (s *Server) sweep(stop <-chan struct{}, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		t := now()
		idle, header := s.idleTimeout().Nanoseconds(), s.readHeaderTimeout().Nanoseconds()
		s.mu.Lock()
		for c := range s.conns {
			switch connState(c.state.Load()) {
			case stateIdle:
				if t-c.since.Load() > idle {
					c.closeIf(stateIdle)
				}
			case stateHeader:
				if t-c.since.Load() > header {
					c.closeIf(stateHeader)
				}
			}
		}
		s.mu.Unlock()
	}
}

// sweepInterval is how often the time limits are looked at: a limit is
// enforced up to this late.
const sweepInterval = time.Second

func (s *Server) closeIdle() (left int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if !c.closeIf(stateIdle) {
			left++
		}
	}
	return left
}

func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.state.Store(int32(stateClosed))
		c.closeNow()
		if w := c.current.Load(); w != nil {
			w.cancel()
		}
	}
}

func (s *Server) readHeaderTimeout() time.Duration {
	if s.ReadHeaderTimeout > 0 {
		return s.ReadHeaderTimeout
	}
	return 30 * time.Second
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return 2 * time.Minute
}

func (s *Server) maxHeaderBytes() int64 {
	if s.MaxHeaderBytes > 0 {
		return int64(s.MaxHeaderBytes)
	}
	return http.DefaultMaxHeaderBytes
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// clock is the time the sweep compares against, in nanoseconds from a
// fixed start (monotonic).
var clockStart = time.Now()

func now() int64 { return int64(time.Since(clockStart)) }

type connState int32

const (
	stateIdle   connState = iota // waiting for a request's first byte
	stateHeader                  // reading a request's line and headers
	stateActive                  // serving a request
	stateClosed
)

// conn is one client connection.
type conn struct {
	srv   *Server
	nc    net.Conn
	peek  *protocol.Peeker // the socket, to peek at; nil on TLS
	state atomic.Int32
	since atomic.Int64 // when the state began, by now()
	limit limitReader
	br    *bufio.Reader
	bw    *bufio.Writer
	watch clientWatch // TLS only
	// held is the start of a body held before the head is written, for
	// one response at a time.
	held [commitAfter]byte
	// buffered says the connection's goroutine holds bytes the client
	// sent that no request has consumed (c.br's, or the watch's byte),
	// for other goroutines (ClientGone, WatchClient) to read.
	buffered atomic.Bool
	unread   bool // the client may still be sending: close gently
	// current is the response being served, for Close to end its
	// request's context.
	current atomic.Pointer[response]
}

// closeIf closes the connection if it is in state from.
func (c *conn) closeIf(from connState) bool {
	if c.state.CompareAndSwap(int32(from), int32(stateClosed)) {
		c.closeNow()
		return true
	}
	return false
}

// closeNow closes the connection at once, as the server's limits and
// Close do (under s.mu): on TLS the socket under it, since tls.Conn.Close
// first writes a close_notify, which waits up to 5 s for a client that
// reads nothing.
func (c *conn) closeNow() {
	if tc, ok := c.nc.(*tls.Conn); ok {
		tc.NetConn().Close()
		return
	}
	c.nc.Close()
}

// enter moves the connection from one state to another; false means it
// was closed meanwhile.
func (c *conn) enter(from, to connState) bool {
	c.since.Store(now())
	return c.state.CompareAndSwap(int32(from), int32(to))
}

func (c *conn) serve() {
	defer c.srv.forget(c)
	defer c.nc.Close()
	defer func() {
		if c.unread && c.state.Load() != int32(stateClosed) {
			c.closeWriteAndWait()
		}
	}()
	defer func() {
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			buf := make([]byte, 64<<10)
			buf = buf[:runtime.Stack(buf, false)]
			c.srv.logger().Error("an HTTP handler panicked", "remote", c.nc.RemoteAddr().String(), "panic", v, "stack", string(buf))
		}
	}()
	c.limit.r = c.nc
	c.peek = protocol.PeekerOf(c.nc) // nil on TLS: the watch tells then
	c.br = bufio.NewReaderSize(&c.limit, 4<<10)
	c.bw = bufio.NewWriterSize(c.nc, 4<<10)
	var tlsState *tls.ConnectionState
	if tc, ok := c.nc.(*tls.Conn); ok {
		c.enter(stateIdle, stateHeader)
		if err := tc.Handshake(); err != nil {
			c.srv.logger().Debug("TLS handshake failed", "remote", c.nc.RemoteAddr().String(), "err", err)
			return
		}
		st := tc.ConnectionState()
		tlsState = &st
		if !c.enter(stateHeader, stateIdle) {
			return
		}
	}
	for {
		// What the next request's line and headers may take, counted from
		// the first byte read for it (the slack net/http allows too).
		c.limit.n = c.srv.maxHeaderBytes() + 4096
		if _, err := c.br.Peek(1); err != nil {
			return
		}
		// Empty lines before a request line are skipped (RFC 9112 2.2;
		// old clients send a CRLF after a POST's body), a few at most.
		if p, _ := c.br.Peek(min(4, c.br.Buffered())); len(p) > 0 && (p[0] == '\r' || p[0] == '\n') {
			n := 0
			for n < len(p) && (p[n] == '\r' || p[n] == '\n') {
				n++
			}
			c.br.Discard(n)
			if _, err := c.br.Peek(1); err != nil {
				return
			}
		}
		if !c.enter(stateIdle, stateHeader) {
			return
		}
		req, err := http.ReadRequest(c.br)
		if err != nil {
			c.refuse(err)
			return
		}
		c.limit.n = 1 << 62
		if !c.enter(stateHeader, stateActive) {
			return
		}
		keep := c.serveRequest(req, tlsState)
		if !keep || !c.enter(stateActive, stateIdle) || c.srv.closing.Load() {
			return
		}
	}
}

// closeWriteAndWait half-closes the connection and gives the client a
// moment to read the answer before the close, whose RST (for input not
// read) would discard what the kernel has not sent yet; as net/http does.
func (c *conn) closeWriteAndWait() {
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	io.Copy(io.Discard, c.nc)
}

// refuse answers a request that could not be read, if the client may
// still be listening.
func (c *conn) refuse(err error) {
	var ue *url.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || !errors.As(err, &ue) && isNetError(err) {
		return
	}
	c.unread = true // the client may still be sending what was refused
	if c.limit.n <= 0 {
		c.writeRefusal("431 Request Header Fields Too Large", "")
		return
	}
	c.writeRefusal("400 Bad Request", "")
}

// writeRefusal answers a request the server refuses before any handler
// sees it (of method, when it was read that far), and is the connection's
// last answer.
func (c *conn) writeRefusal(text, method string) {
	status, _, _ := strings.Cut(text, ":")
	c.bw.WriteString("HTTP/1.1 " + status + "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(text)) + "\r\n\r\n")
	if method != http.MethodHead {
		c.bw.WriteString(text)
	}
	c.bw.Flush()
}

// badRequest is what makes a parsed request one to refuse, as net/http's
// server refuses it: a protocol other than HTTP/1.0 and 1.1, an HTTP/1.1
// request without a host, a host with bytes no host has.
func badRequest(req *http.Request) string {
	if req.ProtoMajor != 1 || req.ProtoMinor > 1 {
		return "unsupported protocol version"
	}
	if req.Method == http.MethodConnect {
		return "CONNECT is not served"
	}
	if req.ProtoAtLeast(1, 1) && req.Host == "" {
		return "missing required Host header"
	}
	for i := 0; i < len(req.Host); i++ {
		if !validHostByte(req.Host[i]) {
			return "malformed Host header"
		}
	}
	return ""
}

// validHostByte is what a Host header may hold: a registered name, an IP
// literal in brackets, a port, percent-encoding (RFC 3986's reg-name
// characters, as net/http allows them).
func validHostByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("!$%&'()*+,-.:;=[]_~", b) >= 0
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// serveRequest runs the handler on one request and ends its response;
// false means the connection must close after it.
func (c *conn) serveRequest(req *http.Request, tlsState *tls.ConnectionState) (keep bool) {
	if problem := badRequest(req); problem != "" {
		c.unread = req.Body != http.NoBody
		c.writeRefusal("400 Bad Request: "+problem, req.Method)
		return false
	}
	req.RemoteAddr = c.nc.RemoteAddr().String()
	req.TLS = tlsState
	body := &requestBody{rc: req.Body, c: c, eof: req.Body == http.NoBody}
	if !body.eof && req.ProtoAtLeast(1, 1) && hasToken(req.Header.Get("Expect"), "100-continue") {
		body.continueNeeded = true
	}
	req.Body = body
	w := &response{c: c, req: req, body: body, header: make(http.Header, 8), pending: c.held[:0]}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), responseKey{}, w))
	w.cancel = cancel
	defer cancel()
	c.buffered.Store(c.br.Buffered() > 0 || c.limit.hasExtra)
	c.current.Store(w)
	defer c.current.Store(nil)
	if connState(c.state.Load()) == stateClosed {
		cancel() // Close ran before current was set: it could not end this context
	}
	req = req.WithContext(ctx)
	if c.peek == nil {
		c.watch.begin(c, body.eof)
	}
	defer func() {
		w.ended.Store(true)
		if c.peek == nil {
			c.watch.end()
		}
	}()
	c.srv.Handler.ServeHTTP(w, req)
	if c.peek == nil {
		c.watch.end()
	}
	if w.gone.Load() {
		return false
	}
	if err := w.finish(); err != nil {
		return false
	}
	if w.closeAfter || req.Close {
		c.unread = !body.eof
		return false
	}
	// What the handler left of the body is read and dropped, up to a
	// bound, so that the next request starts where it should.
	if !body.eof {
		n, err := io.CopyN(io.Discard, body, maxDrain+1)
		if n > maxDrain || err != io.EOF {
			c.unread = true
			return false
		}
	}
	return true
}

// maxDrain is how much of a request body the handler did not read is read
// to keep the connection.
const maxDrain = 256 << 10

// requestBody is a request's body as the handler reads it.
type requestBody struct {
	rc             io.ReadCloser
	c              *conn
	continueNeeded bool
	eof            bool
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.continueNeeded {
		b.continueNeeded = false
		b.c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if err := b.c.bw.Flush(); err != nil {
			return 0, err
		}
	}
	n, err := b.rc.Read(p)
	b.c.buffered.Store(b.c.br.Buffered() > 0 || b.c.limit.hasExtra)
	if err == io.EOF {
		b.eof = true
		if b.c.peek == nil {
			b.c.watch.bodyDone()
		}
	}
	return n, err
}

func (b *requestBody) Close() error { return nil }

// limitReader is the connection's reader, with a bound on what a
// request's head may take.
type limitReader struct {
	r        net.Conn
	n        int64
	extra    [1]byte // a byte the client watch read, to be read first
	hasExtra bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeadTooLarge
	}
	if l.hasExtra && len(p) > 0 {
		l.hasExtra = false
		p[0] = l.extra[0]
		l.n--
		return 1, nil
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

var errHeadTooLarge = errors.New("request line and headers too large")

func hasToken(v, token string) bool {
	for t := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(textproto.TrimString(t), token) {
			return true
		}
	}
	return false
}
