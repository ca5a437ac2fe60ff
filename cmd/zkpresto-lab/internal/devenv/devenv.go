// Package devenv runs what "zkpresto-lab dev" offers: a local ZooKeeper and
// coordinator simulators on free loopback ports, announced as shell export
// lines, to try the zkpresto tool (register, nodes, query) on.
package devenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// Options says what to start.
type Options struct {
	// Coordinators is how many coordinator simulators to start (c1..cN), 1 to 100.
	Coordinators int
	// EnvFile, when set, also receives the export lines, to source from
	// another shell.
	EnvFile string
	// Flavour is the server the simulators stand in for, "presto" (the
	// default when empty) or "trino": Trino's X-Trino-* headers, and a
	// trino:// DSN, to try the gateway with Trino clients.
	Flavour string
}

// Run starts ZooKeeper and the coordinators, writes the export lines to w
// (and EnvFile), and runs until ctx is done; then it stops what it started.
func Run(ctx context.Context, w io.Writer, o Options) error {
	if o.Coordinators < 1 || o.Coordinators > 100 {
		return fmt.Errorf("--coordinators %d: want 1..100", o.Coordinators)
	}
	flavour, scheme := coordinator.Presto, "presto"
	switch strings.ToLower(o.Flavour) {
	case "", "presto":
	case "trino":
		flavour, scheme = coordinator.Trino, "trino"
	default:
		return fmt.Errorf("--flavour %q: want presto or trino", o.Flavour)
	}
	started := time.Now()
	zk, err := zkserver.Start(zkserver.Options{})
	if err != nil {
		return err
	}
	defer zk.Close()
	coords, err := coordinator.StartFleet(o.Coordinators, coordinator.Options{Flavour: flavour})
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range coords {
			c.Close()
		}
	}()

	var env strings.Builder
	fmt.Fprintf(&env, "export ZKPRESTO_ZOOKEEPER=%s\n", zk.Addr())
	fmt.Fprintf(&env, "export ZKPRESTO_DSN='%s://%s/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto?user=dev'\n", scheme, zk.Addr())
	for i, c := range coords {
		fmt.Fprintf(&env, "export C%d=%s\n", i+1, c.URL())
	}
	if o.EnvFile != "" {
		if err := os.WriteFile(o.EnvFile, []byte(env.String()), 0o644); err != nil {
			return fmt.Errorf("--env-file: %w", err)
		}
	}
	fmt.Fprintf(w, "ZooKeeper %s and %d %s coordinators ready in %s; Ctrl-C stops them.\n",
		zk.Addr(), len(coords), flavour, time.Since(started).Round(time.Millisecond))
	fmt.Fprint(w, env.String())
	<-ctx.Done()
	fmt.Fprintln(w, "stopping")
	return nil
}
