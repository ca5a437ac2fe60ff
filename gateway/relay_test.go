package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/coordinator"
	"github.com/zkpresto/zkpresto/routing"
)

// countingGateway is a gateway in front of addr whose connections to the
// coordinator are counted as they are dialled.
func countingGateway(t *testing.T, addr string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	r, err := routing.New(routing.Config{Discoverer: discovery.NewStatic("static:"+addr, []discovery.Node{{Addr: addr}}), StrategyName: "poll"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	dials := new(atomic.Int64)
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(transport.CloseIdleConnections)
	g, err := gateway.New(gateway.Config{Router: r, Keys: testKeys, Client: &http.Client{Transport: transport}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv, dials
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
