package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start serves h on a loopback port until the test ends.
func start(t *testing.T, h http.Handler, tweak ...func(*Server)) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range tweak {
		f(s)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return s, ln.Addr().String()
}

// raw sends request bytes on a new connection and returns the
// connection's reader.
func raw(t *testing.T, addr, request string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

func readResponse(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// One connection carries many requests, with every framing of the
// answer: a short one gets a Content-Length, a long one or a flushed one
// is chunked, a declared length is kept.
func TestKeepAliveAndFraming(t *testing.T) {
	long := strings.Repeat("x", 3*commitAfter)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/short":
			io.WriteString(w, "short")
		case "/long":
			io.WriteString(w, long)
		case "/flushed":
			io.WriteString(w, "a")
			w.(http.Flusher).Flush()
			io.WriteString(w, "b")
		case "/declared":
			w.Header().Set("Content-Length", "4")
			io.WriteString(w, "four")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
	defer client.CloseIdleConnections()
	var conns atomic.Int32
	for i, c := range []struct {
		path, body string
		length     int64
		status     int
	}{
		{"/short", "short", 5, 200},
		{"/long", long, -1, 200},
		{"/flushed", "ab", -1, 200},
		{"/declared", "four", 4, 200},
		{"/empty", "", 0, 204},
		{"/short", "short", 5, 200},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+c.path, nil)
		trace := &struct{ reused bool }{}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			trace.reused = info.Reused
			if !info.Reused {
				conns.Add(1)
			}
		}}))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || string(b) != c.body || resp.ContentLength != c.length {
			t.Errorf("%s: %d, %d bytes, length %d; want %d, %d bytes, length %d", c.path, resp.StatusCode, len(b), resp.ContentLength, c.status, len(c.body), c.length)
		}
		if i > 0 && !trace.reused {
			t.Errorf("%s: a new connection", c.path)
		}
		if resp.Header.Get("Date") == "" {
			t.Errorf("%s: no Date", c.path)
		}
	}
	if conns.Load() != 1 {
		t.Fatalf("%d connections for 6 requests, want 1", conns.Load())
	}
}

// Request bodies of both framings reach the handler whole; what a handler
// leaves unread is drained so that the next request on the connection is
// read from its start.
func TestRequestBodies(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ignore" {
			io.WriteString(w, "ignored")
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		fmt.Fprintf(w, "%s:%s", r.Method, b)
	}))
	_, br := raw(t, addr, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"+
		"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"+
		"POST /ignore HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789"+
		"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"POST:hello", "POST:abcde", "ignored", "GET:"} {
		if _, body := readResponse(t, br, "POST"); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
}

// "Expect: 100-continue": the 100 goes out when the handler reads the
// body, and not at all when it answers without reading it (the connection
// then closes, since the client may still send the body).
func TestExpectContinue(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	c, br := raw(t, addr, "POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("first line %q, %v; want a 100", line, err)
	}
	br.ReadString('\n')
	io.WriteString(c, "body")
	if _, body := readResponse(t, br, "POST"); body != "body" {
		t.Fatalf("body %q", body)
	}

	_, br = raw(t, addr, "POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
	resp, _ := readResponse(t, br, "POST")
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Fatalf("refusal: %s, close %v; want 413 and the connection closed", resp.Status, resp.Close)
	}
}

// HEAD answers carry the GET's headers and no body; a 204 none either.
func TestHeadAndNoBody(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "twelve bytes")
	}))
	_, br := raw(t, addr, "HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body := readResponse(t, br, "HEAD")
	if body != "" || resp.Header.Get("Content-Length") != "12" {
		t.Fatalf("HEAD: body %q, Content-Length %q; want none and 12", body, resp.Header.Get("Content-Length"))
	}
	if _, body := readResponse(t, br, "GET"); body != "twelve bytes" {
		t.Fatalf("GET after HEAD: %q", body)
	}
}

// HTTP/1.0: without keep-alive the connection closes after the answer,
// whose body ends with it when its length is not known; with keep-alive
// it stays.
func TestHTTP10(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "a")
		w.(http.Flusher).Flush()
		io.WriteString(w, "b")
	}))
	_, br := raw(t, addr, "GET / HTTP/1.0\r\n\r\n")
	all, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(all); !strings.HasSuffix(s, "\r\n\r\nab") || strings.Contains(s, "chunked") {
		t.Fatalf("HTTP/1.0 answer %q: want a close-delimited body", s)
	}
	_, br = raw(t, addr, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	resp, body := readResponse(t, br, "GET")
	if body != "ab" || !resp.Close {
		t.Fatalf("HTTP/1.0 keep-alive with an unknown length: %q, close %v; want ab and close", body, resp.Close)
	}
}

// What the server refuses before a handler sees it: bad request lines,
// HTTP/1.1 without Host, bad Host bytes, heads over the limit, other
// protocol versions; each with an answer and the connection closed.
func TestRefusals(t *testing.T) {
	var calls atomic.Int32
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }),
		func(s *Server) { s.MaxHeaderBytes = 1 << 10 })
	for _, c := range []struct {
		name, request string
		status        int
	}{
		{"garbage", "HELLO\r\n\r\n", 400},
		{"no host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"bad host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
		{"control byte in a header", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n", 400},
		{"head too large", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 8<<10) + "\r\n\r\n", 431},
		{"HTTP/2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, br := raw(t, addr, c.request)
			resp, _ := readResponse(t, br, "GET")
			if resp.StatusCode != c.status || !resp.Close {
				t.Fatalf("%s, close %v; want %d and close", resp.Status, resp.Close, c.status)
			}
		})
	}
	if calls.Load() != 0 {
		t.Fatalf("the handler saw %d refused requests", calls.Load())
	}
}

// A handler's panic closes its connection and leaves the server serving;
// http.ErrAbortHandler is not logged.
func TestPanics(t *testing.T) {
	var logged testutil.Buffer
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic("boom")
		case "/abort":
			io.WriteString(w, "partial")
			panic(http.ErrAbortHandler)
		}
		io.WriteString(w, "fine")
	}), func(s *Server) {
		s.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	})
	for _, path := range []string{"/panic", "/abort"} {
		_, br := raw(t, addr, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if b, _ := io.ReadAll(br); strings.Contains(string(b), "200 OK") && !strings.Contains(string(b), "partial") {
			t.Fatalf("%s answered %q", path, b)
		}
	}
	_, br := raw(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, body := readResponse(t, br, "GET"); body != "fine" {
		t.Fatalf("after the panics: %q", body)
	}
	if n := strings.Count(logged.String(), "panicked"); n != 1 {
		t.Fatalf("%d panics logged, want 1 (ErrAbortHandler is not one): %s", n, logged.String())
	}
}

// A connection idle past IdleTimeout, or slow to send its headers past
// ReadHeaderTimeout, is closed by the sweep.
func TestTimeouts(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), func(s *Server) {
		s.sweepEvery = 20 * time.Millisecond
		s.IdleTimeout = 100 * time.Millisecond
		s.ReadHeaderTimeout = 100 * time.Millisecond
	})
	for _, c := range []struct{ name, request string }{
		{"idle", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"slow headers", "GET / HTTP/1.1\r\nHost: x\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, br := raw(t, addr, c.request)
			if c.name == "idle" {
				readResponse(t, br, "GET")
			}
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := br.ReadByte(); err == nil || isTimeout(err) {
				t.Fatalf("read %v: want the server to close the connection", err)
			}
		})
	}
}

// Shutdown closes idle connections at once, lets a running request finish
// (its answer saying the connection closes), refuses new connections, and
// returns when the last handler has.
func TestShutdown(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		io.WriteString(w, "done")
	}))
	idle, idleBR := raw(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	readResponse(t, idleBR, "GET")
	_, slowBR := raw(t, addr, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idleBR.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("the idle connection: %v, want it closed", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while a request ran", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	resp, body := readResponse(t, slowBR, "GET")
	if body != "done" || !resp.Close {
		t.Fatalf("the running request: %q, close %v; want done and close", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("a connection was accepted after Shutdown")
	}
}

// Shutdown whose context ends cuts the requests still running.
func TestShutdownDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	entered := make(chan struct{})
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	_, br := raw(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want the deadline", err)
	}
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("the cut request's connection: %v, want it closed", err)
	}
}

// ClientGone: false while the client waits, true once it has closed its
// connection, which also ends the request's context; false for a client
// that has sent its next request; and for net/http's server, the
// context's word.
func TestClientGone(t *testing.T) {
	type seen struct {
		before, after, ctxEnded bool
	}
	results := make(chan seen, 1)
	closed := make(chan struct{})
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pipelined" {
			time.Sleep(50 * time.Millisecond) // the next request arrives
			results <- seen{before: ClientGone(r)}
			return
		}
		s := seen{before: ClientGone(r)}
		<-closed
		deadline := time.Now().Add(5 * time.Second)
		for !ClientGone(r) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		s.after, s.ctxEnded = ClientGone(r), r.Context().Err() != nil
		results <- s
	}))
	c, _ := raw(t, addr, "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(20 * time.Millisecond)
	c.Close()
	close(closed)
	if s := <-results; s.before || !s.after || !s.ctxEnded {
		t.Fatalf("gone before the close %v, after %v, context ended %v; want false, true, true", s.before, s.after, s.ctxEnded)
	}

	_, br := raw(t, addr, "GET /pipelined HTTP/1.1\r\nHost: x\r\n\r\nGET /pipelined HTTP/1.1\r\nHost: x\r\n\r\n")
	if s := <-results; s.before {
		t.Fatal("a client that sent its next request was taken for gone")
	}
	readResponse(t, br, "GET")
	<-results
	readResponse(t, br, "GET")

	ended := make(chan bool, 1)
	std := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		ended <- ClientGone(r)
	}))
	defer std.Close()
	sc, _ := raw(t, strings.TrimPrefix(std.URL, "http://"), "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	sc.Close()
	if !<-ended {
		t.Fatal("net/http: ClientGone is false once the context ended")
	}
}

// A write to a client that has gone ends the request's context.
func TestWriteFailureEndsTheContext(t *testing.T) {
	ended := make(chan bool, 1)
	closed := make(chan struct{})
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-closed
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 1000 {
			if _, err := w.Write(chunk); err != nil {
				break
			}
			w.(http.Flusher).Flush()
		}
		ended <- r.Context().Err() != nil
	}))
	c, _ := raw(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(20 * time.Millisecond)
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	close(closed)
	if !<-ended {
		t.Fatal("the context goes on after writes to a departed client failed")
	}
}

// On TLS, WatchClient ends the context when the client closes, and the
// handler sees the connection's TLS state: with a TLS listener, and with
// Server.TLSConfig.
func TestTLSWatch(t *testing.T) {
	tlsLn, cfg := tlsListener(t)
	t.Run("listener", func(t *testing.T) { testTLSWatch(t, tlsLn, nil) })
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("TLSConfig", func(t *testing.T) { testTLSWatch(t, plain, cfg) })
}

func testTLSWatch(t *testing.T, ln net.Listener, cfg *tls.Config) {
	ended := make(chan bool, 1)
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			t.Error("no r.TLS on a TLS connection")
		}
		b, _ := io.ReadAll(r.Body)
		WatchClient(r)
		select {
		case <-r.Context().Done():
			ended <- ClientGone(r)
		case <-time.After(5 * time.Second):
			ended <- false
		}
		w.Write(b)
	}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TLSConfig: cfg}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	defer func() { s.Close(); <-done }()
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true}) // the watch is tested, not the certificate
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
	time.Sleep(50 * time.Millisecond)
	c.Close()
	if !<-ended {
		t.Fatal("the watched TLS request's context did not end when its client closed")
	}
}

// Many clients at once, each with many requests on its connection.
func TestConcurrentClients(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			for j := range 50 {
				want := strconv.Itoa(i*1000 + j)
				resp, err := client.Post("http://"+addr+"/", "text/plain", strings.NewReader(want))
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != want {
					t.Errorf("got %q, want %q", b, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
