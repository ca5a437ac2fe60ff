package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkpresto/zkpresto/internal/coordinator"
	"github.com/zkpresto/zkpresto/internal/zkserver"
)

func init() { subcommands = append(subcommands, newDevCommand) }

type devOptions struct {
	coordinators int
	envFile      string
}

func newDevCommand() *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local ZooKeeper and coordinator simulators to try register, nodes and query",
		Long: `dev starts a local ZooKeeper server (Debian's zookeeper package; see
scripts/install-zookeeper.sh) and local Presto coordinator simulators on free
loopback ports, prints their addresses as shell export lines, and runs until
interrupted. Nothing is registered: that is what "zkpresto register" is for.

The simulators speak the Presto client protocol: every statement returns one
row naming the coordinator that served it, rows(N) returns N rows, and
fail('message') fails with that message. ZooKeeper's data lives in a temporary
directory that is removed on exit.`,
		Example: `  zkpresto dev --env-file /tmp/zkpresto-dev.env &
  . /tmp/zkpresto-dev.env
  zkpresto register --advertise "$C1" &`,
		Args: cobra.NoArgs,
		RunE: runUntilSignal(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			return runDev(ctx, cmd.OutOrStdout(), o)
		}),
	}
	cmd.Flags().IntVar(&o.coordinators, "coordinators", 2, "how many coordinator simulators to start (c1..cN)")
	cmd.Flags().StringVar(&o.envFile, "env-file", "", "also write the export lines to this file, to source from another shell")
	return cmd
}

// runDev runs until ctx is done.
func runDev(ctx context.Context, w io.Writer, o devOptions) error {
	if o.coordinators < 1 || o.coordinators > 100 {
		return fmt.Errorf("--coordinators %d: want 1..100", o.coordinators)
	}
	started := time.Now()
	zk, err := zkserver.Start(zkserver.Options{})
	if err != nil {
		return err
	}
	defer zk.Close()
	coords, err := coordinator.StartFleet(o.coordinators, coordinator.Options{})
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
	fmt.Fprintf(&env, "export ZKPRESTO_DSN='presto://%s/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto?user=dev'\n", zk.Addr())
	for i, c := range coords {
		fmt.Fprintf(&env, "export C%d=%s\n", i+1, c.URL())
	}
	if o.envFile != "" {
		if err := os.WriteFile(o.envFile, []byte(env.String()), 0o644); err != nil {
			return fmt.Errorf("--env-file: %w", err)
		}
	}
	fmt.Fprintf(w, "ZooKeeper %s and %d coordinators ready in %s; Ctrl-C stops them.\n",
		zk.Addr(), len(coords), time.Since(started).Round(time.Millisecond))
	fmt.Fprint(w, env.String())
	<-ctx.Done()
	fmt.Fprintln(w, "stopping")
	return nil
}
