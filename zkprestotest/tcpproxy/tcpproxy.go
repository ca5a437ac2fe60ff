// Package tcpproxy is a small loopback TCP proxy for fault tests: it sits
// between a client and a server and can pass traffic, drop every connection,
// or stall them (accept and hold bytes without forwarding), then heal.
//
// Memory is bounded: each direction of each connection holds at most one
// buffer of bytes while stalled, and stops reading until it may forward it.
// Close stops every goroutine the proxy started.
package tcpproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Mode is what the proxy does with traffic.
type Mode int

const (
	// Pass forwards traffic both ways.
	Pass Mode = iota
	// Drop closes every open connection and closes new ones at once, as if
	// the server refused them.
	Drop
	// Stall keeps connections open but forwards nothing: bytes already read
	// are held, new connections are accepted but not connected to the
	// target until the proxy heals. To the client it looks like a network
	// partition that silently loses packets.
	Stall
)

// String returns "pass", "drop" or "stall".
func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Drop:
		return "drop"
	case Stall:
		return "stall"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

const (
	bufferSize  = 32 << 10
	dialTimeout = 5 * time.Second
)

// Proxy forwards connections accepted on a loopback port to one target. It
// is safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu       sync.Mutex
	mode     Mode
	changed  chan struct{} // closed and replaced on every mode change and on Close
	conns    map[net.Conn]struct{}
	closed   bool
	accepted int
}

// Start listens on 127.0.0.1 at a free port and forwards to target
// ("host:port"), in Pass mode. The caller must Close the proxy.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tcpproxy: listen: %w", err)
	}
	p := &Proxy{target: target, ln: ln, changed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the proxy's "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Accepted returns how many client connections the proxy has accepted.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Drop closes every open connection and closes new ones as soon as they
// are accepted, until Heal or Stall.
func (p *Proxy) Drop() { p.setMode(Drop) }

// Stall stops forwarding on every connection, open and new, until Heal or
// Drop. Nothing is closed.
func (p *Proxy) Stall() { p.setMode(Stall) }

// Heal returns to Pass: held bytes flow on, stalled new connections are
// connected to the target.
func (p *Proxy) Heal() { p.setMode(Pass) }

func (p *Proxy) setMode(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == m {
		return
	}
	p.mode = m
	close(p.changed)
	p.changed = make(chan struct{})
	if m == Drop {
		p.closeConnsLocked()
	}
}

func (p *Proxy) closeConnsLocked() {
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Close stops the proxy, closes every connection and waits for the
// proxy's goroutines to end. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.changed)
		p.closeConnsLocked()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// track registers c so that Drop and Close can close it; false means the
// proxy is closed or dropping and c has been closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == Drop {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// waitPass blocks until the proxy is in Pass mode (true) or the connection
// must end: the proxy drops or closes (false).
func (p *Proxy) waitPass() bool {
	for {
		p.mu.Lock()
		mode, closed, changed := p.mode, p.closed, p.changed
		p.mu.Unlock()
		switch {
		case closed || mode == Drop:
			return false
		case mode == Pass:
			return true
		}
		<-changed
	}
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		p.accepted++
		p.mu.Unlock()
		if !p.track(client) {
			continue
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// serve connects client to the target once the proxy passes traffic, then
// copies both ways until either side closes.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	if !p.waitPass() {
		return
	}
	server, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)

	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() {
		defer pumps.Done()
		p.pump(server, client)
	}()
	go func() {
		defer pumps.Done()
		p.pump(client, server)
	}()
	pumps.Wait()
}

// pump copies src to dst, holding each chunk while the proxy stalls. When
// either side fails, both are closed so that the other pump ends too.
func (p *Proxy) pump(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, bufferSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitPass() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
