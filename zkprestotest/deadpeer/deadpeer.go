//go:build linux

// Package deadpeer starts loopback servers that fail the way a coordinator
// does when its host or process stops answering, for the tests of time
// limits: one whose SYNs are dropped (cannot be dialled), one that accepts
// connections and never reads them, one that reads requests and never
// answers, and ones that reset connections (see Resets); and a dialer,
// LateReader, whose connections learn late that their peer closed them.
// Everything is on 127.0.0.1 and is closed at the test's end. It needs
// Linux, for the socket options it sets.
package deadpeer

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// SYNDrop returns the address of a loopback port that cannot be dialled: a
// socket listening with a backlog of 0 that never accepts, whose accept
// queue is filled by one connection of its own. Linux drops the SYNs to a
// full accept queue, so a dial there waits (resending SYNs) until its time
// limit, as with a host behind a firewall that drops packets. The test is
// skipped if the kernel answers such a dial anyway.
func SYNDrop(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		tb.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatal(err)
	}
	addr := (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*syscall.SockaddrInet4).Port}).String()
	filler, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		tb.Fatalf("filling the accept queue of %s: %v", addr, err)
	}
	tb.Cleanup(func() { filler.Close() })
	probe, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err == nil {
		probe.Close()
		tb.Skip("this kernel completes connections to a full accept queue; cannot drop SYNs on loopback")
	}
	return addr
}

// Listener is a loopback server that accepts connections and does not
// answer them; see NeverReads and NeverAnswers.
type Listener struct {
	l        net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
	accepted atomic.Int64
	requests atomic.Int64
	bodies   []string // of the requests read whole, by Resets
}

// Addr returns the listener's "127.0.0.1:port".
func (l *Listener) Addr() string { return l.l.Addr().String() }

// Accepted returns how many connections the listener accepted.
func (l *Listener) Accepted() int64 { return l.accepted.Load() }

// Requests returns how many HTTP requests NeverAnswers read in full.
func (l *Listener) Requests() int64 { return l.requests.Load() }

// Bodies returns the bodies of the requests Resets read whole, in the
// order they were read: the statements that reached it.
func (l *Listener) Bodies() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.bodies...)
}

// Reset is when a server of Resets resets each connection.
type Reset int

// The resets of Resets.
const (
	// ResetBeforeRead resets each connection as soon as it is accepted.
	ResetBeforeRead Reset = iota + 1
	// ResetAfterHalf reads a request's head and half its body, then
	// resets: the statement never arrived whole.
	ResetAfterHalf
	// ResetAfterRead reads a request whole (it counts as read) and
	// resets at once, without a byte of an answer: the statement may
	// have started.
	ResetAfterRead
)

// Resets starts a server that resets (SO_LINGER 0, then close: an RST, not
// a FIN) every connection at the moment when says, as a coordinator whose
// process dies or whose host drops its connections mid-request.
func Resets(tb testing.TB, when Reset) *Listener {
	tb.Helper()
	return start(tb, net.ListenConfig{}, func(l *Listener, c net.Conn) {
		defer c.Close()
		if err := c.(*net.TCPConn).SetLinger(0); err != nil {
			return
		}
		if when == ResetBeforeRead {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		if when == ResetAfterHalf {
			_, _ = io.CopyN(io.Discard, req.Body, req.ContentLength/2)
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		l.requests.Add(1)
		l.mu.Lock()
		l.bodies = append(l.bodies, string(body))
		l.mu.Unlock()
	})
}

// NeverReadsBuffer is the receive buffer NeverReads asks for: the kernel
// doubles it and keeps a minimum, a few kilobytes in all.
const NeverReadsBuffer = 4096

// NeverReads starts a server that accepts connections and never reads from
// them, with a receive buffer as small as the kernel allows: a client's
// writes block once its own send buffer is full too (a few megabytes on
// loopback), as with a coordinator that stopped reading.
func NeverReads(tb testing.TB) *Listener {
	tb.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, NeverReadsBuffer)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return start(tb, lc, nil)
}

// NeverAnswers starts a server that reads each HTTP request on a
// connection in full, counts it, and then never answers nor closes: the
// coordinator that received a statement and hangs.
func NeverAnswers(tb testing.TB) *Listener {
	tb.Helper()
	return start(tb, net.ListenConfig{}, func(l *Listener, c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		l.requests.Add(1)
		// Wait for the client to give up, or the test's end.
		_, _ = io.Copy(io.Discard, c)
	})
}

func start(tb testing.TB, lc net.ListenConfig, serve func(*Listener, net.Conn)) *Listener {
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	l := &Listener{l: ln}
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			l.mu.Lock()
			l.conns = append(l.conns, c)
			l.mu.Unlock()
			if serve != nil {
				l.wg.Add(1)
				go func() {
					defer l.wg.Done()
					serve(l, c)
				}()
			}
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		<-acceptDone
		l.mu.Lock()
		for _, c := range l.conns {
			c.Close()
		}
		l.mu.Unlock()
		l.wg.Wait()
	})
	return l
}

// LateReader dials connections whose reader learns that the peer closed
// (or reset) the connection only once something was written on it or it
// was closed: the window in which an HTTP transport's background reader
// has not yet noticed that a pooled connection is dead, held open for as
// long as a test needs it. The kernel state stays real, so a peek at the
// socket sees the FIN or RST.
type LateReader struct {
	mu    sync.Mutex
	conns []*LateConn
}

// Dial is a DialContext for http.Transport or pool.Dialer (the driver's).
func (d *LateReader) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	lc := &LateConn{Conn: c, release: make(chan struct{}), ended: make(chan struct{})}
	d.mu.Lock()
	d.conns = append(d.conns, lc)
	d.mu.Unlock()
	return lc, nil
}

// Conns returns the connections dialled so far.
func (d *LateReader) Conns() []*LateConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*LateConn(nil), d.conns...)
}

// LateConn is a connection LateReader dialled.
type LateConn struct {
	net.Conn
	releaseOnce, endOnce sync.Once
	release              chan struct{} // closed by Close, or a Write after ended
	ended                chan struct{} // closed when a read failed underneath
}

// Read implements net.Conn: an error of the connection underneath is held
// back until a later Write has gone through, or Close.
func (c *LateConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.endOnce.Do(func() { close(c.ended) })
		<-c.release
	}
	return n, err
}

// Write implements net.Conn. A write after the peer closed the connection
// releases the held read error once it has gone through, so that the
// reader sees the end of stream after the bytes were written.
func (c *LateConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	select {
	case <-c.ended:
		c.releaseOnce.Do(func() { close(c.release) })
	default:
	}
	return n, err
}

// Close implements net.Conn.
func (c *LateConn) Close() error {
	c.releaseOnce.Do(func() { close(c.release) })
	return c.Conn.Close()
}

// SyscallConn exposes the socket, so that it can be peeked at.
func (c *LateConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

// Ended is closed once the connection's reader has been denied the end of
// the stream: the peer's FIN or RST has arrived.
func (c *LateConn) Ended() <-chan struct{} { return c.ended }
