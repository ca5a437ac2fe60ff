package driver_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/internal/pool"
)

// The dial race, provoked on every statement: the first dial of each
// statement, to whichever coordinator is picked first, is let through
// just before or just after the race's delay plus the few milliseconds
// the next pick's dial takes, so that both connections come up close
// together, in either order. Whichever wins, the statement is read by one
// coordinator, once; and both orders happen, so the first pick's
// connection, up after the delay, does carry the statement whenever it is
// up first (the first pick given up at the delay whatever came next, as
// it once was, wins none of these races).
func TestDialRaceStatementGoesOnTheConnectionUpFirst(t *testing.T) {
	quietPrestoClient(t)
	const (
		delay      = 50 * time.Millisecond
		nextDial   = 5 * time.Millisecond
		statements = 30
	)
	a, b := startCoordinator(t, "a"), startCoordinator(t, "b")
	var (
		mu        sync.Mutex
		firstOf   = make([]string, statements) // the first pick of each statement
		current   atomic.Int64                 // the statement running
		firstDial atomic.Bool                  // the statement's first dial is still to come
		dialer    net.Dialer
	)
	d := &pool.Dialer{
		Timeout: time.Second,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			pause := nextDial
			if firstDial.CompareAndSwap(true, false) {
				i := int(current.Load())
				mu.Lock()
				firstOf[i] = addr
				mu.Unlock()
				// Up from 0.5 to 9.5 ms after the delay: about 5 ms
				// before to 5 ms after the next pick's connection.
				pause = delay + time.Duration(i%10)*time.Millisecond + 500*time.Microsecond
			}
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return dialer.DialContext(ctx, network, addr)
		},
	}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}
	db, _ := openConnector(t, fmt.Sprintf("presto://%s,%s;zooKeeperStrategy=poll;dialRaceDelay=%v?user=alice", a.Addr(), b.Addr(), delay),
		zkdriver.WithHTTPClient(&http.Client{Transport: tr}),
		zkdriver.WithHealthPolicy(health.Policy{ConsecutiveFailures: 1 << 30, BaseEjection: time.Microsecond, MaxEjection: time.Microsecond}))
	t.Cleanup(func() { tr.CloseIdleConnections(); d.CloseIdleConnections() })
	for i := range statements {
		// No connection at hand: each statement dials.
		tr.CloseIdleConnections()
		d.CloseIdleConnections()
		current.Store(int64(i))
		firstDial.Store(true)
		ctx := context.Background()
		if i%2 == 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf("SELECT %d", i)); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
	}
	readBy := map[string][]string{}
	for _, r := range a.Requests() {
		readBy[r.SQL] = append(readBy[r.SQL], a.Addr())
	}
	for _, r := range b.Requests() {
		readBy[r.SQL] = append(readBy[r.SQL], b.Addr())
	}
	// The losing first dial of a statement is never joined by the
	// statement, so its record is read under the lock it was written under.
	mu.Lock()
	first := append([]string(nil), firstOf...)
	mu.Unlock()
	firstWon, nextWon := 0, 0
	for i := range statements {
		sql := fmt.Sprintf("SELECT %d", i)
		by := readBy[sql]
		if len(by) != 1 {
			t.Errorf("%q was read by %v, want one coordinator once", sql, by)
			continue
		}
		if by[0] == first[i] {
			firstWon++
		} else {
			nextWon++
		}
	}
	checkAcceptedOnce(t, a, b)
	t.Logf("%d statements: the first pick's connection came up first for %d, the next pick's for %d", statements, firstWon, nextWon)
	// The first pick's connection is up well before the next pick's in a
	// third of the statements, and well after in a fifth; scheduling noise
	// may move those close to even.
	if firstWon < statements/5 || nextWon < statements/10 {
		t.Errorf("the first pick won %d races and the next pick %d; want at least %d and %d: both orders, the first pick's connection used when it is up first",
			firstWon, nextWon, statements/5, statements/10)
	}
}
