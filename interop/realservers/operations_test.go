package realservers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	zkfleet "github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// The operations tests run coordinators of their own beside the shared
// fleet (which other tests use): each under a namespace of its own, with
// one fleet server registered there too by a registrar of the test's.

// extraHeapMB keeps each extra server small: two cores and four shared
// servers already.
const extraHeapMB = 640

// opsSettle bounds how long a change takes to show, in ZooKeeper or in a
// server's tables.
const opsSettle = 30 * time.Second

// opsNamespace is a namespace of the (sub)test's own.
func opsNamespace(t *testing.T) string {
	return "ops-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
}

// opsDSN is the driver's DSN for the coordinators under namespace, with
// the poll strategy, as user alice and from source.
func opsDSN(f coordinator.Flavour, namespace, source string) string {
	return string(f) + "://" + zkServer.Addr() + "/tpch/tiny;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=" +
		namespace + ";zooKeeperStrategy=poll?user=alice&source=" + source
}

func openOps(t *testing.T, f coordinator.Flavour, namespace, source string) *sql.DB {
	t.Helper()
	db, err := sql.Open("zkpresto", opsDSN(f, namespace, source))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// registerOps registers s under namespace for the test and waits until it
// is listed.
func registerOps(t *testing.T, namespace string, s *realserver.Server) *realserver.Registration {
	t.Helper()
	reg, err := realserver.Register(zkServer, namespace, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	if err := reg.WaitRegistered(opsSettle); err != nil {
		t.Fatal(err)
	}
	return reg
}

// launchExtra launches a small server of the flavour, stopped when the test
// ends; config adds to its config.properties, files to its etc directory.
func launchExtra(t *testing.T, f coordinator.Flavour, name string, config, files map[string]string) *realserver.Launched {
	t.Helper()
	// Less query memory than the fleet's 256 MB, within the small heap:
	// PrestoDB refuses to start when a node's query memory (by default
	// twice query.max-memory-per-node) and its 30% heap headroom exceed
	// the heap (LocalMemoryManager.validateHeapHeadroom).
	all := map[string]string{"query.max-memory": "128MB", "query.max-memory-per-node": "128MB"}
	if f == coordinator.Presto {
		all["query.max-total-memory-per-node"] = "128MB"
	}
	for k, v := range config {
		all[k] = v
	}
	// A bound, not a wait: on two busy cores Trino has taken more than
	// the default 4 minutes to run its first scan.
	l, err := realserver.Launch(realserver.Options{Flavour: f, Name: name, HeapMB: extraHeapMB, Config: all, Files: files, StartTimeout: 8 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Server().Close() })
	return l
}

// startExtra is launchExtra, ready.
func startExtra(t *testing.T, f coordinator.Flavour, name string, config, files map[string]string) *realserver.Server {
	t.Helper()
	l := launchExtra(t, f, name, config, files)
	if err := l.Ready(); err != nil {
		t.Fatal(err)
	}
	return l.Server()
}

// listed is what ZooKeeper lists under namespace, by address.
func listed(t *testing.T, conn *zk.Conn, namespace string) map[string]discovery.Node {
	t.Helper()
	byName, err := zkfleet.Registrations(conn, "/"+namespace)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("reading /%s: %v", namespace, err)
	}
	out := map[string]discovery.Node{}
	for _, n := range byName {
		out[n.Addr] = n
	}
	return out
}

// gatewayFront serves two gateway replicas for namespace, sharing their
// key, behind a round-robin front, and returns the front's URL: each
// request of a client lands on the other replica than the one before, so
// every follow-up crosses replicas.
func gatewayFront(t *testing.T, f coordinator.Flavour, namespace string) string {
	t.Helper()
	flavour := gateway.Presto
	if f == coordinator.Trino {
		flavour = gateway.Trino
	}
	var replicas [2]*url.URL
	for i := range replicas {
		r, err := routing.New(routing.Config{
			ZooKeeper: &discovery.ZooKeeperConfig{Servers: []string{zkServer.Addr()}, Path: "/" + namespace},
			Strategy:  strategy.Named("poll"),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		g, err := gateway.New(gateway.Config{Router: r, Keys: gatewayKeys, Flavour: flavour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		srv := httptest.NewServer(g)
		t.Cleanup(srv.Close)
		replicas[i], _ = url.Parse(srv.URL)
	}
	var next atomic.Int64
	front := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(replicas[next.Add(1)%2])
			pr.Out.Host = pr.In.Host // the replicas hand out URIs on the front's host
		},
		ErrorLog: log.New(io.Discard, "", 0),
	})
	t.Cleanup(front.Close)
	return front.URL
}

// taggedStatement names the node that runs it and echoes its tag, which
// system.runtime.queries then shows in the statement's text; the scan of
// tpch needs a worker, so a coordinator that cannot schedule yet fails it.
func taggedStatement(tag string) string {
	return "SELECT node_id, '" + tag + "', (SELECT count(*) FROM tpch.tiny.region) FROM system.runtime.nodes"
}

// runTagged runs taggedStatement(tag) on db and returns the node that ran
// it. It reads the rows to their end, as QueryRow does not: a query whose
// client closes its rows before the last page is cancelled, and the
// servers list it FAILED (USER_CANCELED) although the client has its row.
func runTagged(c context.Context, db *sql.DB, tag string) (string, error) {
	rows, err := db.QueryContext(c, taggedStatement(tag))
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var node string
	n := 0
	for rows.Next() {
		var echoed string
		var regions int64
		if err := rows.Scan(&node, &echoed, &regions); err != nil {
			return "", err
		}
		if echoed != tag || regions != 5 {
			return "", fmt.Errorf("answered %q and %d regions, want %q and 5", echoed, regions, tag)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if n != 1 {
		return "", fmt.Errorf("%d rows, want 1", n)
	}
	return node, nil
}

// stream runs tagged statements, one after another on each client, until
// stopped, and records which node ran each and which failed.
type stream struct {
	source string
	stop   chan struct{}
	wg     sync.WaitGroup

	mu     sync.Mutex
	served map[string]string // tag: the node that ran it
	order  []string          // the tags served, in the order they ended
	failed map[string]error  // tag: its error
}

// startStream starts a stream through each client, named by its key;
// source is the clients' source, which the tags start with.
func startStream(t *testing.T, source string, clients map[string]*sql.DB) *stream {
	s := &stream{source: source, stop: make(chan struct{}), served: map[string]string{}, failed: map[string]error{}}
	for name, db := range clients {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for i := 1; ; i++ {
				select {
				case <-s.stop:
					return
				default:
				}
				tag := fmt.Sprintf("%s-%s-%d", source, name, i)
				// A bound per statement: the stream may run for minutes
				// while a server starts.
				c, cancel := context.WithTimeout(context.Background(), time.Minute)
				node, err := runTagged(c, db, tag)
				cancel()
				s.mu.Lock()
				if err != nil {
					s.failed[tag] = err
				} else {
					s.served[tag] = node
					s.order = append(s.order, tag)
				}
				s.mu.Unlock()
				// A pace, not a wait for anything: the stream leaves the
				// two cores to the servers.
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	t.Cleanup(s.end)
	return s
}

// end stops the stream and waits for its statements in flight.
func (s *stream) end() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
}

// servedSince counts the statements each node ran among those that ended
// after the first `after` ones.
func (s *stream) servedSince(after int) (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, tag := range s.order[min(after, len(s.order)):] {
		out[s.served[tag]]++
	}
	return out, len(s.order)
}

// waitServed waits until cond holds of the counts per node of the
// statements that ended after the first `after`, and returns how many had
// ended then.
func (s *stream) waitServed(t *testing.T, what string, after int, cond func(map[string]int) bool) int {
	t.Helper()
	var n int
	testutil.Eventually(t, 2*time.Minute, 50*time.Millisecond, what, func() bool {
		var byNode map[string]int
		byNode, n = s.servedSince(after)
		return cond(byNode) || s.failures() > 0
	})
	if s.failures() > 0 {
		s.check(t)
		t.FailNow()
	}
	return n
}

func (s *stream) failures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.failed)
}

// check ends the stream and fails t for every statement that failed.
func (s *stream) check(t *testing.T) map[string]string {
	t.Helper()
	s.end()
	s.mu.Lock()
	defer s.mu.Unlock()
	for tag, err := range s.failed {
		t.Errorf("statement %s failed: %v", tag, err)
	}
	return s.served
}

// ranOn lists, by tag, the statements from source that s knows, each as
// its state, and for a failure its error's name ("FAILED:USER_CANCELED"),
// from GET /v1/query (realserver.Server.Queries): system.runtime.queries
// has no error in PrestoDB 0.287.
func ranOn(t *testing.T, s *realserver.Server, source string) map[string][]string {
	t.Helper()
	queries, err := s.Queries(ctx(t))
	if err != nil {
		t.Fatalf("listing the queries of %s: %v", source, err)
	}
	tagRE := regexp.MustCompile(regexp.QuoteMeta(source) + `-[a-z0-9]+-[0-9]+`)
	out := map[string][]string{}
	for _, q := range queries {
		tag := tagRE.FindString(q.Query)
		if q.Session.Source != source || tag == "" {
			continue
		}
		state := q.State
		if q.ErrorCode != nil {
			state += ":" + q.ErrorCode.Name
		}
		out[tag] = append(out[tag], state)
	}
	return out
}

// ran counts the runs among states: a failure at dispatch that says the
// query never ran (wire.NeverRan: starting, no node, a full queue) is none.
func ran(states []string) int {
	n := 0
	for _, st := range states {
		if name, ok := strings.CutPrefix(st, "FAILED:"); ok && wire.NeverRan(name, true) {
			continue
		}
		n++
	}
	return n
}

// checkRanOnce fails t unless every statement served ran exactly once, on
// the node that answered it, and no other statement of the stream ran
// anywhere: counts is ranOn of each server, by its name.
func checkRanOnce(t *testing.T, served map[string]string, counts map[string]map[string][]string) {
	t.Helper()
	for tag, node := range served {
		for server, byTag := range counts {
			n := ran(byTag[tag])
			switch {
			case server == node && n != 1:
				t.Errorf("statement %s, served by %s, ran there %d times %v", tag, node, n, byTag[tag])
			case server != node && n != 0:
				t.Errorf("statement %s, served by %s, ran on %s too %v", tag, node, server, byTag[tag])
			}
		}
	}
	for server, byTag := range counts {
		for tag, states := range byTag {
			if _, ok := served[tag]; !ok && ran(states) > 0 {
				t.Errorf("statement %s ran on %s %v, yet no client saw it served", tag, server, states)
			}
		}
	}
}

// A coordinator whose registrar starts with it, before it is ready, as a
// sidecar does, takes statements only once /v1/info no longer says
// "starting" (trino ServerInfoResource.getInfo, StartupStatus; prestodb
// ServerInfoResource.getInfo, StaticCatalogStore.areCatalogsLoaded), when
// the registrar lists it: a stream of statements through the driver
// meanwhile never fails, none runs twice, and every one the new
// coordinator ran finished there. Both servers may still refuse one at
// dispatch just after, with NO_NODES_AVAILABLE, before their node manager
// lists the coordinator as its own worker; the query never ran there
// (wire.NeverRan) and the driver sent it to the other coordinator.
func TestCoordinatorJoinsWhileStarting(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		ns := opsNamespace(t)
		source := "opsjoin" + string(f.flavour)
		registerOps(t, ns, f.servers[0])

		db := openOps(t, f.flavour, ns, source)
		st := startStream(t, source, map[string]*sql.DB{"driver": db})
		st.waitServed(t, "statements before the new coordinator", 0, func(by map[string]int) bool { return by[f.servers[0].Name()] >= 3 })

		launched := time.Now()
		l := launchExtra(t, f.flavour, string(f.flavour)+"-joiner", nil, nil)
		joiner := l.Server()
		reg, err := realserver.Register(zkServer, ns, joiner, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = reg.Close() })
		if err := l.Ready(); err != nil {
			t.Fatal(err)
		}
		ready := time.Since(launched)
		if err := reg.WaitRegistered(opsSettle); err != nil {
			t.Fatal(err)
		}
		_, before := st.servedSince(0)
		st.waitServed(t, "statements on the new coordinator", before, func(by map[string]int) bool {
			return by[joiner.Name()] >= 5 && by[f.servers[0].Name()] >= 5
		})
		served := st.check(t)
		t.Logf("%s ready (a tpch scan done) %s after launch; registered after %d health checks that failed, %d statements served",
			joiner.Name(), ready.Round(100*time.Millisecond), reg.Registrar().Status().HealthCheckFailures, len(served))

		counts := map[string]map[string][]string{
			f.servers[0].Name(): ranOn(t, f.servers[0], source),
			joiner.Name():       ranOn(t, joiner, source),
		}
		checkRanOnce(t, served, counts)
		refused := map[string]int{}
		for tag, states := range counts[joiner.Name()] {
			for _, state := range states {
				switch {
				case state == "FINISHED":
				case ran([]string{state}) == 0:
					// Sent while it could not run it yet, and sent
					// elsewhere by the driver: it never ran there.
					refused[state]++
				default:
					t.Errorf("statement %s is %s on %s, want FINISHED", tag, state, joiner.Name())
				}
			}
		}
		t.Logf("%s refused at dispatch, as not ready, %v of the statements it got", joiner.Name(), refused)
	})
}

// unfinished counts the queries s has not finished whose source is
// source, or of any source but none when source is "".
func unfinished(t *testing.T, s *realserver.Server, source string) int64 {
	t.Helper()
	where := "source IS NOT NULL"
	if source != "" {
		where = "source = '" + source + "'"
	}
	res, err := s.Query(ctx(t), "SELECT count(*) FROM system.runtime.queries WHERE state NOT IN ('FINISHED', 'FAILED') AND "+where)
	if err != nil {
		t.Fatalf("counting the queries running on %s: %v", s.Name(), err)
	}
	n, _ := res.Rows[0][0].(float64)
	return int64(n)
}

// A coordinator taken out of service in the middle of a stream of
// statements, through the driver and through two gateway replicas, costs
// no statement, and runs none twice.
//
// PrestoDB 0.287 shuts a coordinator down on PUT /v1/info/state
// "SHUTTING_DOWN" (ServerInfoResource.updateState,
// GracefulShutdownHandler.requestShutdown): after shutdown.grace-period it
// waits for its queries to end (waitForQueriesToComplete), then stops. All
// along /v1/info says "starting": false, and only GET /v1/info/state says
// SHUTTING_DOWN (ServerInfoResource.getServerState): the registrar must
// unlist it on that, at once.
//
// Trino 476 refuses the request on a coordinator ("Cannot shutdown
// coordinator", NodeStateManager.transitionState), so an operator stops
// the registrar first (SIGTERM to `zkpresto register`, which deletes its
// znode), then the server once its queries have ended.
func TestGracefulShutdownMidStream(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		ns := opsNamespace(t)
		source := "opsdown" + string(f.flavour)
		longSource := source + "long"
		survivor := f.servers[0]
		registerOps(t, ns, survivor)
		var config, files map[string]string
		switch f.flavour {
		case coordinator.Presto:
			// Default 2 minutes: the wait before the server looks at its
			// queries, and after them.
			config = map[string]string{"shutdown.grace-period": "5s"}
		case coordinator.Trino:
			// Trino's default access control refuses a shutdown to
			// everyone, before the coordinator's own refusal: 403
			// "Management only resource" (ResourceSecurityDynamicFeature's
			// ManagementAuthorizationFilter, checkCanWriteSystemInformation,
			// which plugin-toolkit's DefaultSystemAccessControl denies).
			// allow-all lets the request reach NodeStateManager.
			files = map[string]string{"access-control.properties": "access-control.name=allow-all\n"}
		}
		leaving := startExtra(t, f.flavour, string(f.flavour)+"-leaving", config, files)
		reg := registerOps(t, ns, leaving)
		conn := zkfleet.DialT(t, zkServer.Addr())
		// A query that runs until the test ends it: the server must wait
		// for it, however long, and the counts below are read while it
		// does.
		table := slowTable(t, leaving, 100000)

		st := startStream(t, source, map[string]*sql.DB{
			"driver":  openOps(t, f.flavour, ns, source),
			"gateway": openThroughAs(t, &flavourFleet{flavour: f.flavour}, gatewayFront(t, f.flavour, ns), source),
		})
		st.waitServed(t, "statements on both coordinators", 0, func(by map[string]int) bool {
			return by[leaving.Name()] >= 4 && by[survivor.Name()] >= 4
		})
		held := submitRaw(t, leaving.URL(), leaving.Flavour(), longSource, "SELECT count(*) FROM "+table)
		held.advanceUntil("RUNNING")

		requested := time.Now()
		err := leaving.Shutdown(ctx(t))
		switch f.flavour {
		case coordinator.Presto:
			if err != nil {
				t.Fatal(err)
			}
			// The registrar marks a coordinator that is shutting down not
			// ready in its registration (registrar.Config.UnlistNotReady
			// unlists it instead): drivers and gateways skip it from then
			// on. Checks are a second apart; more room while other JVMs
			// take the two cores.
			testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, leaving.Name()+" marked not ready", func() bool {
				n, ok := listed(t, conn, ns)[leaving.Addr()]
				return !ok || strings.Contains(n.NotReady, "SHUTTING_DOWN")
			})
			t.Logf("%s marked not ready %s after the shutdown request", leaving.Name(), time.Since(requested).Round(10*time.Millisecond))
			if st := reg.Registrar().Status(); !strings.Contains(st.NotReady+st.LastError, "SHUTTING_DOWN") {
				t.Errorf("the registrar marked %s for %q (%q), want for its state SHUTTING_DOWN", leaving.Name(), st.NotReady, st.LastError)
			}
			info, err := leaving.Info(ctx(t))
			if err != nil || info.Starting {
				t.Errorf("/v1/info of %s shutting down: %+v, %v; want it answered, not starting", leaving.Name(), info, err)
			}
			if state, err := leaving.State(ctx(t)); state != "SHUTTING_DOWN" {
				t.Errorf("/v1/info/state of %s shutting down: %q, %v", leaving.Name(), state, err)
			}
		case coordinator.Trino:
			state, stateErr := leaving.State(ctx(t))
			if err == nil || !strings.Contains(err.Error(), "Cannot shutdown coordinator") || state != "ACTIVE" {
				t.Fatalf("shutting down a Trino coordinator: %v, and its state is %q (%v); want it refused (\"Cannot shutdown coordinator\"), ACTIVE", err, state, stateErr)
			}
			t.Logf("Trino refuses: %v", err)
			if err := reg.Close(); err != nil {
				t.Fatal(err)
			}
			if _, ok := listed(t, conn, ns)[leaving.Addr()]; ok {
				t.Fatalf("%s still listed once its registrar has stopped", leaving.Name())
			}
		}

		// Whatever was on its way there has ended; from then on every
		// statement goes to the survivor.
		_, n := st.servedSince(0)
		n = st.waitServed(t, "statements after the unlisting", n, func(by map[string]int) bool { return by[survivor.Name()] >= 6 })
		st.waitServed(t, "statements on the survivor alone", n, func(by map[string]int) bool { return by[survivor.Name()] >= 10 })
		if by, _ := st.servedSince(n); by[leaving.Name()] != 0 {
			t.Errorf("%d statements went to %s after it was unlisted: %v", by[leaving.Name()], leaving.Name(), by)
		}
		onLeaving := ranOn(t, leaving, source) // before it goes

		// The held query still runs, past the grace period: the server
		// waits for its queries.
		if p := held.advance(); p.Stats.State != "RUNNING" || p.Error != nil {
			t.Errorf("the query held on %s is %s (%s) %s after the shutdown request, want RUNNING",
				leaving.Name(), p.Stats.State, p.errorName(), time.Since(requested).Round(100*time.Millisecond))
		}
		select {
		case <-leaving.Exited():
			t.Fatalf("%s stopped while a query ran", leaving.Name())
		default:
		}
		held.cancel()
		lastEnded := time.Now()
		switch f.flavour {
		case coordinator.Presto:
			select {
			case <-leaving.Exited():
			case <-time.After(time.Minute):
				t.Fatalf("%s has not stopped a minute after its last query", leaving.Name())
			}
			t.Logf("%s stopped %s after the request, %s after its last query ended", leaving.Name(),
				time.Since(requested).Round(100*time.Millisecond), time.Since(lastEnded).Round(100*time.Millisecond))
		case coordinator.Trino:
			testutil.Eventually(t, opsSettle, 100*time.Millisecond, "no query running on "+leaving.Name(), func() bool {
				return unfinished(t, leaving, "") == 0
			})
			if err := leaving.Close(); err != nil {
				t.Fatal(err)
			}
		}

		_, n = st.servedSince(0)
		st.waitServed(t, "statements once it has stopped", n, func(by map[string]int) bool { return by[survivor.Name()] >= 6 })
		served := st.check(t)
		checkRanOnce(t, served, map[string]map[string][]string{
			survivor.Name(): ranOn(t, survivor, source),
			leaving.Name():  onLeaving,
		})
		byNode, total := st.servedSince(0)
		t.Logf("%d statements: %v", total, byNode)
	})
}

// A coordinator killed (SIGKILL) in the middle of a query costs that query
// alone: the client gets an error naming what failed, and the statement
// is not sent again, since it may have run. The next statements, through
// the driver and through the gateway, go to the other coordinator while
// the dead one is still listed (a refused connection is a statement never
// sent), none runs twice, and the dead one leaves ZooKeeper when its
// registrar's health checks fail.
func TestKilledCoordinatorMidQuery(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		ns := opsNamespace(t)
		source := "opskill" + string(f.flavour)
		survivor := f.servers[0]
		registerOps(t, ns, survivor)
		victim := startExtra(t, f.flavour, string(f.flavour)+"-victim", nil, nil)
		registerOps(t, ns, victim)
		conn := zkfleet.DialT(t, zkServer.Addr())
		const seconds = 6
		table := slowTable(t, victim, seconds)
		if slowTable(t, survivor, seconds) != table {
			t.Fatal("the slow tables differ")
		}
		db := openOps(t, f.flavour, ns, source)
		gw := openThroughAs(t, &flavourFleet{flavour: f.flavour}, gatewayFront(t, f.flavour, ns), source)

		// Two long statements at once: poll sends one to each coordinator.
		type outcome struct {
			tag string
			n   int64
			err error
		}
		outcomes := make(chan outcome, 2)
		for i := 1; i <= 2; i++ {
			tag := fmt.Sprintf("%s-long-%d", source, i)
			go func() {
				var n int64
				var echoed string
				err := db.QueryRowContext(ctx(t), "SELECT count(*), '"+tag+"' FROM "+table).Scan(&n, &echoed)
				outcomes <- outcome{tag, n, err}
			}()
		}
		var victimTag string
		testutil.Eventually(t, opsSettle, 100*time.Millisecond, "a long statement running on "+victim.Name(), func() bool {
			for tag, states := range ranOn(t, victim, source) {
				if len(states) == 1 && states[0] == "RUNNING" {
					victimTag = tag
					return true
				}
			}
			return false
		})
		if err := victim.Kill(); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		// When ZooKeeper stops listing it, watched from the kill on.
		unlisted := make(chan time.Duration, 1)
		go func() {
			for time.Since(killed) < opsSettle {
				byName, err := zkfleet.Registrations(conn, "/"+ns)
				gone := err == nil
				for _, n := range byName {
					gone = gone && n.Addr != victim.Addr()
				}
				if gone {
					unlisted <- time.Since(killed)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			unlisted <- -1
		}()

		served := map[string]string{}
		check := func(o outcome) {
			switch {
			case o.tag == victimTag && o.err == nil:
				t.Errorf("the statement on %s, killed, answered %d", victim.Name(), o.n)
			case o.tag == victimTag:
				t.Logf("the statement on the killed %s failed after %s: %v", victim.Name(), time.Since(killed).Round(10*time.Millisecond), o.err)
				if !strings.Contains(o.err.Error(), victim.Addr()) {
					t.Errorf("the error of the statement on the killed coordinator does not name it (%s): %v", victim.Addr(), o.err)
				}
			case o.err != nil || o.n != seconds:
				t.Errorf("the long statement on %s: %d rows, %v", survivor.Name(), o.n, o.err)
			default:
				served[o.tag] = survivor.Name()
			}
		}
		// The victim's outcome first: the survivor's statement runs on.
		var later []outcome
		for o := range outcomes {
			if o.tag == victimTag {
				check(o)
				break
			}
			later = append(later, o)
		}

		// The next statements, while the dead one may still be listed.
		stillListed := 0
		for i := 1; i <= 6; i++ {
			for name, q := range map[string]*sql.DB{"driver": db, "gateway": gw} {
				if _, ok := listed(t, conn, ns)[victim.Addr()]; ok {
					stillListed++
				}
				tag := fmt.Sprintf("%s-%s-%d", source, name, i)
				node, err := runTagged(ctx(t), q, tag)
				if err != nil {
					t.Errorf("statement %s through the %s after the kill: %v", tag, name, err)
					continue
				}
				if node != survivor.Name() {
					t.Errorf("statement %s through the %s ran on %s, want %s", tag, name, node, survivor.Name())
				}
				served[tag] = node
			}
		}
		t.Logf("%d of the 12 statements after the kill were sent while %s was still listed", stillListed, victim.Name())
		if len(later) == 0 {
			later = append(later, <-outcomes)
		}
		check(later[0])
		if after := <-unlisted; after < 0 {
			t.Errorf("%s still listed %s after the kill", victim.Name(), opsSettle)
		} else {
			t.Logf("%s unlisted %s after the kill", victim.Name(), after.Round(10*time.Millisecond))
		}
		// The killed statement ran nowhere else: the survivor lists only
		// what was served.
		checkRanOnce(t, served, map[string]map[string][]string{survivor.Name(): ranOn(t, survivor, source)})
	})
}
