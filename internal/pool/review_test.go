//go:build linux

// What a review of the peeks and the one-write submissions tried.

package pool

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

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
	c, peer := tcpPair(t)
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

// Through the Dialer, Go's transport speaks TLS to a server, with
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
