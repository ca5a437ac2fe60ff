//go:build unix

package zkserver

import (
	"os"
	"syscall"
)

// platformSupported reports whether this system can run the harness.
func platformSupported() error { return nil }

// sysProcAttr puts the JVM in its own process group so terminal signals
// aimed at the test binary do not reach it half-way through a test; the
// harness stops it explicitly instead.
func sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(attr)
	return attr
}

// terminateProcess asks the JVM to shut down cleanly.
func terminateProcess(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// pauseProcess freezes the JVM without ending it.
func pauseProcess(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }

// resumeProcess continues a frozen JVM.
func resumeProcess(p *os.Process) error { return p.Signal(syscall.SIGCONT) }
