package chaos

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// BareClientRefused is how long presto-go-client v2.1.1 alone takes to
// return the error of one statement sent to a coordinator whose port
// refuses connections: ten attempts with back-off sleeps of 1, 2, 4, 8, 16
// and then 30 s (1+2+4+8+16+5×30 = 181 s). MeasureBare measures it.
const BareClientRefused = 181 * time.Second

// Report is what a chaos run saw. Durations are in nanoseconds in JSON.
type Report struct {
	// Options are the run's options, defaults applied.
	Options Options
	// Took is the time from the first statement to the last client's end.
	Took time.Duration
	// Planned is Clients × Statements; Run how many were started before
	// the Duration cap.
	Planned, Run int
	// Outcomes counts the statements per Class.
	Outcomes map[Class]int
	// SentThenFailedAccepted is how many SentThenFailed statements a
	// coordinator had accepted or read whole before a reset (the rest
	// never reached one, or were cut off before it recorded them).
	SentThenFailedAccepted int
	// NoCoordinatorWhileServing counts NoCoordinator statements during the
	// whole of which some coordinator was serving.
	NoCoordinatorWhileServing int
	// NoCoordinatorFirst and NoCoordinatorLast are when the first and the
	// last of those began, since the start of the run.
	NoCoordinatorFirst, NoCoordinatorLast time.Duration `json:",omitempty"`
	// Duplicates is the number of statements that reached coordinators
	// more than once (accepted, or read whole before a reset), counted
	// from the coordinators' records; it must be 0.
	Duplicates int
	// DuplicateTexts lists some of them.
	DuplicateTexts []string `json:",omitempty"`
	// FailedOver is the number of statements submitted to more than one
	// coordinator; FailoverCauses counts the failed submissions that were
	// followed by another, by cause.
	FailedOver     int
	FailoverCauses map[string]int
	// All is the latency of every OK statement, Direct of those that did
	// not fail over, AfterFailover of those that did.
	All, Direct, AfterFailover Percentiles
	// Extra is the failover's extra latency: AfterFailover latencies minus
	// Direct's median.
	Extra Percentiles
	// Faults counts what the schedule did.
	Faults FaultCounts
	// Elections are the times from a ZooKeeper leader kill to a new leader.
	Elections []time.Duration
	// FaultErrors are faults that could not be carried out.
	FaultErrors []string `json:",omitempty"`
	// Coordinators has one row per coordinator.
	Coordinators []CoordinatorReport
	// Errors holds a few error messages per failure Class.
	Errors map[Class][]string `json:",omitempty"`
}

// Percentiles summarise a set of latencies (nearest rank).
type Percentiles struct {
	N             int
	P50, P99, Max time.Duration
}

// FaultCounts counts the faults carried out.
type FaultCounts struct {
	Crashes, Recoveries, Deregistrations, StartingPhases, ResetPhases, LeaderKills int
}

// CoordinatorReport is one coordinator's share of the run.
type CoordinatorReport struct {
	Name, Addr string
	Latency    time.Duration
	// Accepted and Rejected count the run's statements the coordinator
	// accepted and refused (503 while starting); Reset those it read
	// whole and reset the connection of, unanswered.
	Accepted, Rejected, Reset int
	// Ejections and Failovers are the driver's counts for the node.
	Ejections, Failovers uint64
}

// errorSamples is how many messages per Class the report keeps.
const errorSamples = 3

// report assembles the Report from the clients' statements, the recorder
// and the coordinators' records.
func (r *runner) report(results [][]statement, took time.Duration) *Report {
	rep := &Report{
		Options:        r.opts,
		Took:           took,
		Planned:        r.opts.Clients * r.opts.Statements,
		Outcomes:       map[Class]int{},
		FailoverCauses: map[string]int{},
		Errors:         map[Class][]string{},
	}
	r.mu.Lock()
	rep.Faults = r.faults
	rep.Elections = slices.Clone(r.elections)
	rep.FaultErrors = slices.Clone(r.faultErrors)
	r.mu.Unlock()

	reached := map[string]int{}
	for _, c := range r.layout.coords {
		row := CoordinatorReport{Name: c.Name(), Addr: c.Addr()}
		for _, req := range c.Requests() {
			if !strings.HasPrefix(req.SQL, "SELECT 'chaos ") {
				continue
			}
			switch {
			case req.Rejected:
				row.Rejected++
				continue
			case req.Reset:
				row.Reset++
			default:
				row.Accepted++
			}
			reached[req.SQL]++
		}
		rep.Coordinators = append(rep.Coordinators, row)
	}
	for i := range rep.Coordinators {
		row := &rep.Coordinators[i]
		row.Latency = spread(r.opts.MinLatency, r.opts.MaxLatency, i, len(rep.Coordinators))
		row.Ejections, row.Failovers = r.ejects.counts(row.Addr)
	}
	for text, n := range reached {
		if n > 1 {
			rep.Duplicates++
			if len(rep.DuplicateTexts) < 10 {
				rep.DuplicateTexts = append(rep.DuplicateTexts, text)
			}
		}
	}
	slices.Sort(rep.DuplicateTexts)

	var all, direct, over []time.Duration
	for _, client := range results {
		for _, s := range client {
			rep.Run++
			rep.Outcomes[s.class]++
			if s.class != OK && len(rep.Errors[s.class]) < errorSamples && !slices.Contains(rep.Errors[s.class], s.err) {
				rep.Errors[s.class] = append(rep.Errors[s.class], s.err)
			}
			switch s.class {
			case SentThenFailed:
				if reached[s.text] > 0 {
					rep.SentThenFailedAccepted++
				}
			case NoCoordinator:
				if r.avail.servingThroughout(s.start, s.start.Add(s.latency)) {
					at := s.start.Sub(r.start)
					if rep.NoCoordinatorWhileServing == 0 || at < rep.NoCoordinatorFirst {
						rep.NoCoordinatorFirst = at
					}
					rep.NoCoordinatorLast = max(rep.NoCoordinatorLast, at)
					rep.NoCoordinatorWhileServing++
				}
			}
			subs := r.rec.submissions(s.text)
			for _, sub := range subs[:max(len(subs)-1, 0)] {
				rep.FailoverCauses[failureCause(sub)]++
			}
			if len(subs) > 1 {
				rep.FailedOver++
			}
			if s.class != OK {
				continue
			}
			all = append(all, s.latency)
			if len(subs) > 1 {
				over = append(over, s.latency)
			} else {
				direct = append(direct, s.latency)
			}
		}
	}
	rep.All, rep.Direct, rep.AfterFailover = percentiles(all), percentiles(direct), percentiles(over)
	extra := make([]time.Duration, len(over))
	for i, d := range over {
		extra[i] = d - rep.Direct.P50
	}
	rep.Extra = percentiles(extra)
	return rep
}

// failureCause names why a submission did not take.
func failureCause(s submission) string {
	switch {
	case s.status == 503:
		return "HTTP 503 (starting)"
	case s.status != 0:
		return fmt.Sprintf("HTTP %d", s.status)
	case strings.Contains(s.err, "connection refused"):
		return "connection refused"
	case strings.Contains(s.err, "connection reset"), strings.Contains(s.err, "EOF"):
		return "connection reset"
	}
	return "other transport error"
}

// percentiles returns p50, p99 and max of ds (nearest rank); ds is sorted.
func percentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(ds))+0.999999) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return Percentiles{N: len(ds), P50: rank(0.50), P99: rank(0.99), Max: ds[len(ds)-1]}
}

// Failed is the number of statements that did not return their row.
func (rep *Report) Failed() int { return rep.Run - rep.Outcomes[OK] }

// WriteText writes the report as aligned text.
func (rep *Report) WriteText(w io.Writer) error {
	o := rep.Options
	var b strings.Builder
	fmt.Fprintf(&b, "statements: %d of %d run in %s (%d clients × %d, %s apart, one *sql.DB, strategy %s, retries=%d)\n",
		rep.Run, rep.Planned, rep.Took.Round(time.Millisecond), o.Clients, o.Statements, o.Think, o.Strategy, o.Retries)
	if o.HealthCheckInterval > 0 {
		fmt.Fprintf(&b, "active health checks every %s\n", o.HealthCheckInterval)
	}
	for _, c := range Classes {
		fmt.Fprintf(&b, "  %-36s %6d", c, rep.Outcomes[c])
		switch {
		case c == SentThenFailed && rep.Outcomes[c] > 0:
			fmt.Fprintf(&b, "   (%d reached a coordinator before it died or reset; none sent again)", rep.SentThenFailedAccepted)
		case c == NoCoordinator && rep.Outcomes[c] > 0:
			fmt.Fprintf(&b, "   (%d while a coordinator was serving throughout", rep.NoCoordinatorWhileServing)
			if rep.NoCoordinatorWhileServing > 0 {
				fmt.Fprintf(&b, ", from +%s to +%s", rep.NoCoordinatorFirst.Round(time.Millisecond), rep.NoCoordinatorLast.Round(time.Millisecond))
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "reached a coordinator twice: %d\n", rep.Duplicates)
	for _, t := range rep.DuplicateTexts {
		fmt.Fprintf(&b, "  %s\n", t)
	}
	fmt.Fprintf(&b, "failed over: %d statements", rep.FailedOver)
	if len(rep.FailoverCauses) > 0 {
		causes := make([]string, 0, len(rep.FailoverCauses))
		for cause, n := range rep.FailoverCauses {
			causes = append(causes, fmt.Sprintf("%d %s", n, cause))
		}
		slices.Sort(causes)
		fmt.Fprintf(&b, " (failed submissions: %s)", strings.Join(causes, ", "))
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency of ok statements\tn\tp50\tp99\tmax\t")
	row := func(name string, p Percentiles) {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t\n", name, p.N, ms(p.P50), ms(p.P99), ms(p.Max))
	}
	row("all", rep.All)
	row("without failover", rep.Direct)
	row("after failover", rep.AfterFailover)
	row("failover extra", rep.Extra)
	tw.Flush()
	fmt.Fprintf(&b, "the bare presto-go-client takes %s to fail one statement on a refused port (and does not fail over)\n", BareClientRefused)
	f := rep.Faults
	fmt.Fprintf(&b, "faults: %d coordinator crashes (%d recoveries, %d registrations removed), %d starting phases, %d reset phases, %d ZooKeeper leader kills",
		f.Crashes, f.Recoveries, f.Deregistrations, f.StartingPhases, f.ResetPhases, f.LeaderKills)
	if len(rep.Elections) > 0 {
		times := make([]string, len(rep.Elections))
		for i, d := range rep.Elections {
			times[i] = d.Round(10 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, " (new leader after %s)", strings.Join(times, ", "))
	}
	b.WriteString("\n")
	for _, e := range rep.FaultErrors {
		fmt.Fprintf(&b, "  fault not carried out: %s\n", e)
	}
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "coordinator\tlatency\taccepted\trejected (503)\tread, then reset\tejections\tfailovers from it\t")
	for _, c := range rep.Coordinators {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", c.Name, ms(c.Latency), c.Accepted, c.Rejected, c.Reset, c.Ejections, c.Failovers)
	}
	tw.Flush()
	for _, c := range Classes {
		for _, msg := range rep.Errors[c] {
			fmt.Fprintf(&b, "%s: %s\n", c, msg)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ms formats d in milliseconds with one decimal.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}
