package loadsim

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zkpresto/zkpresto/strategy"
)

// DefaultRequests is how many statements each default scenario sends.
const DefaultRequests = 400_000

// Baseline is the strategy the others are compared with.
const Baseline = "random"

// DefaultScenarios returns the standard workloads, each with
// DefaultRequests statements and seed 1:
//
//   - "1:1:4 70%" and "1:1:4 90%": coordinators c1 and c2 with 4 slots at
//     speed 1, and c3 with 4 slots at speed 4 (weights 1, 1, 4), at 70% and
//     90% of capacity;
//   - "1:1:4 slow 70%" and "1:1:4 slow 90%": the same, but c1 turns five
//     times slower when half the statements have arrived (the load is a
//     share of the capacity after that);
//   - "1:1:1 90%": three equal coordinators at 90%, the case where blind
//     strategies are at their best.
func DefaultScenarios() []Scenario {
	unequal := func() []Node {
		return []Node{
			{Name: "c1", Slots: 4, Speed: 1, Weight: 1, Zone: "zone-a"},
			{Name: "c2", Slots: 4, Speed: 1, Weight: 1, Zone: "zone-a"},
			{Name: "c3", Slots: 4, Speed: 4, Weight: 4, Zone: "zone-a"},
		}
	}
	equal := []Node{
		{Name: "c1", Slots: 4, Speed: 1, Weight: 1, Zone: "zone-a"},
		{Name: "c2", Slots: 4, Speed: 1, Weight: 1, Zone: "zone-a"},
		{Name: "c3", Slots: 4, Speed: 1, Weight: 1, Zone: "zone-a"},
	}
	base := Scenario{Requests: DefaultRequests, Warmup: 0.05, MeanService: DefaultMeanService, ClientZone: "zone-a", Seed: 1}
	var out []Scenario
	for _, slow := range []bool{false, true} {
		for _, load := range []float64{0.7, 0.9} {
			s := base
			s.Nodes = unequal()
			s.Load = load
			s.Name = fmt.Sprintf("1:1:4 %.0f%%", load*100)
			if slow {
				s.Name = fmt.Sprintf("1:1:4 slow %.0f%%", load*100)
				s.SlowNode, s.SlowFactor, s.SlowAt = 0, 0.2, 0.5
			}
			out = append(out, s)
		}
	}
	s := base
	s.Nodes, s.Load, s.Name = equal, 0.9, "1:1:1 90%"
	return append(out, s)
}

// Describe says in one line what the scenario simulates.
func (s Scenario) Describe() string {
	var b strings.Builder
	mean := s.meanService()
	for i, n := range s.Nodes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d slots × speed %g", n.Name, n.Slots, n.Speed)
		if n.Weight > 1 {
			fmt.Fprintf(&b, " (weight %d)", n.Weight)
		}
	}
	fmt.Fprintf(&b, "; %s a statement at speed 1; %.1f statements/s = %.0f%% of capacity %.1f/s",
		mean, s.ArrivalRate(), s.Load*100, s.Capacity())
	if f := s.SlowFactor; f > 0 && f != 1 {
		change := fmt.Sprintf("%.3g× slower", 1/f)
		if f > 1 {
			change = fmt.Sprintf("%.3g× faster", f)
		}
		fmt.Fprintf(&b, "; %s turns %s after %.0f%% of the statements", s.Nodes[s.SlowNode].Name, change, s.SlowAt*100)
	}
	fmt.Fprintf(&b, "; %s statements, seed %d", groupThousands(fmt.Sprint(s.Requests)), s.Seed)
	return b.String()
}

// Report holds the results of every strategy in every scenario.
type Report struct {
	// Scenarios are the simulated scenarios, in order.
	Scenarios []Scenario
	// Strategies are the canonical names of the simulated strategies.
	Strategies []string
	// Results[i][j] is strategy j in scenario i.
	Results [][]Result
}

// RunAll simulates every strategy in every scenario; nil strategies means
// every registered strategy (strategy.Names, so strategies registered later
// are picked up). Runs of one scenario go in parallel, one per CPU; each is
// deterministic on its own, so the report does not depend on scheduling.
// progress, when not nil, is called after each scenario with its index and
// how long it took. RunAll stops early when ctx is done.
func RunAll(ctx context.Context, scenarios []Scenario, strategies []string, progress func(scenario int, took time.Duration)) (*Report, error) {
	if strategies == nil {
		strategies = strategy.Names()
	}
	names, err := canonicalNames(strategies)
	if err != nil {
		return nil, err
	}
	for _, s := range scenarios {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("loadsim: scenario %q: %w", s.Name, err)
		}
	}
	r := &Report{Scenarios: scenarios, Strategies: names, Results: make([][]Result, len(scenarios))}
	for i, s := range scenarios {
		began := time.Now()
		r.Results[i] = make([]Result, len(names))
		err := parallel(ctx, len(names), func(j int) (err error) {
			r.Results[i][j], err = Run(s, names[j])
			return err
		}, nil)
		if err != nil {
			return nil, err
		}
		if progress != nil {
			progress(i, time.Since(began))
		}
	}
	return r, nil
}

// canonicalNames resolves names and aliases and drops repeats.
func canonicalNames(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("loadsim: no strategies to simulate")
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		c, ok := strategy.Lookup(strings.TrimSpace(n))
		if !ok {
			return nil, fmt.Errorf("loadsim: unknown strategy %q (registered: %s)", n, strings.Join(strategy.Names(), ", "))
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// P99Ratio returns strategy's p99 divided by the Baseline's p99 in scenario
// i; false when either was not simulated.
func (r *Report) P99Ratio(i int, strategyName string) (float64, bool) {
	res, ok := r.Result(i, strategyName)
	base, baseOK := r.Result(i, Baseline)
	if !ok || !baseOK || base.P99 <= 0 {
		return 0, false
	}
	return float64(res.P99) / float64(base.P99), true
}

// Result returns the result of strategy (a canonical name) in scenario i.
func (r *Report) Result(i int, strategyName string) (Result, bool) {
	if i < 0 || i >= len(r.Results) {
		return Result{}, false
	}
	for j, n := range r.Strategies {
		if n == strategyName {
			return r.Results[i][j], true
		}
	}
	return Result{}, false
}

// WriteTable writes the report as aligned text, one block per scenario.
// Latencies are in milliseconds. The busiest node is the one with the most
// work offered per slot (Result.Offered), as a share of what it can do.
func (r *Report) WriteTable(w io.Writer) error {
	for i, s := range r.Scenarios {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: %s\n", s.Name, s.Describe())
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(r.header(s), "\t")+"\t")
		for j := range r.Strategies {
			fmt.Fprintln(tw, strings.Join(r.row(i, j), "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if r.anyOverloaded(i) {
			fmt.Fprintln(w, overloadNote)
		}
	}
	return nil
}

// overloadNote explains the mark on an overloaded strategy's latencies.
const overloadNote = "* overloaded: a node was sent more work than it can do (busiest node above 102%), so its queue kept growing and these latencies grow with the length of the run."

func (r *Report) anyOverloaded(i int) bool {
	return slices.ContainsFunc(r.Results[i], Result.Overloaded)
}

// WriteMarkdown writes the report as Markdown: a heading, a description and
// a table per scenario.
func (r *Report) WriteMarkdown(w io.Writer) error {
	for i, s := range r.Scenarios {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "#### %s\n\n%s\n\n", s.Name, s.Describe())
		header := r.header(s)
		fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
		fmt.Fprintln(w, "|:---|"+strings.Repeat("---:|", len(header)-1))
		for j := range r.Strategies {
			// A bare * could start emphasis in Markdown.
			row := strings.Join(r.row(i, j), " | ")
			fmt.Fprintln(w, "| "+strings.ReplaceAll(row, "*", `\*`)+" |")
		}
		if r.anyOverloaded(i) {
			fmt.Fprintln(w)
			fmt.Fprintln(w, `\`+overloadNote)
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

func (r *Report) header(s Scenario) []string {
	names := make([]string, len(s.Nodes))
	for k, n := range s.Nodes {
		names[k] = n.Name
	}
	return []string{"strategy", "p50 ms", "mean ms", "p99 ms", "p99.9 ms", "p99 vs " + Baseline, "max/mean load", "busiest node", "served % " + strings.Join(names, "/")}
}

func (r *Report) row(i, j int) []string {
	res := r.Results[i][j]
	ratio := "-"
	if v, ok := r.P99Ratio(i, res.Strategy); ok {
		ratio = formatPercent(v)
	}
	total := 0
	for _, n := range res.Served {
		total += n
	}
	shares := make([]string, len(res.Served))
	for k, n := range res.Served {
		shares[k] = fmt.Sprintf("%.0f", 100*float64(n)/float64(max(total, 1)))
	}
	mark := ""
	if res.Overloaded() {
		mark = "*"
	}
	busiest := "-"
	if len(res.Offered) > 0 {
		k := 0
		for n, o := range res.Offered {
			if o > res.Offered[k] {
				k = n
			}
		}
		busiest = fmt.Sprintf("%s %.0f%%", r.Scenarios[i].Nodes[k].Name, 100*res.Offered[k])
	}
	return []string{
		res.Strategy,
		formatMillis(res.P50) + mark, formatMillis(res.Mean) + mark, formatMillis(res.P99) + mark, formatMillis(res.P999) + mark,
		ratio,
		fmt.Sprintf("%.2f", res.MaxMeanLoad),
		busiest,
		strings.Join(shares, "/"),
	}
}

// formatMillis writes d in milliseconds: one decimal below 10 ms, whole
// milliseconds with thousands separators above.
func formatMillis(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms < 10 {
		return fmt.Sprintf("%.1f", ms)
	}
	return groupThousands(fmt.Sprintf("%.0f", ms))
}

// groupThousands puts commas between groups of three digits.
func groupThousands(digits string) string {
	var b strings.Builder
	for k, c := range digits {
		if k > 0 && (len(digits)-k)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// formatPercent writes a ratio as a percentage with two significant digits
// (at least whole percents).
func formatPercent(v float64) string {
	p := v * 100
	switch {
	case p >= 10:
		return fmt.Sprintf("%.0f%%", p)
	case p >= 1:
		return fmt.Sprintf("%.1f%%", p)
	default:
		return fmt.Sprintf("%.2g%%", p)
	}
}
