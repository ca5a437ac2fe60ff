//go:build !unix

package zkserver

import (
	"errors"
	"os"
	"syscall"
)

var errUnsupported = errors.New("zkserver: starting ZooKeeper needs a Unix-like system")

// platformSupported reports whether this system can run the harness.
func platformSupported() error { return errUnsupported }

// sysProcAttr needs nothing special here.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// terminateProcess asks the JVM to shut down cleanly.
func terminateProcess(p *os.Process) error { return p.Kill() }

// pauseProcess freezes the JVM without ending it.
func pauseProcess(*os.Process) error { return errUnsupported }

// resumeProcess continues a frozen JVM.
func resumeProcess(*os.Process) error { return errUnsupported }
