package gateway

import (
	"context"
	"database/sql"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/routing"
)

// A gateway that has been up for minutes reports its uptime as Airlift
// writes a duration, which trino-go-client parses; Go's "3m55s" made its
// ServerInfo, and so its Ping, fail on every gateway up for over a minute.
func TestInfoUptimeAsAirlift(t *testing.T) {
	r, err := routing.New(routing.Config{Discoverer: discovery.NewStatic("test", []discovery.Node{{Addr: "127.0.0.1:1"}})})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g, err := New(Config{Router: r, Keys: "k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
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
