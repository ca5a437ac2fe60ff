//go:build linux

package pool

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/deadpeer"
)

// A submission armed with a dial race to an address whose SYNs are
// dropped fails at the race's delay, recorded as not sent with a
// *DialRaceError, long before the Dialer's own timeout.
func TestDialRaceGivesUpUnsent(t *testing.T) {
	dead := deadpeer.SYNDrop(t)
	d := &Dialer{Timeout: 2 * time.Second}
	base := &http.Transport{DialContext: d.DialContext}
	defer base.CloseIdleConnections()
	for _, name := range []string{"go", "inline"} {
		var rt http.RoundTripper = base
		if name == "inline" {
			rt = NewInlineTransport(base)
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+dead+"/v1/statement", strings.NewReader("SELECT 1"))
		e := new(Exchange)
		e.ArmDialRace(50*time.Millisecond, cancel)
		_, err := Submit(rt, req, e, nil)
		var race *DialRaceError
		failure, sent := e.Failure()
		if !errors.As(err, &race) || race.Addr != dead || !errors.As(failure, &race) || sent || e.Written() {
			t.Errorf("%s: %v, recorded %v, sent %t; want a DialRaceError for %s, not sent", name, err, failure, sent, dead)
		}
		cancel(nil)
	}
}

// A connection that comes up just after the race was lost is made to
// fail its first write with nothing written: the statement the race gave
// up on is never written on it.
func TestConnectionAfterALostRaceWritesNothing(t *testing.T) {
	c, server := loopbackPair(t)
	e := new(Exchange)
	e.ArmDialRace(time.Hour, func(error) {})
	ctx := e.Trace(context.Background())
	trace := httptrace.ContextClientTrace(ctx)
	trace.GetConn(server.LocalAddr().String())
	e.loseRace()
	trace.GotConn(httptrace.GotConnInfo{Conn: c})
	if n, err := c.Write([]byte("POST /v1/statement HTTP/1.1\r\n")); n != 0 || err == nil {
		t.Fatalf("write after a lost race: %d bytes, %v; want none written and an error", n, err)
	}
	if e.Written() {
		t.Error("counted as written")
	}
	server.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := server.Read(make([]byte, 1)); n != 0 || errors.Is(err, net.ErrClosed) {
		t.Errorf("the peer read %d bytes (%v)", n, err)
	}
}
