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

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/loadsim"
	"github.com/zkpresto/zkpresto/internal/cli"
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
	clients    int  // 0: the default (1 in the tables, every count in --json)
	json       bool // the many-client suite, as JSON lines
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

For each scenario and strategy it prints p50, mean, p99 and p99.9 latency in
milliseconds (a statement takes 400 ms on average on a small coordinator,
100 ms on the big one), p99 as a share of random's, the max/mean node load
(time-averaged statements in flight per slot: 1.00 is even), and the share
of statements each coordinator served. Progress goes to stderr.

--clients N splits the arrivals over N independent clients, each with its
own strategy instance and local counts, as N *sql.DB or gateway replicas
would; shared_p2c then reads the load the coordinators publish, with the
settings zkpresto register ships with.

--json runs the many-client suite instead: capacities 1:1:4 and twelve
equal coordinators, 70% and 90% load, 1, 10 and 50 clients, the local-only
strategies (least_active, p2c, weighted) against shared_p2c with figures
published every 1 s, every 5 s, on change (shipped) and on change with an
idle list; notifications 50 ms, 200 ms, 1 s and 2 s late; a coordinator
whose registrar publishes 0 for ever (liar); the big coordinator publishing
nothing after a tenth of the run while it keeps serving (silent); a
coordinator turning five times slower halfway; and 10,000 clients over 200
coordinators, each client watching two. It prints one JSON object per line:
scenario, capacities, load, clients, publish, defaults, strategy, p50_ms,
p99_ms, ideal_p99_ms (one central queue over all the capacity),
p99_over_ideal, mean_ms, ideal_mean_ms, mean_over_ideal, then ZooKeeper's cost
(zk_writes_per_s_per_coordinator, zk_notifications_per_s,
zk_notifications_per_s_per_client). --clients and --strategies narrow it.`,
		Example: `  zkpresto-lab simulate
  zkpresto-lab simulate --strategies random,poll,weighted --svg p99.svg
  zkpresto-lab simulate --quick --markdown
  zkpresto-lab simulate --clients 50 --strategies least_active,shared_p2c
  zkpresto-lab simulate --json --quick`,
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
	f.IntVar(&o.clients, "clients", 0, "independent clients the arrivals are split among (default 1; with --json every count of the suite)")
	f.BoolVar(&o.json, "json", false, "run the many-client suite and print one JSON object per line")
	f.BoolVar(&o.quick, "quick", false, fmt.Sprintf("send %d statements per scenario (unless --requests is given)", quickRequests))
	return cmd
}

func runSimulate(ctx context.Context, stdout, stderr io.Writer, o simulateOptions) error {
	if o.requests <= 0 {
		return fmt.Errorf("--requests must be positive, not %d", o.requests)
	}
	if o.clients < 0 {
		return fmt.Errorf("--clients must be positive, not %d", o.clients)
	}
	if o.json {
		if o.svg != "" || o.markdown {
			return fmt.Errorf("--json prints JSON lines only: it does not go with --svg or --markdown")
		}
		return runSuite(ctx, stdout, stderr, o)
	}
	scenarios := loadsim.DefaultScenarios()
	for i := range scenarios {
		scenarios[i].Requests = o.requests
		scenarios[i].Seed = o.seed
		scenarios[i].Clients = o.clients
		scenarios[i].Publish = loadsim.DefaultPublishing()
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
	if o.clients > 0 {
		fmt.Fprintf(stdout, " --clients %d", o.clients)
	}
	if len(o.strategies) > 0 {
		fmt.Fprintf(stdout, " --strategies %s", strings.Join(report.Strategies, ","))
	}
	fmt.Fprint(stdout, "\n\n")
	if o.markdown {
		return report.WriteMarkdown(stdout)
	}
	return report.WriteTable(stdout)
}

// runSuite runs the many-client suite and prints its JSON lines.
func runSuite(ctx context.Context, stdout, stderr io.Writer, o simulateOptions) error {
	cases, err := loadsim.Suite(loadsim.SuiteOptions{Requests: o.requests, Seed: o.seed, Clients: o.clients, Strategies: o.strategies})
	if err != nil {
		return err
	}
	began := time.Now()
	rows, err := loadsim.RunSuite(ctx, cases, func(done, total int) {
		fmt.Fprintf(stderr, "simulated %d/%d after %s\n", done, total, time.Since(began).Round(time.Millisecond))
	})
	if err != nil {
		return err
	}
	return loadsim.WriteJSONLines(stdout, rows)
}
