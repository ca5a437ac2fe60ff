package driver

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/verdict"
)

// A coordinator that hangs up without a word on a request whose head is
// over 8 kB (what Jetty does to a head over its limit) refused the head,
// as the gateway decides (the one rule, verdict.Of): the caller gets a
// *verdict.HeadRefusedError, the statement goes to no other coordinator,
// where it would fail the same way, and the coordinator is charged
// nothing.
func TestHeadOverTheLimitHungUpOnIsTheHeads(t *testing.T) {
	var conns atomic.Int32
	var wg sync.WaitGroup
	addrs := make([]string, 2)
	listeners := make([]net.Listener, 0, len(addrs))
	t.Cleanup(func() {
		for _, ln := range listeners {
			ln.Close()
		}
		wg.Wait()
	})
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners = append(listeners, ln)
		addrs[i] = ln.Addr().String()
		wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				conns.Add(1)
				// Jetty's way: read up to the limit, then close with the
				// rest unread, which resets the connection.
				_, _ = io.ReadFull(c, make([]byte, 4<<10))
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
			}
		})
	}
	cfg, err := ParseDSN("presto://" + strings.Join(addrs, ",") + "/hive/default?user=alice&clientInfo=" + strings.Repeat("x", 12<<10))
	if err != nil {
		t.Fatal(err)
	}
	connector, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	err = db.QueryRowContext(ctx, "SELECT 1").Scan(&n)
	var hr *verdict.HeadRefusedError
	if !errors.As(err, &hr) || hr.Bytes <= verdict.HeadLimit {
		t.Fatalf("err %v; want the head refused", err)
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("%d connections to the coordinators, want 1: the statement went elsewhere", got)
	}
	for _, node := range connector.Router().Stats().Nodes {
		if node.LastError != "" || node.Ejected || node.Failures != 0 || node.Failovers != 0 {
			t.Errorf("coordinator %s charged: %+v", node.Node.Addr, node)
		}
	}
}
