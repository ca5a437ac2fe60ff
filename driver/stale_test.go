//go:build linux

package driver_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/zkprestotest/deadpeer"
	"github.com/zkpresto/zkpresto/zkprestotest/tcpproxy"
)

// lateClient is an HTTP client whose connections hide the coordinator's
// close from the transport's background reader until the next write (see
// deadpeer.LateReader): the race between a coordinator closing a pooled
// connection and a statement written on it, provoked every time.
func lateClient(t *testing.T) (*http.Client, *deadpeer.LateReader) {
	late := new(deadpeer.LateReader)
	tr := &http.Transport{DialContext: late.Dial}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, late
}

// waitClosedByPeer waits until every connection to addr has had its FIN.
func waitClosedByPeer(t *testing.T, late *deadpeer.LateReader, addr string) {
	t.Helper()
	n := 0
	for _, c := range late.Conns() {
		if c.RemoteAddr().String() != addr {
			continue
		}
		n++
		select {
		case <-c.Ended():
		case <-time.After(5 * time.Second):
			t.Fatal("the coordinator's close never reached the client")
		}
	}
	if n == 0 {
		t.Fatalf("no pooled connection to %s", addr)
	}
}

// A coordinator closed its keep-alive connections (a restart, an idle
// timeout shorter than ours) while the pool held one: the next statement
// goes on a fresh connection instead of failing as "sent" on the dead one.
func TestStatementAfterTheCoordinatorClosedPooledConnections(t *testing.T) {
	quietPrestoClient(t)
	c := startCoordinator(t, "c")
	proxy := tcpproxy.StartT(t, c.Addr())
	client, late := lateClient(t)
	db, connector := openConnector(t, "presto://"+proxy.Addr()+"?user=alice", zkdriver.WithHTTPClient(client))
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	proxy.Drop() // closes every connection, as a restarting coordinator
	waitClosedByPeer(t, late, proxy.Addr())
	proxy.Heal()
	if _, err := db.Exec("SELECT 2"); err != nil {
		t.Fatalf("statement on the coordinator after it closed the pooled connection: %v", err)
	}
	checkAcceptedOnce(t, c)
	if n := accepted(c); n["SELECT 2"] != 1 {
		t.Errorf("accepted %v, want SELECT 2 once", n)
	}
	if ns := nodeStats(t, connector, proxy.Addr()); ns.LastError != "" || ns.Ejections != 0 {
		t.Errorf("stats: %+v, want no failure", ns)
	}
}

// When the coordinator closed its pooled connection and refuses new ones,
// the statement was provably not sent: it fails over.
func TestStaleConnectionToADeadCoordinatorFailsOver(t *testing.T) {
	quietPrestoClient(t)
	dying := startCoordinator(t, "dying")
	good := startCoordinator(t, "good")
	proxy := tcpproxy.StartT(t, dying.Addr())
	client, late := lateClient(t)
	db, connector := openConnector(t, "presto://"+proxy.Addr()+","+good.Addr()+";zooKeeperStrategy=poll?user=alice",
		zkdriver.WithHTTPClient(client))
	db.SetMaxOpenConns(1)
	// Poll over two: within two statements one is on the dying coordinator.
	for i := range 2 {
		queryServed(t, db, fmt.Sprintf("SELECT %d", i))
	}
	if len(accepted(dying)) != 1 {
		t.Fatalf("the dying coordinator accepted %v, want one statement", accepted(dying))
	}
	proxy.Drop()
	waitClosedByPeer(t, late, proxy.Addr())
	proxy.Close() // and new connections are refused
	for i := 2; i < 4; i++ {
		if got := queryServed(t, db, fmt.Sprintf("SELECT %d", i)); got.Coordinator != good.Name() {
			t.Fatalf("statement %d served by %s", i, got.Coordinator)
		}
	}
	checkAcceptedOnce(t, dying, good)
	if ns := nodeStats(t, connector, proxy.Addr()); !ns.Ejected || ns.Failovers != 1 {
		t.Errorf("stats of the dead coordinator: %+v, want ejected after one failover", ns)
	}
}
