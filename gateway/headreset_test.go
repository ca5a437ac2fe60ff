package gateway_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// jettyFront passes connections on to a coordinator, and resets one whose
// request head runs past limit bytes, with the rest of the head unread and
// no answer: what Jetty does when it refuses a head too large (its 431 is
// lost when it closes a connection with unread bytes, which resets it).
type jettyFront struct {
	ln     net.Listener
	target string
	limit  int
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	resets int
}

func startJettyFront(t *testing.T, target string, limit int) *jettyFront {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &jettyFront{ln: ln, target: target, limit: limit, conns: map[net.Conn]bool{}}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *jettyFront) Addr() string { return f.ln.Addr().String() }

// Resets is how many connections it reset for a head too large.
func (f *jettyFront) Resets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resets
}

func (f *jettyFront) track(cs ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		return false
	}
	for _, c := range cs {
		f.conns[c] = true
	}
	return true
}

func (f *jettyFront) close() {
	f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.conns = nil
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *jettyFront) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", f.target)
		if err != nil {
			c.Close()
			continue
		}
		if !f.track(c, up) {
			c.Close()
			up.Close()
			return
		}
		f.wg.Add(2)
		go func() {
			defer f.wg.Done()
			io.Copy(c, up)
			c.Close()
		}()
		go func() {
			defer f.wg.Done()
			defer up.Close()
			if f.pass(up, c) {
				f.mu.Lock()
				f.resets++
				f.mu.Unlock()
				c.(*net.TCPConn).SetLinger(0)
			}
			c.Close()
		}()
	}
}

// pass copies from c to up until c ends, or until a head runs past the
// limit: then it reports true.
func (f *jettyFront) pass(up, c net.Conn) bool {
	buf := make([]byte, 32<<10)
	inHead := 0 // bytes since the end of the last head (bodies are small here)
	var tail []byte
	for {
		n, err := c.Read(buf)
		if n > 0 {
			seen := append(tail, buf[:n]...)
			if i := bytes.LastIndex(seen, []byte("\r\n\r\n")); i >= 0 {
				inHead = len(seen) - i - 4
			} else {
				inHead += n
			}
			if inHead > f.limit {
				return true
			}
			tail = append([]byte(nil), seen[max(0, len(seen)-3):]...)
			if _, err := up.Write(buf[:n]); err != nil {
				return false
			}
		}
		if err != nil {
			return false
		}
	}
}

// A client's head that coordinators refuse by resetting the connection,
// as Jetty does, costs them nothing: six statements with a 2 MB header get
// a 431 from the gateway, no coordinator is charged a failure or ejected,
// and the next statements run on both.
func TestOversizedHeadResetByTheCoordinatorIsTheClients(t *testing.T) {
	var addrs []string
	var fronts []*jettyFront
	for range 2 {
		c, err := coordinator.Start(coordinator.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		f := startJettyFront(t, c.Addr(), 64<<10)
		fronts = append(fronts, f)
		addrs = append(addrs, f.Addr())
	}
	g, router := staticGateway(t, gateway.Config{}, addrs...)
	s := serveGateway(t, g)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	post := func(head int) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/statement", strings.NewReader("SELECT 1"))
		req.Header.Set("X-Presto-User", "a")
		if head > 0 {
			req.Header.Set("X-Presto-Session", "k="+strings.Repeat("v", head))
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	for i := range 6 {
		if status, body := post(2 << 20); status != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("statement %d with a 2 MB head the coordinators reset: %d %s, want 431", i, status, body)
		}
	}
	if fronts[0].Resets()+fronts[1].Resets() == 0 {
		t.Fatal("no coordinator reset a connection: the test tested nothing")
	}
	for _, addr := range addrs {
		if st := nodeStats(t, router, addr); st.Failures != 0 || st.Ejections != 0 || st.Ejected {
			t.Errorf("%s was charged with the client's heads: %d failures, %d ejections", addr, st.Failures, st.Ejections)
		}
	}
	for i := range 4 {
		if status, body := post(0); status != http.StatusOK {
			t.Fatalf("statement %d after the oversized heads: %d %s", i, status, body)
		}
	}
}
