package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/nginx"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// hostileBound bounds every exchange of these tests: far above what each
// takes (even under the race detector on a loaded machine), so that a
// gateway that never answers fails the test instead of hanging it.
const hostileBound = 30 * time.Second

// rawClient dials the gateway at url (http://host:port) and bounds the
// connection's life.
func rawClient(t *testing.T, url string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(hostileBound))
	t.Cleanup(func() { c.Close() })
	return c
}

// readAnswer reads one answer from br, its body whole.
func readAnswer(t *testing.T, br *bufio.Reader, method string) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the gateway's answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the gateway's answer's body: %v", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp
}

// closedAfter reports whether br's connection ends with no other answer.
func closedAfter(br *bufio.Reader) bool {
	b, err := br.ReadByte()
	if err == nil {
		_ = b
		return false
	}
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// hostileGateway is a gateway over one simulated coordinator, served as
// zkpresto gateway serves it, with timeouts that a test sees pass.
func hostileGateway(t *testing.T, timeouts gateway.ServerLimits) (*gatewayServer, *coordinator.Coordinator) {
	t.Helper()
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, _ := staticGateway(t, gateway.Config{}, c.Addr())
	return serveGatewayWith(t, g, timeouts), c
}

// Break 1: a header name that is not a token (a space before the colon)
// is refused with 400 and the connection closed, so that a body it hides
// is never read as the next request (request smuggling).
func TestServerRefusesHeaderNameNotAToken(t *testing.T) {
	s, coord := hostileGateway(t, gateway.ServerLimits{})
	hidden := "GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n"
	c := rawClient(t, s.URL)
	fmt.Fprintf(c, "POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Presto-User: a\r\nContent-Length : %d\r\n\r\n%s", len(hidden), hidden)
	br := bufio.NewReader(c)
	resp := readAnswer(t, br, http.MethodPost)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a header name with a space before its colon: %s, want 400", resp.Status)
	}
	if !closedAfter(br) {
		t.Error("the connection stayed open after the refused request: its body would be read as the next one")
	}
	if n := len(coord.Requests()); n != 0 {
		t.Errorf("%d statements reached the coordinator", n)
	}
}

// Break 3: a client's head larger than the server's limit gets 431, and
// the gateway reads no more of it than that limit: many short headers or
// one long line, from many clients at once.
func TestServerBoundsOversizedHeads(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	coord := c
	g, _ := staticGateway(t, gateway.Config{}, c.Addr())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingListener{Listener: ln}
	s := serveGatewayOn(t, g, gateway.ServerLimits{}, counted)
	const clients, size = 4, 2 * gateway.MaxHeaderBytes
	for _, shape := range []struct {
		name string
		line func(i int) string
	}{
		{"short headers", func(i int) string { return fmt.Sprintf("X-Presto-Session: k%d=%s\r\n", i, strings.Repeat("v", 40)) }},
		{"one long line", func(int) string { return "X-Presto-Session: k=" + strings.Repeat("v", size) + "\r\n" }},
	} {
		t.Run(shape.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- oversizedHead(s.URL, size, shape.line)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			// What the server may read of a head: its limit, the 4 KiB
			// net/http reads past it, and a socket read's worth of slack.
			if most, limit := counted.most(), int64(gateway.MaxHeaderBytes+4<<10+64<<10); most > limit {
				t.Errorf("the gateway read %d bytes of one connection's head before refusing it, more than %d", most, limit)
			}
		})
	}
	if n := len(coord.Requests()); n != 0 {
		t.Errorf("%d statements reached the coordinator", n)
	}
}

// oversizedHead sends a statement whose head grows to size bytes of lines
// and reports an error unless the answer is 431 and the gateway took at
// most its limit (with its buffer) before answering.
func oversizedHead(url string, size int, line func(int) string) error {
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(hostileBound))
	sent := make(chan int, 1)
	go func() {
		w := bufio.NewWriterSize(c, 64<<10)
		n, _ := fmt.Fprintf(w, "POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Presto-User: a\r\n")
		for i := 0; n < size; i++ {
			m, err := w.WriteString(line(i))
			n += m
			if err != nil {
				break
			}
		}
		if err := w.Flush(); err == nil {
			fmt.Fprintf(c, "Content-Length: 8\r\n\r\nSELECT 1")
		}
		sent <- n
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodPost})
	if err != nil {
		return fmt.Errorf("a head of %d bytes: no answer: %v", size, err)
	}
	resp.Body.Close()
	c.Close() // ends the writer
	<-sent
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		return fmt.Errorf("a head of %d bytes: %s, want 431", size, resp.Status)
	}
	return nil
}

// Break 5: a statement whose body stalls gets 408 and its connection
// closed once the body's read deadline passes.
func TestServerBoundsTheTimeToReadAStatement(t *testing.T) {
	s, coord := hostileGateway(t, gateway.ServerLimits{Body: 200 * time.Millisecond})
	c := rawClient(t, s.URL)
	fmt.Fprintf(c, "POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Presto-User: a\r\nContent-Length: 1000\r\n\r\nSELECT")
	br := bufio.NewReader(c)
	resp := readAnswer(t, br, http.MethodPost)
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("a statement body that stalls: %s, want 408", resp.Status)
	}
	if !closedAfter(br) {
		t.Error("the connection stayed open after the stalled body")
	}
	if n := len(coord.Requests()); n != 0 {
		t.Errorf("%d statements reached the coordinator", n)
	}
}

// Break 8: a client that half-closes its connection after its request
// still gets its answer. (A statement from such a client is another
// matter: net/http, like nginx, takes the end of its stream for a client
// that left, and the statement is abandoned, with a 503 when nothing was
// sent.)
func TestServerAnswersAHalfClosedClient(t *testing.T) {
	s, _ := hostileGateway(t, gateway.ServerLimits{})
	c := rawClient(t, s.URL)
	fmt.Fprintf(c, "GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n")
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	resp := readAnswer(t, bufio.NewReader(c), http.MethodGet)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/info, then a half-close: %s, want 200", resp.Status)
	}
}

// Break 8: an Expect other than 100-continue gets 417, and nothing is
// forwarded.
func TestServerRefusesAnUnknownExpectation(t *testing.T) {
	s, coord := hostileGateway(t, gateway.ServerLimits{})
	c := rawClient(t, s.URL)
	fmt.Fprintf(c, "POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Presto-User: a\r\nExpect: 200-ok\r\nContent-Length: 8\r\n\r\nSELECT 1")
	resp := readAnswer(t, bufio.NewReader(c), http.MethodPost)
	if resp.StatusCode != http.StatusExpectationFailed {
		t.Fatalf("Expect: 200-ok: %s, want 417", resp.Status)
	}
	if n := len(coord.Requests()); n != 0 {
		t.Errorf("%d statements reached the coordinator", n)
	}
}

// Break 8: plaintext HTTP sent to the TLS port gets a 400 that says so,
// not a silent close.
func TestServerAnswersPlaintextOnTheTLSPort(t *testing.T) {
	addr := serveTLSGateway(t, gateway.ServerLimits{})
	c := rawClient(t, "http://"+addr)
	fmt.Fprintf(c, "GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n")
	resp := readAnswer(t, bufio.NewReader(c), http.MethodGet)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("plaintext on the TLS port: %s, want 400", resp.Status)
	}
}

// serveTLSGateway serves a gateway with limits over TLS on a loopback
// port, until the test ends, and returns its address.
func serveTLSGateway(t *testing.T, limits gateway.ServerLimits) string {
	t.Helper()
	files, err := testtls.Generate(t.TempDir(), "gateway")
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := files.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	g, _ := staticGateway(t, gateway.Config{}, "127.0.0.1:1")
	srv := gateway.NewServer(g, nil, limits)
	srv.TLSConfig = tlsCfg
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { srv.Close(); <-done })
	return ln.Addr().String()
}

// countingListener's connections count the bytes the server reads.
type countingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*countingConn
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, cc)
	l.mu.Unlock()
	return cc, nil
}

// most is the largest count of bytes read from one connection.
func (l *countingListener) most() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var most int64
	for _, c := range l.conns {
		most = max(most, c.read.Load())
	}
	return most
}

type countingConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// Break 8: a handler streaming a long answer to a client that stopped
// reading ends once the write deadline passes, instead of waiting for
// ever; the coordinator's connection is let go with it.
func TestServerGivesUpOnAClientThatStopsReading(t *testing.T) {
	row := `["` + strings.Repeat("x", 1000) + `"],`
	coordGone := make(chan struct{})
	coord := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(coordGone)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"20260101_000000_00000_aaaaa","columns":[{"name":"x","type":"varchar"}],"data":[`)
		// Far more than the sockets between here and the client hold.
		for range 256 << 10 {
			if _, err := io.WriteString(w, row); err != nil {
				return
			}
		}
		io.WriteString(w, `["x"]]}`)
	}))
	t.Cleanup(coord.Close)
	g, _ := staticGateway(t, gateway.Config{}, strings.TrimPrefix(coord.URL, "http://"))
	served := make(chan struct{}, 1)
	s := serveGatewayWith(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { served <- struct{}{} }() // it ends with http.ErrAbortHandler
		g.ServeHTTP(w, r)
	}), gateway.ServerLimits{Write: 300 * time.Millisecond})
	c := rawClient(t, s.URL)
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(c, "POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Presto-User: a\r\nContent-Length: 8\r\n\r\nSELECT 1")
	select {
	case <-served:
	case <-time.After(hostileBound):
		t.Fatal("the handler still streams to a client that stopped reading")
	}
	select {
	case <-coordGone:
	case <-time.After(hostileBound):
		t.Fatal("the coordinator's answer is still being read for a client that stopped reading")
	}
}

// What net/http does not refuse, a request framed both by Content-Length
// and by chunked Transfer-Encoding, Debian's nginx in front of the gateway
// refuses with 400, and forwards nothing of it.
func TestNginxRefusesAmbiguousFraming(t *testing.T) {
	s, coord := hostileGateway(t, gateway.ServerLimits{})
	ngx := nginx.StartT(t, nginx.Options{Upstream: strings.TrimPrefix(s.URL, "http://")})
	c := rawClient(t, ngx.URL())
	fmt.Fprintf(c, "POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Presto-User: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n8\r\nSELECT 1\r\n0\r\n\r\n")
	resp := readAnswer(t, bufio.NewReader(c), http.MethodPost)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("Content-Length and Transfer-Encoding through nginx: %s, want 400", resp.Status)
	}
	if n := len(coord.Requests()); n != 0 {
		t.Errorf("%d statements reached the coordinator", n)
	}
}

// The deadlines roll: a statement whose body keeps coming, slower than
// its whole within the body timeout, is read; an answer that its client
// keeps reading, for longer than the write timeout, arrives whole.
func TestServerDeadlinesRollWhileThereIsProgress(t *testing.T) {
	const rows = 6 << 10 // of 1 KB: more than the sockets between gateway and client hold
	row := `["` + strings.Repeat("x", 1000) + `"],`
	coord := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"20260101_000000_00000_aaaaa","columns":[{"name":"x","type":"varchar"}],"data":[`)
		for range rows {
			io.WriteString(w, row)
		}
		io.WriteString(w, `["x"]]}`)
	}))
	t.Cleanup(coord.Close)
	g, _ := staticGateway(t, gateway.Config{}, strings.TrimPrefix(coord.URL, "http://"))
	s := serveGatewayWith(t, g, gateway.ServerLimits{Body: time.Second, Write: time.Second})

	c := rawClient(t, s.URL)
	c.(*net.TCPConn).SetReadBuffer(64 << 10)
	statement := "SELECT x FROM t WHERE x = '" + strings.Repeat("y", 30) + "'"
	fmt.Fprintf(c, "POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Presto-User: a\r\nContent-Length: %d\r\n\r\n", len(statement))
	// The body in pieces 50 ms apart: 1.5 s in all, each piece well
	// within the body's deadline.
	for i := 0; i < len(statement); i += 2 {
		if _, err := io.WriteString(c, statement[i:min(i+2, len(statement))]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The answer read slowly, 64 KiB every 20 ms (about 2 s for 6 MB),
	// each read well within the write deadline.
	br := bufio.NewReaderSize(&pacedReader{r: c, every: 20 * time.Millisecond, size: 64 << 10}, 64<<10)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodPost})
	if err != nil {
		t.Fatalf("a statement sent slowly: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a statement sent slowly: %s, want 200", resp.Status)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || n < rows*int64(len(row)) {
		t.Fatalf("an answer read slowly: %d bytes, %v; want all %d", n, err, rows*len(row))
	}
}

// pacedReader reads at most size bytes at a time, every so often.
type pacedReader struct {
	r     io.Reader
	every time.Duration
	size  int
}

func (p *pacedReader) Read(b []byte) (int, error) {
	time.Sleep(p.every)
	return p.r.Read(b[:min(len(b), p.size)])
}

// Break 3, in total: the heads being read at once over all connections
// stay within the server's budget. A client that holds a large head
// unfinished takes its part of the budget; another's head that would go
// past it is refused (400, and closed), the gateway having read no more
// of it than what was left; once the first client leaves, a statement
// goes through.
func TestServerBoundsTheHeadsInFlight(t *testing.T) {
	const budget, held = 256 << 10, 200 << 10
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, _ := staticGateway(t, gateway.Config{}, c.Addr())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingListener{Listener: ln}
	s := serveGatewayOn(t, g, gateway.ServerLimits{HeadBytesInFlight: budget}, counted)
	head := func(c net.Conn, size int) {
		fmt.Fprintf(c, "POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Presto-User: a\r\n")
		line := "X-Presto-Session: k=" + strings.Repeat("v", 1000) + "\r\n"
		for n := 0; n < size; n += len(line) {
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	}
	first := rawClient(t, s.URL)
	head(first, held) // and never ended
	waitUntil(t, "the gateway to read the first head", func() bool { return counted.total() >= held })

	second := rawClient(t, s.URL)
	go head(second, held)
	// Its body may be cut by the reset of a connection closed unread.
	resp, err := http.ReadResponse(bufio.NewReader(second), &http.Request{Method: http.MethodPost})
	if err != nil {
		t.Fatalf("a head past the budget: %v, want 400", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a head past the budget: %s, want 400", resp.Status)
	}
	if total, limit := counted.total(), int64(budget+64<<10); total > limit {
		t.Errorf("the gateway read %d bytes of heads at once, more than its budget of %d (and slack)", total, budget)
	}
	first.Close()
	waitUntil(t, "the first client's head to be given back", func() bool {
		return statementStatus(t, s.URL) == http.StatusOK
	})
	// A head read is given back once its handler runs: requests one after
	// the other on one connection, their heads more than the budget in all.
	keep := rawClient(t, s.URL)
	br := bufio.NewReader(keep)
	pad := strings.Repeat("p", 2000)
	for i := range 2 * budget / len(pad) {
		fmt.Fprintf(keep, "GET /v1/info HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n", pad)
		if resp := readAnswer(t, br, http.MethodGet); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d on one connection: %s", i, resp.Status)
		}
	}
}

// statementStatus is the status of the answer to a small statement.
func statementStatus(t *testing.T, url string) int {
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/statement", strings.NewReader("SELECT 1"))
	req.Header.Set("X-Presto-User", "a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// waitUntil polls cond until it holds, for at most hostileBound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(hostileBound); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("waited %v for %s", hostileBound, what)
}

// total is the count of bytes read from every connection.
func (l *countingListener) total() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, c := range l.conns {
		n += c.read.Load()
	}
	return n
}

// A client that half-closes while the coordinator takes its statement
// counts as gone (net/http and nginx read the end of its stream so): the
// query the coordinator accepted is cancelled, and the client never gets
// an empty 200 for an answer (its connection is cut instead).
func TestServerCutsAClientGoneDuringTheSubmission(t *testing.T) {
	got, release := make(chan struct{}), make(chan struct{})
	deleted := make(chan string, 1)
	var coord *httptest.Server
	coord = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			io.Copy(io.Discard, r.Body)
			close(got)
			<-release
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"20260101_000000_00000_aaaaa","nextUri":"%s/v1/statement/queued/20260101_000000_00000_aaaaa/y/1","stats":{"state":"QUEUED"}}`, coord.URL)
		case http.MethodDelete:
			deleted <- r.URL.Path
		}
	}))
	t.Cleanup(coord.Close)
	g, _ := staticGateway(t, gateway.Config{}, strings.TrimPrefix(coord.URL, "http://"))
	gone := make(chan struct{})
	s := serveGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		context.AfterFunc(r.Context(), func() { close(gone) })
		g.ServeHTTP(w, r)
	}))
	c := rawClient(t, s.URL)
	fmt.Fprintf(c, "POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Presto-User: a\r\nContent-Length: 8\r\n\r\nSELECT 1")
	<-got
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	<-gone // the gateway has seen the end of the client's stream
	close(release)
	if resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodPost}); err == nil {
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK && len(body) == 0 {
			t.Errorf("a client gone during the submission got an empty 200")
		}
	}
	select {
	case p := <-deleted:
		if !strings.Contains(p, "20260101_000000_00000_aaaaa") {
			t.Errorf("DELETE of %s", p)
		}
	case <-time.After(hostileBound):
		t.Error("the query of a client gone during the submission was not cancelled")
	}
}

// Heads of many short fields cost net/http several times their bytes: ten
// clients at once, each with a head of 200 kB in some 18,000 fields, get
// 431 (or a closed connection) once a head passes the server's limit of
// fields, and the gateway allocates less than its budget of heads in all
// while it reads them; each field is charged what parsing it costs.
func TestServerBoundsTheFieldsOfAHead(t *testing.T) {
	const clients, headSize, budget = 10, 200 << 10, 4 << 20
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, _ := staticGateway(t, gateway.Config{}, c.Addr())
	s := serveGatewayWith(t, g, gateway.ServerLimits{HeadBytesInFlight: budget})
	var head bytes.Buffer
	head.WriteString("POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Presto-User: a\r\nContent-Length: 8\r\n")
	fields := 0
	for ; head.Len() < headSize; fields++ {
		fmt.Fprintf(&head, "h%d: v\r\n", fields)
	}
	head.WriteString("\r\nSELECT 1")
	conns := make([]net.Conn, clients)
	for i := range conns {
		conns[i] = rawClient(t, s.URL)
	}
	runtime.GC()
	before := allocatedBytes()
	statuses := make([]int, clients)
	var wg sync.WaitGroup
	for i, conn := range conns {
		wg.Go(func() {
			go conn.Write(head.Bytes()) // fails once the gateway closes
			resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodPost})
			if err == nil {
				statuses[i] = resp.StatusCode
				resp.Body.Close()
			}
			conn.Close()
		})
	}
	wg.Wait()
	allocated := allocatedBytes() - before
	for i, status := range statuses {
		if status != 0 && status != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("client %d, a head of %d fields: %d, want 431 or a closed connection", i, fields, status)
		}
	}
	t.Logf("%d heads of %d fields: %d kB allocated", clients, fields, allocated>>10)
	if allocated > budget {
		t.Errorf("reading %d heads of %d kB of short fields allocated %d MiB, more than the budget of heads, %d MiB",
			clients, headSize>>10, allocated>>20, budget>>20)
	}
	if status := statementStatus(t, s.URL); status != http.StatusOK {
		t.Errorf("a statement after the heads: %d", status)
	}
}

// allocatedBytes is the bytes allocated on the heap since the program
// started: what a piece of work allocates, whenever the collector runs.
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Under TLS, which hides the head from the count before net/http parses
// it, a head with too many fields still gets 431, once parsed.
func TestServerBoundsTheFieldsOfAHeadUnderTLS(t *testing.T) {
	addr := serveTLSGateway(t, gateway.ServerLimits{MaxHeaderFields: 100})
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(hostileBound))
	var head bytes.Buffer
	head.WriteString("GET /v1/info HTTP/1.1\r\nHost: x\r\n")
	for i := range 200 {
		fmt.Fprintf(&head, "h%d: v\r\n", i)
	}
	head.WriteString("\r\n")
	go c.Write(head.Bytes())
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodGet})
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("a head of 200 fields past a limit of 100, under TLS: %s, want 431", resp.Status)
		}
	} else {
		t.Errorf("a head of 200 fields past a limit of 100, under TLS: %v, want 431", err)
	}
}

// A statement of many short lines, sent in the same packet as its head,
// is not taken for a head of too many fields: the lines of a body that
// net/http reads ahead of its handler are not the head's, whatever the
// request (a GET's body, which /v1/info does not read, too), and the
// connection goes on to the next request.
func TestServerCountsTheFieldsOfTheHeadNotOfTheBody(t *testing.T) {
	s, _ := hostileGateway(t, gateway.ServerLimits{})
	statement := "SELECT 1" + strings.Repeat("\n", 2000)
	conn := rawClient(t, s.URL)
	br := bufio.NewReader(conn)
	fmt.Fprintf(conn, "POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Presto-User: a\r\nContent-Length: %d\r\n\r\n%s", len(statement), statement)
	if resp := readAnswer(t, br, http.MethodPost); resp.StatusCode != http.StatusOK {
		t.Errorf("a statement of 2000 lines: %s, want 200", resp.Status)
	}

	conn = rawClient(t, s.URL)
	br = bufio.NewReader(conn)
	body := strings.Repeat("x\n", 2000)
	fmt.Fprintf(conn, "GET /v1/info HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if resp := readAnswer(t, br, http.MethodGet); resp.StatusCode != http.StatusOK {
		t.Fatalf("a GET with a body: %s, want 200", resp.Status)
	}
	fmt.Fprintf(conn, "GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp := readAnswer(t, br, http.MethodGet); resp.StatusCode != http.StatusOK {
		t.Errorf("the request after a body of 2000 lines the handler left unread: %s, want 200", resp.Status)
	}
}
