//go:build linux

package pool

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
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
	defer d.CloseIdleConnections()
	base := &http.Transport{DialContext: d.DialContext}
	defer base.CloseIdleConnections()
	for _, name := range []string{"go", "inline"} {
		var rt http.RoundTripper = base
		if name == "inline" {
			rt = NewInlineTransport(base)
		}
		e := new(Exchange)
		req, _ := http.NewRequestWithContext(WithExchange(context.Background(), e), http.MethodPost, "http://"+dead+"/v1/statement", strings.NewReader("SELECT 1"))
		e.ArmDialRace(50 * time.Millisecond)
		start := time.Now()
		_, err := Submit(rt, req, e, nil)
		var race *DialRaceError
		failure, sent := e.Failure()
		if !errors.As(err, &race) || race.Addr != dead || !errors.As(failure, &race) || sent || e.Written() {
			t.Errorf("%s: %v, recorded %v, sent %t; want a DialRaceError for %s, not sent", name, err, failure, sent, dead)
		}
		if elapsed := time.Since(start); elapsed > time.Second {
			t.Errorf("%s: gave up after %v, want about the delay (50ms)", name, elapsed)
		}
		e.EndDialRace()
	}
}

// recordingServer is a coordinator stand-in that records the statements
// it reads.
type recordingServer struct {
	*httptest.Server
	mu   sync.Mutex
	read []string
}

func startRecording(t *testing.T) *recordingServer {
	s := new(recordingServer)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.read = append(s.read, string(body))
		s.mu.Unlock()
		_, _ = io.WriteString(w, `{"id":"q"}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *recordingServer) statements() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.read...)
}

func (s *recordingServer) addr() string { return strings.TrimPrefix(s.URL, "http://") }

// gatedDials holds each dial to an address until the test opens its gate,
// and counts the dials.
type gatedDials struct {
	gates map[string]chan struct{}
	dials map[string]*atomic.Int32
}

func newGatedDials(addrs ...string) *gatedDials {
	g := &gatedDials{gates: map[string]chan struct{}{}, dials: map[string]*atomic.Int32{}}
	for _, a := range addrs {
		g.gates[a] = make(chan struct{})
		g.dials[a] = new(atomic.Int32)
	}
	return g
}

func (g *gatedDials) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	g.dials[addr].Add(1)
	select {
	case <-g.gates[addr]:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func (g *gatedDials) open(addr string) { close(g.gates[addr]) }

// submitTo submits sql to addr as a try of the statement whose try before
// was prev (nil for the first).
func submitTo(rt http.RoundTripper, addr, sql string, prev *Exchange) (*Exchange, error) {
	e := new(Exchange)
	e.ArmDialRace(20 * time.Millisecond)
	if prev != nil {
		e.JoinDialRace(prev)
	}
	req, _ := http.NewRequestWithContext(WithExchange(context.Background(), e), http.MethodPost, "http://"+addr+"/v1/statement", strings.NewReader(sql))
	resp, err := Submit(rt, req, e, nil)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return e, err
}

// The dial race, when the first pick's connection comes up after the
// delay but before the next pick's: the next try fails unsent with an
// *OvertakenError, and the statement, back on the first pick, goes out
// on the connection the race made (no second dial); the next pick's
// connection, when it comes up, is a spare that the next dial to it takes.
// When the next pick's comes up first, the statement goes there, and the
// first pick's connection is the spare. Either way one coordinator reads
// the statement.
func TestDialRaceSendsOnTheConnectionUpFirst(t *testing.T) {
	for _, firstWins := range []bool{true, false} {
		name := "the next pick's connection first"
		if firstWins {
			name = "the first pick's connection first"
		}
		t.Run(name, func(t *testing.T) {
			x, y := startRecording(t), startRecording(t)
			g := newGatedDials(x.addr(), y.addr())
			d := &Dialer{Timeout: 5 * time.Second, Dial: g.dial}
			defer d.CloseIdleConnections()
			base := &http.Transport{DialContext: d.DialContext}
			defer base.CloseIdleConnections()

			first, err := submitTo(base, x.addr(), "SELECT 1", nil)
			if !errors.As(err, new(*DialRaceError)) || first.Written() {
				t.Fatalf("first pick: %v, written %t; want a DialRaceError, not written", err, first.Written())
			}
			type result struct {
				e   *Exchange
				err error
			}
			next := make(chan result, 1)
			go func() {
				e, err := submitTo(base, y.addr(), "SELECT 1", first)
				next <- result{e, err}
			}()
			// The next pick is dialling (its dial is held) when one of the
			// two connections is let up.
			for g.dials[y.addr()].Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			if firstWins {
				g.open(x.addr())
				r := <-next
				var over *OvertakenError
				if !errors.As(r.err, &over) || over.By != x.addr() || over.Addr != y.addr() || r.e.Written() {
					t.Fatalf("next pick: %v, written %t; want an OvertakenError by %s, not written", r.err, r.e.Written(), x.addr())
				}
				back, err := submitTo(base, x.addr(), "SELECT 1", r.e)
				if err != nil {
					t.Fatalf("back on the first pick: %v", err)
				}
				back.EndDialRace()
				g.open(y.addr())
			} else {
				g.open(y.addr())
				r := <-next
				if r.err != nil {
					t.Fatalf("next pick: %v", r.err)
				}
				r.e.EndDialRace()
				g.open(x.addr())
			}
			// The losing connection comes up and becomes a spare, which the
			// next statement to its coordinator takes without a dial.
			loser, winner := y, x
			if !firstWins {
				loser, winner = x, y
			}
			deadline := time.Now().Add(5 * time.Second)
			for d.nspares.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if _, err := submitTo(base, loser.addr(), "SELECT 2", nil); err != nil {
				t.Fatalf("a statement to %s after the race: %v", loser.addr(), err)
			}
			if n := g.dials[winner.addr()].Load(); n != 1 {
				t.Errorf("%d dials to the winner, want 1", n)
			}
			if n := g.dials[loser.addr()].Load(); n != 1 {
				t.Errorf("%d dials to the loser, want 1 (its late connection kept for the next statement)", n)
			}
			if got := winner.statements(); len(got) != 1 || got[0] != "SELECT 1" {
				t.Errorf("the winner read %q, want the statement once", got)
			}
			if got := loser.statements(); len(got) != 1 || got[0] != "SELECT 2" {
				t.Errorf("the loser read %q, want only the statement after the race", got)
			}
		})
	}
}

// A submission armed with the dial race that gets a pooled connection
// allocates no more than one without the race: the race is armed only
// where a connection is dialled.
func TestDialRaceCostsAPooledSubmissionNothing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"id":"q"}`)
	}))
	defer srv.Close()
	d := &Dialer{Timeout: time.Second}
	defer d.CloseIdleConnections()
	tr := &http.Transport{DialContext: d.DialContext}
	defer tr.CloseIdleConnections()
	submit := func(armed bool) {
		e := new(Exchange)
		if armed {
			e.ArmDialRace(time.Second)
		}
		req, _ := http.NewRequestWithContext(WithExchange(context.Background(), e), http.MethodPost, srv.URL+"/v1/statement", strings.NewReader("SELECT 1"))
		resp, err := Submit(tr, req, e, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	submit(true) // the pooled connection
	// The least of three counts each, alternated: the server's and the
	// transport's goroutines allocate too, not always alike.
	unarmed, armed := 1e9, 1e9
	for range 3 {
		unarmed = min(unarmed, testing.AllocsPerRun(200, func() { submit(false) }))
		armed = min(armed, testing.AllocsPerRun(200, func() { submit(true) }))
	}
	t.Logf("allocations per submission on a pooled connection: %.1f without the race, %.1f with it", unarmed, armed)
	if armed > unarmed+0.5 {
		t.Errorf("a pooled submission armed with the dial race allocates %.1f, without it %.1f; want no more", armed, unarmed)
	}
}

// Once the statement took the first pick's winning connection, the race
// is over: a later try of the statement, to another coordinator (the
// first pick failed it before accepting it), dials as any other does
// instead of being sent back again.
func TestDialRaceIsOverOnceTheWinningConnectionIsTaken(t *testing.T) {
	srv := startRecording(t)
	d := &Dialer{Timeout: time.Second}
	defer d.CloseIdleConnections()
	first := make(chan struct{})
	close(first)
	r := &dialRace{dialer: d, first: "192.0.2.1:8080", firstUp: first}
	r.winner.Store(raceFirst) // and its connection taken: r.conn is nil
	e := new(Exchange)
	e.ArmDialRace(time.Second)
	e.race.Store(r)
	e.startTry()
	c, err := d.DialContext(WithExchange(context.Background(), e), "tcp", srv.addr())
	if err != nil {
		t.Fatalf("a later try after the race: %v; want a connection", err)
	}
	c.Close()
}
