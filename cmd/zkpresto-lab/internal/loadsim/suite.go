package loadsim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LocalOnly are the strategies the many-client suite compares shared_p2c
// with: today's, which know only what their own client sent.
var LocalOnly = []string{"least_active", "p2c", "weighted"}

// Shared is the strategy that reads published load.
const Shared = "shared_p2c"

// Case is one simulation of the many-client suite.
type Case struct {
	Scenario Scenario
	// Variation is the row's scenario label: "base" for the plain case
	// (no slow coordinator, notifications 5 ms late), else what differs.
	Variation string
	Strategy  string
	// Defaults says the case runs Shared with the publishing settings the
	// product ships with.
	Defaults bool
}

// Row is one line of `zkpresto-lab simulate --json`. The first fourteen
// fields are the simulation's; the zk_ fields are ZooKeeper's cost in it.
type Row struct {
	Scenario     string  `json:"scenario"`
	Capacities   string  `json:"capacities"`
	Load         float64 `json:"load"`
	Clients      int     `json:"clients"`
	Publish      string  `json:"publish"`
	Defaults     bool    `json:"defaults"`
	Strategy     string  `json:"strategy"`
	P50Millis    float64 `json:"p50_ms"`
	P99Millis    float64 `json:"p99_ms"`
	IdealP99     float64 `json:"ideal_p99_ms"`
	P99OverIdeal float64 `json:"p99_over_ideal"`
	// The mean beside the p99: a p99 near the ideal can hide a mean well
	// above it (most statements waiting a little longer than they need).
	MeanMillis    float64 `json:"mean_ms"`
	IdealMean     float64 `json:"ideal_mean_ms"`
	MeanOverIdeal float64 `json:"mean_over_ideal"`
	// ZKWrites is the writes a second per coordinator (the busiest);
	// ZKNotifications the notifications a second to all clients, and
	// ZKPerClient to each client on average.
	ZKWrites        float64 `json:"zk_writes_per_s_per_coordinator"`
	ZKNotifications float64 `json:"zk_notifications_per_s"`
	ZKPerClient     float64 `json:"zk_notifications_per_s_per_client"`
}

// Capacities writes the nodes' capacities as ratios to the smallest, joined
// by ':' ("1:1:4").
func Capacities(nodes []Node) string {
	if len(nodes) == 0 {
		return ""
	}
	least := math.Inf(1)
	for _, n := range nodes {
		least = min(least, n.Capacity(time.Second))
	}
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = strconv.FormatFloat(n.Capacity(time.Second)/least, 'g', 3, 64)
	}
	return strings.Join(parts, ":")
}

// SuiteOptions choose the many-client suite's cases.
type SuiteOptions struct {
	Requests int
	Seed     uint64
	// Clients, when positive, keeps only the cases with that many clients.
	Clients int
	// Strategies, when not nil, keeps only these (canonical) strategies.
	Strategies []string
}

// equalNodes returns n equal coordinators of 4 slots.
func equalNodes(n int) []Node {
	width := len(strconv.Itoa(n))
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i] = Node{Name: fmt.Sprintf("c%0*d", width, i+1), Slots: 4, Speed: 1, Weight: 1, Zone: "zone-a"}
	}
	return nodes
}

// SuiteWatch is how many coordinators each client watches in the suite's
// 10,000 × 200 case: the driver's loadWatchSubset=2.
const SuiteWatch = 2

// Suite returns the many-client cases: capacities 1:1:4 and twelve equal
// coordinators, 70% and 90% load, 1, 10 and 50 clients, the local-only
// strategies and Shared with figures every 1 s, every 5 s, on change (the
// shipped settings) and on change with an idle list, notifications 5 ms
// late ("base"); then at 90% with 50 clients, the shipped settings with
// notifications 50 ms late ("delay 50ms") and with c1 five times slower
// halfway ("slow"); notifications 200 ms, 1 s and 2 s late ("delay
// 200ms", ...); one coordinator whose registrar publishes 0 for ever
// ("liar": c01 of twelve, c3 of 1:1:4); the big coordinator of 1:1:4
// publishing nothing after the first tenth of the statements while it
// keeps serving ("silent"); and 10,000 clients over 200 coordinators, each
// client watching SuiteWatch of them ("10000x200").
func Suite(o SuiteOptions) ([]Case, error) {
	if o.Requests < 1 {
		return nil, fmt.Errorf("loadsim: %d requests, want at least 1", o.Requests)
	}
	unequal := DefaultScenarios()[0].Nodes
	periodic := func(d time.Duration) Publishing {
		return Publishing{Periodic: d, Delay: DefaultPublishing().Delay}
	}
	idle := DefaultPublishing()
	idle.IdleList = true
	base := Scenario{Requests: o.Requests, Warmup: 0.05, MeanService: DefaultMeanService, ClientZone: "zone-a", Seed: o.Seed}
	var cases []Case
	add := func(s Scenario, variation string, publishings []Publishing) {
		for _, name := range LocalOnly {
			c := s
			c.Publish = Publishing{}
			if variation == "10000x200" {
				c.Watch = 0 // watching membership only costs them nothing per statement
			}
			cases = append(cases, Case{Scenario: c, Variation: variation, Strategy: name})
		}
		for k, p := range publishings {
			c := s
			c.Publish = p
			cases = append(cases, Case{Scenario: c, Variation: variation, Strategy: Shared, Defaults: k == 0})
		}
	}
	for _, nodes := range [][]Node{unequal, equalNodes(12)} {
		for _, load := range []float64{0.7, 0.9} {
			for _, clients := range []int{1, 10, 50} {
				s := base
				s.Nodes, s.Load, s.Clients = nodes, load, clients
				add(s, "base", []Publishing{DefaultPublishing(), periodic(time.Second), periodic(5 * time.Second), idle})
			}
		}
		s := base
		s.Nodes, s.Load, s.Clients = nodes, 0.9, 50
		for _, d := range []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, time.Second, 2 * time.Second} {
			late := DefaultPublishing()
			late.Delay = d
			add(s, "delay "+d.String(), []Publishing{late})
		}
		s.Fault, s.FaultNode = FaultLiar, len(nodes)-1
		if len(nodes) > 3 {
			s.FaultNode = 0
		}
		add(s, "liar", []Publishing{DefaultPublishing()})
	}
	s := base
	s.Nodes, s.Load, s.Clients = unequal, 0.9, 50
	s.Fault, s.FaultNode, s.FaultAt = FaultSilent, 2, 0.1
	add(s, "silent", []Publishing{DefaultPublishing()})
	s = base
	s.Nodes, s.Load, s.Clients = unequal, 0.9, 50
	s.SlowNode, s.SlowFactor, s.SlowAt = 0, 0.2, 0.5
	add(s, "slow", []Publishing{DefaultPublishing()})
	s = base
	s.Nodes, s.Load, s.Clients, s.Watch = equalNodes(200), 0.9, 10_000, SuiteWatch
	add(s, "10000x200", []Publishing{DefaultPublishing()})

	names := o.Strategies
	if names != nil {
		var err error
		if names, err = canonicalNames(names); err != nil {
			return nil, err
		}
	}
	kept := cases[:0]
	for _, c := range cases {
		if (o.Clients <= 0 || c.Scenario.Clients == o.Clients) && (names == nil || slices.Contains(names, c.Strategy)) {
			c.Scenario.Name = c.Variation
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("loadsim: no case of the suite has %d clients and strategies %v", o.Clients, names)
	}
	return kept, nil
}

// idealKey is what the central queue's result depends on.
func idealKey(s Scenario) string {
	return fmt.Sprintf("%v|%v|%d|%v|%d|%v|%v|%d", s.Nodes, s.Load, s.Requests, s.Warmup, s.SlowNode, s.SlowFactor, s.SlowAt, s.Seed)
}

// RunSuite simulates every case, one per CPU, with the central queue's p99
// of each scenario as the ideal, and returns the rows in the cases' order.
// progress, when not nil, is called after each case. It stops early when
// ctx is done.
func RunSuite(ctx context.Context, cases []Case, progress func(done, total int)) ([]Row, error) {
	ideals := map[string]Result{}
	var idealOrder []Scenario
	for _, c := range cases {
		if err := c.Scenario.Validate(); err != nil {
			return nil, fmt.Errorf("loadsim: scenario %q: %w", c.Scenario.Name, err)
		}
		if k := idealKey(c.Scenario); ideals[k].Strategy == "" {
			ideals[k] = Result{Strategy: CentralQueue}
			idealOrder = append(idealOrder, c.Scenario)
		}
	}
	type job struct {
		ideal bool
		i     int
	}
	results := make([]Result, len(cases))
	idealResults := make([]Result, len(idealOrder))
	var all []job
	for i := range idealOrder {
		all = append(all, job{ideal: true, i: i})
	}
	// The biggest cases first, so that one is not left running alone.
	order := make([]int, len(cases))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cases[b].Scenario.Clients*len(cases[b].Scenario.Nodes) - cases[a].Scenario.Clients*len(cases[a].Scenario.Nodes)
	})
	for _, i := range order {
		all = append(all, job{i: i})
	}
	done := 0
	var progressed func()
	if progress != nil {
		progressed = func() { done++; progress(done, len(all)) }
	}
	err := parallel(ctx, len(all), func(k int) (err error) {
		j := all[k]
		if j.ideal {
			idealResults[j.i], err = RunIdeal(idealOrder[j.i])
		} else {
			results[j.i], err = Run(cases[j.i].Scenario, cases[j.i].Strategy)
		}
		return err
	}, progressed)
	if err != nil {
		return nil, err
	}
	for i, s := range idealOrder {
		ideals[idealKey(s)] = idealResults[i]
	}
	rows := make([]Row, len(cases))
	for i, c := range cases {
		r := results[i]
		ideal := ideals[idealKey(c.Scenario)]
		publish := "none"
		if r.Published {
			publish = c.Scenario.Publish.String()
			if c.Scenario.Watch > 0 {
				publish += fmt.Sprintf(", each client watching %d", c.Scenario.Watch)
			}
		}
		rows[i] = Row{
			Scenario:        c.Variation,
			Capacities:      Capacities(c.Scenario.Nodes),
			Load:            c.Scenario.Load,
			Clients:         max(c.Scenario.Clients, 1),
			Publish:         publish,
			Defaults:        c.Defaults,
			Strategy:        r.Strategy,
			P50Millis:       rowMillis(r.P50),
			P99Millis:       rowMillis(r.P99),
			IdealP99:        rowMillis(ideal.P99),
			P99OverIdeal:    round3(float64(r.P99) / float64(max(ideal.P99, 1))),
			MeanMillis:      rowMillis(r.Mean),
			IdealMean:       rowMillis(ideal.Mean),
			MeanOverIdeal:   round3(float64(r.Mean) / float64(max(ideal.Mean, 1))),
			ZKWrites:        round3(r.MaxWritesPerNodeSecond()),
			ZKNotifications: round3(r.NotificationsPerSecond()),
			ZKPerClient:     round3(r.NotificationsPerSecond() / float64(max(c.Scenario.Clients, 1))),
		}
	}
	return rows, nil
}

// rowMillis is d in milliseconds to a tenth.
func rowMillis(d time.Duration) float64 { return math.Round(millis(d)*10) / 10 }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// WriteJSONLines writes one JSON object per row and line.
func WriteJSONLines(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
