// Package devenv runs what "zkpresto-lab dev" offers: a local ZooKeeper and
// coordinator simulators on free loopback ports, announced as shell export
// lines, to try the zkpresto tool (register, nodes, query) on. It is a
// zkprestotest cluster with nothing registered.
package devenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
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
	flavour := coordinator.Presto
	switch strings.ToLower(o.Flavour) {
	case "", "presto":
	case "trino":
		flavour = coordinator.Trino
	default:
		return fmt.Errorf("--flavour %q: want presto or trino", o.Flavour)
	}
	started := time.Now()
	cluster, err := zkprestotest.Start(zkprestotest.Options{Coordinators: o.Coordinators, Flavour: flavour, Unregistered: true})
	if err != nil {
		return err
	}
	defer cluster.Close()

	var env strings.Builder
	fmt.Fprintf(&env, "export ZKPRESTO_ZOOKEEPER=%s\n", cluster.Ensemble())
	fmt.Fprintf(&env, "export ZKPRESTO_DSN='%s'\n", cluster.DSN("?user=dev"))
	for i, c := range cluster.Coordinators {
		fmt.Fprintf(&env, "export C%d=%s\n", i+1, c.URL())
	}
	if o.EnvFile != "" {
		if err := os.WriteFile(o.EnvFile, []byte(env.String()), 0o644); err != nil {
			return fmt.Errorf("--env-file: %w", err)
		}
	}
	fmt.Fprintf(w, "ZooKeeper %s and %d %s coordinators ready in %s; Ctrl-C stops them.\n",
		cluster.Ensemble(), len(cluster.Coordinators), flavour, time.Since(started).Round(time.Millisecond))
	fmt.Fprint(w, env.String())
	<-ctx.Done()
	fmt.Fprintln(w, "stopping")
	return nil
}
