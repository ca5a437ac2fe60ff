package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/chaos"
	"github.com/zkpresto/zkpresto/internal/cli"
)

func init() { subcommands = append(subcommands, newChaosCommand) }

type chaosOptions struct {
	run         chaos.Options
	quick       bool
	json        bool
	plan        bool          // print the fault schedule and stop
	bare        bool          // measure the bare Presto client instead
	bareTimeout time.Duration // for bare
	verbose     bool          // the driver's logs to stderr
}

func newChaosCommand() *cobra.Command {
	var o chaosOptions
	d := chaos.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Run statements through the driver while coordinators and ZooKeeper fail",
		Long: `chaos starts a 3-server ZooKeeper ensemble and 4 coordinator simulators on
loopback ports, and has concurrent clients run statements through one *sql.DB
(the zkpresto driver) while, on a schedule fixed by --seed, coordinators
crash (port refused, connections cut) and recover, lose their ZooKeeper
registration while down, answer 503 while "starting", and the ZooKeeper
leader is killed and restarted. At most two coordinators are unavailable at
once.

It reports the statements that failed, by error class; the statements that
reached a coordinator twice, counted from the coordinators' own records
(must be 0: the command fails otherwise); the statements that failed over
and the extra latency that cost; and the faults carried out. Fault lines go
to stderr as they happen.

--bare instead sends one statement with the bare presto-go-client to a
refused port and reports how long it takes to give up (about 3 minutes).`,
		Example: `  zkpresto-lab chaos
  zkpresto-lab chaos --quick
  zkpresto-lab chaos --clients 16 --statements 1000 --duration 2m --seed 7 --json
  zkpresto-lab chaos --plan
  zkpresto-lab chaos --bare`,
		Args: cobra.NoArgs,
		RunE: cli.RunUntilSignal(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			if o.quick {
				applyQuick(cmd, &o.run)
			}
			return runChaos(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o, commandLine(cmd))
		}),
	}
	f := cmd.Flags()
	f.IntVar(&o.run.Clients, "clients", d.Clients, "concurrent clients sharing one *sql.DB")
	f.IntVar(&o.run.Statements, "statements", d.Statements, "statements per client")
	f.DurationVar(&o.run.Duration, "duration", d.Duration, "no statement starts and no fault begins after this")
	f.DurationVar(&o.run.Think, "think", d.Think, "pause between a client's statements")
	f.IntVar(&o.run.Coordinators, "coordinators", d.Coordinators, "coordinators to run")
	f.IntVar(&o.run.MaxUnavailable, "max-unavailable", d.MaxUnavailable, "coordinators that may be down or starting at once")
	f.StringVar(&o.run.Strategy, "strategy", d.Strategy, "the driver's zooKeeperStrategy")
	f.IntVar(&o.run.Retries, "retries", d.Retries, "the driver's retries (other coordinators a statement may fail over to)")
	f.DurationVar(&o.run.HealthCheckInterval, "health-check", 0, "the driver's healthCheckInterval (0: no active checks)")
	f.Uint64Var(&o.run.Seed, "seed", d.Seed, "seed of the fault schedule")
	f.DurationVar(&o.run.CrashEvery, "crash-every", d.CrashEvery, "period of coordinator crashes (negative: none)")
	f.DurationVar(&o.run.StartingEvery, "starting-every", d.StartingEvery, "period of 503 starting phases (negative: none)")
	f.DurationVar(&o.run.ResetEvery, "reset-every", d.ResetEvery, "period of phases in which a coordinator reads each statement and resets its connection (negative: none)")
	f.DurationVar(&o.run.LeaderKillEvery, "leader-kill-every", d.LeaderKillEvery, "period of ZooKeeper leader kills (negative: none)")
	f.BoolVar(&o.quick, "quick", false, "a run of a few seconds: 4 clients × 80 statements, faults twice as often (flags given win)")
	f.BoolVar(&o.json, "json", false, "print the report as JSON (durations in nanoseconds)")
	f.BoolVar(&o.plan, "plan", false, "print the fault schedule and exit")
	f.BoolVar(&o.verbose, "verbose", false, "write the driver's logs (ejections, failovers, ZooKeeper) to stderr")
	f.BoolVar(&o.bare, "bare", false, "measure the bare presto-go-client on a refused port instead")
	f.DurationVar(&o.bareTimeout, "bare-timeout", 200*time.Second, "how long --bare waits at most")
	return cmd
}

// applyQuick replaces the options the user did not set with Quick's.
func applyQuick(cmd *cobra.Command, o *chaos.Options) {
	q := chaos.Quick()
	set := func(flag string, apply func()) {
		if !cmd.Flags().Changed(flag) {
			apply()
		}
	}
	set("clients", func() { o.Clients = q.Clients })
	set("statements", func() { o.Statements = q.Statements })
	set("duration", func() { o.Duration = q.Duration })
	set("think", func() { o.Think = q.Think })
	set("crash-every", func() { o.CrashEvery = q.CrashEvery })
	set("starting-every", func() { o.StartingEvery = q.StartingEvery })
	set("reset-every", func() { o.ResetEvery = q.ResetEvery })
	set("leader-kill-every", func() { o.LeaderKillEvery = q.LeaderKillEvery })
	o.MinDown, o.MaxDown, o.DeregisterAfter = q.MinDown, q.MaxDown, q.DeregisterAfter
	o.StartingFor, o.ResetFor, o.LeaderDownFor = q.StartingFor, q.ResetFor, q.LeaderDownFor
}

// commandLine is the command that reproduces the run: the changed flags,
// in the order of the flag set.
func commandLine(cmd *cobra.Command) string {
	parts := []string{"zkpresto-lab chaos"}
	for _, name := range []string{"quick", "clients", "statements", "duration", "think", "coordinators", "max-unavailable",
		"strategy", "retries", "health-check", "seed", "crash-every", "starting-every", "leader-kill-every", "plan"} {
		if !cmd.Flags().Changed(name) {
			continue
		}
		f := cmd.Flags().Lookup(name)
		if f.Value.Type() == "bool" {
			parts = append(parts, "--"+name)
		} else {
			parts = append(parts, "--"+name, f.Value.String())
		}
	}
	return strings.Join(parts, " ")
}

func runChaos(ctx context.Context, stdout, stderr io.Writer, o chaosOptions, command string) error {
	if o.bare {
		fmt.Fprintf(stderr, "one statement through the bare presto-go-client to a refused port; waiting up to %s\n", o.bareTimeout)
		res, err := chaos.MeasureBare(ctx, o.bareTimeout)
		if err != nil {
			return err
		}
		if res.TimedOut {
			fmt.Fprintf(stdout, "bare presto-go-client: no answer within %s (%v)\n", res.Took.Round(time.Millisecond), res.Err)
			return nil
		}
		fmt.Fprintf(stdout, "bare presto-go-client: failed after %s: %v\n", res.Took.Round(time.Millisecond), res.Err)
		return nil
	}
	if o.plan {
		fmt.Fprintln(stdout, command)
		for _, e := range chaos.Plan(o.run) {
			fmt.Fprintln(stdout, e)
		}
		return nil
	}
	if o.verbose {
		o.run.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rep, err := chaos.Run(ctx, o.run, stderr)
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	} else {
		fmt.Fprintf(stdout, "%s\n\n", command)
		if err := rep.WriteText(stdout); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	}
	if rep.Duplicates > 0 {
		return errors.New("statements reached a coordinator twice")
	}
	return nil
}
