package pool

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Dialer opens the TCP connections to coordinators, with time limits of its
// own: a coordinator that drops SYNs or stops reading must fail within them
// whether or not the caller has a deadline, so that it can be failed over
// and ejected. Its DialContext is an http.Transport's DialContext. The zero
// value dials without limits; it is safe for concurrent use.
type Dialer struct {
	// Timeout bounds one dial (name resolution and TCP handshake); 0 means
	// no limit of the dialer's own.
	Timeout time.Duration
	// WriteTimeout bounds each write on a connection: a write that cannot
	// hand writeChunk bytes to the kernel within it fails with a timeout,
	// and the transport closes the connection. 0 means no limit.
	WriteTimeout time.Duration
	// ResponseTimeout bounds the wait for the first byte of an answer after
	// a write: a peer that reads requests and never answers fails the
	// request with a timeout. 0 means no limit. It is kept on the
	// connection (a read deadline), not per request as
	// http.Transport.ResponseHeaderTimeout is, which costs a timer per
	// request.
	ResponseTimeout time.Duration
	// OnFailure, when set, is called with the address and the error of each
	// dial that fails, except one cancelled by the transport (it cancels a
	// dial nobody waits for when it closes its idle connections). An
	// http.Transport dials on past the end of the request that asked for
	// the connection, so this sees a dial's outcome even when the caller
	// gave up first. It runs on the dialing goroutine and must not block.
	OnFailure func(addr string, err error)
	// Dial makes the connection under the time limit; nil means a
	// net.Dialer with 30 s keep-alives, as http.DefaultTransport's. Tests
	// use it to wrap connections.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	peers sync.Map // address → *peer

	// The dial race's connections (see dialrace.go): spares that came
	// up after their statement went elsewhere, and what ends the dials
	// the race gave up on.
	mu       sync.Mutex
	spares   map[string][]*spareConn
	nspares  atomic.Int64
	closing  context.Context
	closeAll context.CancelFunc
}

// defaultDialer is Dialer's dial without Dial: http.DefaultTransport's
// keep-alive, no timeout of its own (Dialer.Timeout bounds the context).
var defaultDialer = net.Dialer{KeepAlive: 30 * time.Second}

// writeChunk is the most one write hands to the kernel under one write
// deadline, so that a large statement on a slow but moving link does not
// count as a stalled write.
const writeChunk = 64 << 10

// DialContext dials addr within d.Timeout and returns the connection
// wrapped so that writes have d.WriteTimeout and a reused connection can be
// checked before a submission is written on it (see the GotConn hook of
// Exchange.Trace).
//
// A dial for a submission armed with a dial race (see ArmDialRace) is
// raced; any other takes a spare connection to addr the race left, if one
// is up, before it dials.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if e := exchangeFrom(ctx); e != nil && e.raceDelay > 0 && e.tryState.Load() == tryWaiting {
		if c := e.race.Load(); c != nil {
			if conn := c.take(addr); conn != nil {
				return conn, nil
			}
		}
		if c := d.takeSpare(addr); c != nil {
			return c, nil
		}
		return d.dialRaced(ctx, network, addr, e)
	}
	if c := d.takeSpare(addr); c != nil {
		return c, nil
	}
	return d.dial(ctx, network, addr)
}

// dial dials addr within d.Timeout and wraps the connection.
func (d *Dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	dial := d.Dial
	if dial == nil {
		dial = defaultDialer.DialContext
	}
	c, err := dial(ctx, network, addr)
	if err != nil {
		if d.OnFailure != nil && !errors.Is(err, context.Canceled) {
			d.OnFailure(addr, err)
		}
		return nil, err
	}
	w := newConn(c, d.WriteTimeout)
	if d.ResponseTimeout > 0 {
		w.responseTimeout = d.ResponseTimeout
		p, _ := d.peers.LoadOrStore(addr, new(peer))
		w.peer = p.(*peer)
	}
	return w, nil
}

// peer is what a Dialer's connections to one address share.
type peer struct {
	// hungAt is when a connection to the peer last waited ResponseTimeout
	// for an answer in vain (nanoseconds since epoch; 0 if never). Idle
	// connections that have not heard from the peer since are retired
	// before a request is written on them: the transport retries an
	// idempotent request that fails on a reused connection on another
	// one, and each would wait ResponseTimeout again.
	hungAt atomic.Int64
}

// epoch is the origin of the times connections keep as integers; time
// since it is monotonic.
var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) }

// conn is a connection the Dialer made: writes get a deadline each, and
// checkIdle can tell, without reading, that the peer has closed it.
type conn struct {
	net.Conn
	writeTimeout    time.Duration
	responseTimeout time.Duration
	peer            *peer // nil without responseTimeout
	// awaiting is set when a write armed the read deadline for an answer,
	// and cleared by the answer's first bytes.
	awaiting atomic.Bool
	// heard is when the peer last answered, or the connection was made.
	heard atomic.Int64
	// written counts the bytes handed to the kernel, for Exchange.Written.
	written atomic.Int64
	// retired is set by checkIdle when the peer has closed the connection:
	// the next write fails before anything is written and closes it.
	retired atomic.Bool

	peek *Peeker // nil when c.Conn has no file descriptor
}

func newConn(c net.Conn, writeTimeout time.Duration) *conn {
	w := &conn{Conn: c, writeTimeout: writeTimeout}
	w.heard.Store(now())
	w.peek = PeekerOf(c)
	return w
}

// Write implements net.Conn. A write that goes through arms the response
// timeout: the peer owes an answer.
func (c *conn) Write(p []byte) (int, error) {
	if c.retired.Load() {
		_ = c.Conn.Close()
		return 0, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errPeerClosed}
	}
	if c.peer != nil && c.peer.hungAt.Load() > c.heard.Load() {
		_ = c.Conn.Close()
		return 0, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errPeerHung}
	}
	written, err := c.write(p)
	if written > 0 {
		c.written.Add(int64(written))
	}
	if written > 0 && c.responseTimeout > 0 {
		c.awaiting.Store(true)
		// Not the write's error: it fails only on a connection closed
		// since (its reads fail anyway), and a write that went through
		// reported as failed would be taken for one that may not have.
		_ = c.Conn.SetReadDeadline(time.Now().Add(c.responseTimeout))
	}
	return written, err
}

func (c *conn) write(p []byte) (int, error) {
	if c.writeTimeout <= 0 {
		return c.Conn.Write(p)
	}
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), writeChunk)]
		if err := c.Conn.SetWriteDeadline(time.Now().Add(c.writeTimeout)); err != nil {
			return written, err
		}
		n, err := c.Conn.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// Read implements net.Conn. The first bytes of an answer disarm the
// response timeout (HTTP/1 writes the next request only after reading
// this answer), so that an idle connection waits for ever; a read that
// reaches it fails with a ResponseTimeoutError.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.awaiting.Load() {
		return n, err
	}
	if n > 0 {
		c.awaiting.Store(false)
		c.heard.Store(now())
		if derr := c.Conn.SetReadDeadline(time.Time{}); err == nil {
			err = derr
		}
		return n, err
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.peer.hungAt.Store(now())
		err = &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: &ResponseTimeoutError{After: c.responseTimeout}}
	}
	return n, err
}

// ResponseTimeoutError is the error of a request that got no answer
// within the Dialer's ResponseTimeout after it was written. The request
// may have reached the peer.
type ResponseTimeoutError struct {
	// After is the ResponseTimeout that passed.
	After time.Duration
}

// Error implements error.
func (e *ResponseTimeoutError) Error() string {
	return "response timeout: no answer within " + e.After.String()
}

// Timeout reports true: it is a net.Error timeout.
func (e *ResponseTimeoutError) Timeout() bool { return true }

// Temporary reports true, as other timeouts do.
func (e *ResponseTimeoutError) Temporary() bool { return true }

// errPeerClosed is the write error of a connection retired because its
// peer had closed it while it was idle; errPeerHung, of an idle connection
// to a peer that has since left a request unanswered.
var (
	errPeerClosed = errors.New("connection closed by the coordinator while idle")
	errPeerHung   = errors.New("connection idle since the coordinator last left a request unanswered")
)
