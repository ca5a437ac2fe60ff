package protocol

import (
	"syscall"
	"unsafe"
)

// recvPeek peeks at what waits on fd into b, without blocking, as a raw
// system call: one that the scheduler is not told of, since it cannot
// block, so that a look at an idle socket does not wake the runtime's
// monitor thread (see RawIO). It consumes nothing, and tells the race
// detector of no transfer of data, so it is raw in every build.
func recvPeek(fd uintptr, b []byte) (int, error) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
