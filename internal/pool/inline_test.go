//go:build linux

package pool

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/zkprestotest/deadpeer"
)

// Answers the raw servers give.
const (
	okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	// spoofAnswer follows an answer unasked: a transport that read it as
	// the answer to its next request would hand "spoofed" to its caller.
	spoofAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nspoofed"
	// reusedAnswer is what a raw server answers to a second request on a
	// connection that must not have carried one.
	reusedAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nreused"
)

// noLeaks fails t if a goroutine started during it still runs once its
// cleanups have run. Call it first, so that its check runs last.
func noLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// dialLog is a base transport's DialContext that records the connections
// it makes, as they are (TCP connections that can be peeked at).
type dialLog struct {
	mu       sync.Mutex
	attempts int
	conns    []net.Conn
	addrs    []string
}

func (d *dialLog) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.attempts++
	d.mu.Unlock()
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.conns = append(d.conns, c)
	d.addrs = append(d.addrs, addr)
	return c, nil
}

// count returns how many connections were dialled.
func (d *dialLog) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.conns)
}

// tried returns how many dials were attempted.
func (d *dialLog) tried() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.attempts
}

// to returns how many connections were dialled to addr.
func (d *dialLog) to(addr string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, a := range d.addrs {
		if a == addr {
			n++
		}
	}
	return n
}

// last returns the latest connection dialled.
func (d *dialLog) last(t *testing.T) net.Conn {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.conns) == 0 {
		t.Fatal("no connection was dialled")
	}
	return d.conns[len(d.conns)-1]
}

// newInline returns an InlineTransport over an http.Transport that dials
// through a dialLog, once setup (if not nil) has set the base up.
func newInline(t *testing.T, setup func(*http.Transport)) (*InlineTransport, *dialLog) {
	t.Helper()
	d := new(dialLog)
	base := &http.Transport{DialContext: d.dial}
	if setup != nil {
		setup(base)
	}
	tr := NewInlineTransport(base)
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		base.CloseIdleConnections()
	})
	return tr, d
}

// idleCount returns how many connections tr holds idle for key
// (scheme://host:port).
func idleCount(tr *InlineTransport, key string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.idle[key])
}

// newRequest is http.NewRequestWithContext with a string body, none if
// empty: one that can be rewound, as the Presto client's are.
func newRequest(t *testing.T, ctx context.Context, method, target, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, r)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// exchange sends req through rt and reads the answer whole.
func exchange(rt http.RoundTripper, req *http.Request) (int, string, error) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// get is a GET of target through rt that must succeed; it returns the body.
func get(t *testing.T, rt http.RoundTripper, target string) string {
	t.Helper()
	status, body, err := exchange(rt, newRequest(t, context.Background(), http.MethodGet, target, ""))
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	if status != http.StatusOK {
		t.Fatalf("GET %s: status %d", target, status)
	}
	return body
}

// short shortens s for a message.
func short(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q... (%d bytes)", s[:40], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// awaitPeer waits until the peer of c, a connection the transport holds
// idle, has closed it or sent something on it: until a peek at the socket
// sees it. A FIN, an RST or bytes reach the socket asynchronously, even on
// loopback.
func awaitPeer(t *testing.T, c net.Conn) {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if !peekRaw(raw) {
			return
		}
	}
	t.Fatal("what the server did to the idle connection never reached the client's socket")
}

// rawServer is a loopback TCP server for what an HTTP server will not do:
// each connection is served by the test's function.
type rawServer struct {
	addr     string
	accepted atomic.Int64

	mu     sync.Mutex
	closed bool
	conns  []net.Conn
}

// rawConn is a connection a rawServer accepted.
type rawConn struct {
	net.Conn
	n    int64 // 1 for the server's first connection, and so on
	br   *bufio.Reader
	done <-chan struct{} // closed at the test's end
}

// next reads the next request on c, and its body.
func (c *rawConn) next() (*http.Request, string, error) {
	req, err := http.ReadRequest(c.br)
	if err != nil {
		return nil, "", err
	}
	body, err := io.ReadAll(req.Body)
	return req, string(body), err
}

func newRawServer(t *testing.T, serve func(c *rawConn)) *rawServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{addr: l.Addr().String()}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				c.Close()
				return
			}
			s.conns = append(s.conns, c)
			wg.Add(1)
			s.mu.Unlock()
			rc := &rawConn{Conn: c, n: s.accepted.Add(1), br: bufio.NewReader(c), done: done}
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(rc)
			}()
		}
	}()
	t.Cleanup(func() {
		s.mu.Lock()
		s.closed = true
		conns := s.conns
		s.mu.Unlock()
		close(done)
		l.Close()
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	})
	return s
}

func (s *rawServer) url() string { return "http://" + s.addr }

// Every kind of exchange read to its end gives its connection back: GETs
// and POSTs with bodies small, large and of unknown length, chunked and
// large answers, an answer after an informational one, and the answers
// without a body (HEAD, 204, 304, Content-Length: 0) all travel on one
// connection.
func TestInlineReusesConnectionAfterEveryWholeExchange(t *testing.T) {
	noLeaks(t)
	big := strings.Repeat("0123456789abcdef", (100<<10)/16) // more than the transport's buffers
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/echo":
			_, _ = io.WriteString(w, r.Method+" "+string(body))
		case "/big":
			_, _ = io.WriteString(w, big)
		case "/chunked":
			_, _ = io.WriteString(w, "part1")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "part2")
		case "/hints":
			w.Header().Set("Link", "</v1/info>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			_, _ = io.WriteString(w, "hinted")
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			w.WriteHeader(http.StatusNotModified)
		case "/empty":
			w.Header().Set("Content-Length", "0")
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	tr, dials := newInline(t, nil)

	kinds := []struct {
		name          string
		method, path  string
		body          string
		unknownLength bool // the body is sent chunked
		status        int
		want          string
	}{
		{"GET", http.MethodGet, "/echo", "", false, 200, "GET "},
		{"GET of a large answer", http.MethodGet, "/big", "", false, 200, big},
		{"GET of a chunked answer", http.MethodGet, "/chunked", "", false, 200, "part1part2"},
		{"GET answered after 103 Early Hints", http.MethodGet, "/hints", "", false, 200, "hinted"},
		{"POST", http.MethodPost, "/echo", "SELECT 1", false, 200, "POST SELECT 1"},
		{"POST of a large body", http.MethodPost, "/echo", big, false, 200, "POST " + big},
		{"POST of a body of unknown length", http.MethodPost, "/echo", "SELECT 2", true, 200, "POST SELECT 2"},
		{"HEAD", http.MethodHead, "/echo", "", false, 200, ""},
		{"204 answer", http.MethodGet, "/204", "", false, 204, ""},
		{"304 answer", http.MethodGet, "/304", "", false, 304, ""},
		{"Content-Length: 0 answer", http.MethodGet, "/empty", "", false, 200, ""},
	}
	previous := "(none)"
	for round := range 3 {
		for i, k := range kinds {
			var got, reused bool
			trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { got, reused = true, info.Reused }}
			var body io.Reader
			if k.body != "" {
				body = strings.NewReader(k.body)
				if k.unknownLength {
					body = io.MultiReader(body)
				}
			}
			req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), k.method, srv.URL+k.path, body)
			if err != nil {
				t.Fatal(err)
			}
			status, answer, err := exchange(tr, req)
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, k.name, err)
			}
			if status != k.status || answer != k.want {
				t.Fatalf("round %d, %s: %d %s, want %d %s", round, k.name, status, short(answer), k.status, short(k.want))
			}
			first := round == 0 && i == 0
			if !got || reused == first {
				t.Errorf("round %d, %s: GotConn called %t, reused %t; want reused %t", round, k.name, got, reused, !first)
			}
			if n := dials.count(); n != 1 {
				t.Fatalf("round %d, %s: %d connections dialled, want 1: the exchange before (%s) did not give its connection back", round, k.name, n, previous)
			}
			previous = k.name
		}
	}
	if n := opened.Load(); n != 1 {
		t.Errorf("the server saw %d connections, want 1", n)
	}
}

// A connection is not used for another request after an answer that says
// or shows it is the connection's last (Connection: close, HTTP/1.0, a body
// that ends with the stream), a request that asked for it to be the last,
// a body closed before its end, or bytes that came with the answer and are
// none of it. The server answers a second request on its connection with
// "reused"; the next request must dial anew and get its own answer.
func TestInlineDoesNotReuseConnectionAfter(t *testing.T) {
	noLeaks(t)
	bigBody := strings.Repeat("x", 64<<10)
	readTen := func(r io.Reader) (string, error) {
		b := make([]byte, 10)
		_, err := io.ReadFull(r, b)
		return string(b), err
	}
	cases := []struct {
		name       string
		method     string
		first      string // the server's answer to the first request on each connection
		closeAfter bool   // the server closes the connection after its first answer
		prepare    func(*http.Request)
		consume    func(io.Reader) (string, error) // how the first answer's body is read; whole if nil
		wantFirst  string                          // what consume reads, if not want
		want       string                          // the answer's body read whole
	}{
		{name: "an answer with Connection: close", first: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", want: "ok"},
		{name: "an HTTP/1.0 answer without keep-alive", first: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", want: "ok"},
		{name: "an answer that ends with the stream", first: "HTTP/1.1 200 OK\r\n\r\nok", closeAfter: true, want: "ok"},
		{name: "a request with Close", first: okAnswer, prepare: func(r *http.Request) { r.Close = true }, want: "ok"},
		{name: "a body closed before its end", first: "HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n" + bigBody,
			consume: readTen, wantFirst: "xxxxxxxxxx", want: bigBody},
		{name: "unsolicited bytes after the answer", first: okAnswer + spoofAnswer, want: "ok"},
		{name: "unsolicited bytes after a chunked answer", first: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n" + spoofAnswer, want: "ok"},
		{name: "unsolicited bytes after a Content-Length: 0 answer", first: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" + spoofAnswer},
		{name: "unsolicited bytes after a 204", first: "HTTP/1.1 204 No Content\r\n\r\n" + spoofAnswer},
		{name: "a body sent with the answer to a HEAD", method: http.MethodHead, first: okAnswer},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRawServer(t, func(c *rawConn) {
				for i := 0; ; i++ {
					if _, _, err := c.next(); err != nil {
						return
					}
					answer := tc.first
					if i > 0 {
						answer = reusedAnswer
					}
					if _, err := io.WriteString(c, answer); err != nil || tc.closeAfter {
						return
					}
				}
			})
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			tr, dials := newInline(t, nil)
			for try := 1; try <= 2; try++ {
				req := newRequest(t, context.Background(), method, srv.url()+"/v1/info", "")
				if tc.prepare != nil {
					tc.prepare(req)
				}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatalf("request %d: %v", try, err)
				}
				var got string
				want := tc.want
				if try == 1 && tc.consume != nil {
					got, err = tc.consume(resp.Body)
					want = tc.wantFirst
				} else {
					var b []byte
					b, err = io.ReadAll(resp.Body)
					got = string(b)
				}
				resp.Body.Close()
				if err != nil || got != want {
					t.Fatalf("request %d: read %s, %v; want %s", try, short(got), err, short(want))
				}
			}
			if n, m := dials.count(), srv.accepted.Load(); n != 2 || m != 2 {
				t.Errorf("%d connections dialled, %d accepted; want 2: the first was used again", n, m)
			}
		})
	}
}

// Bytes that reach an idle connection after its answer was read whole are
// an answer nobody asked for, which could be taken for the next request's:
// the connection is left, and the next request gets its own answer on a
// fresh one.
func TestInlineLeavesIdleConnectionWithUnsolicitedBytes(t *testing.T) {
	noLeaks(t)
	answered := make(chan struct{})
	srv := newRawServer(t, func(c *rawConn) {
		for {
			if _, _, err := c.next(); err != nil {
				return
			}
			if _, err := io.WriteString(c, okAnswer); err != nil {
				return
			}
			if c.n == 1 {
				select {
				case <-answered:
				case <-c.done:
					return
				}
				if _, err := io.WriteString(c, spoofAnswer); err != nil {
					return
				}
			}
		}
	})
	tr, dials := newInline(t, nil)
	if got := get(t, tr, srv.url()+"/v1/info"); got != "ok" {
		t.Fatalf("first answer %q", got)
	}
	close(answered)
	awaitPeer(t, dials.last(t))
	if got := get(t, tr, srv.url()+"/v1/info"); got != "ok" {
		t.Errorf("second answer %q, want ok: the unsolicited bytes were read as the answer", got)
	}
	if n := dials.count(); n != 2 {
		t.Errorf("%d connections dialled, want 2", n)
	}
}

// An idle connection its server has ended (FIN, RST, or an HTTP server
// closing its clients' connections) is left for a fresh one before
// anything is written on it: a GET, and a POST whose body can be rewound,
// succeed in one try (one GetConn) and reach the server exactly once.
func TestInlineStaleIdleConnectionIsNotWrittenOn(t *testing.T) {
	noLeaks(t)
	type peer struct {
		url  string
		end  func()       // ends the idle connection from the server's side
		sent func() int64 // how many requests to /next the server read
	}
	rawPeer := func(end func(*net.TCPConn) error) func(*testing.T) peer {
		return func(t *testing.T) peer {
			var sent atomic.Int64
			ended := make(chan struct{})
			srv := newRawServer(t, func(c *rawConn) {
				for {
					req, _, err := c.next()
					if err != nil {
						return
					}
					if req.URL.Path == "/next" {
						sent.Add(1)
					}
					if _, err := io.WriteString(c, okAnswer); err != nil {
						return
					}
					if c.n == 1 {
						select {
						case <-ended:
							if err := end(c.Conn.(*net.TCPConn)); err != nil {
								panic(err)
							}
						case <-c.done:
						}
						return
					}
				}
			})
			return peer{url: srv.url(), end: func() { close(ended) }, sent: sent.Load}
		}
	}
	peers := []struct {
		name  string
		start func(*testing.T) peer
	}{
		{"FIN", rawPeer(func(c *net.TCPConn) error { return c.Close() })},
		{"RST", rawPeer(func(c *net.TCPConn) error {
			if err := c.SetLinger(0); err != nil {
				return err
			}
			return c.Close()
		})},
		{"CloseClientConnections", func(t *testing.T) peer {
			var sent atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if r.URL.Path == "/next" {
					sent.Add(1)
				}
				_, _ = io.WriteString(w, "ok")
			}))
			t.Cleanup(srv.Close)
			return peer{url: srv.URL, end: srv.CloseClientConnections, sent: sent.Load}
		}},
	}
	for _, p := range peers {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			t.Run(p.name+"/"+method, func(t *testing.T) {
				srv := p.start(t)
				tr, dials := newInline(t, nil)
				if got := get(t, tr, srv.url+"/warm"); got != "ok" {
					t.Fatalf("first answer %q", got)
				}
				srv.end()
				awaitPeer(t, dials.last(t))
				var tries int
				var reused bool
				trace := &httptrace.ClientTrace{
					GetConn: func(string) { tries++ },
					GotConn: func(info httptrace.GotConnInfo) { reused = reused || info.Reused },
				}
				body := ""
				if method == http.MethodPost {
					body = "SELECT 1"
				}
				req := newRequest(t, httptrace.WithClientTrace(context.Background(), trace), method, srv.url+"/next", body)
				status, answer, err := exchange(tr, req)
				if err != nil || status != http.StatusOK || answer != "ok" {
					t.Fatalf("%s on the pool's stale connection: %d %q %v; want 200 ok", method, status, answer, err)
				}
				if tries != 1 || reused {
					t.Errorf("%d tries, the stale connection used %t; want 1 try on a fresh connection", tries, reused)
				}
				if n := srv.sent(); n != 1 {
					t.Errorf("the server read the %s %d times, want once", method, n)
				}
				if n := dials.count(); n != 2 {
					t.Errorf("%d connections dialled, want 2", n)
				}
			})
		}
	}
}

// A request written whole on a reused connection that the server then
// closes without a byte of answer is tried again on a fresh connection
// only as Go's transport would: when it is idempotent (GET, HEAD, or it
// carries an Idempotency-Key) and its body can be rewound. A POST, a PUT
// or a DELETE is not sent twice; neither is a GET that got part of an
// answer.
func TestInlineRetriesOnlyWhatMaySafelyBeSentAgain(t *testing.T) {
	noLeaks(t)
	key := http.Header{"Idempotency-Key": {"k1"}}
	cases := []struct {
		name          string
		method        string
		header        http.Header
		body          string
		notRewindable bool
		partial       bool  // the server sends the start of an answer before it closes
		wantTries     int64 // how many times the server reads the request
		wantOK        bool
	}{
		{name: "GET", method: http.MethodGet, wantTries: 2, wantOK: true},
		{name: "HEAD", method: http.MethodHead, wantTries: 2, wantOK: true},
		{name: "POST", method: http.MethodPost, body: "SELECT 1", wantTries: 1},
		{name: "PUT", method: http.MethodPut, body: "SELECT 1", wantTries: 1},
		{name: "DELETE", method: http.MethodDelete, wantTries: 1},
		{name: "POST with an Idempotency-Key", method: http.MethodPost, header: key, body: "SELECT 1", wantTries: 2, wantOK: true},
		{name: "POST with an Idempotency-Key and a body that cannot be rewound", method: http.MethodPost, header: key,
			body: "SELECT 1", notRewindable: true, wantTries: 1},
		{name: "GET that got the start of an answer", method: http.MethodGet, partial: true, wantTries: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tries atomic.Int64
			srv := newRawServer(t, func(c *rawConn) {
				for {
					req, _, err := c.next()
					if err != nil {
						return
					}
					if req.URL.Path == "/next" {
						tries.Add(1)
						if c.n == 1 {
							if tc.partial {
								_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
							}
							return // closes the connection without an answer
						}
					}
					if _, err := io.WriteString(c, okAnswer); err != nil {
						return
					}
				}
			})
			tr, dials := newInline(t, nil)
			if got := get(t, tr, srv.url()+"/warm"); got != "ok" {
				t.Fatalf("first answer %q", got)
			}
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
				if tc.notRewindable {
					body = io.MultiReader(body)
				}
			}
			req, err := http.NewRequest(tc.method, srv.url()+"/next", body)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header[k] = v
			}
			_, _, err = exchange(tr, req)
			if tc.wantOK && err != nil {
				t.Errorf("%s: %v, want it sent again and answered", tc.name, err)
			}
			if !tc.wantOK && err == nil {
				t.Errorf("%s succeeded, want the failure of the connection", tc.name)
			}
			if n := tries.Load(); n != tc.wantTries {
				t.Errorf("the server read the request %d times, want %d", n, tc.wantTries)
			}
			if n := dials.count(); int64(n) != tc.wantTries {
				t.Errorf("%d connections dialled, want %d", n, tc.wantTries)
			}
		})
	}
}

// zeros is an upload of n zero bytes that calls reached once more than
// after of them were read.
type zeros struct {
	n, read, after int64
	once           sync.Once
	reached        func()
}

func (z *zeros) Read(p []byte) (int, error) {
	if z.read >= z.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), z.n-z.read)]
	clear(p)
	z.read += int64(len(p))
	if z.read > z.after {
		z.once.Do(z.reached)
	}
	return len(p), nil
}

// A request whose context ends while it waits for the answer's head, while
// its answer's body is read or while its own body is written ends at once
// with the context's error (Canceled, or DeadlineExceeded for a deadline);
// its connection is not used again, and nothing is left running.
func TestInlineCancellation(t *testing.T) {
	noLeaks(t)
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	// A transport that missed the end of the context would wait for ever;
	// the handlers give up after a while, so that the test fails instead.
	const watchdog = 3 * time.Second
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fast":
			_, _ = io.WriteString(w, "ok")
		case "/slow-head":
			select {
			case arrived <- struct{}{}:
			default:
			}
			select {
			case <-r.Context().Done():
			case <-release:
			case <-time.After(watchdog):
			}
		case "/slow-body":
			_, _ = io.WriteString(w, "part")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			case <-time.After(watchdog):
			}
		case "/no-read": // never reads the upload
			select {
			case <-release:
			case <-time.After(watchdog):
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	// Each run returns when its context ended and the error of the request.
	cases := []struct {
		name string
		want error
		run  func(t *testing.T, tr *InlineTransport) (time.Time, error)
	}{
		{"cancelled waiting for the head", context.Canceled, func(t *testing.T, tr *InlineTransport) (time.Time, error) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			at := make(chan time.Time, 1)
			go func() {
				select {
				case <-arrived:
				case <-time.After(5 * time.Second):
				}
				at <- time.Now()
				cancel()
			}()
			resp, err := tr.RoundTrip(newRequest(t, ctx, http.MethodGet, srv.URL+"/slow-head", ""))
			if err == nil {
				resp.Body.Close()
			}
			return <-at, err
		}},
		{"cancelled reading the body", context.Canceled, func(t *testing.T, tr *InlineTransport) (time.Time, error) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp := startSlowBody(t, ctx, tr, srv.URL+"/slow-body")
			defer resp.Body.Close()
			// The Read below is most likely blocked by then; it must end
			// with the context's error either way.
			at := make(chan time.Time, 1)
			timer := time.AfterFunc(20*time.Millisecond, func() { at <- time.Now(); cancel() })
			defer timer.Stop()
			_, err := resp.Body.Read(make([]byte, 16))
			return <-at, err
		}},
		{"deadline reading the body", context.DeadlineExceeded, func(t *testing.T, tr *InlineTransport) (time.Time, error) {
			// Long enough for the head and the first bytes on a stalled machine.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			resp := startSlowBody(t, ctx, tr, srv.URL+"/slow-body")
			defer resp.Body.Close()
			_, err := resp.Body.Read(make([]byte, 16))
			deadline, _ := ctx.Deadline()
			return deadline, err
		}},
		{"cancelled writing the body", context.Canceled, func(t *testing.T, tr *InlineTransport) (time.Time, error) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			at := make(chan time.Time, 1)
			// More than loopback's socket buffers hold, to a handler that
			// never reads it: the write blocks, most likely before the
			// cancel.
			upload := &zeros{n: 32 << 20, after: 1 << 20, reached: func() {
				time.AfterFunc(50*time.Millisecond, func() { at <- time.Now(); cancel() })
			}}
			req := newRequest(t, ctx, http.MethodPost, srv.URL+"/no-read", "")
			req.Body, req.ContentLength = io.NopCloser(upload), upload.n
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return <-at, err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, dials := newInline(t, nil)
			if got := get(t, tr, srv.URL+"/fast"); got != "ok" { // a pooled connection
				t.Fatalf("first answer %q", got)
			}
			ended, err := tc.run(t, tr)
			took := time.Since(ended)
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			if took > 2*time.Second { // generous: shared CI machines stall
				t.Errorf("ended %v after the context, want at once", took)
			}
			if n := dials.tried(); n != 1 {
				t.Errorf("%d dials tried before the next request, want 1 (for the pooled connection): the ended request was tried again", n)
			}
			if got := get(t, tr, srv.URL+"/fast"); got != "ok" {
				t.Errorf("next answer %q", got)
			}
			if n := dials.count(); n != 2 {
				t.Errorf("%d connections dialled, want 2: the connection of the ended request was used again", n)
			}
		})
	}
}

// A request whose context ended before RoundTrip is not sent, not even on a
// pooled connection: Go's transport writes nothing of it, and a caller that
// gave up before sending must be able to count on its statement not having
// reached the coordinator.
func TestInlineEndedContextSendsNothing(t *testing.T) {
	noLeaks(t)
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	tr, _ := newInline(t, nil)
	const statements = 20
	for range statements {
		get(t, tr, srv.URL+"/warm") // a pooled connection
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		resp, err := tr.RoundTrip(newRequest(t, ctx, http.MethodPost, srv.URL+"/v1/statement", "SELECT 1"))
		if err == nil {
			resp.Body.Close()
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	}
	tr.CloseIdleConnections()
	srv.Close() // waits for every request the server read to be handled
	if n := posts.Load(); n != 0 {
		t.Errorf("of %d statements whose context had ended before RoundTrip, the server read %d; want none", statements, n)
	}
}

// trackedBody is a request body that notes whether it was read to its end.
type trackedBody struct {
	io.Reader
	eof bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *trackedBody) Close() error { return nil }

// The httptrace hooks are called as Go's transport calls them: GetConn
// before each try, GotConn with Reused false for a dialled connection and
// true for a pooled one, WroteRequest with a nil error once the whole
// request, body included, was written.
func TestInlineTraceHooks(t *testing.T) {
	noLeaks(t)
	srv := newRawServer(t, func(c *rawConn) {
		for {
			req, _, err := c.next()
			if err != nil {
				return
			}
			if req.URL.Path == "/dropped" && c.n == 1 {
				return // read whole, never answered: a GET is tried again
			}
			if _, err := io.WriteString(c, okAnswer); err != nil {
				return
			}
		}
	})
	tr, _ := newInline(t, nil)
	var events []string
	var body *trackedBody
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GetConn: func(hostPort string) { events = append(events, "GetConn "+hostPort) },
		GotConn: func(info httptrace.GotConnInfo) {
			events = append(events, fmt.Sprintf("GotConn reused=%t conn=%t", info.Reused, info.Conn != nil))
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			events = append(events, fmt.Sprintf("WroteRequest err=%v whole=%t", info.Err, body == nil || body.eof))
		},
	})
	getConn := "GetConn " + srv.addr
	steps := []struct {
		method, path, body string
		want               []string
	}{
		{http.MethodPost, "/a", "SELECT 1", []string{getConn, "GotConn reused=false conn=true", "WroteRequest err=<nil> whole=true"}},
		{http.MethodGet, "/b", "", []string{getConn, "GotConn reused=true conn=true", "WroteRequest err=<nil> whole=true"}},
		{http.MethodGet, "/dropped", "", []string{
			getConn, "GotConn reused=true conn=true", "WroteRequest err=<nil> whole=true",
			getConn, "GotConn reused=false conn=true", "WroteRequest err=<nil> whole=true",
		}},
	}
	for _, s := range steps {
		events, body = nil, nil
		req := newRequest(t, ctx, s.method, srv.url()+s.path, "")
		if s.body != "" {
			body = &trackedBody{Reader: strings.NewReader(s.body)}
			req.Body, req.ContentLength = body, int64(len(s.body))
		}
		if _, answer, err := exchange(tr, req); err != nil || answer != "ok" {
			t.Fatalf("%s %s: %q, %v", s.method, s.path, answer, err)
		}
		if got, want := strings.Join(events, "; "), strings.Join(s.want, "; "); got != want {
			t.Errorf("%s %s: hooks\n\t%s\nwant\n\t%s", s.method, s.path, got, want)
		}
	}
}

// Through an InlineTransport an Exchange knows what it knows through Go's
// transport: a submission written whole is Written; one whose reused
// connection died after it was written whole failed as sent, and was not
// sent again; one that could not be dialled failed as not sent.
func TestInlineExchangeKnowsWhatWasSent(t *testing.T) {
	noLeaks(t)
	var statements atomic.Int64
	srv := newRawServer(t, func(c *rawConn) {
		for {
			req, _, err := c.next()
			if err != nil {
				return
			}
			statements.Add(1)
			if strings.HasPrefix(req.URL.Path, "/dropped/") {
				return // read whole, never answered
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"id\":\"q1\"}"); err != nil {
				return
			}
		}
	})
	tr, _ := newInline(t, nil)
	e, err := submit(tr, srv.url())
	if err != nil || !e.Written() {
		t.Fatalf("submission: %v, written %t; want it written", err, e.Written())
	}
	e, err = submit(tr, srv.url()+"/dropped")
	if failure, sent := e.Failure(); err == nil || failure == nil || !sent || !e.Written() {
		t.Errorf("submission whose connection died unanswered: %v, recorded %v sent %t, written %t; want a failure after sending",
			err, failure, sent, e.Written())
	}
	if n := statements.Load(); n != 2 {
		t.Errorf("the server read %d statements, want 2", n)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String()
	l.Close()
	e, err = submit(tr, refused)
	if failure, sent := e.Failure(); !errors.Is(err, syscall.ECONNREFUSED) || failure == nil || sent || e.Written() {
		t.Errorf("submission to a closed port: %v, recorded %v sent %t, written %t; want a refusal before sending",
			err, failure, sent, e.Written())
	}
}

// Over TLS with the base's TLSClientConfig, requests succeed on one
// connection; a server the configuration does not trust fails the dial
// with a certificate error; a server that never completes the handshake
// fails it within TLSHandshakeTimeout.
func TestInlineTLS(t *testing.T) {
	noLeaks(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+string(body))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted client's handshake errors
	srv.StartTLS()
	t.Cleanup(srv.Close)
	trusted := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()

	t.Run("trusted", func(t *testing.T) {
		tr, dials := newInline(t, func(b *http.Transport) { b.TLSClientConfig = trusted })
		for i, step := range []struct{ method, body string }{{http.MethodGet, ""}, {http.MethodPost, "SELECT 1"}, {http.MethodGet, ""}} {
			var reused bool
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
			})
			status, answer, err := exchange(tr, newRequest(t, ctx, step.method, srv.URL+"/v1/statement", step.body))
			if want := step.method + " " + step.body; err != nil || status != 200 || answer != want {
				t.Fatalf("%s: %d %q %v, want 200 %q", step.method, status, answer, err, want)
			}
			if reused != (i > 0) {
				t.Errorf("request %d: reused %t", i+1, reused)
			}
		}
		if n := dials.count(); n != 1 {
			t.Errorf("%d connections dialled, want 1", n)
		}
	})
	t.Run("the answer carries its connection's TLS state", func(t *testing.T) {
		tr, _ := newInline(t, func(b *http.Transport) { b.TLSClientConfig = trusted })
		resp, err := tr.RoundTrip(newRequest(t, context.Background(), http.MethodGet, srv.URL+"/v1/info", ""))
		if err != nil {
			t.Fatal(err)
		}
		discard(resp)
		if resp.TLS == nil || !resp.TLS.HandshakeComplete {
			t.Errorf("resp.TLS = %v; want the connection's state, as http.Response documents and Go's transport fills in", resp.TLS)
		}
	})
	t.Run("untrusted", func(t *testing.T) {
		tr, _ := newInline(t, nil)
		_, _, err := exchange(tr, newRequest(t, context.Background(), http.MethodGet, srv.URL+"/v1/info", ""))
		var cve *tls.CertificateVerificationError
		if !errors.As(err, &cve) {
			t.Errorf("got %v, want a certificate verification error", err)
		}
		if n := idleCount(tr, "https://"+srv.Listener.Addr().String()); n != 0 {
			t.Errorf("%d connections pooled after a failed handshake", n)
		}
	})
	t.Run("handshake timeout", func(t *testing.T) {
		peer := deadpeer.NeverReads(t)
		tr, _ := newInline(t, func(b *http.Transport) {
			b.TLSClientConfig = trusted
			b.TLSHandshakeTimeout = 150 * time.Millisecond
		})
		// A transport that missed the limit would wait for ever.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		_, _, err := exchange(tr, newRequest(t, ctx, http.MethodGet, "https://"+peer.Addr()+"/v1/info", ""))
		took := time.Since(start)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("got %v, want a timeout", err)
		}
		if took < 150*time.Millisecond || took > 2*time.Second {
			t.Errorf("the handshake failed after %v, want about 150ms", took)
		}
	})
}

// With MaxIdleConnsPerHost 1, of two connections whose exchanges ended one
// stays in the pool and the other is closed: two more requests at once
// dial one connection.
func TestInlineMaxIdleConnsPerHost(t *testing.T) {
	noLeaks(t)
	arrived := make(chan struct{})
	proceed := make(chan struct{})
	closed := make(chan struct{}, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		select {
		case <-proceed:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	startReportingCloses(t, srv, closed)
	tr, dials := newInline(t, func(b *http.Transport) { b.MaxIdleConnsPerHost = 1 })
	pair := func() {
		t.Helper()
		errs := make(chan error, 2)
		for range 2 {
			req := newRequest(t, context.Background(), http.MethodGet, srv.URL+"/v1/info", "")
			go func() {
				_, answer, err := exchange(tr, req)
				if err == nil && answer != "ok" {
					err = fmt.Errorf("answer %q", answer)
				}
				errs <- err
			}()
		}
		for range 2 {
			select {
			case <-arrived:
			case <-time.After(5 * time.Second):
				t.Fatal("the two requests did not both reach the server")
			}
		}
		proceed <- struct{}{}
		proceed <- struct{}{}
		for range 2 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	}
	pair()
	if n := dials.count(); n != 2 {
		t.Fatalf("%d connections dialled for two requests at once, want 2", n)
	}
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("neither connection was closed")
	}
	if n := idleCount(tr, "http://"+srv.Listener.Addr().String()); n != 1 {
		t.Errorf("%d connections pooled, want 1", n)
	}
	pair()
	if n := dials.count(); n != 3 {
		t.Errorf("%d connections dialled for four requests two at a time, want 3: one pooled, one new", n)
	}
}

// A connection idle longer than IdleConnTimeout is not used again; one
// idle for less, or without the limit, is.
func TestInlineIdleConnTimeout(t *testing.T) {
	noLeaks(t)
	srv := okServer(t)
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		want    int
	}{
		{"idle longer than the limit", 50 * time.Millisecond, 2},
		{"idle for less than the limit", time.Minute, 1},
		{"no limit", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, dials := newInline(t, func(b *http.Transport) { b.IdleConnTimeout = tc.timeout })
			get(t, tr, srv.URL)
			time.Sleep(100 * time.Millisecond) // idle for this long: what is tested
			get(t, tr, srv.URL)
			if n := dials.count(); n != tc.want {
				t.Errorf("%d connections dialled, want %d", n, tc.want)
			}
		})
	}
}

// A connection idle longer than IdleConnTimeout is closed then, as Go's
// transport closes it ("the maximum amount of time an idle connection will
// remain idle before closing itself"), not only when the next request to
// its host comes: a host that gets no more requests (a coordinator taken
// out of rotation) must not keep connections open for ever.
func TestInlineIdleConnTimeoutClosesIdleConnection(t *testing.T) {
	noLeaks(t)
	closed := make(chan struct{}, 4)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	startReportingCloses(t, srv, closed)
	tr, _ := newInline(t, func(b *http.Transport) { b.IdleConnTimeout = 50 * time.Millisecond })
	get(t, tr, srv.URL)
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Errorf("the connection is still open 3s into its idleness, with IdleConnTimeout 50ms")
	}
}

// A request the base's Proxy sends through a proxy goes through the base
// transport, to the proxy, with its absolute URL; one it sends direct
// (Proxy returns nil) goes straight to its server on the transport's own
// connection.
func TestInlineProxy(t *testing.T) {
	noLeaks(t)
	var mu sync.Mutex
	var proxied []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proxied = append(proxied, r.RequestURI)
		mu.Unlock()
		_, _ = io.WriteString(w, "via proxy")
	}))
	t.Cleanup(proxy.Close)
	direct := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "direct") }))
	t.Cleanup(direct.Close)
	proxyURL, err := url.Parse(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	tr, dials := newInline(t, func(b *http.Transport) {
		b.Proxy = func(r *http.Request) (*url.URL, error) {
			if r.URL.Hostname() == "coordinator.example" {
				return proxyURL, nil
			}
			return nil, nil
		}
	})
	if got := get(t, tr, "http://coordinator.example/v1/info"); got != "via proxy" {
		t.Errorf("proxied request answered %q", got)
	}
	if got := get(t, tr, direct.URL+"/v1/info"); got != "direct" {
		t.Errorf("direct request answered %q", got)
	}
	mu.Lock()
	got := strings.Join(proxied, " ")
	mu.Unlock()
	if want := "http://coordinator.example/v1/info"; got != want {
		t.Errorf("the proxy saw %q, want %q", got, want)
	}
	if p, d := dials.to(proxy.Listener.Addr().String()), dials.to(direct.Listener.Addr().String()); p != 1 || d != 1 || dials.count() != 2 {
		t.Errorf("dialled the proxy %d times, the server %d, %d in all; want 1, 1, 2", p, d, dials.count())
	}
	if n := idleCount(tr, "http://"+direct.Listener.Addr().String()); n != 1 {
		t.Errorf("%d direct connections pooled, want 1", n)
	}
	if n := idleCount(tr, "http://coordinator.example:80"); n != 0 {
		t.Errorf("%d connections pooled for the proxied host, want none", n)
	}
}

// Under concurrent use every answer is the one to its own request, and
// connections are reused: no more are dialled than requests ever run at
// once.
func TestInlineConcurrentRequests(t *testing.T) {
	noLeaks(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" "+string(body))
	}))
	t.Cleanup(srv.Close)
	tr, dials := newInline(t, func(b *http.Transport) { b.MaxIdleConnsPerHost = 64 })
	const workers, each = 32, 20
	errs := make(chan error, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				path := fmt.Sprintf("/w%d/r%d", w, i)
				method, body := http.MethodGet, ""
				var r io.Reader
				if i%2 == 1 {
					method, body = http.MethodPost, "SELECT "+path
					r = strings.NewReader(body)
				}
				req, err := http.NewRequest(method, srv.URL+path, r)
				if err != nil {
					errs <- err
					return
				}
				status, answer, err := exchange(tr, req)
				if want := method + " " + path + " " + body; err != nil || status != 200 || answer != want {
					errs <- fmt.Errorf("%s %s: %d %q %v, want 200 %q", method, path, status, answer, err, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := dials.count(); n > workers {
		t.Errorf("%d connections dialled for %d workers, want at most %d", n, workers, workers)
	}
}

// CloseIdleConnections may be called while requests run: every answer is
// still the right one.
func TestInlineCloseIdleConnectionsDuringUse(t *testing.T) {
	noLeaks(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	tr, _ := newInline(t, nil)
	const workers, each = 8, 25
	errs := make(chan error, workers*each)
	stop := make(chan struct{})
	var closer sync.WaitGroup
	closer.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			tr.CloseIdleConnections()
			time.Sleep(time.Millisecond) // pacing, not synchronisation
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				path := fmt.Sprintf("/w%d/r%d", w, i)
				req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
				if err != nil {
					errs <- err
					return
				}
				if _, answer, err := exchange(tr, req); err != nil || answer != path {
					errs <- fmt.Errorf("GET %s: %q %v", path, answer, err)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	closer.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// closeRecorder is a request body that counts its closes.
type closeRecorder struct {
	io.Reader
	closes atomic.Int32
}

func (b *closeRecorder) Close() error {
	b.closes.Add(1)
	return nil
}

// A request that cannot be sent (a URL that is not http or https or has no
// host, no URL, a proxy that cannot be chosen, a server that cannot be
// dialled) fails, without a dial when there is nothing to dial, and its
// body is closed, as a RoundTripper must close it even on errors.
func TestInlineRefusesWhatItCannotSend(t *testing.T) {
	noLeaks(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/v1/statement"
	l.Close()
	errNoProxy := errors.New("no proxy for this request")
	cases := []struct {
		name      string
		url       string // none if empty
		proxyErr  bool
		wantDials int
		want      error // if not nil, what the error must match
	}{
		{name: "an ftp URL", url: "ftp://127.0.0.1/v1/statement"},
		{name: "a URL without a host", url: "http:///v1/statement"},
		{name: "an https URL without a host", url: "https:///v1/statement"},
		{name: "a URL without a scheme", url: "//127.0.0.1/v1/statement"},
		{name: "no URL"},
		{name: "a proxy that cannot be chosen", url: "http://127.0.0.1:1/v1/statement", proxyErr: true, want: errNoProxy},
		{name: "a server that cannot be dialled", url: refused, wantDials: 1, want: syscall.ECONNREFUSED},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, dials := newInline(t, func(b *http.Transport) {
				if tc.proxyErr {
					b.Proxy = func(*http.Request) (*url.URL, error) { return nil, errNoProxy }
				}
			})
			body := &closeRecorder{Reader: strings.NewReader("SELECT 1")}
			req := &http.Request{Method: http.MethodPost, Header: http.Header{}, Body: body, ContentLength: 8}
			if tc.url != "" {
				u, err := url.Parse(tc.url)
				if err != nil {
					t.Fatal(err)
				}
				req.URL, req.Host = u, u.Host
			}
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				t.Fatal("sent")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			if n := body.closes.Load(); n == 0 {
				t.Errorf("the body was not closed (error %v)", err)
			}
			if n := dials.tried(); n != tc.wantDials {
				t.Errorf("%d dials tried, want %d", n, tc.wantDials)
			}
		})
	}
}

// A body read to its end keeps answering io.EOF, as the bodies of Go's
// transport do: a reader over it (a bufio.Reader, a decoder) that asks once
// more must see the end again, not an error; and its connection is back in
// the pool, untouched by those reads.
func TestInlineBodyKeepsAnsweringEOF(t *testing.T) {
	noLeaks(t)
	srv := okServer(t)
	tr, dials := newInline(t, nil)
	resp, err := tr.RoundTrip(newRequest(t, context.Background(), http.MethodGet, srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "ok" {
		t.Fatalf("body %q, %v", b, err)
	}
	for i := range 2 {
		if n, err := resp.Body.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Errorf("read %d after the end: %d, %v; want 0, EOF", i+1, n, err)
		}
	}
	resp.Body.Close()
	if got := get(t, tr, srv.URL); got != "ok" {
		t.Errorf("next answer %q", got)
	}
	if n := dials.count(); n != 1 {
		t.Errorf("%d connections dialled, want 1", n)
	}
}

// With the base transport's DisableKeepAlives, every request has a
// connection of its own, as with Go's transport.
func TestInlineDisableKeepAlives(t *testing.T) {
	noLeaks(t)
	srv := okServer(t)
	tr, dials := newInline(t, func(b *http.Transport) { b.DisableKeepAlives = true })
	for range 3 {
		get(t, tr, srv.URL)
	}
	if n := dials.count(); n != 3 {
		t.Errorf("%d connections dialled for 3 requests, want 3", n)
	}
}

// okServer answers every request with "ok".
func okServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(srv.Close)
	return srv
}

// startReportingCloses starts srv, which sends on closed (without
// blocking) each time one of its connections closes.
func startReportingCloses(t *testing.T, srv *httptest.Server, closed chan<- struct{}) {
	t.Helper()
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			select {
			case closed <- struct{}{}:
			default:
			}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
}

// startSlowBody gets uri, whose answer sends "part" and then waits, and
// returns the answer with "part" read.
func startSlowBody(t *testing.T, ctx context.Context, tr *InlineTransport, uri string) *http.Response {
	t.Helper()
	resp, err := tr.RoundTrip(newRequest(t, ctx, http.MethodGet, uri, ""))
	if err != nil {
		t.Fatal(err)
	}
	part := make([]byte, 4)
	if _, err := io.ReadFull(resp.Body, part); err != nil || string(part) != "part" {
		resp.Body.Close()
		t.Fatalf("start of the body: %q, %v", part, err)
	}
	return resp
}

// writeCounter counts the writes made on a connection.
type writeCounter struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCounter) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A request whose body has a known length goes out with its head in one
// write, also when the body is no reader Go knows to be in memory (as a
// gated submission's is not): a head alone costs a packet and a wake-up of
// the server, which then waits for the body. A body of unknown length is
// sent as Go sends it, chunked, after its head.
func TestInlineWritesHeadAndBodyAtOnce(t *testing.T) {
	noLeaks(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d:%s", r.ContentLength, b)
	}))
	defer srv.Close()
	var writes atomic.Int64
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return writeCounter{c, &writes}, nil
	}}
	tr := NewInlineTransport(base)
	defer tr.CloseIdleConnections()
	for _, tc := range []struct {
		length      int64
		wantWrites  int64
		wantAnswer  string
		description string
	}{
		{22, 1, "22:SELECT * FROM rows(10)", "a body of known length"},
		{-1, 3, "-1:SELECT * FROM rows(10)", "a body of unknown length (head, chunk, end)"},
	} {
		writes.Store(0)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/statement", &trackedBody{Reader: strings.NewReader("SELECT * FROM rows(10)")})
		req.ContentLength = tc.length
		status, answer, err := exchange(tr, req)
		if err != nil || status != http.StatusOK || answer != tc.wantAnswer {
			t.Fatalf("%s: %d %q, %v; want 200 %q", tc.description, status, answer, err, tc.wantAnswer)
		}
		if n := writes.Load(); n != tc.wantWrites {
			t.Errorf("%s: %d writes, want %d", tc.description, n, tc.wantWrites)
		}
	}
}
