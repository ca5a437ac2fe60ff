//go:build linux

package protocol

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// rawPair returns a loopback TCP connection through RawIO and its peer.
func rawPair(t *testing.T) (net.Conn, *net.TCPConn) {
	t.Helper()
	return dialPair(t, func(addr string) (net.Conn, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		return RawIO(c), nil
	})
}

// What RawIO returns behaves as a net.Conn does: bytes both ways, however
// large; EOF at the peer's FIN; a deadline's error; Close ending a read
// that waits; the peer's reset as ECONNRESET; errors as *net.OpError of
// "read" and "write". In race-detector builds it is the connection itself
// (Go's calls), so these run on both.
func TestRawIO(t *testing.T) {
	c, peer := rawPair(t)
	if _, isTCP := c.(*net.TCPConn); isTCP == rawIOEnabled {
		t.Fatalf("RawIO gave a %T; raw I/O enabled: %v", c, rawIOEnabled)
	}
	// 8 MiB each way: more than the socket buffers hold, so writes wait
	// for room and reads for input.
	want := bytes.Repeat([]byte("0123456789abcdef"), 512<<10)
	copied := make(chan []byte, 1)
	go func() {
		got, _ := io.ReadAll(io.LimitReader(peer, int64(len(want))))
		copied <- got
	}()
	if n, err := c.Write(want); n != len(want) || err != nil {
		t.Fatalf("Write: %d, %v; want %d, nil", n, err, len(want))
	}
	if got := <-copied; !bytes.Equal(got, want) {
		t.Fatalf("the peer read %d bytes, not what was written", len(got))
	}
	go func() { peer.Write(want); peer.CloseWrite() }()
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadAll: %d bytes, %v; want %d bytes up to EOF", len(got), err, len(want))
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("Read after EOF: %d, %v; want io.EOF", n, err)
	}
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read of nothing: %d, %v", n, err)
	}

	c, _ = rawPair(t)
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	var oe *net.OpError
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() || !errors.As(err, &oe) || oe.Op != "read" {
		t.Fatalf("Read past its deadline: %v; want a read timeout", err)
	}
	c.SetReadDeadline(time.Time{})
	read := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		read <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	if err := <-read; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read ended by Close: %v; want net.ErrClosed", err)
	}

	c, resetter := rawPair(t)
	resetter.SetLinger(0)
	resetter.Close() // an RST
	time.Sleep(20 * time.Millisecond)
	_, err = c.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &oe) || oe.Op != "read" {
		t.Fatalf("Read after the peer's reset: %v; want ECONNRESET", err)
	}
	_, err = c.Write([]byte("x"))
	if err == nil || !errors.As(err, &oe) || oe.Op != "write" {
		t.Fatalf("Write after the peer's reset: %v; want a write error", err)
	}
}
