//go:build !unix || aix

package pool

// peekFD cannot peek on this platform and reports nothing waiting.
func peekFD(uintptr) PeekState { return PeekNothing }
