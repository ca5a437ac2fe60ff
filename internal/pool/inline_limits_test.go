package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An answer's head is read up to the base transport's
// MaxResponseHeaderBytes (10 MB unless set, as Go's transport), 1xx
// answers included, and no further: a head that does not end fails the
// exchange with ErrHeadTooLarge; one within the limit is answered.
func TestInlineBoundsTheAnswersHead(t *testing.T) {
	noLeaks(t)
	const limit = 64 << 10
	srv := newRawServer(t, func(c *rawConn) {
		req, _, err := c.next()
		if err != nil {
			return
		}
		size := limit / 2
		if req.URL.Path == "/endless" {
			size = 1 << 30
		}
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n")
		line := "X-Pad: " + strings.Repeat("a", 1000) + "\r\n"
		for n := 0; n < size; n += len(line) {
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
		io.WriteString(c, "\r\nok")
	})
	tr, _ := newInline(t, func(b *http.Transport) { b.MaxResponseHeaderBytes = limit })
	if status, body, err := exchange(tr, newRequest(t, t.Context(), http.MethodGet, srv.url()+"/within", "")); err != nil || status != 200 || body != "ok" {
		t.Errorf("a head within the limit: %d %q %v", status, body, err)
	}
	if _, _, err := exchange(tr, newRequest(t, t.Context(), http.MethodGet, srv.url()+"/endless", "")); !errors.Is(err, ErrHeadTooLarge) {
		t.Errorf("a head that does not end: %v, want ErrHeadTooLarge", err)
	}
	if tr.maxHeadBytes() != limit {
		t.Errorf("limit %d, want the base's %d", tr.maxHeadBytes(), limit)
	}
	if d := NewInlineTransport(&http.Transport{}); d.maxHeadBytes() != 10<<20 {
		t.Errorf("default limit %d, want Go's transport's 10 MB", d.maxHeadBytes())
	}
}

// At most five informational (1xx) answers may precede the answer, as
// with Go's transport; a sixth fails the exchange.
func TestInlineBoundsInformationalAnswers(t *testing.T) {
	noLeaks(t)
	srv := newRawServer(t, func(c *rawConn) {
		for {
			req, _, err := c.next()
			if err != nil {
				return
			}
			var n int
			fmt.Sscanf(req.URL.Path, "/%d", &n)
			io.WriteString(c, strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", n)+"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr, _ := newInline(t, nil)
	if status, body, err := exchange(tr, newRequest(t, t.Context(), http.MethodGet, srv.url()+"/5", "")); err != nil || status != 200 || body != "ok" {
		t.Errorf("five 1xx answers, then 200: %d %q %v", status, body, err)
	}
	if _, _, err := exchange(tr, newRequest(t, t.Context(), http.MethodGet, srv.url()+"/6", "")); err == nil || !strings.Contains(err.Error(), "informational") {
		t.Errorf("six 1xx answers: %v, want an error", err)
	}
}

// No more connections to a coordinator than the base transport's
// MaxConnsPerHost (DefaultMaxConnsPerCoordinator unless set) are open at
// once: a request past it waits for one to go idle, and takes that one.
func TestInlineLimitsConnectionsPerCoordinator(t *testing.T) {
	noLeaks(t)
	const limit, requests = 2, 6
	release := make(chan struct{})
	srv := newRawServer(t, func(c *rawConn) {
		for {
			if _, _, err := c.next(); err != nil {
				return
			}
			select {
			case <-release:
			case <-c.done:
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr, dials := newInline(t, func(b *http.Transport) { b.MaxConnsPerHost = limit })
	errs := make(chan error, requests)
	for range requests {
		go func() {
			_, body, err := exchange(tr, newRequest(t, t.Context(), http.MethodGet, srv.url()+"/", ""))
			if err == nil && body != "ok" {
				err = fmt.Errorf("body %q", body)
			}
			errs <- err
		}()
	}
	for range requests {
		release <- struct{}{} // one answer at a time, each to a request that got a connection
	}
	for range requests {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := srv.accepted.Load(); n > limit {
		t.Errorf("%d connections opened to one coordinator, limit %d (%d dials)", n, limit, dials.count())
	}
	if d := NewInlineTransport(&http.Transport{}); d.maxConns() != DefaultMaxConnsPerCoordinator {
		t.Errorf("default limit %d, want %d", d.maxConns(), DefaultMaxConnsPerCoordinator)
	}
}

// A request waiting at the connection limit is woken by a connection that
// goes idle at any moment, even between its look for an idle connection
// and its look for a free slot: in bursts of requests taking turns on one
// connection, every request finishes, none waiting beside an idle
// connection until its deadline. (A missed wake shows at a burst's end,
// when no later request comes to wake the waiter.)
func TestInlineLimitWakesEveryWaiter(t *testing.T) {
	noLeaks(t)
	const bursts, workers = 400, 8
	srv := newRawServer(t, func(c *rawConn) {
		for {
			if _, _, err := c.next(); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr, _ := newInline(t, func(b *http.Transport) { b.MaxConnsPerHost = 1 })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for b := range bursts {
		errs := make(chan error, workers)
		for range workers {
			go func() {
				_, body, err := exchange(tr, newRequest(t, ctx, http.MethodGet, srv.url()+"/", ""))
				if err == nil && body != "ok" {
					err = fmt.Errorf("body %q", body)
				}
				errs <- err
			}()
		}
		for range workers {
			if err := <-errs; err != nil {
				t.Fatalf("burst %d: %v", b, err)
			}
		}
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections opened, want the one the limit allows", n)
	}
}
