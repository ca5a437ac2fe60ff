package server

import (
	"net/http"
	"sync"
	"time"

	"github.com/zkpresto/zkpresto/internal/protocol"
)

// ClientGone reports whether r's client has closed or broken its
// connection, and if it has, ends r's context, so that every later look at
// r.Context() agrees; once r's handler has returned it reports true, as
// r's context has ended. On a plain connection it peeks at the socket without
// blocking and without reading; on TLS it knows only what WatchClient saw
// (bytes on a TLS connection may be its close_notify alert, which only a
// read tells apart). A client that has sent more (the next request) has
// not gone.
//
// For a request another server serves, it reports whether r's context has
// ended: net/http's server ends it when the client leaves.
func ClientGone(r *http.Request) bool {
	if w, ok := r.Context().Value(responseKey{}).(*response); ok {
		return w.clientGone()
	}
	return r.Context().Err() != nil
}

// WatchClient makes r's context end as soon as a TLS client closes its
// connection, from now (or, if the handler is still to read the request's
// body, from the end of the body) until the handler returns. It costs a
// goroutine and two read deadlines, which is why a request has it only
// where its handler asks: where a departed client changes what the
// handler must do, as for a statement's submission, whose query must then
// be cancelled. On a plain connection ClientGone needs no watch, and
// WatchClient does nothing; nor for a request another server serves,
// since net/http's server watches every request.
func WatchClient(r *http.Request) {
	if w, ok := r.Context().Value(responseKey{}).(*response); ok && w.c.peek == nil {
		w.c.watch.want(w)
	}
}

// responseKey is the context key of a request's response, which holds
// what is known of its client.
type responseKey struct{}

// clientGone is ClientGone for w's request.
func (w *response) clientGone() bool {
	c := w.c
	if w.gone.Load() || w.ended.Load() {
		return true // once the handler has returned, its request is over too
	}
	if c.peek == nil || c.buffered.Load() {
		return false
	}
	if c.peek.Peek() == protocol.PeekClosed {
		w.markGone()
		return true
	}
	return false
}

// markGone records that w's client has gone and ends the request's
// context.
func (w *response) markGone() {
	w.gone.Store(true)
	w.cancel()
}

// clientWatch is a TLS connection's watch over its client, for the
// request it serves: a read in the background, since on TLS only a read
// tells a close_notify from a next request.
type clientWatch struct {
	mu      sync.Mutex
	c       *conn
	w       *response // the request being watched
	active  bool      // a request is being served
	wanted  bool      // its handler called WatchClient
	bodyEOF bool      // its body has been read to the end
	reading bool      // the background read runs
	done    chan struct{}
}

func (w *clientWatch) begin(c *conn, bodyEOF bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.c = c
	w.active, w.wanted, w.bodyEOF = true, false, bodyEOF
}

func (w *clientWatch) want(resp *response) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.active || w.wanted {
		return
	}
	w.wanted, w.w = true, resp
	if w.bodyEOF {
		w.startLocked()
	}
}

// bodyDone is told when the request's body reached its end.
func (w *clientWatch) bodyDone() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bodyEOF = true
	if w.active && w.wanted {
		w.startLocked()
	}
}

func (w *clientWatch) startLocked() {
	c := w.c
	if w.reading || c.buffered.Load() {
		return // the client has sent more (a next request): it has not gone
	}
	w.reading = true
	w.done = make(chan struct{})
	go w.read(w.w, w.done)
}

// read waits for the connection's next byte: one that comes is the start
// of the next request, kept for it; an error other than the deadline end()
// sets means the client has gone.
func (w *clientWatch) read(resp *response, done chan struct{}) {
	defer close(done)
	c := w.c
	n, err := c.nc.Read(c.limit.extra[:])
	if n == 1 {
		c.limit.hasExtra = true
		return
	}
	if err != nil && !isTimeout(err) {
		resp.markGone()
	}
}

// end stops the watch once the handler has returned.
func (w *clientWatch) end() {
	w.mu.Lock()
	w.active, w.w = false, nil
	reading, done := w.reading, w.done
	w.reading = false
	if reading {
		w.c.nc.SetReadDeadline(aLongTimeAgo)
	}
	w.mu.Unlock()
	if reading {
		<-done
		w.c.nc.SetReadDeadline(time.Time{})
	}
}

// aLongTimeAgo is a deadline that has passed: it ends a read at once.
var aLongTimeAgo = time.Unix(1, 0)
