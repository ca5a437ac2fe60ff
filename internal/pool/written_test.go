package pool

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// reportingConn writes as its connection does, then reports what a test
// asks for: a failure after every byte went through (the connection was
// closed under a write that had completed, or a deadline could not be
// set), or a failure with nothing written.
type reportingConn struct {
	net.Conn
	mode string // "fail after writing", "fail before writing"
}

func (c reportingConn) Write(p []byte) (int, error) {
	if c.mode == "fail before writing" {
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	}
	n, err := c.Conn.Write(p)
	if err == nil {
		err = &net.OpError{Op: "set", Net: "tcp", Err: net.ErrClosed}
	}
	return n, err
}

// Written is true whenever a byte of the submission may have reached the
// coordinator, whatever the write reports: a write that handed every byte
// to the kernel and then reported a failure leaves a submission the
// coordinator read whole, which must count as sent; one that wrote nothing
// leaves one that may go elsewhere. Through Go's transport and the inline
// one, with the gate (a caller who may give up) and without.
func TestWrittenWhateverTheWriteReports(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var read atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				if _, err := io.ReadAll(req.Body); err == nil {
					read.Add(1)
				}
			}()
		}
	}()
	for _, mode := range []string{"fail after writing", "fail before writing"} {
		for _, name := range []string{"go", "inline"} {
			for _, gated := range []bool{false, true} {
				d := &Dialer{Timeout: 5 * time.Second, WriteTimeout: 5 * time.Second, ResponseTimeout: 5 * time.Second,
					Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
						var nd net.Dialer
						c, err := nd.DialContext(ctx, network, addr)
						if err != nil {
							return nil, err
						}
						return reportingConn{c, mode}, nil
					}}
				base := &http.Transport{DialContext: d.DialContext}
				var rt http.RoundTripper = base
				if name == "inline" {
					rt = NewInlineTransport(base)
				}
				before := read.Load()
				req, _ := http.NewRequest(http.MethodPost, "http://"+l.Addr().String()+"/v1/statement", strings.NewReader("SELECT 1"))
				e := new(Exchange)
				if gated {
					e.GateBody(req)
				}
				_, err := Submit(rt, req, e, nil)
				failure, sent := e.Failure()
				if err == nil || failure == nil {
					t.Fatalf("%s, %s, gated %t: %v, recorded %v; want a failure", mode, name, gated, err, failure)
				}
				// Go's transport writes a gated body's head on its own and
				// stops at that write's failure: the statement's body never
				// left, so no coordinator can have it.
				want := mode == "fail after writing" && !(name == "go" && gated)
				if sent != want || e.Written() != want {
					t.Errorf("%s, %s, gated %t: sent %t, written %t; want %t (%v)", mode, name, gated, sent, e.Written(), want, err)
				}
				if want {
					// The coordinator has the statement: it read it whole.
					for deadline := time.Now().Add(5 * time.Second); read.Load() == before && time.Now().Before(deadline); {
						time.Sleep(time.Millisecond)
					}
					if read.Load() == before {
						t.Errorf("%s, %s, gated %t: the server never read the statement", mode, name, gated)
					}
				}
				base.CloseIdleConnections()
				if errors.Is(err, context.Canceled) {
					t.Errorf("unexpected cancellation: %v", err)
				}
			}
		}
	}
}
