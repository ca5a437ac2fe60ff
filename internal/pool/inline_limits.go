package pool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// The limits InlineTransport keeps on what a coordinator sends, Go's
// transport's (net/http/transport.go).
const (
	// defaultMaxResponseHeaderBytes bounds an answer's head when the base
	// transport's MaxResponseHeaderBytes is not set, as http.Transport's
	// default does.
	defaultMaxResponseHeaderBytes = 10 << 20
	// max1xxResponses is how many informational answers may come before
	// the answer itself.
	max1xxResponses = 5
	// earlyAnswerWait bounds the wait for an answer a server sent before
	// it read the whole request: one it sent is there already.
	earlyAnswerWait = 100 * time.Millisecond
	// earlyAnswerBodyBytes bounds the body of such an answer (an error
	// page), which is read before the connection closes.
	earlyAnswerBodyBytes = 64 << 10
)

// ErrHeadTooLarge is the failure of an exchange whose answer's head
// exceeds the transport's response header limit.
var ErrHeadTooLarge = errors.New("the answer's head exceeds the response header limit")

// headLimit passes a connection's reads on, at most n bytes while n >= 0
// (an answer's head is being read), without limit while n < 0.
type headLimit struct {
	r   io.Reader
	n   int64
	hit bool // a read was refused at the limit
}

func (l *headLimit) Read(p []byte) (int, error) {
	if l.n < 0 {
		return l.r.Read(p)
	}
	if l.n == 0 {
		l.hit = true
		return 0, ErrHeadTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// maxHeadBytes is the response header limit of t.
func (t *InlineTransport) maxHeadBytes() int64 {
	if n := t.base.MaxResponseHeaderBytes; n > 0 {
		return n
	}
	return defaultMaxResponseHeaderBytes
}

// readHead reads the head of req's answer on c: after at most
// max1xxResponses informational ones, each head within the transport's
// limit (what a bufio.Reader holds ahead is counted with it).
func (c *inlineConn) readHead(t *InlineTransport, req *http.Request) (*http.Response, error) {
	limit := t.maxHeadBytes()
	defer func() { c.lim.n = -1 }()
	for informational := 0; ; informational++ {
		c.lim.n, c.lim.hit = limit, false
		if _, err := c.br.Peek(1); err != nil {
			return nil, err
		}
		c.heard = true
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			if c.lim.hit {
				return nil, fmt.Errorf("%w (%d bytes)", ErrHeadTooLarge, limit)
			}
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		if informational == max1xxResponses {
			return nil, fmt.Errorf("more than %d informational (1xx) answers", max1xxResponses)
		}
	}
}

// earlyAnswer is the refusal a server sent before it read all of req,
// whose writing then failed (a 431 for a head over its limit, a 413, a
// 400), with its body read, or nil when it sent none. Go's transport reads
// answers while it writes and relays such a refusal; without it the
// caller would take the failed write for the server's failure.
func (c *inlineConn) earlyAnswer(t *InlineTransport, req *http.Request) *http.Response {
	if c.written == 0 {
		return nil
	}
	if err := c.conn.SetReadDeadline(time.Now().Add(earlyAnswerWait)); err != nil {
		return nil
	}
	resp, err := c.readHead(t, req)
	if err != nil {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, earlyAnswerBodyBytes))
	resp.Body.Close()
	if resp.StatusCode < 400 {
		return nil // not a refusal: the write's failure stands
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	resp.Close = true
	return resp
}

// DefaultMaxConnsPerCoordinator bounds the connections an InlineTransport
// opens to one coordinator (scheme, host and port), idle ones included,
// when the base transport's MaxConnsPerHost is not set: a coordinator that
// hangs holds one connection per request sent to it, and past the limit
// a request waits, until its context ends, for one of them to close or go
// idle, instead of opening sockets without end.
const DefaultMaxConnsPerCoordinator = 512

// maxConns is the connection limit per coordinator of t.
func (t *InlineTransport) maxConns() int {
	if n := t.base.MaxConnsPerHost; n > 0 {
		return n
	}
	return DefaultMaxConnsPerCoordinator
}

// connSlots counts the connections open per key, under its owner's mutex.
type connSlots struct {
	open  map[string]int
	freed map[string]chan struct{} // closed when a slot frees or a connection goes idle
}

// reserveLocked takes a slot for a new connection to key and returns nil,
// if fewer than limit are open; if not, it returns a channel closed when
// one may be free. The owner's mutex is held.
func (s *connSlots) reserveLocked(key string, limit int) <-chan struct{} {
	if s.open == nil {
		s.open, s.freed = map[string]int{}, map[string]chan struct{}{}
	}
	if s.open[key] < limit {
		s.open[key]++
		return nil
	}
	ch := s.freed[key]
	if ch == nil {
		ch = make(chan struct{})
		s.freed[key] = ch
	}
	return ch
}

// release gives back a slot of key.
func (s *connSlots) release(mu *sync.Mutex, key string) {
	mu.Lock()
	defer mu.Unlock()
	if s.open[key]--; s.open[key] <= 0 {
		delete(s.open, key)
	}
	s.wake(key)
}

// wake tells the requests waiting for key that a slot or an idle
// connection may be there; mu is held.
func (s *connSlots) wake(key string) {
	if ch := s.freed[key]; ch != nil {
		close(ch)
		delete(s.freed, key)
	}
}
