// Package childproc is how the test kit (zkprestotest) and the rig start
// the servers they run as child processes (ZooKeeper's and the real
// coordinators' JVMs, nginx): in a process group of their own, so that a
// terminal's signals aimed at the test binary do not stop them half-way
// through a test, and on Linux killed by the kernel if the test binary
// dies without stopping them (a panic, a test timeout, SIGKILL); and the
// tail of their logs, for the errors that say why one did not start.
package childproc

import (
	"os"
	"syscall"
)

// SysProcAttr is the exec.Cmd.SysProcAttr of such a child; nil where the
// system has nothing of the kind.
func SysProcAttr() *syscall.SysProcAttr { return sysProcAttr() }

// Terminate asks the child to shut down cleanly (SIGTERM; a kill where
// there are no signals).
func Terminate(p *os.Process) error { return terminate(p) }
