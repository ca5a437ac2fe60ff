package pool

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The dial race is armed where a connection is dialled, not per
// submission: the Dialer finds the submission's Exchange among its dial
// context's values (Go's transport and InlineTransport dial with the
// request's values), so that a submission on a pooled connection pays
// nothing for it. When the first pick's dial is not done within the
// delay, the Dialer fails that dial, and with it the try, with a
// *DialRaceError (nothing was written: there was no connection), and
// keeps dialing. The statement's next try, on the next pick, joins the
// race: the first of the two connections to come up carries the
// statement. When the first pick's comes up first, the next try's dial
// fails with an *OvertakenError and the statement goes back to the first
// pick, on that connection; the other connection, when it comes up, is
// kept as a spare for the next dial to its coordinator. Tries are
// sequential (a try starts only after the one before failed unsent), so
// the statement is written on one connection at most.

// ExchangeKey is the context key under which the Dialer looks for the
// *Exchange of the submission it dials for (see ArmDialRace). A context
// type of the caller's own can answer for it at no cost; WithExchange
// adds it to any context.
type ExchangeKey struct{}

// WithExchange returns ctx with e under ExchangeKey.
func WithExchange(ctx context.Context, e *Exchange) context.Context {
	return context.WithValue(ctx, ExchangeKey{}, e)
}

func exchangeFrom(ctx context.Context) *Exchange {
	e, _ := ctx.Value(ExchangeKey{}).(*Exchange)
	return e
}

// The states of Exchange.tryState: whether the submission's current try
// waits for a connection, and so whether a dial for it is raced.
const (
	tryIdle      int32 = iota // no submission try waits (none began, or it ended): dials are not raced
	tryWaiting                // the try asked for a connection (GetConn) and has none yet
	tryConnected              // the try got its connection (GotConn)
	tryGivenUp                // the Dialer failed the try's dial: it goes to another coordinator
)

// The states of dialRace.winner.
const (
	racePending int32 = iota // neither connection is up
	raceFirst                // the first pick's connection came up first
	raceNext                 // a later try got a connection first
	raceEnded                // the statement ended before either
)

// dialRace is one statement's dial race, from the moment its first
// pick's dial outlasted the delay.
type dialRace struct {
	dialer  *Dialer
	first   string        // the first pick's host:port
	firstUp chan struct{} // closed when the first pick's connection won
	winner  atomic.Int32  // written under mu
	mu      sync.Mutex
	conn    net.Conn // the first pick's connection that won, until the statement's try on it takes it
}

// DialRaceError is the failure of a submission that had no connection to
// its coordinator within the dial-race delay (see ArmDialRace): nothing
// of it was written, and it may go to another coordinator. The dial goes
// on, racing the next pick's; its own failure, if it fails, is reported
// as dial failures are (Dialer.OnFailure).
type DialRaceError struct {
	// Addr is the coordinator's host:port.
	Addr string
	// After is the delay that passed.
	After time.Duration
}

// Error implements error.
func (e *DialRaceError) Error() string {
	return "no connection to " + e.Addr + " within " + e.After.String() + " (dial race): not sent"
}

// Timeout reports true: it is a net.Error timeout.
func (e *DialRaceError) Timeout() bool { return true }

// Temporary reports true, as other timeouts do.
func (e *DialRaceError) Temporary() bool { return true }

// OvertakenError is the failure of a submission whose dial lost the dial
// race: the connection to the coordinator tried before, given up at the
// delay, came up first. Nothing was written; the statement goes back to
// that coordinator (JoinDialRace's try on it gets that connection). It is
// no failure of this coordinator's.
type OvertakenError struct {
	// Addr is this try's coordinator; By, the one whose connection won.
	Addr, By string
}

// Error implements error.
func (e *OvertakenError) Error() string {
	return "the connection to " + e.By + " came up before the one to " + e.Addr + " (dial race): not sent"
}

// ArmDialRace makes the Dialer race the dials of the submission's tries:
// a dial for a try that is not done delay after it began fails the try
// with a *DialRaceError, provably unsent, so that the caller can try
// another coordinator at once instead of waiting for the dial's own
// timeout, and the dial goes on (see JoinDialRace). Only a try that dials
// is raced, and only through a Dialer that finds e in the dial's context
// (see ExchangeKey). Call it before Submit.
func (e *Exchange) ArmDialRace(delay time.Duration) { e.raceDelay = delay }

// JoinDialRace makes the submission a later try of prev's statement:
// when prev's dial was given up in the race and has not come up yet,
// this submission's dial races it, and fails with an *OvertakenError if
// prev's connection comes up first; a try of this submission to prev's
// coordinator then gets that connection. Call it before Submit.
func (e *Exchange) JoinDialRace(prev *Exchange) {
	if r := prev.race.Load(); r != nil {
		e.race.Store(r)
	}
}

// EndDialRace ends the statement's dial race, if any: a connection that
// comes up later, or that won and was not used, is kept as a spare. Call
// it when the statement has no more tries.
func (e *Exchange) EndDialRace() {
	r := e.race.Load()
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.winner.Load() == racePending {
		r.winner.Store(raceEnded)
	}
	c := r.conn
	r.conn = nil
	r.mu.Unlock()
	if c != nil {
		r.dialer.keepSpare(r.first, c)
	}
}

// connectRace is the GotConn hook's part of the race: the try has its
// connection, and when it joined a race still pending, it won it.
func (e *Exchange) connectRace() {
	e.tryState.CompareAndSwap(tryWaiting, tryConnected)
	if r := e.race.Load(); r != nil {
		r.settle(raceNext)
	}
}

// settle makes winner the race's outcome unless it has one.
func (r *dialRace) settle(winner int32) bool {
	if r.winner.Load() != racePending {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.winner.Load() != racePending {
		return false
	}
	r.winner.Store(winner)
	return true
}

// firstConnected is the end of the first pick's dial, given up at the
// delay: a connection that wins is kept for the statement, one that
// loses is a spare.
func (r *dialRace) firstConnected(c net.Conn) {
	r.mu.Lock()
	won := r.winner.Load() == racePending
	if won {
		r.winner.Store(raceFirst)
		r.conn = c
		close(r.firstUp)
	}
	r.mu.Unlock()
	if !won {
		r.dialer.keepSpare(r.first, c)
	}
}

// take returns the first pick's winning connection for the statement's
// try to addr, once.
func (r *dialRace) take(addr string) net.Conn {
	if addr != r.first || r.winner.Load() != raceFirst {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.conn
	r.conn = nil
	return c
}

// holds reports whether the first pick's winning connection still waits
// for the statement.
func (r *dialRace) holds() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conn != nil
}

type dialResult struct {
	c   net.Conn
	err error
}

// dialRaced dials addr for a try of e: the first pick's dial, given up
// at the delay, or a later try's, which the first pick's connection may
// overtake.
func (d *Dialer) dialRaced(ctx context.Context, network, addr string, e *Exchange) (net.Conn, error) {
	r := e.race.Load()
	if r != nil {
		switch r.winner.Load() {
		case raceFirst:
			// The statement goes back to the first pick while its
			// connection waits for it; once taken, the race is over.
			if addr != r.first && r.holds() && e.tryState.CompareAndSwap(tryWaiting, tryGivenUp) {
				return nil, &OvertakenError{Addr: addr, By: r.first}
			}
			r = nil
		case racePending:
		default:
			r = nil // decided: this dial may start a race of its own
		}
	}
	// The dial outlives this call when the race gives it up: only the
	// Dialer's own end (CloseIdleConnections) or its timeout stops it.
	ctx, detach, stop := d.background(ctx)
	done := make(chan dialResult, 1)
	go func() {
		c, err := d.dial(ctx, network, addr)
		stop()
		done <- dialResult{c, err}
	}()
	if r != nil {
		// A later try: its connection or the first pick's, whichever
		// comes up first.
		select {
		case res := <-done:
			return res.c, res.err
		case <-r.firstUp:
		}
		if !e.tryState.CompareAndSwap(tryWaiting, tryGivenUp) {
			res := <-done // the try has a connection already: this one goes to the pool
			return res.c, res.err
		}
		detach()
		go d.spareWhenUp(addr, done)
		return nil, &OvertakenError{Addr: addr, By: r.first}
	}
	timer := time.NewTimer(e.raceDelay)
	defer timer.Stop()
	select {
	case res := <-done:
		return res.c, res.err
	case <-timer.C:
	}
	if !e.tryState.CompareAndSwap(tryWaiting, tryGivenUp) {
		res := <-done
		return res.c, res.err
	}
	detach()
	r = &dialRace{dialer: d, first: addr, firstUp: make(chan struct{})}
	e.race.Store(r)
	go func() {
		if res := <-done; res.err == nil {
			r.firstConnected(res.c)
		}
	}()
	return nil, &DialRaceError{Addr: addr, After: e.raceDelay}
}

func (d *Dialer) spareWhenUp(addr string, done <-chan dialResult) {
	if res := <-done; res.err == nil {
		d.keepSpare(addr, res.c)
	}
}

// spareTimeout is how long a spare connection waits for a dial to its
// coordinator before it is closed: the driver's idle timeout.
const spareTimeout = 90 * time.Second

// maxSpares bounds the spare connections kept for one address.
const maxSpares = 4

type spareConn struct {
	c     net.Conn
	timer *time.Timer
}

// keepSpare keeps c, a connection to addr that came up after the
// statement that dialled it went elsewhere, for the next dial to addr.
func (d *Dialer) keepSpare(addr string, c net.Conn) {
	d.mu.Lock()
	if len(d.spares[addr]) >= maxSpares {
		d.mu.Unlock()
		_ = c.Close()
		return
	}
	if d.spares == nil {
		d.spares = make(map[string][]*spareConn)
	}
	s := &spareConn{c: c}
	s.timer = time.AfterFunc(spareTimeout, func() {
		if d.dropSpare(addr, s) {
			_ = c.Close()
		}
	})
	d.spares[addr] = append(d.spares[addr], s)
	d.nspares.Add(1)
	d.mu.Unlock()
}

// dropSpare removes s from the spares, and reports whether it was there.
func (d *Dialer) dropSpare(addr string, s *spareConn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	list := d.spares[addr]
	for i, x := range list {
		if x == s {
			d.spares[addr] = append(list[:i], list[i+1:]...)
			if len(d.spares[addr]) == 0 {
				delete(d.spares, addr)
			}
			d.nspares.Add(-1)
			return true
		}
	}
	return false
}

// takeSpare returns a spare connection to addr that still looks usable,
// or nil.
func (d *Dialer) takeSpare(addr string) net.Conn {
	if d.nspares.Load() == 0 {
		return nil
	}
	for {
		d.mu.Lock()
		list := d.spares[addr]
		if len(list) == 0 {
			d.mu.Unlock()
			return nil
		}
		s := list[len(list)-1]
		d.mu.Unlock()
		if !d.dropSpare(addr, s) {
			continue // its timer took it
		}
		s.timer.Stop()
		if ic, ok := s.c.(idleChecker); ok && ic.checkIdle() {
			_ = s.c.Close() // closed by the coordinator meanwhile
			continue
		}
		return s.c
	}
}

// background returns a context for a dial that may outlive the call that
// began it: ctx's values, ended with ctx until detach is called, and by
// CloseIdleConnections; stop releases it.
func (d *Dialer) background(ctx context.Context) (bg context.Context, detach, stop func()) {
	d.mu.Lock()
	if d.closing == nil {
		d.closing, d.closeAll = context.WithCancel(context.Background())
	}
	closing := d.closing
	d.mu.Unlock()
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopClosing := context.AfterFunc(closing, cancel)
	stopCaller := context.AfterFunc(ctx, cancel)
	return bg, func() { stopCaller() }, func() { stopClosing(); stopCaller(); cancel() }
}

// CloseIdleConnections closes the spare connections and stops the dials
// that a race gave up on. The Dialer stays usable.
func (d *Dialer) CloseIdleConnections() {
	d.mu.Lock()
	spares := d.spares
	d.spares = nil
	d.nspares.Store(0)
	closeAll := d.closeAll
	d.closing, d.closeAll = nil, nil
	d.mu.Unlock()
	if closeAll != nil {
		closeAll()
	}
	for _, list := range spares {
		for _, s := range list {
			s.timer.Stop()
			_ = s.c.Close()
		}
	}
}
