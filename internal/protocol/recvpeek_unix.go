//go:build unix && !aix && !linux

package protocol

import "syscall"

// recvPeek peeks at what waits on fd into b, without blocking.
func recvPeek(fd uintptr, b []byte) (int, error) {
	n, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}
