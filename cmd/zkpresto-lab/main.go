// Command zkpresto-lab runs zkpresto against a local test rig: demo (the
// strategies at work on a local ZooKeeper and coordinator simulators), dev
// (a ZooKeeper and coordinators to try the zkpresto tool on), simulate (the
// balance quality of every strategy), chaos (coordinators and ZooKeeper
// servers killed under load) and spread (driver pools and gateway replicas
// in processes of their own sharing coordinators). It links the rig (a Java ZooKeeper launcher
// and the coordinator simulator), which the zkpresto binary does not.
package main

import (
	"github.com/spf13/cobra"

	"github.com/zkpresto/zkpresto/internal/cli"
)

func main() { cli.Main(newRootCommand()) }

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "zkpresto-lab",
		Short: "zkpresto on a local ZooKeeper and coordinator simulators: demo, dev, simulate, chaos, spread",
		Long: `zkpresto-lab starts local ZooKeeper servers and Presto coordinator
simulators on loopback ports and runs the zkpresto driver against them.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, newCommand := range subcommands {
		root.AddCommand(newCommand())
	}
	return root
}

// subcommands are the constructors of the lab's subcommands; each
// subcommand's file adds its own in an init function.
var subcommands = []func() *cobra.Command{newDemoCommand}
