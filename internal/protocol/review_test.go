//go:build linux

// What a review of the raw sockets and the one-write submissions tried.

package protocol

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A write that hands part of its bytes to the kernel and then meets its
// deadline reports exactly what was handed over: the peer reads that many,
// the same bytes, no more.
func TestRawIOPartialWriteThenDeadlineOrClose(t *testing.T) {
	for _, mode := range []string{"deadline", "close"} {
		t.Run(mode, func(t *testing.T) {
			c, peer := rawPair(t)
			want := bytes.Repeat([]byte("0123456789abcdef"), 4<<20) // 64 MiB: far more than the buffers
			if mode == "deadline" {
				c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			} else {
				time.AfterFunc(100*time.Millisecond, func() { c.Close() })
			}
			n, err := c.Write(want)
			if n <= 0 || n >= len(want) || err == nil {
				t.Fatalf("Write: %d, %v; want a partial write and an error", n, err)
			}
			switch mode {
			case "deadline":
				var ne net.Error
				if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
					t.Fatalf("Write past its deadline: %v", err)
				}
			case "close":
				if !errors.Is(err, net.ErrClosed) {
					t.Fatalf("Write ended by Close: %v", err)
				}
			}
			if mode == "deadline" {
				c.Close()
			}
			got, _ := io.ReadAll(peer)
			if len(got) != n || !bytes.Equal(got, want[:n]) {
				t.Fatalf("peer read %d bytes, Write reported %d", len(got), n)
			}
		})
	}
}

// Writes to a socket whose peer has gone fail with EPIPE or ECONNRESET and
// the process survives the SIGPIPE.
func TestRawIOWriteToDepartedPeer(t *testing.T) {
	c, peer := rawPair(t)
	peer.Close()
	time.Sleep(20 * time.Millisecond)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = c.Write([]byte("hello"))
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("write to a closed peer: %v", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "write" {
		t.Fatalf("not a write OpError: %#v", err)
	}
}

// After Close, Read and Write fail with net.ErrClosed; concurrent Reads,
// Writes and a Close do not crash, hang or lose bytes.
func TestRawIOClosedAndConcurrent(t *testing.T) {
	c, peer := rawPair(t)
	c.Close()
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	_ = peer

	for round := 0; round < 20; round++ {
		c, peer := rawPair(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0
		go io.Copy(peer, peer) // echo
		for i := 0; i < 4; i++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				b := make([]byte, 1000)
				for {
					n, err := c.Read(b)
					mu.Lock()
					total += n
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				b := make([]byte, 3000)
				for {
					if _, err := c.Write(b); err != nil {
						return
					}
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
		c.Close()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Reads and Writes did not end at Close")
		}
	}
}

// A gated submission (its body not an in-memory reader) whose fresh
// connection fails its very first write (the coordinator reset it right
// after the accept) had nothing of it written: it must be recorded as not
// sent, so that it can go to another coordinator, as it is through Go's
// transport.
func TestInlineGatedSubmissionWhoseFirstWriteFailsIsNotSent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close() // an RST
		}
	}()
	// The dial returns once the reset has reached the socket: the first
	// write on it fails, and writes nothing.
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		raw, _ := c.(*net.TCPConn).SyscallConn()
		for deadline := time.Now().Add(2 * time.Second); Peek(raw) != PeekClosed; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Error("the reset never arrived")
				break
			}
		}
		return c, nil
	}
	for _, name := range []string{"go", "inline"} {
		t.Run(name, func(t *testing.T) {
			base := &http.Transport{DialContext: dial}
			defer base.CloseIdleConnections()
			var rt http.RoundTripper = base
			if name == "inline" {
				rt = NewInlineTransport(base)
			}
			req, _ := http.NewRequest(http.MethodPost, "http://"+l.Addr().String()+"/v1/statement", strings.NewReader("SELECT 1"))
			e := new(Exchange)
			e.GateBody(req)
			_, err := Submit(rt, req, e, nil)
			failure, sent := e.Failure()
			if err == nil || failure == nil || sent || e.Written() {
				t.Errorf("first write failed: %v; recorded %v, sent %t, written %t; want a failure not sent", err, failure, sent, e.Written())
			}
		})
	}
}

// flakyConn fails its next write, writing nothing, when fail is set: a
// reused connection that turns out dead at its first write (as the
// Dialer's retired and hung connections do).
type flakyConn struct {
	net.Conn
	fail *atomic.Bool
}

func (c flakyConn) Write(p []byte) (int, error) {
	if c.fail.Swap(false) {
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return c.Conn.Write(p)
}

// A gated submission on a reused connection whose first write fails
// before anything is written is sent again on a fresh connection; until
// its statement's last bytes are handed to that one, the caller can still
// abort it (nothing of it can be at any coordinator).
func TestInlineGateStaysOpenForTheRetry(t *testing.T) {
	srv := newRawServer(t, func(c *rawConn) {
		for {
			if _, _, err := c.next(); err != nil {
				return
			}
			if _, err := io.WriteString(c, okAnswer); err != nil {
				return
			}
		}
	})
	fail := new(atomic.Bool)
	var e *Exchange
	var dials int
	var abortedAtRedial bool
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials++
		if dials == 2 {
			abortedAtRedial = e.AbortSubmission()
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return flakyConn{c, fail}, nil
	}}
	tr := NewInlineTransport(base)
	defer tr.CloseIdleConnections()
	if got := get(t, tr, srv.url()+"/warm"); got != "ok" {
		t.Fatalf("warm-up: %q", got)
	}
	fail.Store(true)
	req, _ := http.NewRequest(http.MethodPost, srv.url()+"/v1/statement", strings.NewReader("SELECT 1"))
	e = new(Exchange)
	e.GateBody(req)
	_, err := Submit(tr, req, e, nil)
	if dials != 2 {
		t.Fatalf("%d dials, want 2 (the retry on a fresh connection); %v", dials, err)
	}
	if !abortedAtRedial {
		t.Errorf("while the retry dialled, AbortSubmission was refused: the gate was released by the first try, of which nothing was written (Submit: %v)", err)
	}
}

// Peekers of one connection used at once, and across its Close, agree
// and do not crash.
func TestPeekerConcurrentAndClosed(t *testing.T) {
	c, peer := rawPair(t)
	raw, _ := c.(syscall.Conn).SyscallConn()
	p := NewPeeker(raw)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 2000; j++ {
				if s := p.Peek(); s == PeekClosed {
					t.Errorf("peek %d: closed before the peer closed", j)
					return
				}
			}
		}()
	}
	wg.Wait()
	peer.Write([]byte("x"))
	time.Sleep(10 * time.Millisecond)
	if s := p.Peek(); s != PeekBytes {
		t.Errorf("after a byte: %v", s)
	}
	peer.Close()
	c.Read(make([]byte, 1))
	time.Sleep(10 * time.Millisecond)
	if s := p.Peek(); s != PeekClosed {
		t.Errorf("after the FIN: %v", s)
	}
	c.Close()
	if s := p.Peek(); s != PeekNothing {
		t.Errorf("after Close: %v", s)
	}
}

// Through the Dialer (RawIO), Go's transport speaks TLS to a server, with
// bodies larger than the socket buffers both ways and write timeouts on.
func TestDialerTLSLargeBodies(t *testing.T) {
	srv := httptestTLS(t)
	d := &Dialer{WriteTimeout: 5 * time.Second, ResponseTimeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, TLSClientConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	big := bytes.Repeat([]byte("z"), 8<<20)
	for _, h2 := range []bool{false, true} {
		tr := tr.Clone()
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			tr.TLSClientConfig = tr.TLSClientConfig.Clone()
			tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
		}
		for i := 0; i < 3; i++ {
			resp, err := tr.RoundTrip(mustReq(t, srv.URL, big))
			if err != nil {
				t.Fatalf("h2=%v: %v", h2, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !bytes.Equal(got, big) {
				t.Fatalf("h2=%v: echoed %d bytes, %v (proto %s)", h2, len(got), err, resp.Proto)
			}
		}
		tr.CloseIdleConnections()
	}
}

// mustReq is a POST of body to url.
func mustReq(t *testing.T, url string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// httptestTLS is an https server, HTTP/2 enabled, that echoes each body.
func httptestTLS(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}
