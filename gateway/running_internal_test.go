package gateway

import (
	"context"
	"testing"
	"time"
)

// A query whose client left long ago is abandoned by its server (its client
// timeout), so a drain does not wait for it, however quiet the gateway has
// been since; a query that reaches that age during the wait stops counting
// then; a live one is waited for.
func TestWaitQueriesLetsAbandonedQueriesGo(t *testing.T) {
	now := time.Now().Unix()
	q := &running{ids: map[string]int64{"left-24-minutes-ago": now - 24*60}, swept: now}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := q.wait(ctx); err != nil {
		t.Fatalf("waited for a query abandoned 24 minutes ago: %v", err)
	}

	ageing := now - int64(queryAge/time.Second) + 2 // abandoned in two seconds
	q = &running{ids: map[string]int64{"ageing": ageing}, swept: now}
	if err := q.wait(ctx); err != nil {
		t.Fatalf("waited past the age of a query abandoned during the wait: %v", err)
	}
	if !q.empty() {
		t.Fatal("the aged query is still counted")
	}

	q = &running{ids: map[string]int64{"live": time.Now().Unix()}, swept: now}
	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	if err := q.wait(short); err == nil {
		t.Fatal("did not wait for a query asked for just now")
	}
}

// A wait that ends with its context leaves no waiter behind: a caller that
// polls WaitQueries with short contexts while a query runs does not make
// the set grow with each call.
func TestWaitQueriesLeavesNoWaiterWhenItsContextEnds(t *testing.T) {
	q := &running{ids: map[string]int64{"live": time.Now().Unix()}, swept: time.Now().Unix()}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		if err := q.wait(ctx); err == nil {
			t.Fatal("a cancelled wait returned nil with a query running")
		}
	}
	q.mu.Lock()
	n := len(q.waiters)
	q.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d waiters left behind by 100 cancelled waits", n)
	}
}
