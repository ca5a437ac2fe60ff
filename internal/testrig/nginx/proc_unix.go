//go:build unix

package nginx

import "syscall"

// sysProcAttr gives nginx a process group of its own, so terminal signals
// aimed at the test binary do not reach it and a master that will not stop
// can be killed with its workers.
func sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(attr)
	return attr
}

// killGroup kills the process group of the master started with pid.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
