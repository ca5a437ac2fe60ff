//go:build unix && !linux

package realserver

import "syscall"

func setParentDeathSignal(*syscall.SysProcAttr) {}
