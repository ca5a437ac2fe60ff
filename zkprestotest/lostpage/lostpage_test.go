package lostpage_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/lostpage"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newClient is a client with keep-alives, as the driver's and the gateway's: net/http would
// replay a lost GET on a reused connection, and the proxy must keep it from hiding the loss.
func newClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

type page struct {
	NextURI string  `json:"nextUri"`
	Data    [][]any `json:"data"`
}

// get sends a request and decodes its page; the error is the transport's.
func get(t *testing.T, client *http.Client, method, uri, body string) (page, int, error) {
	t.Helper()
	req, err := http.NewRequest(method, uri, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Presto-User", "alice")
	resp, err := client.Do(req)
	if err != nil {
		return page{}, 0, err
	}
	defer resp.Body.Close()
	var p page
	if method != http.MethodHead && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatalf("%s %s: %v", method, uri, err)
		}
	}
	return p, resp.StatusCode, nil
}

// The first GET of every executing page is reset, after the coordinator answered it, and
// the reset reaches the client, keep-alives and all; the second GET gets that page; the
// submission and the queued pages pass; the links point at the proxy; the rows arrive once
// each, in order, and the statement ran once.
func TestFirstGetOfEachExecutingPageIsLost(t *testing.T) {
	for _, flavour := range []coordinator.Flavour{coordinator.Presto, coordinator.Trino} {
		t.Run(string(flavour), func(t *testing.T) {
			c, err := coordinator.Start(coordinator.Options{Flavour: flavour, BatchRows: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			proxy := lostpage.StartT(t, c.Addr())
			client := newClient(t)
			p, status, err := get(t, client, http.MethodPost, proxy.URL()+"/v1/statement", "SELECT * FROM rows(7)")
			if err != nil || status != http.StatusOK {
				t.Fatalf("submission through the proxy: %d, %v", status, err)
			}
			var rows []any
			executing := 0
			for p.NextURI != "" {
				uri := p.NextURI
				if !strings.HasPrefix(uri, proxy.URL()+"/") {
					t.Fatalf("nextUri %s does not point at the proxy %s", uri, proxy.URL())
				}
				next, _, err := get(t, client, http.MethodGet, uri, "")
				lost := err != nil
				if lost {
					if !errors.Is(err, syscall.ECONNRESET) {
						t.Fatalf("first GET of %s: %v, want a connection reset", uri, err)
					}
					if next, _, err = get(t, client, http.MethodGet, uri, ""); err != nil {
						t.Fatalf("second GET of %s: %v", uri, err)
					}
				}
				// An executing page: on the executing resource, or PrestoDB's first,
				// which its queued resource answers.
				if strings.Contains(uri, "/executing/") || len(next.Data) > 0 || (strings.Contains(next.NextURI, "/executing/") && !strings.Contains(next.NextURI, "/0")) {
					executing++
					if !lost {
						t.Fatalf("first GET of the executing page %s passed, want it lost", uri)
					}
				} else if lost {
					t.Fatalf("the queued resource's answer to %s was lost", uri)
				}
				p = next
				for _, row := range p.Data {
					rows = append(rows, row[0])
				}
			}
			if len(rows) != 7 {
				t.Fatalf("rows %v, want 1..7", rows)
			}
			for i, n := range rows {
				if n != float64(i+1) {
					t.Fatalf("rows %v, want 1..7 in order", rows)
				}
			}
			if executing < 4 || proxy.Lost() != executing {
				t.Fatalf("%d answers lost over %d executing pages, want one each (4 at least)", proxy.Lost(), executing)
			}
			if n := c.Statements(); n != 1 {
				t.Fatalf("the statement reached the coordinator %d times, want once", n)
			}
		})
	}
}

// A HEAD of an executing page passes and does not count as its first GET: the GET after it
// is still lost.
func TestHeadPassesAndLeavesTheFirstGet(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{BatchRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	proxy := lostpage.StartT(t, c.Addr())
	client := newClient(t)
	p, _, err := get(t, client, http.MethodPost, proxy.URL()+"/v1/statement", "SELECT * FROM rows(4)")
	for err == nil && p.NextURI != "" && !strings.Contains(p.NextURI, "/executing/") {
		uri := p.NextURI
		if p, _, err = get(t, client, http.MethodGet, uri, ""); errors.Is(err, syscall.ECONNRESET) {
			// PrestoDB's first page, on the queued resource, lost: again.
			p, _, err = get(t, client, http.MethodGet, uri, "")
		}
	}
	if err != nil || p.NextURI == "" {
		t.Fatalf("no executing page: %+v, %v", p, err)
	}
	before := proxy.Lost()
	if _, status, err := get(t, client, http.MethodHead, p.NextURI, ""); err != nil || status != http.StatusOK {
		t.Fatalf("HEAD %s: %d, %v; want 200", p.NextURI, status, err)
	}
	if proxy.Lost() != before {
		t.Fatalf("%d answers lost after a HEAD, want none", proxy.Lost()-before)
	}
	if _, _, err := get(t, client, http.MethodGet, p.NextURI, ""); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("first GET of %s after its HEAD: %v, want a connection reset", p.NextURI, err)
	}
	if proxy.Lost() != before+1 {
		t.Fatalf("%d answers lost, want 1", proxy.Lost()-before)
	}
}

// Any other answer passes as the target sent it, status, headers and body; the target sees
// the client's Host and Accept-Encoding, and the client's request body.
func TestOtherAnswersPassUntouched(t *testing.T) {
	type seen struct{ host, encoding, body string }
	got := make(chan seen, 1)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Host, r.Header.Get("Accept-Encoding"), string(body)}
		w.Header().Set("X-Answer", "kept")
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "short and stout")
	}))
	t.Cleanup(target.Close)
	proxy := lostpage.StartT(t, target.Listener.Addr().String())
	tr := &http.Transport{DisableKeepAlives: true, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	req, _ := http.NewRequest(http.MethodPost, proxy.URL()+"/v1/statement/queued/q/s/1", strings.NewReader("the body"))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusTeapot || resp.Header.Get("X-Answer") != "kept" || string(body) != "short and stout" {
		t.Fatalf("answer through the proxy: %d %v %q, %v", resp.StatusCode, resp.Header, body, err)
	}
	if s := <-got; s != (seen{proxy.Addr(), "", "the body"}) {
		t.Fatalf("the target saw %+v, want Host %s, no Accept-Encoding and the body", s, proxy.Addr())
	}
	if proxy.Lost() != 0 {
		t.Fatalf("%d answers lost, want none", proxy.Lost())
	}
}

// A target that does not answer gives 502 naming it; a target that is not host:port is
// refused at Start, naming it, with nothing started.
func TestTargetErrorsNameTheTarget(t *testing.T) {
	if _, err := lostpage.Start("no-port"); err == nil || !strings.Contains(err.Error(), `"no-port"`) {
		t.Fatalf("Start(no-port): %v, want an error naming the target", err)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	addr := gone.Listener.Addr().String()
	gone.Close()
	proxy := lostpage.StartT(t, addr)
	resp, err := newClient(t).Get(proxy.URL() + "/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), addr) || !strings.Contains(string(body), "/v1/info") {
		t.Fatalf("through the proxy to a closed port: %d %q, want 502 naming %s and the path", resp.StatusCode, body, addr)
	}
}

// Close cancels a request the target holds, returns, and may be called again.
func TestCloseCancelsRequestsInFlight(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		select {
		case <-r.Context().Done():
		case <-release: // the test failed: let the target close
		}
	}))
	t.Cleanup(target.Close)
	t.Cleanup(func() { close(release) })
	proxy, err := lostpage.Start(target.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client := newClient(t)
	done := make(chan error, 1)
	go func() {
		resp, err := client.Get(proxy.URL() + "/v1/statement/executing/q/s/1")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-arrived
	closed := make(chan struct{})
	go func() {
		proxy.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return while the target held a request")
	}
	<-done
	proxy.Close()
}
