//go:build unix && !aix

package pool

import "syscall"

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
