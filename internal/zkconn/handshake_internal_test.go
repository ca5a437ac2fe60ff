package zkconn

import (
	"errors"
	"io"
	"net"
	"testing"
)

// byteConn is a net.Conn that reads from r, one byte a Read at most when
// trickle is set.
type byteConn struct {
	net.Conn
	r       io.Reader
	trickle bool
	closed  bool
}

func (c *byteConn) Read(p []byte) (int, error) {
	if c.trickle && len(p) > 1 {
		p = p[:1]
	}
	return c.r.Read(p)
}

func (c *byteConn) Close() error { c.closed = true; return nil }

// The guard reads the length a byte at a time as well as whole, hands over
// every byte of an acceptable answer, answers an empty Read with nothing,
// passes on the end of a stream shorter than the length, and refuses a
// length no ZooKeeper sends, whichever Read completes it.
func TestHandshakeGuardWithPartialReads(t *testing.T) {
	answer := "\x00\x00\x00\x24" + string(make([]byte, 36)) + "rest"
	for _, trickle := range []bool{false, true} {
		c := &handshakeConn{Conn: &byteConn{r: stringsReader(answer), trickle: trickle}}
		if n, err := c.Read(nil); n != 0 || err != nil {
			t.Errorf("an empty Read: %d, %v", n, err)
		}
		got, err := io.ReadAll(c)
		if err != nil || string(got) != answer {
			t.Errorf("trickle %v: read %q, %v", trickle, got, err)
		}

		c = &handshakeConn{Conn: &byteConn{r: stringsReader("\x00\x00"), trickle: trickle}}
		if _, err := io.ReadFull(c, make([]byte, 4)); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("trickle %v: two bytes then the end: %v", trickle, err)
		}

		var foreign error
		bc := &byteConn{r: stringsReader("HTTP/1.1 400 Bad Request\r\n"), trickle: trickle}
		c = &handshakeConn{Conn: bc, addr: "zk1:2181", onForeign: func(err error) { foreign = err }}
		_, err = io.ReadFull(c, make([]byte, 4))
		var nz *NotZooKeeperError
		if !errors.As(err, &nz) || string(nz.Head[:]) != "HTTP" || foreign == nil || !bc.closed {
			t.Errorf("trickle %v: an HTTP answer: %v (reported %v, closed %v)", trickle, err, foreign, bc.closed)
		}
	}
}

func stringsReader(s string) io.Reader { return &onceReader{s: s} }

// onceReader is strings.Reader without WriterTo, so that io.ReadAll goes
// through Read.
type onceReader struct{ s string }

func (r *onceReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}
