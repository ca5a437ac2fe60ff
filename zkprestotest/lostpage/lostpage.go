// Package lostpage is an HTTP proxy for the tests of page retries: it stands
// in front of a coordinator, forwards every request to it, and loses the
// first answer to each executing page. The coordinator has answered that
// GET in full (as far as it knows, the client has the page), but the proxy
// resets the client's connection instead of passing the answer on, so the
// client sees a transport error and must GET the same nextUri again, and
// must then get the same page, neither losing nor repeating rows.
//
// A page is an executing one when its path holds /v1/statement/executing/,
// as on Presto and Trino alike (trino and presto:
// ExecutingStatementResource, @Path("/v1/statement/executing")), or when a
// GET of a queued link is answered with the executing resource's page, rows
// or a link to the executing resource, as PrestoDB's queued resource
// answers the first page once the query is dispatched (prestodb:
// QueuedStatementResource.Query.toResponse); submissions, the queued
// resource's own answers, HEADs, cancels and every other request pass
// untouched, and so does every later GET of a page already lost once. The proxy forwards
// the Host header the client sent, so the coordinator's links point back at
// the proxy and every page of a query goes through it.
//
// The proxy answers one request a connection (it sends Connection: close),
// so that each lost answer is on a fresh connection: net/http's Transport
// replays by itself a GET whose reused keep-alive connection failed before
// the first byte of an answer, and never one on a fresh connection
// (net/http: persistConn.shouldRetryRequest). The loss so reaches the
// client's own retry, which is the code under test.
//
// Everything is on 127.0.0.1 and plain HTTP. Close stops every goroutine
// and connection the proxy opened.
package lostpage

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// executingPath marks the executing pages' URIs (trino and presto:
// ExecutingStatementResource), queuedPath the queued resource's.
const (
	executingPath = "/v1/statement/executing/"
	queuedPath    = "/v1/statement/queued/"
)

// Proxy forwards requests on a loopback port to one coordinator and loses
// the first answer to each executing page. It is safe for concurrent use.
type Proxy struct {
	target string
	srv    *httptest.Server
	tr     *http.Transport
	stop   context.CancelFunc // cancels the requests in flight to the target

	mu     sync.Mutex
	seen   map[string]bool // the executing pages (path and query) lost once
	lost   int
	closed bool
}

// Start listens on 127.0.0.1 at a free port and forwards to target, the
// coordinator's "host:port". The caller must Close the proxy.
func Start(target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("lostpage: target %q is not host:port: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lostpage: listen on 127.0.0.1 for %s: %w", target, err)
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &Proxy{
		target: target,
		// No compression of its own: the coordinator sees the client's Accept-Encoding and the
		// client gets the coordinator's bytes.
		tr:   &http.Transport{DisableCompression: true},
		stop: stop,
		seen: map[string]bool{},
	}
	// httptest's server, for its Close: it waits for every handler, where http.Server's does not.
	p.srv = &httptest.Server{Listener: ln, Config: &http.Server{
		Handler:     http.HandlerFunc(p.serve),
		BaseContext: func(net.Listener) context.Context { return ctx },
	}}
	p.srv.Config.SetKeepAlivesEnabled(false) // see the package doc: no replay by net/http
	p.srv.Start()
	return p, nil
}

// StartT starts a proxy to target for a test and closes it at the test's
// end, failing the test if it cannot start.
func StartT(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p, err := Start(target)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

// Addr returns the proxy's "127.0.0.1:port", to put where the coordinator's
// address would go: a DSN's host, a gateway's node.
func (p *Proxy) Addr() string { return p.srv.Listener.Addr().String() }

// URL returns "http://" and Addr.
func (p *Proxy) URL() string { return p.srv.URL }

// Target returns the coordinator's address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Lost returns how many answers the proxy has lost: one for each executing
// page fetched through it so far.
func (p *Proxy) Lost() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

// Close stops the proxy: the requests in flight to the coordinator are
// cancelled, the connections closed, and Close returns once every handler
// has. It is idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	closed := p.closed
	p.closed = true
	p.mu.Unlock()
	if closed {
		return
	}
	p.stop()
	p.srv.Close()
	p.tr.CloseIdleConnections()
}

// loseFirst reports whether r's answer is to be lost: the first GET of an
// executing page.
func (p *Proxy) loseFirst(r *http.Request) bool {
	if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, executingPath) {
		return false
	}
	return p.loseOnce(r)
}

// loseOnce reports whether r's answer is the first to the page r asks for,
// and counts it lost.
func (p *Proxy) loseOnce(r *http.Request) bool {
	page := r.URL.RequestURI()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[page] {
		return false
	}
	p.seen[page] = true
	p.lost++
	return true
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL = &url.URL{Scheme: "http", Host: p.target, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	out.Host = r.Host // the coordinator builds its links on the proxy's address
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, fmt.Sprintf("lostpage: %s %s to %s: %v", r.Method, r.URL.Path, p.target, err), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, queuedPath) {
		p.serveQueued(w, r, resp)
		return
	}
	if p.loseFirst(r) {
		// Read the answer whole, so that the coordinator has sent all of it, then lose it.
		_, _ = io.Copy(io.Discard, resp.Body)
		reset(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil {
		panic(http.ErrAbortHandler) // a short answer, cut: the client must not take it for whole
	}
}

// serveQueued passes on the answer to a GET of a queued link, or loses it
// when it is the executing resource's page (PrestoDB's first page) asked for
// the first time.
func (p *Proxy) serveQueued(w http.ResponseWriter, r *http.Request, resp *http.Response) {
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if resp.StatusCode == http.StatusOK && executingPage(body, resp.Header.Get("Content-Encoding")) && p.loseOnce(r) {
		reset(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// executingPage reports whether body, a queued link's answer, is the
// executing resource's page: rows, or a link to the executing resource past
// its first token (the queued resource's own answer points to token 0).
func executingPage(body []byte, encoding string) bool {
	var in io.Reader = bytes.NewReader(body)
	if strings.EqualFold(encoding, "gzip") {
		gz, err := gzip.NewReader(in)
		if err != nil {
			return false
		}
		in = gz
	}
	var page struct {
		NextURI string          `json:"nextUri"`
		Data    json.RawMessage `json:"data"`
	}
	if json.NewDecoder(in).Decode(&page) != nil {
		return false
	}
	if len(page.Data) > 0 && string(page.Data) != "null" {
		return true
	}
	u, err := url.Parse(page.NextURI)
	return err == nil && strings.Contains(u.Path, executingPath) && !strings.HasSuffix(u.Path, "/0")
}

// reset closes the client's connection with a TCP reset and no answer: SO_LINGER 0, then
// close.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // cannot hijack: abort the answer, which closes the connection
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
