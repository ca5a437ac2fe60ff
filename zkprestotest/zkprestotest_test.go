package zkprestotest_test

import (
	"database/sql"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/zkprestotest"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// registered returns the addresses registered under the cluster's
// namespace, by format, as discovery reads them.
func registered(t *testing.T, c *zkprestotest.Cluster) map[string]discovery.Format {
	t.Helper()
	nodes, err := fleet.Registrations(c.Fleet.Conn(), "/"+c.Namespace())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]discovery.Format{}
	for _, n := range nodes {
		out[n.Addr] = n.Format
	}
	return out
}

// Every node format the cluster offers is written so that discovery reads
// it back as that format, each coordinator once, and the driver reaches the
// coordinators through it.
func TestNewClusterRegistersInEveryFormat(t *testing.T) {
	for _, format := range []discovery.Format{discovery.FormatZkpresto, discovery.FormatHive, discovery.FormatCurator, discovery.FormatHostPort} {
		t.Run(format.String(), func(t *testing.T) {
			c := zkprestotest.NewCluster(t, zkprestotest.Options{Coordinators: 2, Format: format, Namespace: "team/" + format.String()})
			got := registered(t, c)
			if len(got) != 2 {
				t.Fatalf("registered %v, want both coordinators", got)
			}
			for _, co := range c.Coordinators {
				if got[co.Addr()] != format {
					t.Errorf("%s registered as %v, want %v (all: %v)", co.Name(), got[co.Addr()], format, got)
				}
			}
			db, err := sql.Open("zkpresto", c.DSN("?user=alice"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var n int64
			if err := db.QueryRow("SELECT n FROM rows(1)").Scan(&n); err != nil || n != 1 {
				t.Fatalf("query through %s: n=%d, %v", c.DSN("?user=alice"), n, err)
			}
		})
	}
}

// The zero Options are one Presto coordinator in zkpresto's format under
// /presto, with a presto:// DSN; a Trino cluster has a trino:// DSN and
// coordinators that speak Trino.
func TestDefaultsAndFlavour(t *testing.T) {
	c := zkprestotest.NewCluster(t, zkprestotest.Options{})
	if len(c.Coordinators) != 1 || c.Namespace() != "presto" || c.Coordinators[0].Flavour() != coordinator.Presto {
		t.Fatalf("zero Options started %d coordinators under %q, flavour %s", len(c.Coordinators), c.Namespace(), c.Coordinators[0].Flavour())
	}
	want := "presto://" + c.ZooKeeper.Addr() + "/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto?user=u"
	if got := c.DSN("?user=u"); got != want {
		t.Errorf("DSN %q, want %q", got, want)
	}
	if got := registered(t, c); got[c.Coordinators[0].Addr()] != discovery.FormatZkpresto {
		t.Errorf("registered %v, want c1 in zkpresto's format", got)
	}

	trino := zkprestotest.NewCluster(t, zkprestotest.Options{Coordinator: coordinator.Options{Flavour: coordinator.Trino}})
	if !strings.HasPrefix(trino.DSN(""), "trino://") || trino.Coordinators[0].Flavour() != coordinator.Trino {
		t.Errorf("Coordinator.Flavour Trino gave DSN %q and flavour %s", trino.DSN(""), trino.Coordinators[0].Flavour())
	}
}

// Unregistered coordinators run but are not in ZooKeeper until the test
// registers them; Deregister takes one out again.
func TestUnregisteredAndDeregister(t *testing.T) {
	c := zkprestotest.NewCluster(t, zkprestotest.Options{Coordinators: 2, Unregistered: true})
	if got := registered(t, c); len(got) != 0 {
		t.Fatalf("Unregistered cluster has registrations %v", got)
	}
	for _, co := range c.Coordinators {
		if err := c.Register(co); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Deregister(c.Coordinators[0]); err != nil {
		t.Fatal(err)
	}
	if got := registered(t, c); len(got) != 1 || got[c.Coordinators[1].Addr()] != discovery.FormatZkpresto {
		t.Fatalf("after deregistering c1: %v, want c2 alone", got)
	}
	if err := c.Deregister(c.Coordinators[0]); err == nil || !strings.Contains(err.Error(), "c1") {
		t.Fatalf("deregistering c1 twice: %v, want an error naming c1", err)
	}
}

// Bad options are refused, each with an error naming the field, before
// anything starts.
func TestBadOptionsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		opts zkprestotest.Options
		want string
	}{
		{zkprestotest.Options{Coordinators: -1}, "Options.Coordinators -1"},
		{zkprestotest.Options{Flavour: "mysql"}, `Options.Flavour "mysql"`},
		{zkprestotest.Options{Format: discovery.Format(99)}, "Options.Format format(99)"},
	} {
		c, err := zkprestotest.Start(tc.opts)
		if err == nil {
			c.Close()
			t.Errorf("%+v started", tc.opts)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want it to name %s", tc.opts, err, tc.want)
		}
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as the real one does, so a test can check the failure
// NewCluster reports.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Without ZooKeeper the failure says which package to install and how.
func TestMissingZooKeeperNamesThePackage(t *testing.T) {
	t.Setenv(zkserver.ClasspathEnv, t.TempDir()+"/no-zookeeper.jar")
	if _, err := zkprestotest.Start(zkprestotest.Options{}); err == nil || !strings.Contains(err.Error(), "apt-get install zookeeper") {
		t.Fatalf("Start without ZooKeeper: %v, want the package to install", err)
	}
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		zkprestotest.NewCluster(r, zkprestotest.Options{})
		t.Error("NewCluster returned without ZooKeeper")
	}()
	<-done
	if !strings.Contains(r.fatal, `package "zookeeper"`) || !strings.Contains(r.fatal, "apt-get install zookeeper") {
		t.Fatalf("NewCluster without ZooKeeper failed with %q, want the package to install", r.fatal)
	}
}
