package realservers

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// postWithHead POSTs a statement to url with a session header of size
// bytes and returns the answer's status and whether the connection was
// closed after it; a server that closes the connection before it has the
// whole head (Jetty, once past its limit) may leave no answer to read:
// status 0, closed.
func postWithHead(t *testing.T, url, prefix string, size int) (int, bool) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, url+"/v1/statement", strings.NewReader("SELECT 1"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(prefix+"User", "alice")
	req.Header.Set(prefix+"Session", "k="+strings.Repeat("v", size))
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return 0, true
		}
		t.Fatalf("a head of %d bytes: %v", size, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Close
}

// A client's head larger than a server's Jetty takes gets 431 and a closed
// connection (the prediction): PrestoDB 0.287 refuses 16 kB already
// (Jetty's 8 kB), Trino 476 takes 900 kB and refuses 2 MB. Through the
// gateway the client gets the server's answer, or the gateway's own 431
// past its 1 MB, and no coordinator is charged: none fails, none is
// ejected, and the next statements run on both.
func TestOversizedHeadIsTheClientsFault(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		prefix := f.flavour.HeaderPrefix()
		direct := map[int]int{16 << 10: http.StatusRequestHeaderFieldsTooLarge, 2 << 20: http.StatusRequestHeaderFieldsTooLarge}
		if f.flavour == coordinator.Trino {
			direct[16<<10], direct[900<<10] = http.StatusOK, http.StatusOK
		}
		for size, want := range direct {
			status, closed := postWithHead(t, f.servers[0].URL(), prefix, size)
			if status == 0 && want == http.StatusRequestHeaderFieldsTooLarge {
				continue // closed while the head was being written: refused too
			}
			if status != want || (want == http.StatusRequestHeaderFieldsTooLarge && !closed) {
				t.Fatalf("a head of %d kB straight to %s: %d (connection closed: %v), want %d", size>>10, f.servers[0].Name(), status, closed, want)
			}
		}

		g, router := newGateway(t, f)
		srv := gateway.NewServer(g, nil, gateway.ServerLimits{})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		url := "http://" + ln.Addr().String()
		for size, want := range direct {
			for range 3 {
				// The gateway reads a head it refuses to its end (Go's
				// server), so its client always has the answer.
				if status, _ := postWithHead(t, url, prefix, size); status != want {
					t.Fatalf("a head of %d kB through the gateway: %d, want %d", size>>10, status, want)
				}
			}
		}
		for _, n := range router.Stats().Nodes {
			if n.Failures != 0 || n.Ejections != 0 || n.Ejected {
				t.Errorf("%s was charged with the client's heads: %d failures, %d ejections", n.Node.Addr, n.Failures, n.Ejections)
			}
		}
		seen := servingNodes(t, ctx(t), openThrough(t, f, url), 6, "statements after the oversized heads")
		if len(seen) != 2 {
			t.Fatalf("after the oversized heads the statements ran on %v, want both coordinators", seen)
		}
	})
}
