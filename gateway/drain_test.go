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
