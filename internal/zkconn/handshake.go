package zkconn

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
)

// maxHandshakeAnswer bounds the length ZooKeeper's answer to a connect
// request may announce: the answer is a fixed 37 bytes (protocol version,
// timeout, session id, a 16-byte password, the read-only flag), and
// go-zookeeper allocates whatever length the first four bytes announce,
// 1.2 GB for a web server's "HTTP".
const maxHandshakeAnswer = 1 << 10

// NotZooKeeperError is the error of a connection to a server that answered
// the connect request with something other than ZooKeeper's answer: a
// coordinator or another web server, a TLS server reached without TLS.
type NotZooKeeperError struct {
	// Addr is the server's address, as dialled.
	Addr string
	// Head is the start of what it sent.
	Head [4]byte
}

func (e *NotZooKeeperError) Error() string {
	what := "something other than ZooKeeper's answer"
	switch {
	case string(e.Head[:]) == "HTTP":
		what = "HTTP: a web server or a coordinator, not ZooKeeper's client port (2181 by default)"
	case e.Head[0] == 0x15 && e.Head[1] == 0x03:
		what = "a TLS alert: the server wants TLS (zooKeeperSSLEnabled=true, or register's --zookeeper-tls)"
	case printable(e.Head[:]):
		what = fmt.Sprintf("%q, which is not ZooKeeper's answer: is this ZooKeeper's client port (2181 by default)?", string(e.Head[:]))
	}
	return fmt.Sprintf("%s answered the ZooKeeper handshake with %s", e.Addr, what)
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// handshakeConn checks the first four bytes a server sends, the length of
// its answer to the connect request, before go-zookeeper sizes a buffer by
// them: an answer that cannot be ZooKeeper's fails the connection with a
// NotZooKeeperError, reported through onForeign.
type handshakeConn struct {
	net.Conn
	addr      string
	onForeign func(error)

	mu      sync.Mutex
	checked bool
	head    [4]byte
	n       int
}

func (c *handshakeConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checked {
		return c.Conn.Read(p)
	}
	// Until the length is known, read only what it is made of, so that no
	// byte after it is handed over unchecked.
	n, err := c.Conn.Read(p[:min(len(p), len(c.head)-c.n)])
	copy(c.head[c.n:], p[:n])
	c.n += n
	if c.n == len(c.head) {
		c.checked = true
		if binary.BigEndian.Uint32(c.head[:]) > maxHandshakeAnswer {
			ferr := &NotZooKeeperError{Addr: c.addr, Head: c.head}
			if c.onForeign != nil {
				c.onForeign(ferr)
			}
			c.Conn.Close()
			return 0, ferr
		}
	}
	return n, err
}
