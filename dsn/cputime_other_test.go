//go:build !linux

package dsn

import "time"

var processStart = time.Now()

// threadCPUTime is, where no thread's CPU time can be read, the time since
// the test binary started.
func threadCPUTime() time.Duration { return time.Since(processStart) }
