package server

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// stallListener's connections stop taking writes when stall is set: a
// client whose receive window and the socket's send buffer are full. A
// write then waits for its deadline, as a socket's does.
type stallListener struct {
	net.Listener
	stall *atomic.Bool
}

func (l stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c, stall: l.stall}, nil
}

type stallConn struct {
	net.Conn
	stall    *atomic.Bool
	deadline atomic.Pointer[time.Time]
}

func (c *stallConn) SetWriteDeadline(t time.Time) error {
	c.deadline.Store(&t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *stallConn) SetDeadline(t time.Time) error {
	c.deadline.Store(&t)
	return c.Conn.SetDeadline(t)
}

func (c *stallConn) Write(p []byte) (int, error) {
	if c.stall.Load() {
		if d := c.deadline.Load(); d != nil && !d.IsZero() {
			time.Sleep(time.Until(*d))
		} else {
			time.Sleep(time.Hour)
		}
		return 0, os.ErrDeadlineExceeded
	}
	return c.Conn.Write(p)
}

// The sweep closing an idle TLS connection whose client reads nothing
// must not hold up the server: other clients are still accepted and
// served.
func TestSweepOfStalledTLSClientHoldsUpNobody(t *testing.T) {
	_, cfg := tlsListener(t)
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stall := new(atomic.Bool)
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		IdleTimeout: 50 * time.Millisecond, sweepEvery: 10 * time.Millisecond, TLSConfig: cfg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan error, 1)
	go func() { done <- s.Serve(stallListener{plain, stall}) }()
	defer func() { stall.Store(false); s.Close(); <-done }()
	client := func() (*http.Client, func()) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		// The stalled close held the server for its 5 s write deadline.
		return &http.Client{Transport: tr, Timeout: 3 * time.Second}, tr.CloseIdleConnections
	}
	c1, close1 := client()
	defer close1()
	resp, err := c1.Get("https://" + plain.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	stall.Store(true) // client 1 stops reading; its idle connection is swept soon
	time.Sleep(100 * time.Millisecond)
	stall.Store(false) // the next connection's writes go through
	c2, close2 := client()
	defer close2()
	start := time.Now()
	resp, err = c2.Get("https://" + plain.Addr().String() + "/")
	if err != nil {
		t.Fatalf("a second client, after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
	resp.Body.Close()
}
