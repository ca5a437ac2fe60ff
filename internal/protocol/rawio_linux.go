//go:build linux && !race

package protocol

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// rawIOEnabled reports whether RawIO makes raw system calls.
const rawIOEnabled = true

// RawIO returns c with its reads and writes made as raw system calls when
// c is a TCP connection, else c as it is.
//
// The Go runtime's system calls (syscall.Read and Write, which net uses)
// tell the scheduler they may block: the first one after the process was
// idle wakes the runtime's monitor thread, which then polls every 20 µs
// until the process is idle again, and a call that takes longer than that
// (a write on loopback runs the receiving side of TCP too) has its P
// handed to another thread. A socket of the net package never blocks (it
// is non-blocking, and the poller waits), so none of that is needed; for a
// proxy that makes a handful of short calls per request and is idle in
// between, it was a sixth of its CPU. Deadlines, Close and the poller work
// as they do for c, through c's syscall.RawConn.
//
// Race-detector builds keep Go's calls, which tell the detector that the
// bytes one goroutine writes to a socket happen before another reads them.
func RawIO(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	rc := &rawTCPConn{TCPConn: tc, raw: raw}
	rc.readFunc, rc.writeFunc = rc.readFD, rc.writeFD
	return rc
}

// rawTCPConn is a TCP connection whose Read and Write are raw system
// calls; everything else is the connection's. A read's and a write's
// state are fields, and the functions the RawConn calls are made once, so
// that a read or a write allocates nothing.
type rawTCPConn struct {
	*net.TCPConn
	raw syscall.RawConn

	readMu   sync.Mutex // one Read at a time, as the descriptor has it
	readBuf  []byte
	readN    int
	readErr  syscall.Errno
	readFunc func(fd uintptr) bool

	writeMu   sync.Mutex
	writeBuf  []byte
	writeN    int
	writeErr  syscall.Errno
	writeZero bool // a write returned 0 bytes and no error
	writeFunc func(fd uintptr) bool
}

// Read implements net.Conn.
func (c *rawTCPConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	c.readBuf, c.readN, c.readErr = p, 0, 0
	err := c.raw.Read(c.readFunc)
	n, errno := c.readN, c.readErr
	c.readBuf = nil
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readFD reads once into readBuf; false asks the poller to wait for input.
func (c *rawTCPConn) readFD(fd uintptr) bool {
	for {
		p := c.readBuf
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		c.readN, c.readErr = int(r), e
		return true
	}
}

// Write implements net.Conn.
func (c *rawTCPConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.writeBuf, c.writeN, c.writeErr, c.writeZero = p, 0, 0, false
	err := c.raw.Write(c.writeFunc)
	n, errno := c.writeN, c.writeErr
	c.writeBuf = nil
	switch {
	case c.writeZero:
		return n, c.opError("write", io.ErrUnexpectedEOF)
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	case err != nil:
		return n, c.opError("write", err)
	}
	return n, nil
}

// writeFD writes what is left of writeBuf; false asks the poller to wait
// for room.
func (c *rawTCPConn) writeFD(fd uintptr) bool {
	for c.writeN < len(c.writeBuf) {
		p := c.writeBuf[c.writeN:]
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch {
		case e == 0 && r == 0:
			c.writeZero = true // as Go's own write: no progress is an error, never a loop
			return true
		case e == 0:
			c.writeN += int(r)
		case e == syscall.EINTR:
		case e == syscall.EAGAIN:
			return false
		default:
			c.writeErr = e
			return true
		}
	}
	return true
}

// opError is err as net reports a failed read or write: an *net.OpError
// of op with the connection's addresses (a RawConn's own errors say
// "raw-read" and "raw-write").
func (c *rawTCPConn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
