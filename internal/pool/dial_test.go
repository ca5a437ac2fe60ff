//go:build linux

package pool

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/deadpeer"
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

// loopbackPair returns a connection the Dialer made to a loopback listener
// and the server's end of it.
func loopbackPair(t *testing.T) (*conn, *net.TCPConn) {
	t.Helper()
	c, server := dialPair(t, func(addr string) (net.Conn, error) {
		return (&Dialer{Timeout: time.Second}).DialContext(context.Background(), "tcp", addr)
	})
	return c.(*conn), server
}

// tcpPair returns a loopback TCP connection and its peer.
func tcpPair(t *testing.T) (net.Conn, *net.TCPConn) {
	t.Helper()
	return dialPair(t, func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) })
}

// dialPair returns the connection dial makes to a loopback listener and
// the server's end of it, both closed when the test ends.
func dialPair(t *testing.T, dial func(addr string) (net.Conn, error)) (net.Conn, *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	c, err := dial(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); server.Close() })
	return c, server.(*net.TCPConn)
}

// retiredSoon reports whether checkIdle retires c within a second: the
// peer's FIN or RST reaches the socket asynchronously, even on loopback.
func retiredSoon(c *conn) bool {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if c.checkIdle() {
			return true
		}
	}
	return false
}

func TestCheckIdle(t *testing.T) {
	for _, tc := range []struct {
		name string
		peer func(*net.TCPConn) error
	}{
		{"FIN", func(s *net.TCPConn) error { return s.Close() }},
		{"RST", func(s *net.TCPConn) error {
			// SO_LINGER 0: close sends a reset, not a FIN.
			if err := s.SetLinger(0); err != nil {
				return err
			}
			return s.Close()
		}},
		{"bytes nobody asked for", func(s *net.TCPConn) error {
			_, err := s.Write([]byte("HTTP/1.1 408 Request Timeout\r\n\r\n"))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, server := loopbackPair(t)
			if c.checkIdle() {
				t.Fatal("a live idle connection was retired")
			}
			if err := tc.peer(server); err != nil {
				t.Fatal(err)
			}
			if !retiredSoon(c) {
				t.Fatal("the connection was not retired")
			}
			// Nothing may be written on a retired connection: the write
			// fails with nothing written, and closes it.
			if n, err := c.Write([]byte("POST /v1/statement HTTP/1.1\r\n")); n != 0 || !errors.Is(err, errPeerClosed) {
				t.Errorf("write on a retired connection: %d, %v", n, err)
			}
			if _, err := c.Conn.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
				t.Errorf("the retired connection is still open: %v", err)
			}
		})
	}
}

// The check runs for every submission on a reused connection: it must not
// allocate.
func TestCheckReusedAllocatesNothing(t *testing.T) {
	c, _ := loopbackPair(t)
	info := httptrace.GotConnInfo{Conn: c, Reused: true}
	if n := testing.AllocsPerRun(100, func() { checkReused(info) }); n != 0 {
		t.Errorf("checkReused allocates %v times", n)
	}
	if c.retired.Load() {
		t.Error("a live connection was retired")
	}
}

// staleSetup submits one statement through a transport whose connections
// come from a Dialer over a LateReader, then has the server close the
// pooled connection, and waits until the FIN has reached the client's
// socket while the transport's background reader has not been told: the
// race of a coordinator that closes an idle connection just as a statement
// is about to be written on it, every time.
func staleSetup(t *testing.T) (*httptest.Server, http.RoundTripper, *atomic.Int64) {
	t.Helper()
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		posts.Add(1)
		_, _ = io.WriteString(w, `{"id":"q1"}`)
	}))
	t.Cleanup(srv.Close)
	var late deadpeer.LateReader
	tr := &http.Transport{DialContext: (&Dialer{Timeout: time.Second, Dial: late.Dial}).DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	if _, err := submit(tr, srv.URL); err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections()
	conns := late.Conns()
	if len(conns) != 1 {
		t.Fatalf("%d connections, want 1", len(conns))
	}
	select {
	case <-conns[0].Ended():
	case <-time.After(5 * time.Second):
		t.Fatal("the server's close never reached the client")
	}
	return srv, tr, &posts
}

// submit sends a statement as the Presto client does (a body that can be
// rewound) and returns its exchange.
func submit(rt http.RoundTripper, base string) (*Exchange, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/statement", strings.NewReader("SELECT 1"))
	if err != nil {
		return nil, err
	}
	e := new(Exchange)
	resp, err := Submit(rt, req, e, nil)
	if err != nil {
		return e, err
	}
	discard(resp)
	return e, nil
}

// A pooled connection the server closed is retired before the statement
// is written on it, and the transport sends it on a fresh connection.
func TestStaleConnectionIsNotWrittenOn(t *testing.T) {
	srv, tr, posts := staleSetup(t)
	e, err := submit(tr, srv.URL)
	if err != nil {
		t.Fatalf("statement after the server closed the pooled connection: %v", err)
	}
	if !e.Written() || posts.Load() != 2 {
		t.Errorf("written %t, server read %d statements, want true and 2", e.Written(), posts.Load())
	}
}

// When no fresh connection can be made either, the statement was provably
// not sent: a failure to fail over on.
func TestStaleConnectionWithoutAFreshOneIsNotSent(t *testing.T) {
	srv, tr, posts := staleSetup(t)
	srv.Listener.Close() // new connections are refused
	e, err := submit(tr, srv.URL)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, want the fresh connection refused", err)
	}
	if failure, sent := e.Failure(); failure == nil || sent {
		t.Errorf("recorded %v, sent %t: want a failure before sending", failure, sent)
	}
	if posts.Load() != 1 {
		t.Errorf("the server read %d statements, want 1", posts.Load())
	}
}
