package pool

import (
	"crypto/tls"
	"net"
	"net/http/httptrace"
	"sync"
	"syscall"
	"time"
)

// idleChecker is what a pool asks of an idle connection before it reuses
// it: checkIdle reports whether the connection is to be given up, its peer
// having closed it or sent bytes nobody asked for. The Dialer's
// connections answer for themselves (they also know a peer that hung);
// another's is peeked at (peekCheck).
type idleChecker interface{ checkIdle() bool }

// peekCheck checks an idle connection by a peek at its socket.
type peekCheck struct{ p *Peeker }

func (c peekCheck) checkIdle() bool { return c.p.Peek() != PeekNothing }

// idleCheckOf is the idleChecker of nc: its own, a peek at its socket, or
// nil when it shows none.
func idleCheckOf(nc net.Conn) idleChecker {
	if ic, ok := nc.(idleChecker); ok {
		return ic
	}
	if p := PeekerOf(nc); p != nil {
		return peekCheck{p}
	}
	return nil
}

// checkIdle retires c, before anything is written on it, when its peer has
// closed it or sent bytes nobody asked for. It reports whether c was
// retired. It allocates nothing.
func (c *conn) checkIdle() bool {
	if c.peek == nil || c.peek.Peek() == PeekNothing {
		return false
	}
	c.retired.Store(true)
	return true
}

// pastDeadline makes every write on a connection fail at once.
var pastDeadline = time.Unix(1, 0)

// checkReused is the GotConn hook of a submission's trace. A connection
// taken from the idle pool may have been closed by the coordinator
// (restart, idle timeout) without the transport's background reader having
// noticed yet; a statement written on it would fail after it was "sent"
// although no coordinator read it. So a reused connection is peeked at
// (without reading: the background reader holds the read side) and, when
// its peer has closed it, made to fail its next write before anything is
// written. The transport then retries the request on a fresh connection,
// which it does for a reused connection on which nothing was written when
// the body can be rewound (the Presto client's bodies can: they set
// GetBody).
func checkReused(info httptrace.GotConnInfo) {
	if !info.Reused || info.Conn == nil {
		return
	}
	nc := info.Conn
	if tc, ok := nc.(*tls.Conn); ok {
		if tc.ConnectionState().NegotiatedProtocol == "h2" {
			// HTTP/2 multiplexes streams on the connection, and its reader
			// handles GOAWAY and closes itself.
			return
		}
		nc = tc.NetConn()
	}
	switch c := nc.(type) {
	case idleChecker:
		c.checkIdle()
	case syscall.Conn:
		// A connection of another transport's dialer: a write deadline in
		// the past has the same effect as retiring it.
		if raw, err := c.SyscallConn(); err == nil && !peekRaw(raw) {
			_ = info.Conn.SetWriteDeadline(pastDeadline)
		}
	}
}

// PeekState is what a peek without blocking found on a connection.
type PeekState int

const (
	// PeekNothing: nothing to read, no end of stream, no error.
	PeekNothing PeekState = iota
	// PeekBytes: bytes wait to be read.
	PeekBytes
	// PeekClosed: the peer closed the connection or reset it, or reading
	// it fails.
	PeekClosed
)

// Peek looks at what waits on the connection behind raw, without
// blocking, without taking its read lock and without consuming anything;
// PeekNothing when it cannot look. A Peeker does the same without
// allocating, for a connection looked at often.
func Peek(raw syscall.RawConn) PeekState { return NewPeeker(raw).Peek() }

// Peeker looks at one connection as Peek does, and allocates nothing to
// do it: make one per connection. It is safe for concurrent use.
type Peeker struct {
	raw   syscall.RawConn
	mu    sync.Mutex
	state PeekState
	look  func(fd uintptr) // made once: a closure made per call escapes
}

// PeekerOf returns a Peeker of the socket under c, or nil when c shows
// none (a TLS connection hides its socket, where a peek could not tell a
// close_notify from the next request anyway).
func PeekerOf(c any) *Peeker {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return NewPeeker(raw)
}

// NewPeeker returns a Peeker of the connection behind raw.
func NewPeeker(raw syscall.RawConn) *Peeker {
	p := &Peeker{raw: raw}
	p.look = func(fd uintptr) { p.state = peekFD(fd) }
	return p
}

// Peek looks at what waits on the connection; see Peek.
func (p *Peeker) Peek() PeekState {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = PeekNothing
	if err := p.raw.Control(p.look); err != nil {
		return PeekNothing
	}
	return p.state
}

// peekRaw reports whether the idle connection behind raw looks usable:
// nothing to read, no end of stream, no error. A FIN reads as 0 bytes, an
// RST as ECONNRESET, and bytes on an idle HTTP/1 connection are an answer
// nobody asked for (with TLS, most likely the close_notify alert that
// precedes the FIN): the transport would discard such a connection too.
func peekRaw(raw syscall.RawConn) bool { return Peek(raw) == PeekNothing }
