//go:build unix

package realserver

import (
	"os"
	"syscall"
)

// sysProcAttr puts the JVM in its own process group, so that a terminal's
// signals aimed at the test binary do not stop it half-way through a test.
func sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(attr)
	return attr
}

func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
