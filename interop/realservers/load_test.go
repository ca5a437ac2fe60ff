package realservers

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	zkfleet "github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

// publishedLoad is the load the registrar of the server at addr wrote into
// its znode under f's namespace, as clients read it.
func publishedLoad(t *testing.T, conn *zk.Conn, f *flavourFleet, addr string) discovery.PublishedLoad {
	t.Helper()
	n, ok := listed(t, conn, f.cluster.Namespace())[addr]
	if !ok {
		t.Fatalf("%s is not listed under /%s", addr, f.cluster.Namespace())
	}
	return n.Load
}

// waitPublished waits until the figures published for addr are running
// and queued.
func waitPublished(t *testing.T, conn *zk.Conn, f *flavourFleet, addr string, running, queued int) time.Duration {
	t.Helper()
	start := time.Now()
	var last discovery.PublishedLoad
	testutil.Eventually(t, opsSettle, 20*time.Millisecond, fmt.Sprintf("the published load of %s at %d running, %d queued", addr, running, queued), func() bool {
		last = publishedLoad(t, conn, f, addr)
		return !last.ReadAt.IsZero() && last.Running == running && last.Queued == queued
	})
	return time.Since(start)
}

// The registrar's load source reads the real servers' own counts: Trino's
// QueryManager mbean through the JMX resource (trino
// execution/QueryManagerStats, RunningQueries and QueuedQueries, served by
// airlift's MBeanResource at /v1/jmx/mbean/trino.execution:name=QueryManager),
// PrestoDB's GET /v1/cluster (ClusterStatsResource, runningQueries and
// queuedQueries). A statement running and one queued in the tight resource
// group (InternalResourceGroup: hardConcurrencyLimit 1) show in the znode as
// 1 running and 1 queued, and the figures go back to 0 as they end.
func TestPublishedLoadFollowsTheRealServer(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		s := f.servers[0]
		conn := zkfleet.DialT(t, zkServer.Addr())
		waitPublished(t, conn, f, s.Addr(), 0, 0)
		slow := "SELECT count(*) FROM " + slowTable(t, s, 100000)
		running := submitRaw(t, s.URL(), s.Flavour(), queueSource, slow)
		running.advanceUntil("RUNNING")
		took := waitPublished(t, conn, f, s.Addr(), 1, 0)
		t.Logf("1 running published within %s", took.Round(time.Millisecond))

		queued := submitRaw(t, s.URL(), s.Flavour(), queueSource, slow)
		queued.advance()
		queued.advanceUntil("QUEUED")
		took = waitPublished(t, conn, f, s.Addr(), 1, 1)
		t.Logf("1 running and 1 queued published within %s", took.Round(time.Millisecond))

		queued.cancel()
		waitPublished(t, conn, f, s.Addr(), 1, 0)
		running.cancel()
		took = waitPublished(t, conn, f, s.Addr(), 0, 0)
		t.Logf("0 published within %s of the cancel", took.Round(time.Millisecond))
	})
}

// shared_p2c sends each statement to the coordinator whose published load
// (all clients together) is lower: long statements started one after
// another by two clients, each once the figures show the one before, end
// up spread over the two coordinators, 3 to 5 of 8 on each (4 and 4 when
// the figures are exact; random would put 6 or more on one in 29% of
// runs). Started all at once, before any figure moved, they went 6 and 2
// on Trino: the figures then say nothing yet.
func TestSharedP2CSpreadsLongQueries(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		const statements = 8
		table := slowTable(t, f.servers[0], 100000)
		if slowTable(t, f.servers[1], 100000) != table {
			t.Fatal("the slow tables differ")
		}
		conn := zkfleet.DialT(t, zkServer.Addr())
		running := func() map[string]int {
			out := map[string]int{}
			for _, s := range f.servers {
				out[s.Name()] = publishedLoad(t, conn, f, s.Addr()).Running
			}
			return out
		}
		for _, s := range f.servers {
			waitPublished(t, conn, f, s.Addr(), 0, 0)
		}
		clients := []*sql.DB{
			open(t, f, ";zooKeeperStrategy=shared_p2c?user=alice"),
			open(t, f, ";zooKeeperStrategy=shared_p2c?user=alice"),
		}
		c, cancel := context.WithCancel(ctx(t))
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		for i := range statements {
			db := clients[i%len(clients)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Cancelled when the test has counted: the statements
				// matter while they run.
				rows, err := db.QueryContext(c, "SELECT count(*) FROM "+table)
				if err == nil {
					for rows.Next() {
					}
					rows.Close()
				}
			}()
			testutil.Eventually(t, opsSettle, 20*time.Millisecond, fmt.Sprintf("statement %d in the published figures", i+1), func() bool {
				total := 0
				for _, n := range running() {
					total += n
				}
				return total == i+1
			})
		}
		byNode := running()
		t.Logf("%d long statements, each started once the figures showed the one before: %v running", statements, byNode)
		for _, s := range f.servers {
			if n := byNode[s.Name()]; n < 3 || n > 5 {
				t.Errorf("%s runs %d of the %d statements, want 3 to 5: %v", s.Name(), n, statements, byNode)
			}
		}
	})
}
