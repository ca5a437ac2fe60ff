package loadsim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/loadsim"
)

// twelve returns n equal coordinators of 4 slots.
func twelve() []loadsim.Node {
	var nodes []loadsim.Node
	for i := range 12 {
		nodes = append(nodes, loadsim.Node{Name: fmt.Sprintf("c%02d", i+1), Slots: 4, Speed: 1, Weight: 1})
	}
	return nodes
}

// On one node there is nothing to balance: the central queue and any
// strategy see the same arrivals and work and give the same latencies.
func TestCentralQueueOnOneNodeIsAnyStrategy(t *testing.T) {
	s := loadsim.Scenario{Name: "one", Nodes: []loadsim.Node{{Name: "c1", Slots: 3, Speed: 1}}, Load: 0.8, Requests: 20_000, Warmup: 0.05, Seed: 3}
	ideal, err := loadsim.RunIdeal(s)
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, s, "random")
	if ideal.Strategy != loadsim.CentralQueue || ideal.P50 != res.P50 || ideal.P99 != res.P99 || ideal.Mean != res.Mean {
		t.Fatalf("central queue %s p50 %v p99 %v mean %v; random p50 %v p99 %v mean %v", ideal.Strategy, ideal.P50, ideal.P99, ideal.Mean, res.P50, res.P99, res.Mean)
	}
}

// On equal nodes the one queue beats every balancer over separate queues.
func TestCentralQueueBeatsSeparateQueues(t *testing.T) {
	s := loadsim.Scenario{Name: "equal", Nodes: twelve(), Load: 0.9, Requests: 30_000, Warmup: 0.05, Seed: 1}
	ideal, err := loadsim.RunIdeal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"random", "least_active", "p2c", "shared_p2c"} {
		if res := run(t, s, name); res.P99 < ideal.P99 {
			t.Errorf("%s p99 %v below the central queue's %v", name, res.P99, ideal.P99)
		}
	}
}

// Each client counts only what it sent: with fifty, least_active is much
// worse than with one, and shared_p2c, on the figures the coordinators
// publish with the shipped settings, wins most of that back within its
// write budget of 10 a second per coordinator.
func TestManyClientsNeedPublishedLoad(t *testing.T) {
	s := loadsim.Scenario{Name: "fifty", Nodes: twelve(), Load: 0.9, Requests: 40_000, Warmup: 0.05, Seed: 1}
	one := run(t, s, "least_active")
	s.Clients = 50
	fifty := run(t, s, "least_active")
	if float64(fifty.P99) < 1.2*float64(one.P99) {
		t.Errorf("least_active p99 %v with 50 clients, %v with one: want clearly worse", fifty.P99, one.P99)
	}
	blind := run(t, s, "shared_p2c") // publishes nothing: local counts
	if blind.Published || blind.Notifications != 0 || blind.IdleListWrites != 0 {
		t.Errorf("no publishing, yet published %v, %d notifications", blind.Published, blind.Notifications)
	}
	s.Publish = loadsim.DefaultPublishing()
	shared := run(t, s, "shared_p2c")
	t.Logf("p99: least_active 1 client %v, 50 clients %v; shared_p2c blind %v, published %v (%.1f writes/s per coordinator)",
		one.P99, fifty.P99, blind.P99, shared.P99, shared.MaxWritesPerNodeSecond())
	if !shared.Published || float64(shared.P99) > 0.85*float64(fifty.P99) {
		t.Errorf("shared_p2c p99 %v on published load against least_active's %v: want at most 85%%", shared.P99, fifty.P99)
	}
	if w := shared.MaxWritesPerNodeSecond(); w > 10 || w <= 0 {
		t.Errorf("%.2f writes a second on the busiest coordinator, want (0, 10]", w)
	}
	if others := run(t, s, "least_active"); others.P99 != fifty.P99 || others.Published {
		t.Errorf("least_active reads no figures, yet publishing changed it: p99 %v, was %v", others.P99, fifty.P99)
	}
}

// Writes follow the settings: periodic writes once per interval; the
// minimum gap caps writes on change; notifications are writes times
// watchers, and a client sends only to the coordinators it watches.
func TestPublishingCosts(t *testing.T) {
	s := loadsim.Scenario{Name: "cost", Nodes: twelve()[:3], Load: 0.9, Requests: 20_000, Warmup: 0.05, Seed: 2}
	s.Publish = loadsim.Publishing{Periodic: time.Second, Delay: 5 * time.Millisecond}
	res := run(t, s, "shared_p2c")
	span := res.Span.Seconds()
	for i, w := range res.Writes {
		if want := span; float64(w) < want-1 || float64(w) > want+1 {
			t.Errorf("node %d: %d writes in %.0f s at one a second", i, w, span)
		}
	}
	s.Publish = loadsim.DefaultPublishing()
	s.Publish.Threshold, s.Publish.MinGap = 1, 500*time.Millisecond
	res = run(t, s, "shared_p2c")
	for i, w := range res.Writes {
		if float64(w) > span/0.5+float64(s.Publish.Burst) {
			t.Errorf("node %d: %d writes in %.0f s with one per 500ms at most (in bursts of %d)", i, w, span, s.Publish.Burst)
		}
	}
	s.Watch = 2
	res = run(t, s, "shared_p2c")
	unwatched := -1
	for i, n := range res.Served {
		if n == 0 {
			unwatched = i
		}
	}
	if unwatched < 0 {
		t.Fatalf("one client watching 2 of 3 coordinators served %v: want one with none", res.Served)
	}
	want := 0
	for i, w := range res.Writes {
		if i != unwatched {
			want += w
		}
	}
	if res.Notifications != want {
		t.Errorf("%d notifications, want the watched coordinators' %d writes", res.Notifications, want)
	}
}

// Bad settings are refused.
func TestPublishingRejectsBadInput(t *testing.T) {
	base := loadsim.Scenario{Name: "bad", Nodes: twelve()[:2], Load: 0.5, Requests: 10}
	for _, tc := range []struct {
		edit func(*loadsim.Scenario)
		want string
	}{
		{func(s *loadsim.Scenario) { s.Clients = -1 }, "clients"},
		{func(s *loadsim.Scenario) { s.Watch = 3 }, "watches 3"},
		{func(s *loadsim.Scenario) { s.Publish.Delay = -time.Second }, "negative"},
		{func(s *loadsim.Scenario) { s.Publish = loadsim.Publishing{Threshold: 2} }, "no sample interval"},
		{func(s *loadsim.Scenario) { s.Publish = loadsim.Publishing{IdleList: true} }, "idle list"},
	} {
		s := base
		tc.edit(&s)
		if _, err := loadsim.Run(s, "shared_p2c"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error with %q", err, tc.want)
		}
	}
}

// The suite's JSON lines carry exactly the named fields in order, and only
// shared_p2c with the shipped settings is marked defaults.
func TestSuiteJSON(t *testing.T) {
	cases, err := loadsim.Suite(loadsim.SuiteOptions{Requests: 3000, Seed: 1, Clients: 1, Strategies: []string{"least_active", "shared_p2c"}})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := loadsim.RunSuite(context.Background(), cases, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := loadsim.WriteJSONLines(&buf, rows); err != nil {
		t.Fatal(err)
	}
	want := []string{"scenario", "capacities", "load", "clients", "publish", "defaults", "strategy", "p50_ms", "p99_ms", "ideal_p99_ms", "p99_over_ideal",
		"mean_ms", "ideal_mean_ms", "mean_over_ideal",
		"zk_writes_per_s_per_coordinator", "zk_notifications_per_s", "zk_notifications_per_s_per_client"}
	lines, defaults := 0, 0
	seen := map[string]bool{}
	for sc := bufio.NewScanner(&buf); sc.Scan(); lines++ {
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		var keys []string
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		for dec.More() {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(keys, want) {
			t.Fatalf("keys %v, want %v", keys, want)
		}
		var r loadsim.Row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		seen[r.Capacities] = true
		if r.Clients != 1 || r.P99Millis <= 0 || r.IdealP99 <= 0 || r.P99OverIdeal <= 0 {
			t.Errorf("row %s", sc.Text())
		}
		if r.Defaults {
			defaults++
			if r.Strategy != "shared_p2c" || r.Publish != loadsim.DefaultPublishing().String() {
				t.Errorf("defaults on %s", sc.Text())
			}
		}
		if (r.Publish == "none") != (r.Strategy != "shared_p2c") {
			t.Errorf("publish %q for %s", r.Publish, r.Strategy)
		}
	}
	// 2 capacities × 2 loads, 1 client: least_active and 4 ways to publish.
	if lines != 20 || defaults != 4 || !seen["1:1:4"] || !seen["1:1:1:1:1:1:1:1:1:1:1:1"] {
		t.Errorf("%d lines, %d defaults, capacities %v", lines, defaults, seen)
	}
}

// The shipped publishing keeps the registrars' write budget, 10 a second
// per coordinator, on the busiest coordinator, where a figure that moves
// on every statement would cost more: the budget, not the traffic, bounds
// the writes.
func TestShippedPublishingKeepsTheBudget(t *testing.T) {
	s := loadsim.Scenario{Name: "budget", Nodes: twelve()[:3], Load: 0.95, Requests: 40_000, Warmup: 0.05, Seed: 4, Clients: 50,
		MeanService: 100 * time.Millisecond} // four times the statements a second of the suite's
	s.Publish = loadsim.DefaultPublishing()
	res := run(t, s, "shared_p2c")
	if w := res.MaxWritesPerNodeSecond(); w > 10 || w < 8 {
		t.Errorf("busiest coordinator wrote %.2f times a second, want within the budget of 10 and near it", w)
	}
	s.Publish.Threshold, s.Publish.MinGap = 1, 0 // no budget: every move is written
	if w := run(t, s, "shared_p2c").MaxWritesPerNodeSecond(); w <= 10 {
		t.Errorf("without a budget the busiest coordinator wrote %.2f times a second; the test does not load it enough", w)
	}
}

// Each client watching two of twelve coordinators sends only to its two,
// yet with fifty clients drawing their two at random every coordinator
// takes statements: the fleet covers them all.
func TestWatchSubsetsCoverTheFleet(t *testing.T) {
	s := loadsim.Scenario{Name: "subset", Nodes: twelve(), Load: 0.8, Requests: 40_000, Warmup: 0.05, Seed: 5, Clients: 50, Watch: 2}
	s.Publish = loadsim.DefaultPublishing()
	res := run(t, s, "shared_p2c")
	for i, n := range res.Served {
		if n == 0 {
			t.Errorf("coordinator %d served nothing: %v", i, res.Served)
		}
	}
	if res.Overloaded() {
		t.Errorf("some coordinator was sent more than it could do: offered %v", res.Offered)
	}
}
