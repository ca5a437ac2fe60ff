package realserver

import "syscall"

// setParentDeathSignal makes the kernel kill the JVM if the test binary dies
// without running Close (a panic, a test timeout, SIGKILL).
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
