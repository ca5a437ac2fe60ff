//go:build unix && !linux

package nginx

import "syscall"

func setParentDeathSignal(*syscall.SysProcAttr) {}
