//go:build !linux || race

package protocol

import "net"

// RawIO returns c: raw system calls are made on Linux only, and not in
// race-detector builds (see the Linux version).
func RawIO(c net.Conn) net.Conn { return c }

// rawIOEnabled reports whether RawIO makes raw system calls.
const rawIOEnabled = false
