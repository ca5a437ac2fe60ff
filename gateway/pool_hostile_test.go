package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/routing"
)

// nodeStats is what router r has on the coordinator at addr.
func nodeStats(t *testing.T, r *routing.Router, addr string) routing.NodeStats {
	t.Helper()
	for _, n := range r.Stats().Nodes {
		if n.Node.Addr == addr {
			return n
		}
	}
	t.Fatalf("no stats for %s", addr)
	return routing.NodeStats{}
}

// Break 2: a coordinator whose answer's head never ends has the gateway
// read at most 10 MB of it (as Go's transport), and the failure counts
// against that coordinator.
func TestGatewayBoundsACoordinatorsEndlessHead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var sent atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(hostileBound))
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		line := "X-Endless: " + strings.Repeat("a", 1000) + "\r\n"
		n, _ := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
		sent.Add(int64(n))
		// Up to 64 MB: the head is never ended.
		for range 64 << 10 {
			n, err := io.WriteString(c, line)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	addr := ln.Addr().String()
	g, router := staticGateway(t, gateway.Config{}, addr)
	s := serveGateway(t, g)
	resp, err := http.Post(s.URL+"/v1/statement", "text/plain", strings.NewReader("SELECT 1"))
	if err != nil {
		t.Fatal(err)
	}
	var queued map[string]any
	json.NewDecoder(resp.Body).Decode(&queued)
	resp.Body.Close()
	ln.Close()
	<-done
	// The statement may have reached it: the query fails at its next page.
	next, _ := queued["nextUri"].(string)
	if next == "" {
		t.Fatalf("an endless head from the coordinator: %s %v, want a query that fails", resp.Status, queued)
	}
	if code, page := do(t, http.MethodGet, next); failedPageError(code, page) != "ZKPRESTO_COORDINATOR_FAILED" {
		t.Errorf("an endless head from the coordinator: %d %v, want the query failed", code, page)
	}
	// What the coordinator got out before the gateway let go: the limit,
	// and what the sockets between them hold.
	if n, limit := sent.Load(), int64(10<<20+16<<20); n > limit {
		t.Errorf("the gateway took %d bytes of a head, more than %d", n, limit)
	}
	if st := nodeStats(t, router, addr); st.Failures == 0 && st.Ejections == 0 {
		t.Errorf("the endless head was not counted against the coordinator: %+v", st)
	}
}

// Break 4: a coordinator that refuses a client's head as too large (Go's
// server: 431 past 1 MB) has its answer relayed to the client, whose error
// it is, and is charged with nothing.
func TestGatewayRelaysACoordinatorsRefusalOfTheClientsHead(t *testing.T) {
	coord := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a statement with a 3.5 MB head was served: %s", r.URL)
	}))
	t.Cleanup(coord.Close)
	addr := strings.TrimPrefix(coord.URL, "http://")
	// Socket buffers smaller than the head, as between hosts: the rest of
	// the head cannot all be handed to the kernel once the coordinator
	// stops reading.
	small := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetWriteBuffer(64 << 10)
			tc.SetReadBuffer(64 << 10)
		}
		return c, err
	}}
	t.Cleanup(small.CloseIdleConnections)
	g, router := staticGateway(t, gateway.Config{Client: &http.Client{Transport: small}}, addr)
	s := serveGateway(t, g)
	for i := range 3 {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/statement", strings.NewReader("SELECT 1"))
		req.Header.Set("X-Presto-User", "a")
		req.Header.Set("X-Presto-Session", "k="+strings.Repeat("v", 3<<20+512<<10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("statement %d, a 3.5 MB head the coordinator refuses: %s %s, want its 431", i, resp.Status, body)
		}
	}
	if st := nodeStats(t, router, addr); st.Failures != 0 || st.Ejections != 0 || st.Ejected {
		t.Errorf("the client's oversized head was counted against the coordinator: %d failures, %d ejections", st.Failures, st.Ejections)
	}
}

// A coordinator reached over https that writes its queued nextUri as
// http (a proxy in front of it that ends TLS, say) never gets the
// client's credentials in plaintext: the gateway's first GET, like every
// follow-up, goes to the base it reaches that coordinator at, never to the
// scheme and host the coordinator wrote.
func TestFirstGetKeepsTheCoordinatorsScheme(t *testing.T) {
	var gets, plainGets atomic.Int32
	c := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/statement":
			io.WriteString(w, `{"id":"q1","nextUri":"http://`+r.Host+`/v1/statement/queued/q1/s/1","stats":{"state":"QUEUED"}}`)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/statement/queued/q1/"):
			if r.Header.Get("Authorization") == "Basic c2VjcmV0" {
				gets.Add(1)
			}
			io.WriteString(w, `{"id":"q1","stats":{"state":"FINISHED"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	// Go's TLS server reports plaintext on its port to its error log.
	c.Config.ErrorLog = log.New(writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), "HTTP request to an HTTPS server") {
			plainGets.Add(1)
		}
		return len(p), nil
	}), "", 0)
	c.StartTLS()
	t.Cleanup(c.Close)
	g, _ := staticGateway(t, gateway.Config{Client: c.Client(), TLS: true}, strings.TrimPrefix(c.URL, "https://"))
	s := serveGateway(t, g)
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/statement", strings.NewReader("SELECT 1"))
	req.Header.Set("X-Presto-User", "alice")
	req.Header.Set("Authorization", "Basic c2VjcmV0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || gets.Load() != 1 || plainGets.Load() != 0 {
		t.Fatalf("%s; the first GET reached the coordinator over https %d times and in plaintext %d, want once and never",
			resp.Status, gets.Load(), plainGets.Load())
	}
}

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
