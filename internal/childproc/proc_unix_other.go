//go:build unix && !linux

package childproc

import "syscall"

// setParentDeathSignal does nothing: only Linux can tie a child's life to
// its parent, so elsewhere the test kit must stop its children itself.
func setParentDeathSignal(*syscall.SysProcAttr) {}
