//go:build unix

package nginx

import "syscall"

// killGroup kills the process group of the master started with pid.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
