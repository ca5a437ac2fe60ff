// Package zkprestotest starts, for an integration test, what a zkpresto
// client finds in production: a real ZooKeeper server and Presto or Trino
// coordinators registered under a namespace, all on loopback ports, and gives
// the DSN to open with sql.Open("zkpresto", ...). It is to zkpresto what
// net/http/httptest is to net/http.
//
// NewCluster starts a cluster for one test and stops it when the test ends;
// Start and Close do the same where no testing.TB is at hand (an Example, a
// TestMain, a program). The coordinators are simulators (package
// coordinator): they speak the client protocol of the flavour chosen, and
// answer every statement without SQL (rows(N) returns N rows, fail('m')
// fails, anything else returns one row naming the coordinator that served
// it). The ZooKeeper is Apache ZooKeeper itself, from Debian's "zookeeper"
// package (apt-get install zookeeper) and a java runtime; without them
// NewCluster fails the test and Start returns an error, saying so.
//
// For faults, the cluster's parts are at hand: Cluster.ZooKeeper can be
// killed, paused and restarted, each coordinator stopped, restarted, slowed
// or marked as starting, registrations added and removed with Register and
// Deregister. The packages beside this one add more: zkserver (ensembles and
// leader changes), fleet (registrations in every node format), tcpproxy
// (connections cut or black-holed between a client and a server), lostpage
// (the first answer to each executing page lost, for page retries),
// deadpeer (peers that drop SYNs, never read or never answer) and testtls
// (throwaway certificates).
package zkprestotest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// Options say what a cluster is made of. The zero value is one Presto
// coordinator registered in zkpresto's own format under /presto.
type Options struct {
	// Coordinators is how many coordinator simulators to start, named
	// c1..cN; zero means one.
	Coordinators int
	// Flavour is the server the simulators stand in for: coordinator.Presto
	// or coordinator.Trino; when empty, Coordinator.Flavour, and else
	// Presto. It also decides the DSN's scheme, presto:// or trino://.
	Flavour coordinator.Flavour
	// Namespace is the znode path the coordinators register under, without
	// leading or trailing slashes; default "presto".
	Namespace string
	// Format is the node format of the registrations: discovery.FormatZkpresto
	// (the default, what `zkpresto register` writes), FormatHive (Hive and
	// Kyuubi), FormatCurator (Apache Curator's service discovery, as Presto's
	// own announcer writes) or FormatHostPort (a bare host:port name).
	Format discovery.Format
	// Unregistered starts the coordinators without registering any: the
	// test registers them itself, with Register, or with the registrar.
	Unregistered bool
	// Coordinator is the template for every coordinator (its Name and
	// Flavour are replaced): latency, batch size, TLS and so on.
	Coordinator coordinator.Options
	// ZooKeeper configures the ZooKeeper server, for example extra zoo.cfg
	// lines for TLS or authentication.
	ZooKeeper zkserver.Options
}

// Cluster is a running ZooKeeper and coordinators. Its methods are safe for
// concurrent use.
type Cluster struct {
	// ZooKeeper is the server, to kill, pause or restart.
	ZooKeeper *zkserver.Server
	// Coordinators are the simulators, c1..cN, to stop, restart or slow.
	Coordinators []*coordinator.Coordinator
	// Fleet holds the cluster's own ZooKeeper session, which owns the
	// (ephemeral) registrations, for registrations of any kind.
	Fleet *fleet.Fleet

	flavour coordinator.Flavour
	format  discovery.Format
}

// NewCluster starts a cluster for tb and closes it when tb and its subtests
// end. It fails tb when the cluster cannot start, ZooKeeper not being
// installed included; the failure names what is missing.
func NewCluster(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	c, err := Start(opts)
	if err != nil {
		tb.Fatalf("%v", err)
		return nil
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("ZooKeeper %s log tail:\n%s", c.ZooKeeper.Addr(), c.ZooKeeper.LogTail(30))
		}
		if err := c.Close(); err != nil {
			tb.Errorf("zkprestotest: closing the cluster: %v", err)
		}
	})
	return c
}

// Start starts a cluster; the caller must Close it. The error says what did
// not start: ZooKeeper missing (with how to install it), a bad option, a
// coordinator or a registration.
func Start(opts Options) (*Cluster, error) {
	if opts.Coordinators < 0 {
		return nil, fmt.Errorf("zkprestotest: Options.Coordinators %d is negative", opts.Coordinators)
	}
	if opts.Coordinators == 0 {
		opts.Coordinators = 1
	}
	if opts.Flavour == "" {
		opts.Flavour = opts.Coordinator.Flavour
	}
	if opts.Flavour == "" {
		opts.Flavour = coordinator.Presto
	}
	if opts.Flavour != coordinator.Presto && opts.Flavour != coordinator.Trino {
		return nil, fmt.Errorf("zkprestotest: Options.Flavour %q: want %q or %q", opts.Flavour, coordinator.Presto, coordinator.Trino)
	}
	if opts.Format == discovery.FormatStatic {
		opts.Format = discovery.FormatZkpresto
	}
	switch opts.Format {
	case discovery.FormatZkpresto, discovery.FormatHive, discovery.FormatCurator, discovery.FormatHostPort:
	default:
		return nil, fmt.Errorf("zkprestotest: Options.Format %s: want zkpresto, hive, curator or hostport", opts.Format)
	}
	if err := zkserver.Available(); err != nil {
		return nil, fmt.Errorf("zkprestotest: %w", err)
	}
	tmpl := opts.Coordinator
	tmpl.Name, tmpl.Flavour = "", opts.Flavour
	f, err := fleet.Start(fleet.Options{
		Coordinators: opts.Coordinators,
		Namespace:    opts.Namespace,
		ZooKeeper:    opts.ZooKeeper,
		Coordinator:  tmpl,
	})
	if err != nil {
		return nil, fmt.Errorf("zkprestotest: %w", err)
	}
	c := &Cluster{ZooKeeper: f.ZooKeeper, Coordinators: f.Coordinators, Fleet: f, flavour: opts.Flavour, format: opts.Format}
	if !opts.Unregistered {
		for _, co := range c.Coordinators {
			if err := c.Register(co); err != nil {
				return nil, errors.Join(err, f.Close())
			}
		}
	}
	return c, nil
}

// Ensemble returns the ZooKeeper connect string, "127.0.0.1:port".
func (c *Cluster) Ensemble() string { return c.Fleet.Ensemble() }

// Namespace returns the namespace the coordinators register under, without
// slashes.
func (c *Cluster) Namespace() string { return c.Fleet.Namespace }

// DSN returns the zkpresto DSN that finds the cluster's coordinators, with
// extra appended: ";key=value" parts of the DSN and then "?key=value"
// parameters, as in c.DSN(";zooKeeperStrategy=poll?user=alice").
func (c *Cluster) DSN(extra string) string { return c.DSNAt(c.Ensemble(), extra) }

// DSNAt is DSN with another ZooKeeper connect string, such as the address of
// a tcpproxy.Proxy in front of c.ZooKeeper, to cut or stall the driver's
// ZooKeeper session alone.
func (c *Cluster) DSNAt(ensemble, extra string) string {
	return c.Fleet.DSNFor(string(c.flavour), ensemble, extra)
}

// Register registers co (one of the cluster's coordinators or any other) in
// the cluster's node format with weight 1; registering it again adds a
// second registration.
func (c *Cluster) Register(co *coordinator.Coordinator) error {
	if _, err := c.Fleet.Register(co, c.format, 1); err != nil {
		return fmt.Errorf("zkprestotest: %w", err)
	}
	return nil
}

// Deregister deletes co's registration, as when a coordinator leaves the
// cluster while it keeps running.
func (c *Cluster) Deregister(co *coordinator.Coordinator) error {
	if err := c.Fleet.Deregister(co); err != nil {
		return fmt.Errorf("zkprestotest: %w", err)
	}
	return nil
}

// Close deletes the registrations and stops the coordinators and ZooKeeper.
func (c *Cluster) Close() error {
	return c.Fleet.Close()
}
