//go:build unix && !aix

package protocol

import "syscall"

// peekIdle reports whether the idle connection on fd looks usable: nothing
// to read, no end of stream, no error. It peeks without blocking and
// without taking the descriptor's read lock, which the transport's
// background reader holds; unlike a read, it consumes nothing. A FIN reads
// as 0 bytes, an RST as ECONNRESET, and bytes on an idle HTTP/1 connection
// are an answer nobody asked for (with TLS, most likely the close_notify
// alert that precedes the FIN): the transport would discard such a
// connection too.
func peekIdle(fd uintptr) bool { return peekFD(fd) == PeekNothing }

// peekFD looks at what waits on the connection on fd, without blocking,
// without taking the descriptor's read lock, and without consuming
// anything.
func peekFD(fd uintptr) PeekState {
	var b [1]byte
	for {
		n, err := recvPeek(fd, b[:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			return PeekNothing
		case err != nil || n == 0:
			return PeekClosed // an RST, another error, or a FIN
		}
		return PeekBytes
	}
}
