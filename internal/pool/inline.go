package pool

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// InlineTransport is an HTTP/1.1 http.RoundTripper that does each exchange
// on the goroutine that calls it: it writes the request, reads the answer's
// head and, through the response body, its body, on a connection taken
// from its pool, with no goroutine of its own. Go's http.Transport hands
// every request to a writer goroutine and every answer back from a reader
// goroutine, five goroutine switches per exchange, each of which may wake
// a sleeping thread; a proxy, which makes one exchange per request it
// serves, spends much of its added latency there.
//
// It takes what it needs from an http.Transport: DialContext,
// TLSClientConfig, TLSHandshakeTimeout, DisableKeepAlives,
// MaxIdleConnsPerHost, IdleConnTimeout, ReadBufferSize and
// WriteBufferSize; a request that the transport's Proxy sends through a
// proxy goes through that transport instead. It speaks HTTP/1.1 only, adds
// no header of its own (no Accept-Encoding: the caller chooses) and keeps
// Go's rules for a second try on a fresh connection: only after a reused
// connection failed, and only a request of which nothing was written, or
// an idempotent one that got no byte of an answer, with a body that can be
// rewound. The httptrace hooks GetConn, GotConn and WroteRequest are
// called as Go's transport calls them. It is safe for concurrent use.
type InlineTransport struct {
	base *http.Transport

	mu    sync.Mutex
	idle  map[string][]*inlineConn // by scheme://host:port, the most recent last
	slots connSlots                // the connections open, by the same key
}

// NewInlineTransport returns an InlineTransport with base's dialer, TLS
// settings and idle limits. base is used as it is for proxied requests.
func NewInlineTransport(base *http.Transport) *InlineTransport {
	return &InlineTransport{base: base, idle: make(map[string][]*inlineConn)}
}

// CloseIdleConnections closes the connections in the pool; those in use
// go back to it when their exchange ends. The base transport's are not
// touched.
func (t *InlineTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = make(map[string][]*inlineConn)
	t.mu.Unlock()
	for _, conns := range idle {
		for _, c := range conns {
			if c.idleTimer != nil {
				c.idleTimer.Stop()
			}
			c.close()
		}
	}
}

// RoundTrip implements http.RoundTripper.
func (t *InlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		closeBody(req)
		return nil, fmt.Errorf("unsupported request URL %q: want http or https with a host", req.URL.Redacted())
	}
	if t.base.Proxy != nil {
		proxy, err := t.base.Proxy(req)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		if proxy != nil {
			return t.base.RoundTrip(req)
		}
	}
	addr := hostPort(req.URL.Scheme, req.URL.Host)
	key := req.URL.Scheme + "://" + addr
	trace := httptrace.ContextClientTrace(req.Context())
	for {
		if err := req.Context().Err(); err != nil {
			// Nothing may go out for a request whose caller is gone: its
			// context's AfterFunc would close the connection only after
			// the write had begun.
			closeBody(req)
			return nil, err
		}
		if trace != nil && trace.GetConn != nil {
			trace.GetConn(addr)
		}
		c, err := t.conn(req.Context(), key, req.URL.Scheme, addr, trace)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := c.roundTrip(t, req)
		if err == nil {
			return resp, nil
		}
		if !c.reused || !c.mayRetry(req) {
			return nil, err
		}
		next, rerr := rewound(req)
		if rerr != nil {
			return nil, err
		}
		req = next
	}
}

// conn returns an idle connection for key that still looks usable, or a
// new one.
func (t *InlineTransport) conn(ctx context.Context, key, scheme, addr string, trace *httptrace.ClientTrace) (*inlineConn, error) {
	for {
		c, freed := t.takeOrReserve(key)
		if c == nil && freed == nil {
			break // a slot for a new connection is ours
		}
		if c == nil {
			select {
			case <-freed: // a connection closed or went idle
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if !c.usable() {
			c.close()
			continue
		}
		c.reused = true
		if trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{Conn: c.conn, Reused: true, WasIdle: true, IdleTime: time.Since(c.idleSince)})
		}
		return c, nil
	}
	c, err := t.dial(ctx, key, scheme, addr)
	if err != nil {
		t.slots.release(&t.mu, key)
		return nil, err
	}
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: c.conn})
	}
	return c, nil
}

// takeOrReserve returns an idle connection for key; or, with neither, a
// slot for a new one taken (both results nil); or a channel closed when a
// connection to key closes or goes idle. It looks for an idle connection
// and takes the slot under one hold of t.mu: a connection put back between
// two separate looks would wake no one, and a request at the limit would
// wait beside it until its context ends.
func (t *InlineTransport) takeOrReserve(key string) (*inlineConn, <-chan struct{}) {
	var expired []*inlineConn
	defer func() {
		for _, c := range expired {
			c.close() // not under the lock: a TLS close writes
		}
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	conns := t.idle[key]
	for len(conns) > 0 {
		c := conns[len(conns)-1]
		conns[len(conns)-1] = nil
		conns = conns[:len(conns)-1]
		t.idle[key] = conns
		if c.idleTimer != nil && !c.idleTimer.Stop() {
			continue // its idle time is up: expire closes it
		}
		if limit := t.base.IdleConnTimeout; limit > 0 && time.Since(c.idleSince) > limit {
			expired = append(expired, c)
			continue
		}
		return c, nil
	}
	return nil, t.slots.reserveLocked(key, t.maxConns())
}

// putIdle returns c to the pool, or closes it when the pool for its host
// is full or closed.
func (t *InlineTransport) putIdle(c *inlineConn) {
	limit := t.base.MaxIdleConnsPerHost
	if limit == 0 {
		limit = http.DefaultMaxIdleConnsPerHost
	}
	c.idleSince = time.Now()
	t.mu.Lock()
	if limit < 0 || len(t.idle[c.key]) >= limit {
		t.mu.Unlock()
		c.close()
		return
	}
	t.idle[c.key] = append(t.idle[c.key], c)
	t.slots.wake(c.key)
	if timeout := t.base.IdleConnTimeout; timeout > 0 {
		if c.idleTimer == nil {
			c.idleTimer = time.AfterFunc(timeout, func() { t.expire(c) })
		} else {
			c.idleTimer.Reset(timeout)
		}
	}
	t.mu.Unlock()
}

// expire closes c, idle for IdleConnTimeout, so that a coordinator that
// gets no more requests is not left holding its connections.
func (t *InlineTransport) expire(c *inlineConn) {
	t.mu.Lock()
	conns := t.idle[c.key]
	for i, idle := range conns {
		if idle == c {
			t.idle[c.key] = append(conns[:i], conns[i+1:]...)
			break
		}
	}
	if len(t.idle[c.key]) == 0 {
		delete(t.idle, c.key)
	}
	t.mu.Unlock()
	c.close()
}

func (t *InlineTransport) dial(ctx context.Context, key, scheme, addr string) (*inlineConn, error) {
	dial := t.base.DialContext
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	raw, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	nc := raw
	if scheme == "https" {
		cfg := &tls.Config{}
		if t.base.TLSClientConfig != nil {
			cfg = t.base.TLSClientConfig.Clone()
		}
		if cfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(raw, cfg)
		hctx := ctx
		if limit := t.base.TLSHandshakeTimeout; limit > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, limit)
			defer cancel()
		}
		if err := tc.HandshakeContext(hctx); err != nil {
			raw.Close()
			return nil, err
		}
		nc = tc
	}
	c := &inlineConn{pool: t, key: key, conn: nc, raw: raw}
	c.check = idleCheckOf(raw)
	c.lim = &headLimit{r: nc, n: -1}
	c.br = bufio.NewReaderSize(c.lim, bufferSize(t.base.ReadBufferSize))
	c.bw = bufio.NewWriterSize(countingWriter{nc, &c.written}, bufferSize(t.base.WriteBufferSize))
	return c, nil
}

// bufferSize is a connection buffer's size: the transport's setting, or
// its default, 4 KiB (larger reads and writes bypass the buffer).
func bufferSize(n int) int {
	if n > 0 {
		return n
	}
	return 4 << 10
}

// inlineConn is one pooled connection.
type inlineConn struct {
	pool      *InlineTransport
	closed    atomic.Bool // its slot was given back
	key       string
	conn      net.Conn    // what requests are written on (TLS, when https)
	raw       net.Conn    // the TCP connection under it
	check     idleChecker // raw's; nil when it cannot be checked
	lim       *headLimit  // what br reads through
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
	idleTimer *time.Timer // closes the connection when it has been idle too long

	// Of the exchange under way.
	reused  bool
	written int64 // bytes handed to the connection
	heard   bool  // some byte of an answer was read
}

// usable reports whether an idle connection may carry a request: its peer
// has not closed it or sent anything. A connection the Dialer made is
// checked as a submission's reused connection is (see checkIdle).
func (c *inlineConn) usable() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	return c.check == nil || !c.check.checkIdle()
}

// close closes c and gives its slot back, once.
func (c *inlineConn) close() {
	_ = c.conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.pool.slots.release(&c.pool.mu, c.key)
	}
}

// mayRetry reports whether req, which failed on this reused connection,
// may be sent again on a fresh one, by Go's transport's rules: nothing of
// it was written, or it is idempotent and no byte of an answer came.
func (c *inlineConn) mayRetry(req *http.Request) bool {
	if req.Context().Err() != nil {
		return false
	}
	if c.written == 0 {
		return true
	}
	return !c.heard && idempotent(req)
}

// roundTrip writes req on c and reads the head of its answer. The body of
// the answer it returns gives c back to the pool when it has been read to
// its end, and closes c when it is closed earlier. Until then, the end of
// req's context closes c, which ends any read or write in progress.
func (c *inlineConn) roundTrip(t *InlineTransport, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	c.written, c.heard = 0, false
	stop := context.AfterFunc(ctx, c.close)
	fail := func(err error) (*http.Response, error) {
		stop()
		c.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	// Request.Write calls the trace's WroteRequest once the request is in
	// the buffer, before the flush, as Go's transport has it.
	var w io.Writer = c.bw
	if req.ContentLength > 0 {
		w = headWithBody{c.bw}
	}
	err := req.Write(w)
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		if resp := c.earlyAnswer(t, req); resp != nil {
			stop()
			c.close()
			return resp, nil
		}
		if gb, ok := req.Body.(*gatedBody); ok && c.written == 0 {
			// Proof that the submission's try reached no connection,
			// whatever dialer made it (see Exchange.Written).
			gb.e.unwritten.Store(true)
		}
		return fail(err)
	}
	resp, err := c.readHead(t, req)
	if err != nil {
		return fail(err)
	}
	if tc, ok := c.conn.(*tls.Conn); ok {
		state := tc.ConnectionState()
		resp.TLS = &state
	}
	reusable := !resp.Close && !req.Close && !t.base.DisableKeepAlives && resp.StatusCode != http.StatusSwitchingProtocols
	body := &inlineBody{t: t, c: c, ctx: ctx, body: resp.Body, stop: stop, reusable: reusable}
	if resp.Body == http.NoBody {
		body.finish(true)
		return resp, nil
	}
	resp.Body = body
	return resp, nil
}

// headWithBody is a request's buffer that Request.Write does not take
// for a *bufio.Writer: so it does not flush the head by itself before a
// body it does not know to be in memory (a gated submission's), and a body
// of known length goes out with its head, in one write. A head sent alone
// costs a system call, a packet, and a wake-up of the coordinator that
// then waits for the body.
type headWithBody struct{ *bufio.Writer }

// ReadFrom copies the body (Request.Write hands a body of known length to
// its writer's ReadFrom) and flushes head and body together, inside
// Request.Write: a write that fails then fails Request.Write, before its
// WroteRequest hook, as the head's own flush did, so that a request of
// which nothing reached the connection is not taken for written.
func (w headWithBody) ReadFrom(r io.Reader) (int64, error) {
	n, err := w.Writer.ReadFrom(r)
	if err == nil {
		err = w.Writer.Flush()
	}
	return n, err
}

// inlineBody is the body of an answer on an inlineConn.
type inlineBody struct {
	t        *InlineTransport
	c        *inlineConn
	ctx      context.Context
	body     io.ReadCloser
	stop     func() bool
	reusable bool
	done     atomic.Bool
	eof      atomic.Bool // the body was read to its end
}

// Read implements io.Reader.
func (b *inlineBody) Read(p []byte) (int, error) {
	if b.done.Load() {
		if b.eof.Load() {
			return 0, io.EOF
		}
		return 0, errBodyClosed
	}
	n, err := b.body.Read(p)
	switch {
	case err == io.EOF:
		b.eof.Store(true)
		b.finish(true)
	case err != nil:
		b.finish(false)
		if b.ctx.Err() != nil {
			return n, b.ctx.Err()
		}
	}
	return n, err
}

// Close implements io.Closer. A body closed before its end closes its
// connection: what is left of it is not worth reading.
func (b *inlineBody) Close() error {
	b.finish(false)
	return nil
}

// finish ends the exchange once: the connection goes back to the pool
// after a whole answer, unless the context ended or the peer sent more
// than the answer; otherwise it is closed.
func (b *inlineBody) finish(whole bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	if b.stop() && whole && b.reusable && b.c.br.Buffered() == 0 {
		b.t.putIdle(b.c)
		return
	}
	b.c.close()
}

var errBodyClosed = errors.New("read on a closed response body")

// countingWriter counts the bytes handed to the connection.
type countingWriter struct {
	w io.Writer
	n *int64
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	*w.n += int64(n)
	return n, err
}

// idempotent reports whether req may be sent twice, as Go's transport
// decides it.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// rewound returns req with a fresh copy of its body, for a second try.
func rewound(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("body cannot be rewound")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	next := *req
	next.Body = body
	return &next, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// hostPort is host with the scheme's default port when it has none.
func hostPort(scheme, host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}
