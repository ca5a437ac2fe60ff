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

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/lostpage"
)

// answerOf is one answer through the gateway: status, headers and the page.
type answerOf struct {
	status int
	header http.Header
	body   []byte
	page   struct {
		NextURI string  `json:"nextUri"`
		Data    [][]any `json:"data"`
		Error   *struct {
			ErrorName string `json:"errorName"`
		} `json:"error"`
	}
}

func send(t *testing.T, method, uri string, header http.Header, body string) answerOf {
	t.Helper()
	req, err := http.NewRequest(method, uri, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, uri, err)
	}
	defer resp.Body.Close()
	a := answerOf{status: resp.StatusCode, header: resp.Header}
	if a.body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("%s %s: %v", method, uri, err)
	}
	if method != http.MethodHead && a.status == http.StatusOK {
		if err := json.Unmarshal(a.body, &a.page); err != nil {
			t.Fatalf("%s %s: %v in %s", method, uri, err, a.body)
		}
	}
	return a
}

// The coordinator repeats Started-Transaction-Id on every executing answer; the gateway
// wraps it into the same routing token each time, retries included, and the statements
// that carry it back, through either replica, reach the coordinator of the transaction.
func TestTransactionIDWrappedAlikeOnEveryPage(t *testing.T) {
	s := newSetup(t, 2, coordinator.Options{Latency: 20 * time.Millisecond})
	h := http.Header{"X-Presto-User": {"alice"}, "X-Presto-Catalog": {"hive"}, "X-Presto-Transaction-Id": {"NONE"}}
	a := send(t, http.MethodPost, s.replicas[0].URL+"/v1/statement", h, "START TRANSACTION")
	var ids []string
	for a.page.NextURI != "" {
		uri := a.page.NextURI
		for range 2 { // each page, then its retry
			a = send(t, http.MethodGet, uri, h, "")
			if a.status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", uri, a.status, a.body)
			}
			if id := a.header.Get("X-Presto-Started-Transaction-Id"); id != "" {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) < 2 {
		t.Fatalf("Started-Transaction-Id on %d answers, want every executing one", len(ids))
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("the transaction id changed between pages: %q, then %q", ids[0], id)
		}
	}
	if !strings.HasPrefix(ids[0], "zk~") {
		t.Fatalf("transaction id %q is not wrapped", ids[0])
	}
	var home *coordinator.Coordinator
	for _, c := range s.coords {
		for _, r := range c.Requests() {
			if r.SQL == "START TRANSACTION" {
				home = c
			}
		}
	}
	for i := range 4 {
		h := h.Clone()
		h.Set("X-Presto-Transaction-Id", ids[0])
		a := send(t, http.MethodPost, s.replicas[i%2].URL+"/v1/statement", h, "SELECT 'in the transaction'")
		for a.page.NextURI != "" {
			a = send(t, http.MethodGet, a.page.NextURI, h, "")
		}
		if a.status != http.StatusOK || a.page.Error != nil {
			t.Fatalf("statement %d in the transaction: %d %s", i, a.status, a.body)
		}
	}
	for _, c := range s.coords {
		n := 0
		for _, r := range c.Requests() {
			if r.SQL == "SELECT 'in the transaction'" {
				n++
			}
		}
		if want := map[bool]int{true: 4, false: 0}[c == home]; n != want {
			t.Errorf("coordinator %s ran %d of the transaction's statements, want %d", c.Name(), n, want)
		}
	}
}

// HEAD on a URI the gateway handed out reaches the coordinator, which runs it as a GET and
// drops the body; the client's GET of the same URI then gets that page, so no row is lost,
// and a drain still waits for the query: a HEAD's answer says nothing of its end.
func TestHeadOnHandedOutURI(t *testing.T) {
	s := newSetup(t, 1, coordinator.Options{BatchRows: 2})
	g := s.gateways[0]
	h := http.Header{"X-Presto-User": {"alice"}}
	a := send(t, http.MethodPost, s.replicas[0].URL+"/v1/statement", h, "SELECT * FROM rows(6)")
	g.Drain()
	var rows []any
	// An answer to a POST carries no rows (dispatchFirst); a client that
	// reads them there loses nothing.
	for _, row := range a.page.Data {
		rows = append(rows, row[0])
	}
	for a.page.NextURI != "" {
		uri := a.page.NextURI
		if strings.Contains(uri, "/executing/") {
			head := send(t, http.MethodHead, uri, h, "")
			if head.status != http.StatusOK || len(head.body) != 0 {
				t.Fatalf("HEAD %s: %d with %d bytes, want 200 without a body", uri, head.status, len(head.body))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			err := g.WaitQueries(ctx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("after a HEAD of a page, WaitQueries gave %v: the drain forgot the query", err)
			}
		}
		a = send(t, http.MethodGet, uri, h, "")
		if a.status != http.StatusOK {
			t.Fatalf("GET %s after HEAD: %d %s", uri, a.status, a.body)
		}
		for _, row := range a.page.Data {
			rows = append(rows, row[0])
		}
	}
	if len(rows) != 6 {
		t.Fatalf("rows %v, want 1..6", rows)
	}
	for i, n := range rows {
		if n != float64(i+1) {
			t.Fatalf("rows %v, want 1..6 in order", rows)
		}
	}
}

// Every executing page's first answer is lost after the coordinator sent it: the
// gateway's retry of the same token gets the page again, so the client reads every row
// once, in order.
func TestRetriedPageNeitherLostNorDuplicated(t *testing.T) {
	var proxies []*lostpage.Proxy
	s := newSetupFor(t, 1, coordinator.Options{BatchRows: 3}, "", func(c *coordinator.Coordinator) string {
		p := lostpage.StartT(t, c.Addr())
		proxies = append(proxies, p)
		return p.Addr()
	})
	n, err := statementRowsInOrder(t, s.replicas[0].URL, "SELECT * FROM rows(20)")
	if err != nil || n != 20 {
		t.Fatalf("%d rows, %v; want 20", n, err)
	}
	if d := proxies[0].Lost(); d < 7 {
		t.Fatalf("%d answers dropped, want one for each of the 7 pages", d)
	}
}

// statementRowsInOrder runs sql through base and checks its rows are 1..n in order.
func statementRowsInOrder(t *testing.T, base, sql string) (int, error) {
	t.Helper()
	h := http.Header{"X-Presto-User": {"alice"}}
	a := send(t, http.MethodPost, base+"/v1/statement", h, sql)
	if len(a.page.Data) > 0 {
		// Neither server puts rows there, and trino-go-client, which reads
		// only the id and nextUri of that answer, would lose them.
		t.Errorf("%s: the answer to the POST carries %d rows", sql, len(a.page.Data))
	}
	n := 0
	for {
		if a.status != http.StatusOK {
			return n, errors.New(string(a.body))
		}
		for _, row := range a.page.Data {
			n++
			if row[0] != float64(n) {
				t.Fatalf("row %d arrived as %v", n, row[0])
			}
		}
		if a.page.NextURI == "" {
			return n, nil
		}
		a = send(t, http.MethodGet, a.page.NextURI, h, "")
	}
}
