package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/devenv"
	"github.com/zkpresto/zkpresto/internal/cli"
)

func init() { subcommands = append(subcommands, newDevCommand) }

func newDevCommand() *cobra.Command {
	var o devenv.Options
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local ZooKeeper and coordinator simulators to try register, nodes and query",
		Long: `dev starts a local ZooKeeper server (Debian's zookeeper package; see
scripts/install-zookeeper.sh) and local Presto coordinator simulators on free
loopback ports, prints their addresses as shell export lines, and runs until
interrupted. Nothing is registered: that is what "zkpresto register" is for.

The simulators speak the Presto client protocol: every statement returns one
row naming the coordinator that served it, rows(N) returns N rows, and
fail('message') fails with that message. With --flavour trino they speak
Trino's X-Trino-* headers and ZKPRESTO_DSN is a trino:// DSN, to try the
gateway with Trino clients. ZooKeeper's data lives in a temporary directory
that is removed on exit.

With --real trino or --real presto it starts real servers instead (Trino 476,
PrestoDB 0.287, single-node, with the tpch, memory and blackhole catalogs;
scripts/fetch-real-servers.sh fetches them), at most 4, and zkpresto's
registrar keeps them registered, as in production: ZKPRESTO_DSN reaches them.`,
		Example: `  zkpresto-lab dev --env-file /tmp/zkpresto-dev.env &
  zkpresto-lab dev --flavour trino --coordinators 3
  zkpresto-lab dev --real trino --coordinators 2
  . /tmp/zkpresto-dev.env
  zkpresto register --advertise "$C1" &`,
		Args: cobra.NoArgs,
		RunE: cli.RunUntilSignal(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			return devenv.Run(ctx, cmd.OutOrStdout(), o)
		}),
	}
	cmd.Flags().IntVar(&o.Coordinators, "coordinators", 2, "how many coordinator simulators to start (c1..cN)")
	cmd.Flags().StringVar(&o.EnvFile, "env-file", "", "also write the export lines to this file, to source from another shell")
	cmd.Flags().StringVar(&o.Flavour, "flavour", "", "the server the simulators stand in for: presto (the default), or trino (X-Trino-* headers, a trino:// DSN)")
	cmd.Flags().StringVar(&o.Real, "real", "", "start real servers instead of simulators: trino (Trino 476) or presto (PrestoDB 0.287), registered by zkpresto's registrar")
	return cmd
}
