package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// readyFleet is a ZooKeeper, coordinators each with a `zkpresto register`
// beside it, and an observer session.
type readyFleet struct {
	zk       *zkserver.Server
	observer *zk.Conn
	cs       []*coordinator.Coordinator
	dsn      string // the driver's DSN for the namespace
}

func startReadyFleet(t *testing.T, n int, opts coordinator.Options) *readyFleet {
	t.Helper()
	zks := zkserver.StartT(t)
	cs, err := coordinator.StartFleet(n, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	f := &readyFleet{zk: zks, observer: fleet.DialT(t, zks.Addr()), cs: cs, dsn: nodesDSN(zks.Addr(), "presto")}
	for _, c := range cs {
		// Checks every 50 ms carry readiness to ZooKeeper at once; each
		// check's timeout is that interval too, so on a loaded machine two
		// slow answers in a row would unlist a healthy coordinator (all
		// three at once, seen as "namespace has no children"). These tests
		// are about readiness marks, not removal: 40 failures (2 s) unlist.
		start(t, "register", "--zookeeper", zks.Addr(), "--advertise", c.URL(), "--interval", "50ms", "--failure-threshold", "40")
	}
	eventually(t, fmt.Sprintf("%d registrations", n), func() bool { return len(registrations(t, f.observer, "/presto")) == n })
	return f
}

// marked waits until c's registration carries the mark want ("" for none).
func (f *readyFleet) marked(t *testing.T, c *coordinator.Coordinator, want string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s marked %q", c.Addr(), want), func() bool {
		n, ok := registrations(t, f.observer, "/presto")[c.Addr()]
		return ok && n.NotReady == want
	})
}

// seenByReplica waits until the gateway replica at addr lists c with the
// mark want ("" for none) on its status page: the mark has reached that
// replica's discovery, whatever ZooKeeper's notification took.
func seenByReplica(t *testing.T, addr string, c *coordinator.Coordinator, want string) {
	t.Helper()
	eventually(t, fmt.Sprintf("the replica at %s to list %s marked %q", addr, c.Addr(), want), func() bool {
		resp, err := http.Get("http://" + addr + "/_zk/status.json")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			Groups []struct {
				Coordinators []struct{ Address, NotReady string }
			}
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
			return false
		}
		for _, g := range st.Groups {
			for _, n := range g.Coordinators {
				if n.Address == c.Addr() || n.Address == c.URL() {
					return n.NotReady == want
				}
			}
		}
		return false
	})
}

// startReplicas starts n gateway replicas sharing one secret over dsn and
// opens a presto-go-client pool on each: their addresses and pools, in the
// same order, closed when the test ends.
func startReplicas(t *testing.T, dsn string, n int) ([]string, []*sql.DB) {
	t.Helper()
	secret := writeGatewaySecret(t, t.TempDir())
	var addrs []string
	var dbs []*sql.DB
	for range n {
		gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret, "--dsn", dsn)
		addr := announcedAddr(t, gw, "http")
		db, err := sql.Open("presto", "presto://alice@"+addr+"/hive")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		addrs, dbs = append(addrs, addr), append(dbs, db)
	}
	return addrs, dbs
}

// seenByDriver waits until this process's drivers, whose discovery of the
// namespace shares one session and one cache (discovery.OpenZooKeeper), list
// c with the mark want ("" for none).
func (f *readyFleet) seenByDriver(t *testing.T, c *coordinator.Coordinator, want string) {
	t.Helper()
	d, err := discovery.OpenZooKeeper(context.Background(), discovery.ZooKeeperConfig{Servers: []string{f.zk.Addr()}, Path: "/presto"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	eventually(t, fmt.Sprintf("the driver to list %s marked %q", c.Addr(), want), func() bool {
		for _, n := range d.Snapshot().Nodes {
			if n.Addr == c.Addr() {
				return n.NotReady == want
			}
		}
		return false
	})
}

// A coordinator without workers gets no statement, through the driver or
// the gateway, while another is ready; once its worker is back it gets
// statements again. A foreign registration (a plain host:port child, with
// no mark possible) is taken as ready.
func TestNoStatementToACoordinatorWithoutWorkers(t *testing.T) {
	// A statement sent to the coordinator without workers fails after
	// RequiredWorkersMaxWait, as on the servers (5 minutes there).
	f := startReadyFleet(t, 2, coordinator.Options{Version: "0.289", RequiredWorkersMaxWait: 2 * time.Second})
	ready, idle := f.cs[0], f.cs[1]
	foreign, err := coordinator.Start(coordinator.Options{Version: "0.289"})
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	if _, err := f.observer.Create("/presto/"+foreign.Addr(), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	gwAddrs, gwDBs := startReplicas(t, f.dsn+";zooKeeperStrategy=round_robin", 1)
	gwAddr, viaGateway := gwAddrs[0], gwDBs[0]
	driver, err := sql.Open("zkpresto", f.dsn+";zooKeeperStrategy=round_robin")
	if err != nil {
		t.Fatal(err)
	}
	defer driver.Close()
	runSome := func(n int) {
		t.Helper()
		for i := range n {
			for _, db := range []*sql.DB{driver, viaGateway} {
				var v int
				if err := db.QueryRow("SELECT * FROM rows(1)").Scan(&v); err != nil {
					t.Fatalf("statement %d: %v", i, err)
				}
			}
		}
	}

	idle.SetNoWorkers(true)
	f.marked(t, idle, "workers:0/1")
	// The mark reaches the clients within ZooKeeper's notification delay.
	f.seenByDriver(t, idle, "workers:0/1")
	seenByReplica(t, gwAddr, idle, "workers:0/1")
	// The gateway's status page says so.
	resp, err := http.Get("http://" + gwAddr + "/_zk/status.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`"state": "not ready: workers:0/1"`, `"notReady": "workers:0/1"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("status.json (%s) does not show %s:\n%s", resp.Status, want, body)
		}
	}
	before, foreignBefore := idle.Statements(), foreign.Statements()
	runSome(20)
	if got := idle.Statements() - before; got != 0 {
		t.Errorf("the coordinator without workers received %d statements while another was ready", got)
	}
	if foreign.Statements() == foreignBefore {
		t.Error("the foreign registration, which carries no mark, received no statement")
	}
	if ready.Statements() == 0 {
		t.Error("the ready coordinator received nothing")
	}

	idle.SetNoWorkers(false)
	f.marked(t, idle, "")
	eventually(t, "statements to the coordinator whose worker is back, from the driver and the gateway", func() bool {
		b := idle.Statements()
		runSome(3)
		return idle.Statements()-b >= 2
	})
}

// A rolling restart of three coordinators, each drained, stopped, started
// and undrained, under a stream of statements through the driver and two
// gateway replicas: no statement fails, none runs twice, and a drained
// coordinator gets no new statement from any of them while it is drained;
// the queries it was running finish there.
func TestRollingRestartOfCoordinatorsWithDrain(t *testing.T) {
	const clients = 6
	f := startReadyFleet(t, 3, coordinator.Options{Version: "0.289", BatchRows: 1, PageDelay: 5 * time.Millisecond})
	driver, err := sql.Open("zkpresto", f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer driver.Close()
	replicas, viaReplicas := startReplicas(t, f.dsn, 2)
	dbs := append([]*sql.DB{driver}, viaReplicas...)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := startQueryStream(ctx, clients, dbs...)
	st.more(t, 20)
	for _, c := range f.cs {
		asked := time.Now()
		if out, errOut, err := run([]string{"drain", "--zookeeper", f.zk.Addr(), c.URL()}, ""); err != nil {
			t.Fatalf("drain %s: %v\n%s%s", c.Addr(), err, out, errOut)
		}
		f.marked(t, c, "drained")
		t.Logf("%s: drain to its registration marked: %s", c.Addr(), time.Since(asked).Round(time.Millisecond))
		// Seen by the driver and by every replica: from then on, no new statement.
		f.seenByDriver(t, c, "drained")
		for _, addr := range replicas {
			seenByReplica(t, addr, c, "drained")
		}
		t.Logf("%s: drain to every client's discovery: %s", c.Addr(), time.Since(asked).Round(time.Millisecond))
		eventually(t, "the drained coordinator's queries to finish", func() bool { return c.Running() == 0 })
		drained := c.Statements()
		st.more(t, 20)
		if got := c.Statements() - drained; got != 0 {
			t.Errorf("%s received %d statements while drained", c.Addr(), got)
		}
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(); err != nil {
			t.Fatal(err)
		}
		// Registered again after its restart, still drained: the mark is
		// ZooKeeper's.
		f.marked(t, c, "drained")
		if out, errOut, err := run([]string{"undrain", "--zookeeper", f.zk.Addr(), c.Addr()}, ""); err != nil {
			t.Fatalf("undrain %s: %v\n%s%s", c.Addr(), err, out, errOut)
		}
		f.marked(t, c, "")
		back := c.Statements()
		undrained := time.Now()
		eventually(t, c.Addr()+" to get statements again", func() bool { return c.Statements() > back })
		t.Logf("%s: mark gone to its next statement: %s", c.Addr(), time.Since(undrained).Round(time.Millisecond))
	}
	for _, err := range st.stop() {
		t.Errorf("a statement failed during the rolling restart: %v", err)
	}
	var got int64
	for _, c := range f.cs {
		got += c.Statements()
	}
	if got != st.ran.Load() {
		t.Errorf("the coordinators received %d statements for %d queries run: a statement was lost or sent twice", got, st.ran.Load())
	}
}

// The gateway's admin address drains a coordinator and undrains it: the
// mark is set in ZooKeeper, where every replica and driver reads it. Asked
// of replica A, it is seen by both replicas (each one's status page lists
// the coordinator drained), neither sends it a statement, and after the
// undrain, seen alike, both send it statements again. A cross-site browser
// request and an unknown coordinator are refused.
func TestGatewayAdminDrainsACoordinator(t *testing.T) {
	f := startReadyFleet(t, 2, coordinator.Options{Version: "0.289"})
	replicas, pools := startReplicas(t, f.dsn, 2)
	dbs := map[string]*sql.DB{}
	for i, addr := range replicas {
		dbs[addr] = pools[i]
	}
	a := replicas[0] // the admin address the operator uses
	post := func(path string, header map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "http://"+a+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	runSome := func(addr string, n int) {
		t.Helper()
		for range n {
			var v int
			if err := dbs[addr].QueryRow("SELECT * FROM rows(1)").Scan(&v); err != nil {
				t.Fatalf("a statement through %s: %v", addr, err)
			}
		}
	}
	c := f.cs[0]
	if code, body := post("/_zk/drain?coordinator="+c.URL(), map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://elsewhere.example"}); code != http.StatusForbidden {
		t.Errorf("a cross-site drain: %d %s", code, body)
	}
	if code, body := post("/_zk/drain?coordinator=127.0.0.1:1", nil); code != http.StatusNotFound {
		t.Errorf("draining an unknown coordinator: %d %s", code, body)
	}
	if code, body := post("/_zk/drain?coordinator="+c.URL(), nil); code != http.StatusOK || !strings.Contains(body, "drained "+c.Addr()) {
		t.Fatalf("drain: %d %s", code, body)
	}
	f.marked(t, c, "drained")
	// Every replica, the one asked and the other, lists it drained, and
	// sends it nothing.
	for _, addr := range replicas {
		seenByReplica(t, addr, c, "drained")
	}
	for _, addr := range replicas {
		before := c.Statements()
		runSome(addr, 10)
		if got := c.Statements() - before; got != 0 {
			t.Errorf("the drained coordinator received %d statements through %s", got, addr)
		}
	}
	if code, body := post("/_zk/undrain?coordinator="+c.Addr(), nil); code != http.StatusOK {
		t.Fatalf("undrain: %d %s", code, body)
	}
	f.marked(t, c, "")
	for _, addr := range replicas {
		seenByReplica(t, addr, c, "")
	}
	for _, addr := range replicas {
		eventually(t, "statements through "+addr+" to the undrained coordinator", func() bool {
			before := c.Statements()
			runSome(addr, 4)
			return c.Statements() > before
		})
	}
}
