package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkpresto/zkpresto/internal/cli"
	"github.com/zkpresto/zkpresto/registrar"
)

func init() {
	subcommands = append(subcommands, func() *cobra.Command { return newDrainCommand(true) },
		func() *cobra.Command { return newDrainCommand(false) })
}

// newDrainCommand is drain (on) or undrain.
func newDrainCommand(on bool) *cobra.Command {
	var o registerOptions
	use, short, long := "drain ADDRESS", "Mark a coordinator drained: no client sends it new statements",
		`drain marks the coordinator at ADDRESS (host:port or http(s)://host:port, as
registered) drained in ZooKeeper, for maintenance: its registrar (zkpresto
register) sees the mark at once and marks its registration notready=drained,
and every zkpresto driver and gateway replica then sends it no new statement
(within ZooKeeper's notification delay) while another coordinator is ready.
Queries already running there finish; the gateway's status page shows its
running and queued queries fall to zero. The mark is a persistent znode,
/<namespace>-drain/<host:port>: it outlives the registrar, the gateways and
the coordinator's restarts until zkpresto undrain takes it away. Draining a
drained coordinator does nothing.`
	if !on {
		use, short, long = "undrain ADDRESS", "Take a coordinator's drain mark away: clients send it statements again",
			`undrain takes away the drain mark of the coordinator at ADDRESS (see zkpresto
drain): its registrar marks it ready again, when it is, and clients send it
new statements. Undraining a coordinator that is not drained does nothing.`
	}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long + "\n\nThe ZooKeeper flags are register's, and can be set from the same environment\nvariables.",
		Example: "  zkpresto " + strings.Fields(use)[0] + " --zookeeper zk1:2181,zk2:2181 10.0.0.5:8080",
		Args:    cobra.ExactArgs(1),
		PreRunE: applyEnvHook,
		RunE: cli.RunUntilSignal(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			return runDrain(ctx, cmd, o, args[0], on)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.zookeeper, "zookeeper", "", "ZooKeeper ensemble, host:port,... (required)")
	f.StringVar(&o.namespace, "namespace", registrar.DefaultNamespace, "znode under which the coordinators register")
	o.zooKeeperSecurityFlags(f)
	bindEnv(f)
	return cmd
}

func runDrain(ctx context.Context, cmd *cobra.Command, o registerOptions, addr string, on bool) error {
	// The registrar's configuration checks the ZooKeeper flags; the
	// address stands in for the advertised one, which a drain does not use.
	o.advertise, o.weight, o.minWorkers = addr, 1, 0
	if !strings.Contains(addr, "://") {
		o.advertise = "http://" + addr
	}
	cfg, err := o.registrarConfig(nil)
	if err != nil {
		return err
	}
	if err := registrar.SetDrained(ctx, cfg, addr, on); err != nil {
		return err
	}
	verb := "drained"
	if !on {
		verb = "undrained"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s in %s (namespace %s)\n", verb, addr, o.zookeeper, strings.Trim(o.namespace, "/"))
	return nil
}
