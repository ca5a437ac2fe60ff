package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultHeadBytesInFlight bounds the bytes of request heads the server
// holds at once, over all its connections: 16 heads of MaxHeaderBytes.
// MaxHeaderBytes bounds one connection's; without a bound on their sum, a
// few hundred clients each sending a head just under the limit, slowly,
// would hold gigabytes (net/http keeps a head two or three times over
// while it parses it).
const DefaultHeadBytesInFlight = 16 * MaxHeaderBytes

// DefaultMaxHeaderFields bounds the header fields of one request head; a
// head with more gets 431 and its connection closed. net/http keeps each
// field as a map entry and strings, several times the field's bytes for a
// short one: a head of short fields within MaxHeaderBytes would hold ten
// times its size. Clients send a few dozen; Jetty refuses a head past 8 kB
// and nginx past four buffers of 8 kB, a few hundred fields at most.
const DefaultMaxHeaderFields = 1000

// headFieldCost is what the budget of heads charges for each line of a
// head besides its bytes: about what net/http spends on a parsed field
// (its map entry, the key's and value's strings and slice).
const headFieldCost = 128

// headTooManyFields is the answer to a head with too many fields, written
// on the connection before net/http could parse them (it has no way to be
// told to answer 431 itself).
const headTooManyFields = "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large: too many header fields"

// errHeadBudget fails a read of a request head past the server's budget:
// net/http then answers 400 and closes the connection.
var errHeadBudget = errors.New("zkpresto gateway: too many request heads being read at once")

// headBudget is what is left of the bytes of request heads a server may
// hold at once.
type headBudget struct{ left atomic.Int64 }

// take takes n bytes of the budget, or reports that fewer are left.
func (b *headBudget) take(n int64) bool {
	if b.left.Add(-n) >= 0 {
		return true
	}
	b.left.Add(n)
	return false
}

// budgetListener's connections charge what they read to the budget until
// a handler runs for their request (the head has been read), and between
// requests (the next head).
type budgetListener struct {
	net.Listener
	b         *headBudget
	maxFields int  // of a head
	tls       bool // the connections carry TLS: what they read is not the head's text
}

func (l budgetListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	bc := &budgetConn{Conn: c, b: l.b, maxLines: l.maxFields + 2}
	if l.tls {
		bc.maxLines = 0 // the handler counts the fields (deadlines)
	}
	return bc, nil
}

type budgetConn struct {
	net.Conn
	b         *headBudget
	maxLines  int // of a head: its fields, the request line and the empty line; 0: not counted (TLS)
	mu        sync.Mutex
	charged   int64 // of the head being read
	lines     int   // of the head being read
	inHandler bool
	// Where the head being read is: after a line's end (a '\n', and any
	// '\r' since), after a line with text in it, past its empty line
	// (what follows, a body read ahead of its handler, has no fields).
	atLineStart, sawText, headRead bool
}

func (c *budgetConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if !c.inHandler && !c.b.take(int64(len(p))) {
		c.mu.Unlock()
		return 0, errHeadBudget
	}
	charging := !c.inHandler
	c.mu.Unlock()
	n, err := c.Conn.Read(p)
	if !charging {
		return n, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inHandler {
		c.b.left.Add(int64(len(p))) // the handler started meanwhile
		return n, err
	}
	c.charged += int64(n)
	c.b.left.Add(int64(len(p) - n))
	if c.maxLines == 0 {
		return n, err
	}
	// Each line is charged what net/http will spend parsing it, before
	// it does: counted here, a head's fields never cost more than the
	// budget, however short they are (over plaintext: TLS hides them).
	lines := c.headLines(p[:n])
	c.lines += lines
	if c.lines > c.maxLines {
		return 0, c.tooManyFields()
	}
	cost := int64(lines) * headFieldCost
	if !c.b.take(cost) {
		return 0, errHeadBudget
	}
	c.charged += cost
	return n, err
}

// headLines returns the count of the lines of the head being read that
// end in b, what c read next: none past the head's empty line (the lines
// of a statement read ahead of its handler are not fields). Empty lines
// before the request line are lines, as net/http skips a few. c.mu is held.
func (c *budgetConn) headLines(b []byte) int {
	if c.headRead {
		return 0
	}
	lines := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\n':
			if c.atLineStart && c.sawText {
				c.headRead = true
				return lines + 1 // the empty line, the head's last
			}
			lines++
			c.atLineStart = true
		case '\r':
		default:
			c.atLineStart, c.sawText = false, true
			// Text runs to the line's end: skip to it.
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				return lines
			}
			i += j - 1
		}
	}
	return lines
}

// tooManyFields answers a head with too many fields with 431 and returns
// the error that ends the connection: io.EOF has net/http close it without
// an answer of its own. The 431 is followed by the end of the stream, so
// that a client still sending its head reads it. c.mu is held.
func (c *budgetConn) tooManyFields() error {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(c.Conn, headTooManyFields)
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	return io.EOF
}

// handling marks the start (true) or the end of a handler on c: the head
// it read is given back to the budget.
func (c *budgetConn) handling(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inHandler = on
	c.b.left.Add(c.charged)
	c.charged, c.lines = 0, 0
	c.atLineStart, c.sawText, c.headRead = false, false, false
}

func (c *budgetConn) Close() error {
	c.handling(true) // nothing more is charged
	return c.Conn.Close()
}

// budgetConnKey is the context key of a request's budgetConn.
type budgetConnKey struct{}

// budgetConnContext puts c's budgetConn (under TLS, if any) in ctx.
func budgetConnContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if bc, ok := c.(*budgetConn); ok {
		return context.WithValue(ctx, budgetConnKey{}, bc)
	}
	return ctx
}

// inHandler gives r's head back to the budget while the handler runs; it
// returns the function that ends that.
func inHandler(r *http.Request) func() {
	bc, _ := r.Context().Value(budgetConnKey{}).(*budgetConn)
	if bc == nil {
		return func() {}
	}
	bc.handling(true)
	return func() { bc.handling(false) }
}
