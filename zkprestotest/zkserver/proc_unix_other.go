//go:build unix && !linux

package zkserver

import "syscall"

// setParentDeathSignal does nothing: only Linux can tie a child's life to
// its parent, so elsewhere Close must run to stop the server.
func setParentDeathSignal(*syscall.SysProcAttr) {}
