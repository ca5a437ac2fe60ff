package nginx

import "syscall"

// setParentDeathSignal makes the kernel kill the master if the test binary
// dies without running Close. Its workers are not covered: only Close, or
// the master's own shutdown, stops them.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
