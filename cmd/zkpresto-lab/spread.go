package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/spread"
	"github.com/zkpresto/zkpresto/internal/cli"
)

func init() { subcommands = append(subcommands, newSpreadCommand, newSpreadPoolCommand) }

func newSpreadCommand() *cobra.Command {
	var o spread.Options
	var zkpresto string
	cmd := &cobra.Command{
		Use:   "spread",
		Short: "Measure, on real processes, how strategies spread queries over coordinators shared by many clients",
		Long: `spread starts a ZooKeeper server, simulated coordinators that run at most
--slots statements at once and queue the rest, and a zkpresto register per
coordinator that registers it and publishes its load (--load-source presto).
Then, for each strategy, it runs --pools driver pools and --gateways gateway
replicas (zkpresto gateway, each with a pool in front), every one a process
of its own, sending open-loop statements for --duration at --load of all
the slots, and samples the coordinators' running and queued counts.

For each strategy it prints the statements' p50 and p99, the mean running
plus queued statements per coordinator, their max/mean (1.00 is even), the
mean queue over all coordinators, and p99 and queue as ratios against the
first strategy. Everything listens on loopback; the run takes about
(--duration + 5s) per strategy.

It needs the zkpresto binary (--zkpresto; by default it builds one with go
build into a temporary directory).`,
		Example: `  zkpresto-lab spread
  zkpresto-lab spread --strategies least_active,p2c,shared_p2c --duration 30s`,
		Args: cobra.NoArgs,
		RunE: cli.RunUntilSignal(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			return runSpread(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o, zkpresto)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&zkpresto, "zkpresto", "", "the zkpresto binary (default: go build one)")
	f.StringSliceVar(&o.Strategies, "strategies", nil, "strategies to compare, the first the baseline (default least_active,p2c,shared_p2c)")
	f.IntVar(&o.Pools, "pools", 10, "driver pools, each a process, through ZooKeeper")
	f.IntVar(&o.Gateways, "gateways", 2, "gateway replicas, each a process with a pool of its own")
	f.IntVar(&o.Coordinators, "coordinators", 3, "simulated coordinators")
	f.IntVar(&o.Slots, "slots", 4, "statements a coordinator runs at once")
	f.DurationVar(&o.MeanService, "mean", 400*time.Millisecond, "mean time of a statement on a coordinator")
	f.Float64Var(&o.Load, "load", 0.75, "arrivals as a share of all the slots, by --mean alone (each statement's end is seen at the next poll, about 50ms later)")
	f.DurationVar(&o.Duration, "duration", 40*time.Second, "how long each strategy's pools send")
	f.DurationVar(&o.Warmup, "warmup", 2*time.Second, "how much of the start is left out of the samples")
	return cmd
}

func runSpread(ctx context.Context, stdout, stderr io.Writer, o spread.Options, zkpresto string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if zkpresto == "" {
		dir, err := os.MkdirTemp("", "zkpresto-spread-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		zkpresto = filepath.Join(dir, "zkpresto")
		fmt.Fprintln(stderr, "building zkpresto")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", zkpresto, "github.com/zkpresto/zkpresto/cmd/zkpresto").CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/zkpresto: %v\n%s", err, out)
		}
	}
	o.Zkpresto, o.Self, o.Progress = zkpresto, self, stderr
	results, err := spread.Run(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "zkpresto-lab spread --pools %d --gateways %d --coordinators %d --slots %d --mean %s --load %g --duration %s\n\n",
		o.Pools, o.Gateways, o.Coordinators, o.Slots, o.MeanService, o.Load, o.Duration)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tstatements\tfailed\tp50 ms\tp99 ms\tp99 vs first\tin flight per coordinator\tmax/mean\tmean queue\tqueue vs first\t")
	for _, r := range results {
		base := results[0]
		per := make([]string, len(r.InFlight))
		for i, v := range r.InFlight {
			per[i] = fmt.Sprintf("%.2f", v)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.0f\t%.2f\t%s\t%.2f\t%.2f\t%.2f\t\n", r.Strategy, r.Statements, r.Failed,
			ms(r.P50), ms(r.P99), ratio(ms(r.P99), ms(base.P99)), strings.Join(per, "/"), r.MaxMeanInFlight, r.MeanQueued, ratio(r.MeanQueued, base.MeanQueued))
	}
	return tw.Flush()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// newSpreadPoolCommand is the pool spread runs in each of its processes.
func newSpreadPoolCommand() *cobra.Command {
	var o spread.PoolOptions
	cmd := &cobra.Command{
		Use:    spread.PoolCommand,
		Short:  "One driver pool of zkpresto-lab spread (run by spread itself)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: cli.RunUntilSignal(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			return spread.RunPool(ctx, cmd.OutOrStdout(), o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.DSN, "dsn", "", "the driver's DSN")
	f.Float64Var(&o.Rate, "rate", 1, "statements a second")
	f.DurationVar(&o.Mean, "mean", 100*time.Millisecond, "mean time of a statement")
	f.DurationVar(&o.Duration, "duration", 10*time.Second, "how long statements arrive")
	f.Uint64Var(&o.Seed, "seed", 1, "seeds the arrivals and the statements' lengths")
	return cmd
}
