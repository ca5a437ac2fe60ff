package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// countingGateway is a gateway in front of addr whose connections to the
// coordinator are counted as they are dialled.
func countingGateway(t *testing.T, addr string) (*gatewayServer, *atomic.Int64) {
	t.Helper()
	dials := new(atomic.Int64)
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(transport.CloseIdleConnections)
	g, _ := staticGateway(t, gateway.Config{Client: &http.Client{Transport: transport}}, addr)
	return serveGateway(t, g), dials
}

// The gateway keeps its connections to a coordinator: statements one
// after the other, each a POST and its GETs, all travel on the one
// connection the first one dialled, for the client's gzip or not.
func TestCoordinatorConnectionIsReused(t *testing.T) {
	for name, header := range map[string]map[string]string{
		"gzip":     nil, // Go's transport asks for it, and decodes it
		"identity": {"Accept-Encoding": "identity"},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := coordinator.Start(coordinator.Options{BatchRows: 4})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			srv, dials := countingGateway(t, c.Addr())
			const statements = 30
			for range statements {
				if n := runStatement(t, srv.URL, "SELECT * FROM rows(10)", header, nil); n != 10 {
					t.Fatalf("got %d rows, want 10", n)
				}
			}
			if n := dials.Load(); n != 1 {
				t.Errorf("%d statements (a POST and its GETs each) dialled the coordinator %d times, want once", statements, n)
			}
		})
	}
}

// An answer to the POST is relayed whole however long its body takes to
// arrive: a coordinator that answers with the rows at once, in a body of
// several MB written in pieces.
func TestLargeAnswerToThePOSTArrivesWhole(t *testing.T) {
	const rows = 200_000
	coord := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/statement" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"q1","infoUri":"http://%s/ui/query.html?q1","columns":[{"name":"n","type":"bigint"}],"data":[`, r.Host)
		flusher := w.(http.Flusher)
		for i := range rows {
			if i > 0 {
				io.WriteString(w, ",")
			}
			fmt.Fprintf(w, "[%d]", i)
			if i%20_000 == 0 {
				flusher.Flush()
				time.Sleep(5 * time.Millisecond)
			}
		}
		io.WriteString(w, `],"stats":{"state":"FINISHED"}}`)
	}))
	t.Cleanup(coord.Close)
	srv, _ := countingGateway(t, strings.TrimPrefix(coord.URL, "http://"))
	if n := runStatement(t, srv.URL, "SELECT n FROM big", nil, nil); n != rows {
		t.Fatalf("got %d rows, want %d", n, rows)
	}
}

// A coordinator whose answer breaks (cut short, or not JSON) before any of
// it reached the client: the client's query fails, naming the coordinator,
// with none of the broken answer's headers, for the POST and for a
// follow-up alike, and is never sent again.
func TestBrokenAnswerBeforeAnyByteIsAPrestoError(t *testing.T) {
	for _, tc := range []struct{ name, post, get string }{
		{"POST answer cut", `{"id":"q1","nextUri":"http://%s/v1/statement/q1/1"`, ""},
		{"POST answer not JSON", `<html>gateway timeout</html>`, ""},
		{"page cut", `{"id":"q1","nextUri":"http://%s/v1/statement/q1/1"}`, `{"id":"q1","data":[[1],`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			coord := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Presto-Set-Session", "a=b")
				if r.Method == http.MethodPost {
					fmt.Fprintf(w, tc.post, r.Host)
					return
				}
				io.WriteString(w, tc.get)
			}))
			t.Cleanup(coord.Close)
			srv, _ := countingGateway(t, strings.TrimPrefix(coord.URL, "http://"))
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/statement", strings.NewReader("SELECT 1"))
			req.Header.Set("X-Presto-User", "alice")
			// The query's pages up to the last: the failure is on a page,
			// as a coordinator ends a failed query, which every client shows.
			var page struct {
				NextURI string `json:"nextUri"`
				Stats   struct {
					State string `json:"state"`
				} `json:"stats"`
				Error struct {
					Message   string `json:"message"`
					ErrorName string `json:"errorName"`
				} `json:"error"`
			}
			for hop := 0; ; hop++ {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				page.NextURI = ""
				err = json.NewDecoder(resp.Body).Decode(&page)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: the answer is no page: %v", resp.Status, err)
				}
				if page.NextURI == "" {
					if v := resp.Header.Get("X-Presto-Set-Session"); v != "" {
						t.Errorf("the failure carries the broken answer's X-Presto-Set-Session %q", v)
					}
					break
				}
				if hop == 3 {
					t.Fatal("no last page after 3 GETs")
				}
				req, _ = http.NewRequest(http.MethodGet, page.NextURI, nil)
			}
			host := strings.TrimPrefix(coord.URL, "http://")
			if page.Stats.State != "FAILED" || page.Error.ErrorName != "ZKPRESTO_COORDINATOR_FAILED" || !strings.Contains(page.Error.Message, host) {
				t.Errorf("last page %+v: want FAILED, ZKPRESTO_COORDINATOR_FAILED naming %s", page, host)
			}
		})
	}
}

// A client that leaves in the middle of a large page: the gateway stops
// relaying it and blames no coordinator (no failure, no ejection, no
// warning), whichever side's error it saw first.
func TestClientLeavingMidPageBlamesNoCoordinator(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{BatchRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var logged testutil.Buffer
	g, r := staticGateway(t, gateway.Config{Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))}, c.Addr())
	ended := make(chan string, 16)
	srv := serveGateway(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		defer func() { ended <- req.URL.Path }() // also when the handler aborts
		g.ServeHTTP(w, req)
	}))
	answer := post(t, srv.URL, "SELECT * FROM bigrows(4, 8388608)")
	<-ended
	next, _ := answer["nextUri"].(string)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	for range 10 { // to the first page with rows
		resp, err := client.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 64<<10)
		n, _ := io.ReadFull(resp.Body, head)
		if bytes.Contains(head[:n], []byte(`"data"`)) {
			resp.Body.Close() // in the middle of the page: the connection goes
			break
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		<-ended
		var page map[string]any
		if err := json.Unmarshal(head[:n], &page); err != nil {
			t.Fatal(err)
		}
		if next, _ = page["nextUri"].(string); next == "" {
			t.Fatal("no page with rows")
		}
	}
	<-ended
	for _, n := range r.Stats().Nodes {
		if n.Failures != 0 || n.Ejections != 0 || n.LastError != "" {
			t.Fatalf("coordinator %s blamed for the client's leaving: %d failures, %d ejections, %q", n.Node.Addr, n.Failures, n.Ejections, n.LastError)
		}
	}
	if logged.String() != "" {
		t.Fatalf("warnings for a client that left: %s", logged.String())
	}
}
