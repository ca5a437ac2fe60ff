package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/cli"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

type demoOptions struct {
	statements int    // per strategy
	ensemble   string // an external ZooKeeper; empty starts a local one
}

func newDemoCommand() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start a local ZooKeeper and three coordinators, and balance statements across them",
		Long: `demo starts a local ZooKeeper server (Debian's zookeeper package; see
scripts/install-zookeeper.sh) and three local Presto coordinator simulators,
registers the coordinators in three different node formats, and runs a short
workload through database/sql with each built-in strategy. It prints which
coordinator served how many statements, then removes one coordinator from
ZooKeeper and shows that the next statements of an open pool avoid it.

Outside a transaction every statement is one pick of the strategy, whichever
pooled connection runs it.`,
		Example: `  zkpresto-lab demo
  zkpresto-lab demo --statements 1000
  zkpresto-lab demo --zookeeper 127.0.0.1:2181`,
		Args: cobra.NoArgs,
		RunE: cli.RunUntilSignal(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			return runDemo(ctx, cmd.OutOrStdout(), o)
		}),
	}
	cmd.Flags().IntVar(&o.statements, "statements", 210, "statements per strategy")
	cmd.Flags().StringVar(&o.ensemble, "zookeeper", "", "use this ZooKeeper ensemble instead of starting one (host:port,...)")
	return cmd
}

// demoRegistration is how the demo registers each coordinator: three
// formats, and weights 1:2:4 for the weighted strategies.
var demoRegistration = []struct {
	format discovery.Format
	weight int
}{
	{discovery.FormatHive, 1}, // the Hive format carries no weight
	{discovery.FormatCurator, 2},
	{discovery.FormatZkpresto, 4},
}

// demoStrategies are the strategies the demo runs one statement at a
// time; user_hash and consistent_hash get a table per user after them.
// Together they are every built-in strategy.
var demoStrategies = []string{"random", "poll", "weighted", "weighted_poll", "least_active", "p2c", "shared_p2c", "local_first", "global_poll"}

func runDemo(ctx context.Context, w io.Writer, o demoOptions) error {
	if o.statements <= 0 {
		return fmt.Errorf("--statements must be positive, not %d", o.statements)
	}
	started := time.Now()
	f, err := fleet.Start(fleet.Options{Coordinators: len(demoRegistration), Ensemble: o.ensemble, Namespace: "zkpresto-demo"})
	if err != nil {
		return err
	}
	defer f.Close()

	fmt.Fprintf(w, "ZooKeeper %s, namespace /%s (ready in %s)\n", f.Ensemble(), f.Namespace, time.Since(started).Round(time.Millisecond))
	for i, c := range f.Coordinators {
		r := demoRegistration[i]
		path, err := f.Register(c, r.format, r.weight)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s  %-15s  format %-8s  weight %d  %s\n", c.Name(), c.Addr(), r.format, r.weight, path)
	}

	fmt.Fprintf(w, "\n%d statements per strategy, one after another (each statement is one pick):\n", o.statements)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\t"+strings.Join(names(f.Coordinators), "\t")+"\tfirst picks\tper statement\t")
	for _, strategy := range demoStrategies {
		began := time.Now()
		counts, first, err := demoWorkload(ctx, f.DSN(";zooKeeperStrategy="+strategy+"?user=demo"), o.statements)
		if err != nil {
			return fmt.Errorf("strategy %s: %w", strategy, err)
		}
		perStatement := time.Since(began) / time.Duration(o.statements)
		fmt.Fprintln(tw, strategy+"\t"+countRow(f.Coordinators, counts)+"\t"+strings.Join(first, ",")+"\t"+perStatement.Round(time.Microsecond).String()+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w, "(one statement at a time nothing is in flight, so least_active, p2c and shared_p2c send each to\n"+
		" the node with the most capacity per statement in flight, c3; under concurrent load they spread\n"+
		" by load: see zkpresto-lab simulate. shared_p2c reads the load registrars publish, none here, so\n"+
		" it counts this client's own; local_first has no zone here, so it is least_active over all;\n"+
		" global_poll takes turns across every client through the counter znode)")

	for _, strategy := range []string{"user_hash", "consistent_hash"} {
		fmt.Fprintf(w, "\n%s: each user stays on one coordinator\n", strategy)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "user\t"+strings.Join(names(f.Coordinators), "\t")+"\t")
		for _, user := range []string{"alice", "bob", "carol", "dave", "erin"} {
			counts, _, err := demoWorkload(ctx, f.DSN(";zooKeeperStrategy="+strategy+"?user="+user), max(o.statements/10, 1))
			if err != nil {
				return fmt.Errorf("strategy %s: %w", strategy, err)
			}
			fmt.Fprintln(tw, user+"\t"+countRow(f.Coordinators, counts)+"\t")
		}
		tw.Flush()
	}

	return demoMembership(ctx, w, f, o.statements)
}

// demoMembership keeps one pool open while a coordinator leaves ZooKeeper and
// shows that the watch moves the next statements off it.
func demoMembership(ctx context.Context, w io.Writer, f *fleet.Fleet, statements int) error {
	connector, err := cli.OpenConnector(f.DSN(";zooKeeperStrategy=poll?user=demo"))
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	before, _, err := runStatements(ctx, db, statements)
	if err != nil {
		return err
	}
	leaving := f.Coordinators[1]
	removed := time.Now()
	if err := f.Deregister(leaving); err != nil {
		return err
	}
	for {
		snap, err := connector.Nodes(ctx)
		if err != nil {
			return err
		}
		if !slices.Contains(snap.Addrs(), leaving.Addr()) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Microsecond):
		}
	}
	seen := time.Since(removed)
	after, _, err := runStatements(ctx, db, statements)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nmembership: %s removed from ZooKeeper; the open pool saw it after %s\n", leaving.Name(), seen.Round(10*time.Microsecond))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "poll\t"+strings.Join(names(f.Coordinators), "\t")+"\t")
	fmt.Fprintln(tw, "before\t"+countRow(f.Coordinators, before)+"\t")
	fmt.Fprintln(tw, "after\t"+countRow(f.Coordinators, after)+"\t")
	return tw.Flush()
}

// demoWorkload opens a pool for dsn, runs the statements and closes it.
func demoWorkload(ctx context.Context, dsn string, statements int) (map[string]int, []string, error) {
	connector, err := cli.OpenConnector(dsn)
	if err != nil {
		return nil, nil, err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	return runStatements(ctx, db, statements)
}

// runStatements runs statements one after another and counts, from each
// result, which coordinator served it; it also returns the first six.
func runStatements(ctx context.Context, db *sql.DB, statements int) (map[string]int, []string, error) {
	counts := map[string]int{}
	var first []string
	for i := range statements {
		var node, user, catalog, schema, source, query sql.NullString
		err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT 'demo statement %d'", i)).
			Scan(&node, &user, &catalog, &schema, &source, &query)
		if err != nil {
			return nil, nil, err
		}
		counts[node.String]++
		if len(first) < 6 {
			first = append(first, node.String)
		}
	}
	return counts, first, nil
}

func names(cs []*coordinator.Coordinator) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name()
	}
	return out
}

func countRow(cs []*coordinator.Coordinator, counts map[string]int) string {
	cells := make([]string, len(cs))
	for i, c := range cs {
		cells[i] = fmt.Sprint(counts[c.Name()])
	}
	return strings.Join(cells, "\t")
}
