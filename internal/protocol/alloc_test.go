//go:build !race && linux

// The race detector's instrumentation allocates, so these counts are
// measured without it: make test runs this package without it too.

package protocol

import "testing"

// A Peeker looks at its connection without allocating: the gateway's
// server peeks at a client's socket a few times per request. A read and a
// write through RawIO allocate nothing either.
func TestPeekerAndRawIOAllocs(t *testing.T) {
	c, peer := rawPair(t)
	raw, err := peer.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	p := NewPeeker(raw)
	if n := testing.AllocsPerRun(100, func() { p.Peek() }); n != 0 {
		t.Errorf("Peeker.Peek: %v allocations, want 0", n)
	}
	buf := []byte("x")
	n := testing.AllocsPerRun(100, func() {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Read(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("a RawIO write and read: %v allocations, want 0", n)
	}
}
