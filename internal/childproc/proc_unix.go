//go:build unix

package childproc

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(attr)
	return attr
}

func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
