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
func peekIdle(fd uintptr) bool {
	var b [1]byte
	for {
		// Without an error, 0 bytes is the end of stream and 1 an
		// unexpected byte: either way the connection is done.
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if err == syscall.EINTR {
			continue
		}
		return err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
	}
}
