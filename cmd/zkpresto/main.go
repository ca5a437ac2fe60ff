// Command zkpresto is the tool operators deploy beside coordinators and
// clients: register, nodes, query (and version). It links no test rig: the
// demo and the other lab commands are in cmd/zkpresto-lab.
package main

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/zkpresto/zkpresto/internal/cli"
)

func main() { cli.Main(newRootCommand()) }

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "zkpresto",
		Short: "Presto/Trino discovery through ZooKeeper, with client-side load balancing",
		Long: `zkpresto finds Presto (and Trino) coordinators registered in ZooKeeper and
balances statements across them. This is the tool operators deploy: register
keeps a coordinator listed, nodes shows what clients see, query runs SQL
through the driver. The demo, dev, simulate and chaos commands are in
zkpresto-lab.`,
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
var subcommands = []func() *cobra.Command{newVersionCommand}

// errNoDSN is the error of the commands that need --dsn without one.
var errNoDSN = errors.New("--dsn (or $ZKPRESTO_DSN) is required")

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
