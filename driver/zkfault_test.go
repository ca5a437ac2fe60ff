package driver_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/tcpproxy"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// openLogged opens a pool for dsn whose connector logs everything to logs.
// The pool keeps no idle connection, so every statement is a new pick.
func openLogged(t *testing.T, dsn string, logs *testutil.Buffer) (*sql.DB, *zkdriver.Connector) {
	t.Helper()
	db, connector := openConnector(t, dsn, zkdriver.WithLogger(logs.Logger()))
	db.SetMaxIdleConns(0)
	return db, connector
}

// watchDriverSession joins the connector's shared ZooKeeper session (same
// servers and path, no credentials) so the test can read its Status.
func watchDriverSession(t *testing.T, connector *zkdriver.Connector, servers, path string) *discovery.ZooKeeper {
	t.Helper()
	snap, err := connector.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d, err := discovery.OpenZooKeeper(context.Background(), discovery.ZooKeeperConfig{Servers: strings.Split(servers, ","), Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if d.Snapshot() != snap {
		t.Fatal("the test's handle does not share the driver's session")
	}
	return d
}

// registerPersistent registers c with a persistent znode, which survives
// the fleet's own session, and returns its path.
func registerPersistent(t *testing.T, f *fleet.Fleet, c *coordinator.Coordinator) string {
	t.Helper()
	name, data, _, err := fleet.Znode(discovery.FormatHostPort, discovery.Node{Addr: c.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	path, err := f.Conn().Create("/"+f.Namespace+"/"+name, data, 0, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// servedBy runs n statements and returns the set of coordinators that
// served them, failing on any error.
func servedBy(t *testing.T, db *sql.DB, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for range n {
		seen[queryServed(t, db, "SELECT 1").Coordinator]++
	}
	return seen
}

func names(cs ...*coordinator.Coordinator) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name()
	}
	slices.Sort(out)
	return out
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func waitNodes(t *testing.T, d *discovery.ZooKeeper, what string, want ...*coordinator.Coordinator) {
	t.Helper()
	addrs := make([]string, len(want))
	for i, c := range want {
		addrs[i] = c.Addr()
	}
	slices.Sort(addrs)
	waitFor(t, what, func() bool { return slices.Equal(d.Snapshot().Addrs(), addrs) })
}

func TestZooKeeperEnsembleFaults(t *testing.T) {
	e := zkserver.StartEnsembleT(t, 3)
	f := fleet.StartT(t, fleet.Options{Ensemble: e.Connect(), Coordinators: 3})
	c1, c2, c3 := f.Coordinators[0], f.Coordinators[1], f.Coordinators[2]
	path1 := registerPersistent(t, f, c1)
	registerPersistent(t, f, c2)
	logs := &testutil.Buffer{}
	db, connector := openLogged(t, f.DSN(";zooKeeperSessionTimeout=6s;zooKeeperStrategy=poll?user=alice"), logs)
	if got := keys(servedBy(t, db, 4)); !slices.Equal(got, names(c1, c2)) {
		t.Fatalf("served by %v", got)
	}
	d := watchDriverSession(t, connector, e.Connect(), "/"+f.Namespace)

	// The leader dies: the ensemble elects another; statements never stop.
	leader, err := e.Leader()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Servers[leader].Kill(); err != nil {
		t.Fatal(err)
	}
	if got := keys(servedBy(t, db, 4)); !slices.Equal(got, names(c1, c2)) {
		t.Fatalf("with the leader dead, served by %v", got)
	}
	if _, err := e.WaitLeader(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a session on a live server", func() bool {
		st := d.Status()
		return st.Connected && st.Server != e.Servers[leader].Addr()
	})
	path3 := registerPersistent(t, f, c3)
	waitNodes(t, d, "c3 after the leader change", c1, c2, c3)
	if got := keys(servedBy(t, db, 3)); !slices.Equal(got, names(c1, c2, c3)) {
		t.Fatalf("after the leader change, served by %v", got)
	}

	// The server the driver is connected to dies: the session moves.
	if err := e.Servers[leader].Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WaitLeader(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	mine := slices.Index(e.Addrs(), d.Status().Server)
	if mine < 0 {
		t.Fatalf("driver's session is on %q, not an ensemble member", d.Status().Server)
	}
	sessionID := d.Status().SessionID
	if err := e.Servers[mine].Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session to move to another server", func() bool {
		st := d.Status()
		return st.Connected && st.Server != "" && st.Server != e.Servers[mine].Addr()
	})
	if got := d.Status().SessionID; got != sessionID {
		t.Fatalf("session %x replaced by %x; want the same session on another server", sessionID, got)
	}
	if _, err := e.WaitLeader(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := f.Conn().Delete(path3, -1); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, d, "c3 gone after the session moved", c1, c2)

	// The whole ensemble is down: the last known list keeps serving.
	for _, s := range e.Servers {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the driver to notice the outage", func() bool { return !d.Status().Connected })
	if d.Status().StaleSince.IsZero() {
		t.Fatalf("status %+v: down but not stale", d.Status())
	}
	if got := keys(servedBy(t, db, 4)); !slices.Equal(got, names(c1, c2)) {
		t.Fatalf("with ZooKeeper down, served by %v", got)
	}
	if !strings.Contains(logs.String(), "serving the last known coordinators") {
		t.Fatalf("logs do not say the list is stale:\n%s", logs.String())
	}

	// Back up: watches are set again and later changes are seen.
	var wg sync.WaitGroup
	errs := make([]error, len(e.Servers))
	for i, s := range e.Servers {
		wg.Go(func() { errs[i] = s.Restart() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.WaitLeader(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the driver's session back", func() bool { return d.Status().Connected })
	registerPersistent(t, f, c3)
	if err := f.Conn().Delete(path1, -1); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, d, "the changes after the outage", c2, c3)
	if got := keys(servedBy(t, db, 4)); !slices.Equal(got, names(c2, c3)) {
		t.Fatalf("after the outage, served by %v", got)
	}
	if !d.Status().StaleSince.IsZero() {
		t.Fatalf("status %+v: still stale", d.Status())
	}
}

// zkSessions returns the session list of the fleet's ZooKeeper's "dump".
func zkSessions(t *testing.T, f *fleet.Fleet) string {
	t.Helper()
	dump, err := f.ZooKeeper.Dump()
	if err != nil {
		t.Fatal(err)
	}
	return dump
}

// TestZooKeeperPartitionAndSessionExpiry puts a proxy between the driver
// and ZooKeeper: first a partition (connections dropped) while another
// client changes the namespace, then a black hole long enough for ZooKeeper
// to expire the driver's session.
func TestZooKeeperPartitionAndSessionExpiry(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 3})
	c1, c2, c3 := f.Coordinators[0], f.Coordinators[1], f.Coordinators[2]
	for _, c := range []*coordinator.Coordinator{c1, c2} {
		if _, err := f.Register(c, discovery.FormatZkpresto, 1); err != nil {
			t.Fatal(err)
		}
	}
	proxy := tcpproxy.StartT(t, f.Ensemble())
	logs := &testutil.Buffer{}
	// The server's minimum session timeout is two ticks: 1s in the harness.
	db, connector := openLogged(t, "presto://"+proxy.Addr()+"/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace="+f.Namespace+
		";zooKeeperSessionTimeout=2s;zooKeeperStrategy=poll?user=alice", logs)
	if got := keys(servedBy(t, db, 2)); !slices.Equal(got, names(c1, c2)) {
		t.Fatalf("served by %v", got)
	}
	d := watchDriverSession(t, connector, proxy.Addr(), "/"+f.Namespace)

	// Partition: every connection to ZooKeeper is cut and refused.
	proxy.Drop()
	waitFor(t, "the driver to notice the partition", func() bool { return !d.Status().Connected })
	if _, err := f.Register(c3, discovery.FormatCurator, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Deregister(c1); err != nil {
		t.Fatal(err)
	}
	if got := keys(servedBy(t, db, 4)); !slices.Equal(got, names(c1, c2)) {
		t.Fatalf("partitioned, served by %v; want the last known list", got)
	}
	proxy.Heal()
	waitNodes(t, d, "the changes made during the partition", c2, c3)
	if got := keys(servedBy(t, db, 4)); !slices.Equal(got, names(c2, c3)) {
		t.Fatalf("after the partition, served by %v", got)
	}

	// Black hole until ZooKeeper expires the session.
	waitFor(t, "a session", func() bool { return d.Status().Connected })
	first := d.Status().SessionID
	expiredBefore := d.Status().SessionsExpired
	proxy.Stall()
	sid := fmt.Sprintf("0x%x", first)
	waitFor(t, "ZooKeeper to expire the black-holed session", func() bool {
		return !strings.Contains(zkSessions(t, f), sid)
	})
	if _, err := f.Register(c1, discovery.FormatHive, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Deregister(c2); err != nil {
		t.Fatal(err)
	}
	if got := keys(servedBy(t, db, 4)); !slices.Equal(got, names(c2, c3)) {
		t.Fatalf("black-holed, served by %v; want the last known list", got)
	}
	proxy.Heal()
	waitFor(t, "a new session", func() bool {
		st := d.Status()
		return st.Connected && st.SessionID != 0 && st.SessionID != first
	})
	waitNodes(t, d, "the namespace read again in the new session", c1, c3)
	if st := d.Status(); st.SessionsExpired <= expiredBefore {
		t.Fatalf("status %+v: the session was replaced without an expiry", st)
	}
	// The new session watches: a later change is seen.
	if err := f.Deregister(c3); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, d, "a change in the new session", c1)
	if got := keys(servedBy(t, db, 3)); !slices.Equal(got, names(c1)) {
		t.Fatalf("in the new session, served by %v", got)
	}

	out := logs.String()
	for _, want := range []string{"serving the last known coordinators", "ZooKeeper session expired", "namespace read again in a new ZooKeeper session", "ZooKeeper session restored"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

// TestRunningStatementFinishesAfterDeregistration: a coordinator that
// leaves ZooKeeper gets no new statements, but those it runs complete.
func TestRunningStatementFinishesAfterDeregistration(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 2})
	c1, c2 := f.Coordinators[0], f.Coordinators[1]
	if _, err := f.Register(c1, discovery.FormatZkpresto, 1); err != nil {
		t.Fatal(err)
	}
	db, connector := openConnector(t, f.DSN("?user=alice"))
	queryServed(t, db, "SELECT 1") // the pool now holds a connection to c1
	d := watchDriverSession(t, connector, f.Ensemble(), "/"+f.Namespace)

	// Long enough for the deregistration below to happen while it runs.
	c1.SetLatency(3 * time.Second)
	done := make(chan error, 1)
	var got served
	go func() {
		var rows []int64
		r, err := db.QueryContext(context.Background(), "SELECT n FROM rows(500)")
		if err != nil {
			done <- err
			return
		}
		defer r.Close()
		for r.Next() {
			var n int64
			if err := r.Scan(&n); err != nil {
				done <- err
				return
			}
			rows = append(rows, n)
		}
		if err := r.Err(); err != nil {
			done <- err
			return
		}
		if len(rows) != 500 || rows[499] != 500 {
			done <- fmt.Errorf("got %d rows", len(rows))
			return
		}
		done <- nil
	}()
	waitFor(t, "the slow statement to run on c1", func() bool { return c1.Running() == 1 })

	if _, err := f.Register(c2, discovery.FormatZkpresto, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Deregister(c1); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, d, "c1 gone", c2)
	got = queryServed(t, db, "SELECT 2")
	if got.Coordinator != c2.Name() {
		t.Fatalf("a new statement went to %s after c1 left", got.Coordinator)
	}
	select {
	case err := <-done:
		t.Fatalf("the slow statement ended (%v) before its coordinator left; the test proves nothing", err)
	default:
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the statement running on the removed coordinator failed: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the statement running on the removed coordinator never finished")
	}
}
