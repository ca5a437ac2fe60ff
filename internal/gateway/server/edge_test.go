package server

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/testtls"
)

// A HEAD answer has no body, even when the handler flushed: net/http
// drops Transfer-Encoding for HEAD and writes no chunk terminator. Here
// the HEAD answer is chunked and followed by "0\r\n\r\n", which the client
// (that knows it asked HEAD) reads as the start of the next answer.
func TestHeadFlushWritesNoBody(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "streamed")
		w.(http.Flusher).Flush()
	}))
	_, br := raw(t, addr, "HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodHead})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if te := resp.TransferEncoding; len(te) > 0 {
		t.Errorf("HEAD answer says Transfer-Encoding %v", te)
	}
	resp, err = http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		t.Fatalf("the GET after a flushed HEAD: %v (the HEAD answer carried body bytes)", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "streamed" {
		t.Fatalf("GET body %q", b)
	}
}

// "Expect: 100-continue" and a handler that sends its answer's head (a
// Flush, or a Write past commitAfter) before it reads the body: net/http
// no longer sends the 100 once the answer has started. Here "HTTP/1.1 100
// Continue" lands inside the answer's (chunked) body.
func TestContinueAfterAnswerStarted(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "head:")
		w.(http.Flusher).Flush()
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	c, br := raw(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodPost})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	io.WriteString(c, "body") // the client sends the body anyway
	b, err := io.ReadAll(resp.Body)
	if err != nil || strings.Contains(string(b), "100 Continue") {
		t.Fatalf("body %q, %v: a 100 Continue inside the answer", b, err)
	}
}

// Shutdown while a client is in the middle of its headers: the sweep that
// enforces ReadHeaderTimeout is stopped by Shutdown, so Shutdown waits for
// the client for ever (here: until its context ends). net/http keeps the
// header deadline, and treats a connection that sent no request within 5s
// as idle.
func TestShutdownWithClientMidHeaders(t *testing.T) {
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), func(s *Server) {
		s.sweepEvery = 20 * time.Millisecond
		s.ReadHeaderTimeout = 100 * time.Millisecond
	})
	raw(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n") // and nothing more
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v; want it to return once the header timeout closed the slow client", err)
	}
}

func tlsListener(t *testing.T) (net.Listener, *tls.Config) {
	t.Helper()
	files, err := testtls.Generate(t.TempDir(), "server")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := files.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return tls.NewListener(ln, cfg), cfg
}

// The same on TLS, with a client that connects and never sends its
// ClientHello: the connection is "reading headers" from its accept on.
func TestShutdownWithTLSClientSilent(t *testing.T) {
	ln, _ := tlsListener(t)
	s := &Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: 100 * time.Millisecond, sweepEvery: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	defer func() { s.Close(); <-done }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v; want it to return once the handshake timeout closed the silent client", err)
	}
}

// A first Write longer than commitAfter commits the head with nothing
// held, so no Content-Type is sniffed; net/http sniffs the first write.
func TestContentTypeSniffedOnLongFirstWrite(t *testing.T) {
	page := "<html><body>" + strings.Repeat("x", 3*commitAfter) + "</body></html>"
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, page)
	}))
	_, br := raw(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, _ := readResponse(t, br, "GET")
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("Content-Type %q, want text/html; charset=utf-8 (as net/http sniffs)", ct)
	}
}

// ClientGone from a goroutine of the handler (r.Context() may be looked at
// from any goroutine) while the server drains the body the handler left:
// a data race on the connection's bufio.Reader (run with -race). The same
// holds for ClientGone while the handler reads the body, and for
// WatchClient from another goroutine (startLocked reads c.br.Buffered()).
func TestClientGoneDuringDrainRace(t *testing.T) {
	var wg sync.WaitGroup
	defer wg.Wait()
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wg.Go(func() {
			for r.Context().Err() == nil && !ClientGone(r) {
				time.Sleep(100 * time.Microsecond)
			}
		})
		io.WriteString(w, "ok")
	}))
	c, br := raw(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
	readResponse(t, br, "POST")
	for range 10 { // the server drains this while the goroutine looks
		time.Sleep(5 * time.Millisecond)
		io.WriteString(c, strings.Repeat("b", 10))
	}
}

// A request line whose target url.ParseRequestURI refuses ("/%zz", a
// control byte, a bad IP literal) gets 400 from net/http. Here the
// *url.Error that http.ReadRequest returns is a net.Error (it has Timeout
// and Temporary), so refuse takes it for a broken connection and closes
// without a word.
func TestMalformedTargetGets400(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, target := range []string{"/%zz", "/a\x7f", "http://[::1"} {
		_, br := raw(t, addr, "GET "+target+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("GET %q: %v; want a 400 answer", target, err)
			continue
		}
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %q: %s, want 400", target, resp.Status)
		}
	}
}

// A CRLF after a POST's body, before the next request (RFC 9112 2.2: a
// server SHOULD ignore at least one empty line before a request-line; old
// clients send one): net/http skips it after a POST; here the next request
// gets 400 and the connection closes.
func TestCRLFAfterPostBody(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.URL.Path+":"+string(b))
	}))
	_, br := raw(t, addr, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"/a:hi", "/b:"} {
		resp, body := readResponse(t, br, "GET")
		if resp.StatusCode != 200 || body != want {
			t.Fatalf("%s %q, want 200 %q", resp.Status, body, want)
		}
	}
}

// A connection closed while the client is still sending a body the
// handler did not read (more than maxDrain, or Expect unanswered, or
// Connection: close): close(2) with unread input makes the kernel send an
// RST and throw away what it has not yet sent of the answer. net/http
// half-closes (CloseWrite), waits up to 500ms (rstAvoidanceDelay), then
// closes; the client gets the whole answer.
func TestUnreadBodyCloseKeepsTheAnswer(t *testing.T) {
	answer := strings.Repeat("r", 1<<20)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		io.WriteString(w, answer)
	}))
	body := strings.Repeat("b", 4<<20)
	c, br := raw(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n")
	go io.WriteString(c, body) // fails once the server closes
	time.Sleep(50 * time.Millisecond)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if len(got) != len(answer) {
		t.Fatalf("%d of the answer's %d bytes, %v", len(got), len(answer), err)
	}
}

// A handler's "Connection: Close" (any case, or among other tokens) on an
// HTTP/1.0 keep-alive request: net/http keeps the handler's header and
// closes; here the comparison is with "close" exactly, so the header is
// replaced by "Connection: keep-alive" and the connection kept.
func TestHandlerConnectionCloseAnyCase(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "Close")
		io.WriteString(w, "x")
	}))
	_, br := raw(t, addr, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	resp, _ := readResponse(t, br, "GET")
	if !resp.Close {
		t.Fatalf("Connection %q: the handler asked to close", resp.Header.Get("Connection"))
	}
}

// ClientGone called (from a goroutine the handler started) after the
// handler returned and the client left: false, although r.Context() has
// ended; on net/http's server ClientGone is true then.
func TestClientGoneAfterHandlerReturned(t *testing.T) {
	got := make(chan [2]bool, 1)
	returned := make(chan struct{})
	left := make(chan struct{})
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		go func() {
			<-returned
			<-left
			time.Sleep(50 * time.Millisecond)
			got <- [2]bool{ClientGone(r), r.Context().Err() != nil}
		}()
		io.WriteString(w, "x")
	}))
	c, br := raw(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	readResponse(t, br, "GET")
	close(returned)
	c.Close()
	close(left)
	if g := <-got; !g[0] || !g[1] {
		t.Fatalf("ClientGone %v, context ended %v; want both true (they disagree)", g[0], g[1])
	}
}
