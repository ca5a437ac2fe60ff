package realserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// ClusterOptions say what a Cluster is made of. The zero value is one Trino
// server registered under /trino in a ZooKeeper of its own.
type ClusterOptions struct {
	// Flavour is coordinator.Trino (the default) or coordinator.Presto. It
	// also decides the DSN's scheme, trino:// or presto://.
	Flavour coordinator.Flavour
	// Servers is how many servers to start, named <flavour>1..N; zero
	// means one. They start side by side.
	Servers int
	// Namespace is the znode path the servers register under, without
	// slashes; default the flavour's name.
	Namespace string
	// Server is the template for every server (its Flavour and Name are
	// replaced).
	Server Options
	// TimeZones, when set, are the servers' JVM zones in turn (server i
	// gets TimeZones[i%len]), replacing the template's: a fleet whose
	// coordinators disagree on the zone, as fleets across regions do.
	TimeZones []string
	// ZooKeeper, when set, is the ZooKeeper the servers register in, shared
	// with other clusters and left running by Close; nil starts one.
	ZooKeeper *zkserver.Server
	// Load is how the registrars publish their server's load, for
	// shared_p2c; its Source is set to the flavour's. Nil publishes with
	// the registrar's defaults.
	Load *registrar.LoadPublishing
}

// Cluster is real servers registered in a real ZooKeeper by zkpresto's own
// registrar (package registrar, what `zkpresto register` runs), as in
// production. Its methods are safe for concurrent use.
type Cluster struct {
	flavour   coordinator.Flavour
	namespace string
	zk        *zkserver.Server
	ownZK     bool
	servers   []*Server
	regs      []*registrar.Registrar

	cancel    context.CancelFunc
	running   sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// StartCluster starts a cluster and returns once every server has run a
// statement and is registered; the caller must Close it. The error names
// what did not start, with a failed server's log tail.
func StartCluster(opts ClusterOptions) (*Cluster, error) {
	if opts.Flavour == "" {
		opts.Flavour = coordinator.Trino
	}
	if opts.Flavour != coordinator.Trino && opts.Flavour != coordinator.Presto {
		return nil, fmt.Errorf("realserver: cluster flavour %q: want %q or %q", opts.Flavour, coordinator.Trino, coordinator.Presto)
	}
	if opts.Servers < 0 {
		return nil, fmt.Errorf("realserver: cluster of %d servers", opts.Servers)
	}
	if opts.Servers == 0 {
		opts.Servers = 1
	}
	if opts.Namespace == "" {
		opts.Namespace = string(opts.Flavour)
	}
	c := &Cluster{flavour: opts.Flavour, namespace: opts.Namespace, zk: opts.ZooKeeper}
	load := registrar.LoadPublishing{}
	if opts.Load != nil {
		load = *opts.Load
	}
	load.Source = loadSource(opts.Flavour)
	if c.zk == nil {
		zk, err := zkserver.Start(zkserver.Options{})
		if err != nil {
			return nil, fmt.Errorf("realserver: %w", err)
		}
		c.zk, c.ownZK = zk, true
	}
	c.servers = make([]*Server, opts.Servers)
	errs := make([]error, opts.Servers)
	var starting sync.WaitGroup
	for i := range c.servers {
		o := opts.Server
		o.Flavour, o.Name = opts.Flavour, fmt.Sprintf("%s%d", opts.Flavour, i+1)
		if len(opts.TimeZones) > 0 {
			o.TimeZone = opts.TimeZones[i%len(opts.TimeZones)]
		}
		starting.Add(1)
		go func() {
			defer starting.Done()
			c.servers[i], errs[i] = Start(o)
		}()
	}
	starting.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = c.Close()
		return nil, err
	}
	if err := c.register(load); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// NewCluster starts a cluster for tb and closes it when tb ends; it fails
// tb when the cluster cannot start, the servers not being fetched
// included. Starting takes tens of seconds, so a test binary shares one
// cluster (StartCluster in TestMain) where it can.
func NewCluster(tb testing.TB, opts ClusterOptions) *Cluster {
	tb.Helper()
	c, err := StartCluster(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// register runs a registrar per server and waits until each holds its
// znode.
func (c *Cluster) register(load registrar.LoadPublishing) error {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	for _, s := range c.servers {
		// A server that serves https is registered at its https address,
		// where it checks passwords, and polled on its http port, whose
		// /v1/info needs neither a password nor the test CA (as
		// `zkpresto register --advertise https://… --coordinator http://…`).
		advertise := s.URL()
		if s.HTTPSURL() != "" {
			advertise = s.HTTPSURL()
		}
		r, err := registrar.New(registrar.Config{
			Servers:        []string{c.zk.Addr()},
			Namespace:      c.namespace,
			AdvertiseURI:   advertise,
			CoordinatorURL: s.URL(),
			Interval:       time.Second,
			Load:           &load,
		})
		if err != nil {
			return fmt.Errorf("realserver: registrar for %s: %w", s.Name(), err)
		}
		c.regs = append(c.regs, r)
		c.running.Add(1)
		go func() { defer c.running.Done(); _ = r.Run(ctx) }()
	}
	const bound = 30 * time.Second
	deadline := time.Now().Add(bound)
	for i, r := range c.regs {
		for !r.Status().Registered {
			if time.Now().After(deadline) {
				return fmt.Errorf("realserver: %s not registered under /%s within %s: %s", c.servers[i].Name(), c.namespace, bound, r.Status().LastError)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

func loadSource(f coordinator.Flavour) registrar.LoadSource {
	if f == coordinator.Trino {
		return registrar.LoadFromTrino
	}
	return registrar.LoadFromPresto
}

// DSN returns the zkpresto DSN that finds the cluster's servers, catalog
// tpch and schema tiny, with extra appended: ";key=value" parts of the DSN
// and then "?key=value" parameters, as in
// c.DSN(";zooKeeperStrategy=poll?user=alice").
func (c *Cluster) DSN(extra string) string {
	return string(c.flavour) + "://" + c.zk.Addr() + "/tpch/tiny;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=" + c.namespace + extra
}

// Servers returns the cluster's servers, in the order of their names.
func (c *Cluster) Servers() []*Server { return append([]*Server(nil), c.servers...) }

// Registrar returns the registrar of the i'th server (from 0), for its
// Status.
func (c *Cluster) Registrar(i int) *registrar.Registrar { return c.regs[i] }

// Flavour is the cluster's flavour.
func (c *Cluster) Flavour() coordinator.Flavour { return c.flavour }

// Namespace is the znode path the servers register under, without slashes.
func (c *Cluster) Namespace() string { return c.namespace }

// ZooKeeper is the ZooKeeper the servers are registered in.
func (c *Cluster) ZooKeeper() *zkserver.Server { return c.zk }

// Close stops the registrars (which delete the registrations), the servers
// and, unless it was shared, ZooKeeper. Calling it again returns the first
// call's result.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		if c.cancel != nil {
			c.cancel()
		}
		c.running.Wait()
		var errs []string
		for _, s := range c.servers {
			if s == nil {
				continue
			}
			if err := s.Close(); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if c.ownZK {
			if err := c.zk.Close(); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			c.closeErr = fmt.Errorf("realserver: closing the cluster: %s", strings.Join(errs, "; "))
		}
	})
	return c.closeErr
}
