// Command zkpresto is the zkpresto command-line tool. Its demo subcommand
// starts a local ZooKeeper and local coordinators and shows the driver's
// strategies at work.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	zkdriver "github.com/zkpresto/zkpresto/driver"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		// Driver errors already say where they come from.
		fmt.Fprintln(os.Stderr, "zkpresto: "+strings.TrimPrefix(err.Error(), "zkpresto: "))
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "zkpresto",
		Short: "Presto/Trino discovery through ZooKeeper, with client-side load balancing",
		Long: `zkpresto finds Presto (and Trino) coordinators registered in ZooKeeper and
balances statements across them. This tool runs the driver from the command line.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, newCommand := range subcommands {
		root.AddCommand(newCommand())
	}
	return root
}

// subcommands are the constructors of the zkpresto subcommands; each
// subcommand's file adds its own in an init function.
var subcommands = []func() *cobra.Command{newDemoCommand, newVersionCommand}

// errNoDSN is the error of the commands that need --dsn without one.
var errNoDSN = errors.New("--dsn (or $ZKPRESTO_DSN) is required")

// runUntilSignal makes run a command's RunE, with a context that SIGINT and
// SIGTERM cancel: every command stops the same way when interrupted, after
// cleaning up what it started.
func runUntilSignal(run func(ctx context.Context, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return run(ctx, cmd, args)
	}
}

// openConnector opens the driver's connector for dsn, as sql.Open would,
// for the commands that also ask it what it sees.
func openConnector(dsn string) (*zkdriver.Connector, error) {
	cfg, err := zkdriver.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return zkdriver.NewConnector(cfg)
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of zkpresto and of the libraries it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			info, ok := debug.ReadBuildInfo()
			if !ok {
				fmt.Fprintln(w, "zkpresto (unknown version)")
				return nil
			}
			fmt.Fprintf(w, "zkpresto %s (%s)\n", info.Main.Version, info.GoVersion)
			for _, dep := range info.Deps {
				switch dep.Path {
				case "github.com/go-zookeeper/zk", "github.com/prestodb/presto-go-client/v2":
					fmt.Fprintf(w, "  %s %s\n", dep.Path, dep.Version)
				}
			}
			return nil
		},
	}
}
