//go:build !race && unix && !aix

// The race detector's instrumentation allocates, so these counts are
// measured without it: make test runs this package without it too.

package pool

import "testing"

// A Peeker looks at its connection without allocating: the pool peeks at
// a connection each time it takes it from the idle list.
func TestPeekerAllocs(t *testing.T) {
	_, peer := tcpPair(t)
	raw, err := peer.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	p := NewPeeker(raw)
	if n := testing.AllocsPerRun(100, func() { p.Peek() }); n != 0 {
		t.Errorf("Peeker.Peek: %v allocations, want 0", n)
	}
}
