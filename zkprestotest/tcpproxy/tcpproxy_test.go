package tcpproxy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/zkprestotest/tcpproxy"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// echoServer answers every line with the same line, until closed.
type echoServer struct {
	ln net.Listener
	wg sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

type client struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{Conn: c, r: bufio.NewReader(c)}
}

// roundTrip sends line and reads the echo, waiting at most wait.
func (c *client) roundTrip(line string, wait time.Duration) (string, error) {
	if _, err := fmt.Fprintln(c, line); err != nil {
		return "", err
	}
	return c.readLine(wait)
}

func (c *client) readLine(wait time.Duration) (string, error) {
	c.SetReadDeadline(time.Now().Add(wait))
	got, err := c.r.ReadString('\n')
	return strings.TrimSuffix(got, "\n"), err
}

func TestPassStallHeal(t *testing.T) {
	echo := startEcho(t)
	p := tcpproxy.StartT(t, echo.ln.Addr().String())
	c := dial(t, p.Addr())
	if got, err := c.roundTrip("one", 5*time.Second); err != nil || got != "one" {
		t.Fatalf("pass: got %q, %v", got, err)
	}

	p.Stall()
	if p.Mode() != tcpproxy.Stall {
		t.Fatalf("mode %s, want stall", p.Mode())
	}
	// Nothing comes back while stalled; the bytes are held, not lost.
	if got, err := c.roundTrip("two", 100*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("stalled: got %q, %v; want a read timeout", got, err)
	}
	// A connection opened while stalled is accepted but not served.
	late := dial(t, p.Addr())
	if got, err := late.roundTrip("late", 100*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection while stalled: got %q, %v; want a read timeout", got, err)
	}

	p.Heal()
	if got, err := c.readLine(5 * time.Second); err != nil || got != "two" {
		t.Fatalf("after heal: got %q, %v; want the held line", got, err)
	}
	if got, err := late.readLine(5 * time.Second); err != nil || got != "late" {
		t.Fatalf("late connection after heal: got %q, %v", got, err)
	}
	if got, err := c.roundTrip("three", 5*time.Second); err != nil || got != "three" {
		t.Fatalf("after heal: got %q, %v", got, err)
	}
}

func TestDropClosesAndRefusesUntilHealed(t *testing.T) {
	echo := startEcho(t)
	p := tcpproxy.StartT(t, echo.ln.Addr().String())
	c := dial(t, p.Addr())
	if got, err := c.roundTrip("one", 5*time.Second); err != nil || got != "one" {
		t.Fatalf("pass: got %q, %v", got, err)
	}

	p.Drop()
	if _, err := c.readLine(5 * time.Second); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("open connection after drop: %v, want EOF", err)
	}
	refused := dial(t, p.Addr())
	if _, err := refused.roundTrip("x", 5*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection while dropping: %v, want it closed", err)
	}

	p.Heal()
	again := dial(t, p.Addr())
	if got, err := again.roundTrip("back", 5*time.Second); err != nil || got != "back" {
		t.Fatalf("after heal: got %q, %v", got, err)
	}
	if n := p.Accepted(); n != 3 {
		t.Fatalf("accepted %d connections, want 3", n)
	}
}

func TestCloseEndsStalledConnections(t *testing.T) {
	echo := startEcho(t)
	p, err := tcpproxy.Start(echo.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	if got, err := c.roundTrip("one", 5*time.Second); err != nil || got != "one" {
		t.Fatalf("pass: got %q, %v", got, err)
	}
	p.Stall()
	if _, err := fmt.Fprintln(c, "held"); err != nil {
		t.Fatal(err)
	}
	dial(t, p.Addr()) // waits in the stall before dialing the target
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.readLine(5 * time.Second); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("after Close: %v, want EOF", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// goleak in TestMain checks that no pump survived.
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

func ExampleProxy() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()

	p, err := tcpproxy.Start(ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Fprintln(c, "hello")
	line, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Print(line)
	p.Stall()
	fmt.Println(p.Mode())
	p.Heal()
	fmt.Println(p.Mode())
	// Output:
	// hello
	// stall
	// pass
}
