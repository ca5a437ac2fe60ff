package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// page is one answer of the statement protocol, as far as a drain cares.
func page(t *testing.T, method, uri string, body io.Reader) (status int, next string) {
	t.Helper()
	req, err := http.NewRequest(method, uri, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Presto-User", "a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct {
		NextURI string `json:"nextUri"`
	}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &p)
	return resp.StatusCode, p.NextURI
}

// WaitQueries waits for every query with a page to come: one that its
// client leaves keeps it waiting until its context ends; the last page
// of each, or a cancel, ends the wait.
func TestWaitQueriesWaitsForTheQueriesInFlight(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{BatchRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, _ := staticGateway(t, gateway.Config{}, c.Addr())
	s := serveGateway(t, g)
	wait := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return g.WaitQueries(ctx)
	}
	if err := wait(time.Second); err != nil {
		t.Fatalf("no query yet: %v", err)
	}
	_, paged := page(t, http.MethodPost, s.URL+"/v1/statement", strings.NewReader("SELECT * FROM rows(3)"))
	_, cancelled := page(t, http.MethodPost, s.URL+"/v1/statement", strings.NewReader("SELECT * FROM rows(3)"))
	if paged == "" || cancelled == "" {
		t.Fatal("no nextUri in the answers to the statements")
	}
	g.Drain()
	if err := wait(100 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("two queries awaiting their next page: WaitQueries gave %v, want the context's end", err)
	}
	for next := paged; next != ""; {
		_, next = page(t, http.MethodGet, next, nil)
	}
	if err := wait(100 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("one query still awaiting its next page: WaitQueries gave %v", err)
	}
	if status, _ := page(t, http.MethodDelete, cancelled, nil); status >= 300 {
		t.Fatalf("DELETE of the second query: %d", status)
	}
	if err := wait(time.Second); err != nil {
		t.Fatalf("every query read to its end or cancelled: WaitQueries gave %v", err)
	}
}

// waitFor bounds a wait for what must happen soon.
const waitFor = 30 * time.Second

// drained is what a drain returned.
type drained struct {
	cut int
	err error
}

// drainIn drains s, serving g, with quiet and a drain timeout, in the
// background; the channel gets what the drain returned.
func drainIn(s *gatewayServer, g *gateway.Gateway, quiet, timeout time.Duration) <-chan drained {
	out := make(chan drained, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		n, err := s.srv.Drain(ctx, g, quiet)
		out <- drained{n, err}
	}()
	return out
}

// A replica of several drains in what its own requests take, not in what
// the queries it relayed take: once no request has come for the quiet
// time, it stops, well before its timeout, and the query it relayed goes
// on through another replica to its last row.
func TestDrainEndsWithItsOwnRequestsNotWithTheQueries(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{BatchRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	draining, _ := staticGateway(t, gateway.Config{}, c.Addr())
	other, _ := staticGateway(t, gateway.Config{}, c.Addr())
	s, o := serveGateway(t, draining), serveGateway(t, other)
	_, next := page(t, http.MethodPost, s.URL+"/v1/statement", strings.NewReader("SELECT * FROM rows(5)"))
	if next == "" {
		t.Fatal("no nextUri in the statement's answer")
	}
	// The drain would wait for ever (a day) for the query if that were its
	// rule; it ends on the quiet time instead.
	select {
	case d := <-drainIn(s, draining, 50*time.Millisecond, 24*time.Hour):
		if d.cut != 0 || d.err != nil {
			t.Fatalf("the drain cut %d requests (%v), with none in flight", d.cut, d.err)
		}
	case <-time.After(waitFor):
		t.Fatal("the drain did not end with no request in flight and none coming")
	}
	rows := 0
	for next != "" {
		var status int
		status, next = page(t, http.MethodGet, strings.Replace(next, s.URL, o.URL, 1), nil)
		if status != http.StatusOK {
			t.Fatalf("a page through the other replica: HTTP %d", status)
		}
		rows++
	}
	// PrestoDB's queued resource answers the first page, which the client
	// gets from its own GET even where the gateway made the first one
	// (dispatchFirst).
	if rows < 4 {
		t.Fatalf("the query went on for %d pages through the other replica, want its last 4 rows' pages at least", rows)
	}
	if n := draining.DrainCuts(); n != 0 {
		t.Fatalf("DrainCuts = %d, want 0", n)
	}
}

// A drain never cuts a request in flight: a page the coordinator takes a
// while to answer reaches its client whole, however short the quiet time.
func TestDrainWaitsForARequestInFlight(t *testing.T) {
	g, s, answered := pageInFlight(t, 300*time.Millisecond)
	cut := drainIn(s, g, time.Millisecond, waitFor)
	if status := <-answered; status != http.StatusOK {
		t.Fatalf("the page in flight at the drain: %d, want 200", status)
	}
	if d := <-cut; d.cut != 0 || d.err != nil {
		t.Fatalf("the drain cut %d requests (%v)", d.cut, d.err)
	}
}

// When the drain's time runs out, it cuts what is in flight, and says how
// many it cut, in its result and in DrainCuts.
func TestDrainTimeoutCutsAndCounts(t *testing.T) {
	g, s, answered := pageInFlight(t, time.Minute)
	if d := <-drainIn(s, g, time.Millisecond, 100*time.Millisecond); d.cut != 1 || !errors.Is(d.err, context.DeadlineExceeded) {
		t.Fatalf("the drain cut %d requests (%v), want the 1 in flight and its deadline", d.cut, d.err)
	}
	if status := <-answered; status != 0 {
		t.Fatalf("the page cut by the drain's end: HTTP %d, want a broken connection", status)
	}
	if n := g.DrainCuts(); n != 1 {
		t.Fatalf("DrainCuts = %d, want 1", n)
	}
}

// pageInFlight serves a gateway in front of a coordinator that takes
// delay to answer a page, and starts the GET of a query's page through it;
// it returns once the gateway serves that request, with the channel that
// gets its status (0 when it was cut).
func pageInFlight(t *testing.T, delay time.Duration) (*gateway.Gateway, *gatewayServer, <-chan int) {
	t.Helper()
	c, err := coordinator.Start(coordinator.Options{BatchRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, _ := staticGateway(t, gateway.Config{}, c.Addr())
	s := serveGateway(t, g)
	_, next := page(t, http.MethodPost, s.URL+"/v1/statement", strings.NewReader("SELECT * FROM rows(3)"))
	for strings.Contains(next, "/queued/") {
		// The queued resource answers at once, whatever the page delay.
		_, next = page(t, http.MethodGet, next, nil)
	}
	c.SetPageDelay(delay)
	answered := make(chan int, 1)
	go func() {
		status, _ := pageOrError(next)
		answered <- status
	}()
	testutil.Eventually(t, waitFor, time.Millisecond, "the page's request to be in flight", func() bool { return g.InFlight() == 1 })
	return g, s, answered
}

// pageOrError is page for a request that may be cut: status 0 then.
func pageOrError(uri string) (status int, err error) {
	req, err := http.NewRequest(http.MethodGet, uri, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Presto-User", "a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}
