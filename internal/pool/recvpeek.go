//go:build unix && !aix

package pool

import "syscall"

// recvPeek peeks at what waits on fd into b, without blocking: an
// ordinary system call, made in syscall.RawConn's Control, as
// go-sql-driver/mysql's connection check makes it (conncheck.go).
func recvPeek(fd uintptr, b []byte) (int, error) {
	n, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}
