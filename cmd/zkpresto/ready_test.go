package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

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
		start(t, "register", "--zookeeper", zks.Addr(), "--advertise", c.URL(), "--interval", "50ms")
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

	secret := writeGatewaySecret(t, t.TempDir())
	gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret, "--dsn", f.dsn+";zooKeeperStrategy=round_robin")
	gwAddr := announcedAddr(t, gw, "http")
	driver, err := sql.Open("zkpresto", f.dsn+";zooKeeperStrategy=round_robin")
	if err != nil {
		t.Fatal(err)
	}
	defer driver.Close()
	viaGateway, err := sql.Open("presto", "presto://alice@"+gwAddr+"/hive")
	if err != nil {
		t.Fatal(err)
	}
	defer viaGateway.Close()
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
	// The mark reaches the clients within ZooKeeper's notification delay;
	// the driver's and the gateway's own sessions are not ours to wait on,
	// so give them a moment, far more than a notification takes here.
	time.Sleep(500 * time.Millisecond)
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
	secret := writeGatewaySecret(t, t.TempDir())
	var dbs []*sql.DB
	driver, err := sql.Open("zkpresto", f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer driver.Close()
	dbs = append(dbs, driver)
	for range 2 {
		gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret, "--dsn", f.dsn)
		addr := announcedAddr(t, gw, "http")
		db, err := sql.Open("presto", "presto://alice@"+addr+"/hive")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs = append(dbs, db)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	var ran atomic.Int64
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		db := dbs[i%len(dbs)]
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				rows, err := db.QueryContext(ctx, "SELECT * FROM rows(10)")
				if err != nil {
					errs <- err
					return
				}
				n := 0
				for rows.Next() {
					n++
				}
				rows.Close()
				if err := rows.Err(); err != nil || n != 10 {
					errs <- fmt.Errorf("a query read %d of 10 rows: %v", n, err)
					return
				}
				ran.Add(1)
			}
		})
	}
	more := func(n int64) {
		t.Helper()
		target := ran.Load() + n
		eventually(t, fmt.Sprintf("%d more queries", n), func() bool { return ran.Load() >= target })
	}
	more(20)
	for _, c := range f.cs {
		asked := time.Now()
		if out, errOut, err := run([]string{"drain", "--zookeeper", f.zk.Addr(), c.URL()}, ""); err != nil {
			t.Fatalf("drain %s: %v\n%s%s", c.Addr(), err, out, errOut)
		}
		f.marked(t, c, "drained")
		t.Logf("%s: drain to its registration marked: %s", c.Addr(), time.Since(asked).Round(time.Millisecond))
		time.Sleep(500 * time.Millisecond) // the notification delay, with room to spare
		eventually(t, "the drained coordinator's queries to finish", func() bool { return c.Running() == 0 })
		drained := c.Statements()
		more(20)
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
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a statement failed during the rolling restart: %v", err)
	}
	var got int64
	for _, c := range f.cs {
		got += c.Statements()
	}
	if got != ran.Load() {
		t.Errorf("the coordinators received %d statements for %d queries run: a statement was lost or sent twice", got, ran.Load())
	}
}

// The gateway's admin address drains a coordinator and undrains it: the
// mark is set in ZooKeeper, where every replica and driver reads it. A
// cross-site browser request and an unknown coordinator are refused.
func TestGatewayAdminDrainsACoordinator(t *testing.T) {
	f := startReadyFleet(t, 2, coordinator.Options{Version: "0.289"})
	secret := writeGatewaySecret(t, t.TempDir())
	gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret, "--dsn", f.dsn)
	gwAddr := announcedAddr(t, gw, "http")
	post := func(path string, header map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "http://"+gwAddr+path, nil)
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
	time.Sleep(500 * time.Millisecond) // the notification delay, with room to spare
	db, err := sql.Open("presto", "presto://alice@"+gwAddr+"/hive")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before := c.Statements()
	for range 10 {
		var v int
		if err := db.QueryRow("SELECT * FROM rows(1)").Scan(&v); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Statements() - before; got != 0 {
		t.Errorf("the drained coordinator received %d statements", got)
	}
	if code, body := post("/_zk/undrain?coordinator="+c.Addr(), nil); code != http.StatusOK {
		t.Fatalf("undrain: %d %s", code, body)
	}
	f.marked(t, c, "")
}
