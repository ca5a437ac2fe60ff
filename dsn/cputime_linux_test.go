package dsn

import (
	"syscall"
	"time"
)

// threadCPUTime is the CPU time the calling thread has used
// (RUSAGE_THREAD): time it waited for a core does not count.
func threadCPUTime() time.Duration {
	const rusageThread = 1
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
