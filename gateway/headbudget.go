package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// DefaultHeadBytesInFlight bounds the bytes of request heads the server
// holds at once, over all its connections: 16 heads of MaxHeaderBytes.
// MaxHeaderBytes bounds one connection's; without a bound on their sum, a
// few hundred clients each sending a head just under the limit, slowly,
// would hold gigabytes (net/http keeps a head two or three times over
// while it parses it).
const DefaultHeadBytesInFlight = 16 * MaxHeaderBytes

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
	b *headBudget
}

func (l budgetListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &budgetConn{Conn: c, b: l.b}, nil
}

type budgetConn struct {
	net.Conn
	b         *headBudget
	mu        sync.Mutex
	charged   int64 // of the head being read
	inHandler bool
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
	if charging {
		c.mu.Lock()
		if c.inHandler {
			c.b.left.Add(int64(len(p))) // the handler started meanwhile
		} else {
			c.charged += int64(n)
			c.b.left.Add(int64(len(p) - n))
		}
		c.mu.Unlock()
	}
	return n, err
}

// handling marks the start (true) or the end of a handler on c: the head
// it read is given back to the budget.
func (c *budgetConn) handling(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inHandler = on
	c.b.left.Add(c.charged)
	c.charged = 0
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
