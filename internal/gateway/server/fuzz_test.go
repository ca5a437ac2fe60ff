package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzServe sends arbitrary bytes as a client's requests, then ends its
// side of the connection: the server must end the connection too (never
// hang, never crash), and what it sent must read as a sequence of
// well-formed HTTP/1.1 answers, one for each request its handler saw, in
// order, each with the body the handler wrote.
func FuzzServe(f *testing.F) {
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /flush HTTP/1.0\r\n\r\n",
		"POST /ignore HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n",
		"GET /204 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", 2000) + "\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	var seen atomic.Int64
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		w.Header().Set("X-Path", r.URL.Path)
		switch r.URL.Path {
		case "/echo":
			b, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
			if err != nil {
				return
			}
			w.Write(b)
		case "/flush":
			io.WriteString(w, "a")
			w.(http.Flusher).Flush()
			io.WriteString(w, "b")
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/ignore":
			io.WriteString(w, "ignored")
		default:
			io.WriteString(w, "ok")
		}
	}), MaxHeaderBytes: 1 << 10}
	s.Logger = quietLogger()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	f.Cleanup(func() {
		s.Close()
		<-done
	})
	f.Fuzz(func(t *testing.T, input []byte) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		before := seen.Load()
		if _, err := c.Write(input); err != nil {
			return // the server closed early (a refusal), and may reset
		}
		c.(*net.TCPConn).CloseWrite()
		methods := requestMethods(input)
		br := bufio.NewReader(c)
		answers := int64(0)
		for {
			if _, err := br.Peek(1); err != nil {
				if isTimeout(err) {
					t.Fatalf("the server neither answered nor closed within 5s of the client's end: %q", input)
				}
				break // closed (or reset after a refusal)
			}
			req := &http.Request{Method: http.MethodGet}
			if int(answers) < len(methods) {
				req.Method = methods[answers] // a HEAD's answer has no body
			}
			resp, err := http.ReadResponse(br, req)
			if err != nil {
				if isTimeout(err) {
					t.Fatalf("an answer stalled: %q", input)
				}
				var ne net.Error
				if errors.As(err, &ne) {
					break
				}
				t.Fatalf("answer %d does not parse: %v; input %q", answers+1, err, input)
			}
			if resp.StatusCode == http.StatusContinue {
				continue
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				var ne net.Error
				if isTimeout(err) || !errors.As(err, &ne) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("answer %d's body: %v; input %q", answers+1, err, input)
				}
			}
			resp.Body.Close()
			answers++
		}
		// Other inputs of the fuzzer run at the same time only in other
		// processes: this server's handler saw this input's requests.
		if handled := seen.Load() - before; answers < handled-1 || answers > handled+1 {
			t.Fatalf("%d answers for %d requests the handler saw; input %q", answers, handled, input)
		}
	})
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// requestMethods are the methods of the requests input holds, in order, as
// far as they parse.
func requestMethods(input []byte) []string {
	var methods []string
	br := bufio.NewReader(bytes.NewReader(input))
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return methods
		}
		methods = append(methods, req.Method)
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return methods
		}
	}
}
