//go:build !unix || aix

package protocol

// peekIdle cannot peek on this platform and reports every connection
// usable, as the transport would assume without it.
func peekIdle(uintptr) bool { return true }

// peekFD cannot peek on this platform and reports nothing waiting.
func peekFD(uintptr) PeekState { return PeekNothing }
