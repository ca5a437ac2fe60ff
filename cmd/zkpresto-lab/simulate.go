package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkpresto/zkpresto/internal/cli"
	"github.com/zkpresto/zkpresto/internal/lab/loadsim"
)

func init() { subcommands = append(subcommands, newSimulateCommand) }

// quickRequests is how many statements each scenario sends with --quick.
const quickRequests = 20_000

type simulateOptions struct {
	requests   int      // per scenario
	seed       uint64   // for every scenario
	strategies []string // nil: every registered strategy
	svg        string   // where to write the chart; empty: nowhere
	markdown   bool
	quick      bool // quickRequests unless requests is set
}

func newSimulateCommand() *cobra.Command {
	var o simulateOptions
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Compare the strategies' balance in a simulation of unequal coordinators",
		Long: `simulate runs every registered strategy through the same simulated
workloads: coordinators with capacities 1:1:4, open-loop Poisson arrivals at
70% and 90% of capacity, and the same with one small coordinator turning five
times slower halfway through; three equal coordinators at 90% for
comparison. Time is virtual, so nothing sleeps; each arrival calls the real
strategy code, and load-aware strategies see in-flight counts and
latencies as they would in the driver.

For each scenario and strategy it prints p50, p99 and p99.9 latency in
milliseconds (a statement takes 400 ms on average on a small coordinator,
100 ms on the big one), p99 as a share of random's, the max/mean node load
(time-averaged statements in flight per slot: 1.00 is even), and the share
of statements each coordinator served. Progress goes to stderr.`,
		Example: `  zkpresto-lab simulate
  zkpresto-lab simulate --strategies random,poll,weighted --svg p99.svg
  zkpresto-lab simulate --quick --markdown`,
		Args: cobra.NoArgs,
		RunE: cli.RunUntilSignal(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			if o.quick && !cmd.Flags().Changed("requests") {
				o.requests = quickRequests
			}
			return runSimulate(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		}),
	}
	f := cmd.Flags()
	f.IntVar(&o.requests, "requests", loadsim.DefaultRequests, "statements per scenario")
	f.Uint64Var(&o.seed, "seed", 1, "random seed; the same seed gives the same results")
	f.StringSliceVar(&o.strategies, "strategies", nil, "strategies to compare, comma-separated (default every registered strategy)")
	f.StringVar(&o.svg, "svg", "", "also write a bar chart of p99 latency to this SVG file")
	f.BoolVar(&o.markdown, "markdown", false, "print Markdown tables instead of aligned text")
	f.BoolVar(&o.quick, "quick", false, fmt.Sprintf("send %d statements per scenario (unless --requests is given)", quickRequests))
	return cmd
}

func runSimulate(ctx context.Context, stdout, stderr io.Writer, o simulateOptions) error {
	if o.requests <= 0 {
		return fmt.Errorf("--requests must be positive, not %d", o.requests)
	}
	scenarios := loadsim.DefaultScenarios()
	for i := range scenarios {
		scenarios[i].Requests = o.requests
		scenarios[i].Seed = o.seed
	}
	began := time.Now()
	report, err := loadsim.RunAll(ctx, scenarios, o.strategies, func(i int, took time.Duration) {
		fmt.Fprintf(stderr, "simulated %-16s in %s\n", scenarios[i].Name, took.Round(time.Millisecond))
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "done in %s\n", time.Since(began).Round(time.Millisecond))

	if o.svg != "" {
		var buf bytes.Buffer
		if err := report.WriteSVG(&buf); err != nil {
			return err
		}
		if err := os.WriteFile(o.svg, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write the plot: %w", err)
		}
	}
	fmt.Fprintf(stdout, "zkpresto-lab simulate --requests %d --seed %d", o.requests, o.seed)
	if len(o.strategies) > 0 {
		fmt.Fprintf(stdout, " --strategies %s", strings.Join(report.Strategies, ","))
	}
	fmt.Fprint(stdout, "\n\n")
	if o.markdown {
		return report.WriteMarkdown(stdout)
	}
	return report.WriteTable(stdout)
}
