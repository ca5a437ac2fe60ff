package gateway

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/routing"
)

// gatewayTo returns a gateway whose router knows the one coordinator at addr, and the
// router; both are closed when the test ends.
func gatewayTo(t *testing.T, addr string) (*Gateway, *routing.Router) {
	t.Helper()
	r, err := routing.New(routing.Config{Discoverer: discovery.NewStatic("test", []discovery.Node{{Addr: addr}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	g, err := New(Config{Router: r, Keys: "k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, r
}

// A gateway that has been up for minutes reports its uptime as Airlift
// writes a duration, which trino-go-client parses; Go's "3m55s" made its
// ServerInfo, and so its Ping, fail on every gateway up for over a minute.
func TestInfoUptimeAsAirlift(t *testing.T) {
	g, _ := gatewayTo(t, "127.0.0.1:1")
	g.started = time.Now().Add(-235 * time.Second)
	srv := httptest.NewServer(g)
	defer srv.Close()

	db, err := sql.Open("trino", "http://alice@"+strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var info trino.ServerInfo
	err = conn.Raw(func(dc any) error {
		var err error
		info, err = dc.(*trino.Conn).ServerInfo(ctx)
		return err
	})
	if err != nil {
		t.Fatalf("trino-go-client's ServerInfo through the gateway: %v", err)
	}
	if info.Uptime < 235*time.Second || info.Uptime > 240*time.Second {
		t.Fatalf("uptime %v, want about 3.92m", info.Uptime)
	}
}

// A failed query's URI stays short enough for the proxies on the way
// however long its message (every coordinator tried, with its error), and
// the message it gives back says it was cut.
func TestFailedQueryURIBoundsItsMessage(t *testing.T) {
	g, _ := gatewayTo(t, "127.0.0.1:1")
	srv := httptest.NewServer(g)
	defer srv.Close()
	req := httptest.NewRequest(http.MethodPost, srv.URL+"/v1/statement", nil)
	uri, err := g.failedQueryURI(req, "q1", strings.Repeat("é coordinator 10.0.0.1:8080 refused; ", 1000), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(uri) > 4096 {
		t.Fatalf("a URI of %d bytes", len(uri))
	}
	resp, err := http.Get(srv.URL + strings.TrimPrefix(uri, "http://"+req.Host))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Error struct{ Message string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || !strings.HasSuffix(page.Error.Message, " …") || !utf8.ValidString(page.Error.Message) {
		t.Fatalf("%d %q %v: want the message cut, with an ellipsis", resp.StatusCode, page.Error.Message, err)
	}
}
