//go:build linux

package protocol

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/deadpeer"
)

// dialFailures records what a Dialer's OnFailure hears.
type dialFailures struct {
	mu    sync.Mutex
	addrs []string
	errs  []error
}

func (f *dialFailures) record(addr string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs = append(f.addrs, addr)
	f.errs = append(f.errs, err)
}

func (f *dialFailures) get() ([]string, []error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.addrs...), append([]error(nil), f.errs...)
}

// A coordinator whose SYNs are dropped fails the dial at Timeout, not at
// the kernel's 2 minutes, and OnFailure hears of it.
func TestDialerTimeout(t *testing.T) {
	addr := deadpeer.SYNDrop(t)
	var failures dialFailures
	d := &Dialer{Timeout: 200 * time.Millisecond, OnFailure: failures.record}
	start := time.Now()
	c, err := d.DialContext(context.Background(), "tcp", addr)
	elapsed := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatal("dialled a port whose SYNs are dropped")
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !strings.Contains(err.Error(), addr) {
		t.Errorf("error %v: want a timeout naming %s", err, addr)
	}
	if elapsed < 200*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("the dial took %v, want about 200ms", elapsed)
	}
	addrs, errs := failures.get()
	if len(addrs) != 1 || addrs[0] != addr || errs[0] != err {
		t.Errorf("OnFailure heard %v %v, want %s once", addrs, errs, addr)
	}
	t.Logf("dial timed out after %v: %v", elapsed, err)
}

// A refused dial is reported; one cancelled by the transport is not: it
// says nothing about the coordinator.
func TestDialerReportsRefusedNotCancelled(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	l.Close()
	var failures dialFailures
	d := &Dialer{Timeout: time.Second, OnFailure: failures.record}
	if _, err := d.DialContext(context.Background(), "tcp", refused); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial of a closed port: %v, want ECONNREFUSED", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.DialContext(ctx, "tcp", deadpeer.SYNDrop(t)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled dial: %v", err)
	}
	if addrs, _ := failures.get(); len(addrs) != 1 || addrs[0] != refused {
		t.Errorf("OnFailure heard %v, want only %s", addrs, refused)
	}
}

// A write to a peer that stopped reading fails at WriteTimeout once the
// socket buffers are full, having written less than asked.
func TestDialerWriteTimeout(t *testing.T) {
	peer := deadpeer.NeverReads(t)
	d := &Dialer{Timeout: time.Second, WriteTimeout: 200 * time.Millisecond}
	c, err := d.DialContext(context.Background(), "tcp", peer.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := make([]byte, 32<<20) // more than loopback's socket buffers hold
	start := time.Now()
	n, err := c.Write(big)
	elapsed := time.Since(start)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("write of %d bytes to a peer that never reads: %d written, %v; want a timeout", len(big), n, err)
	}
	if n >= len(big) || elapsed > 3*time.Second {
		t.Errorf("wrote %d of %d bytes in %v, want less within about 200ms of the block", n, len(big), elapsed)
	}
	t.Logf("write blocked after %d bytes, failed after %v: %v", n, elapsed, err)
}

// A peer that reads a request and never answers fails the read at
// ResponseTimeout; an idle connection to it that has not heard from it
// since is retired before anything is written on it.
func TestDialerResponseTimeout(t *testing.T) {
	peer := deadpeer.NeverAnswers(t)
	d := &Dialer{Timeout: time.Second, ResponseTimeout: 200 * time.Millisecond}
	idle, err := d.DialContext(context.Background(), "tcp", peer.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	c, err := d.DialContext(context.Background(), "tcp", peer.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Read(make([]byte, 1))
	elapsed := time.Since(start)
	var rte *ResponseTimeoutError
	var ne net.Error
	if !errors.As(err, &rte) || !errors.As(err, &ne) || !ne.Timeout() || !strings.Contains(err.Error(), peer.Addr()) {
		t.Fatalf("read: %v, want a response timeout naming %s", err, peer.Addr())
	}
	if elapsed < 150*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("the read failed after %v, want about 200ms", elapsed)
	}
	if n, err := idle.Write([]byte("GET")); n != 0 || !errors.Is(err, errPeerHung) {
		t.Errorf("write on an idle connection to the hung peer: %d, %v", n, err)
	}
	t.Logf("read failed after %v: %v", elapsed, err)
}
