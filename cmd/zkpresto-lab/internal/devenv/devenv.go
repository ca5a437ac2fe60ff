// Package devenv runs what "zkpresto-lab dev" offers: a local ZooKeeper and
// coordinator simulators on free loopback ports, announced as shell export
// lines, to try the zkpresto tool (register, nodes, query) on. It is a
// zkprestotest cluster with nothing registered, or, with Options.Real, a
// realserver cluster of real Trino or PrestoDB servers that zkpresto's
// registrar keeps registered.
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
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
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
	// Real, when set, is the real server to start instead of simulators:
	// "trino" (Trino 476) or "presto" (PrestoDB 0.287), fetched by
	// scripts/fetch-real-servers.sh, at most 4 of them. They are registered
	// by zkpresto's registrar, as in production; Flavour must then be empty
	// or the same.
	Real string
}

// maxReal bounds the real servers dev starts: each takes about 800 MB.
const maxReal = 4

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
	if o.Real != "" {
		return runReal(ctx, w, o)
	}
	started := time.Now()
	cluster, err := zkprestotest.Start(zkprestotest.Options{Coordinators: o.Coordinators, Flavour: flavour, Unregistered: true})
	if err != nil {
		return err
	}
	defer cluster.Close()

	urls := make([]string, len(cluster.Coordinators))
	for i, c := range cluster.Coordinators {
		urls[i] = c.URL()
	}
	return announce(ctx, w, o.EnvFile, cluster.Ensemble(), cluster.DSN("?user=dev"), urls,
		fmt.Sprintf("%d %s coordinators", len(urls), flavour), started)
}

// runReal is Run with real servers (Options.Real).
func runReal(ctx context.Context, w io.Writer, o Options) error {
	flavour := coordinator.Flavour(strings.ToLower(o.Real))
	if flavour != coordinator.Trino && flavour != coordinator.Presto {
		return fmt.Errorf("--real %q: want trino or presto", o.Real)
	}
	if o.Flavour != "" && !strings.EqualFold(o.Flavour, o.Real) {
		return fmt.Errorf("--flavour %q with --real %q: the real server decides the flavour; leave --flavour out", o.Flavour, o.Real)
	}
	if o.Coordinators > maxReal {
		return fmt.Errorf("--coordinators %d with --real: at most %d real servers (each takes about 800 MB)", o.Coordinators, maxReal)
	}
	if err := realserver.Available(flavour); err != nil {
		return fmt.Errorf("--real %s: %w (scripts/fetch-real-servers.sh fetches it)", flavour, err)
	}
	started := time.Now()
	fmt.Fprintf(w, "starting %d real %s servers (about 30 s)...\n", o.Coordinators, flavour)
	cluster, err := realserver.StartCluster(realserver.ClusterOptions{Flavour: flavour, Servers: o.Coordinators})
	if err != nil {
		return err
	}
	defer cluster.Close()
	var urls []string
	for _, s := range cluster.Servers() {
		urls = append(urls, s.URL())
	}
	version := cluster.Servers()[0].Version()
	return announce(ctx, w, o.EnvFile, cluster.ZooKeeper().Addr(), cluster.DSN("?user=dev"), urls,
		fmt.Sprintf("%d real %s %s servers, registered under /%s", len(urls), flavour, version, cluster.Namespace()), started)
}

// announce writes the export lines to w (and envFile) with what is ready,
// and waits for ctx.
func announce(ctx context.Context, w io.Writer, envFile, ensemble, dsn string, urls []string, what string, started time.Time) error {
	var env strings.Builder
	fmt.Fprintf(&env, "export ZKPRESTO_ZOOKEEPER=%s\n", ensemble)
	fmt.Fprintf(&env, "export ZKPRESTO_DSN='%s'\n", dsn)
	for i, u := range urls {
		fmt.Fprintf(&env, "export C%d=%s\n", i+1, u)
	}
	if envFile != "" {
		if err := os.WriteFile(envFile, []byte(env.String()), 0o644); err != nil {
			return fmt.Errorf("--env-file: %w", err)
		}
	}
	fmt.Fprintf(w, "ZooKeeper %s and %s ready in %s; Ctrl-C stops them.\n", ensemble, what, time.Since(started).Round(time.Millisecond))
	fmt.Fprint(w, env.String())
	<-ctx.Done()
	fmt.Fprintln(w, "stopping")
	return nil
}
