package loadsim_test

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/loadsim"
	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/strategy"
)

// fewestInFlight is a load-aware strategy of the tests' own: it sends each
// statement to the node with the fewest statements in flight, as the
// strategy's Loads report them. It shows that the simulation feeds Loads and
// that strategies registered after the package was written are simulated.
const fewestInFlight = "loadsim_test_fewest_in_flight"

func init() {
	err := strategy.Register(fewestInFlight, func(opts strategy.Options) strategy.Strategy {
		return &fewestStrategy{loads: opts.Loads}
	})
	if err != nil {
		panic(err)
	}
}

type fewestStrategy struct{ loads *strategy.Loads }

func (s *fewestStrategy) Build(nodes []discovery.Node) strategy.Picker {
	p := &fewestPicker{nodes: nodes}
	for i := range nodes {
		p.loads = append(p.loads, s.loads.For(nodes[i].Addr))
	}
	return p
}

type fewestPicker struct {
	nodes []discovery.Node
	loads []*strategy.Load
}

func (p *fewestPicker) Pick(*strategy.Request) (*discovery.Node, error) {
	if len(p.nodes) == 0 {
		return nil, strategy.ErrNoNodes
	}
	best := 0
	for i, l := range p.loads {
		if l.InFlight() < p.loads[best].InFlight() {
			best = i
		}
	}
	return &p.nodes[best], nil
}

// scenario returns default scenario name with n statements.
func scenario(t *testing.T, name string, n int) loadsim.Scenario {
	t.Helper()
	for _, s := range loadsim.DefaultScenarios() {
		if s.Name == name {
			s.Requests = n
			return s
		}
	}
	t.Fatalf("no default scenario %q", name)
	return loadsim.Scenario{}
}

func run(t *testing.T, s loadsim.Scenario, name string) loadsim.Result {
	t.Helper()
	res, err := loadsim.Run(s, name)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func within(t *testing.T, what string, got, want, tolerance float64) {
	t.Helper()
	if math.Abs(got-want) > tolerance*want {
		t.Errorf("%s = %.4g, want %.4g ± %.0f%%", what, got, want, tolerance*100)
	} else {
		t.Logf("%s = %.4g, theory %.4g (%+.1f%%)", what, got, want, 100*(got-want)/want)
	}
}

func TestSameSeedSameResults(t *testing.T) {
	names := strategy.Names()
	if !slices.Contains(names, fewestInFlight) {
		t.Fatalf("strategy.Names() = %v lacks the test's own strategy", names)
	}
	for _, sc := range []string{"1:1:4 90%", "1:1:4 slow 90%"} {
		s := scenario(t, sc, 20_000)
		for _, name := range names {
			first, second := run(t, s, name), run(t, s, name)
			if !reflect.DeepEqual(first, second) {
				t.Errorf("%s, %s: two runs differ:\n%+v\n%+v", sc, name, first, second)
			}
		}
		s.Seed++
		a, b := run(t, scenario(t, sc, 20_000), "random"), run(t, s, "random")
		if a.P99 == b.P99 && slices.Equal(a.Served, b.Served) {
			t.Errorf("%s: seeds 1 and 2 gave the same random run: %+v", sc, a)
		}
	}
}

// TestOneNodeMatchesMM1: one node with one slot is an M/M/1 queue, whose
// time in system is exponential with rate μ−λ.
func TestOneNodeMatchesMM1(t *testing.T) {
	s := loadsim.Scenario{
		Name:        "M/M/1",
		Nodes:       []loadsim.Node{{Name: "only", Slots: 1, Speed: 1}},
		Load:        0.8,
		Requests:    400_000,
		Warmup:      0.05,
		MeanService: 100 * time.Millisecond,
		Seed:        1,
	}
	res := run(t, s, "random")
	mu := 1 / s.MeanService.Seconds()
	lambda := s.Load * mu
	mean := 1 / (mu - lambda) // seconds
	within(t, "mean latency (s)", res.Mean.Seconds(), mean, 0.05)
	within(t, "p50 (s)", res.P50.Seconds(), mean*math.Ln2, 0.05)
	within(t, "p99 (s)", res.P99.Seconds(), mean*math.Log(100), 0.10)
	within(t, "load (in flight per slot)", res.Loads[0], lambda*mean, 0.10)
	within(t, "offered", res.Offered[0], s.Load, 0.02)
}

// TestSlotsMatchErlangC: one node with c slots is an M/M/c queue; its mean
// wait is Erlang's C formula over (cμ − λ).
func TestSlotsMatchErlangC(t *testing.T) {
	for _, tc := range []struct {
		slots int
		load  float64
	}{{4, 0.9}, {16, 0.7}} {
		s := loadsim.Scenario{
			Name:        "M/M/c",
			Nodes:       []loadsim.Node{{Name: "only", Slots: tc.slots, Speed: 2}},
			Load:        tc.load,
			Requests:    400_000,
			Warmup:      0.05,
			MeanService: 200 * time.Millisecond,
			Seed:        3,
		}
		res := run(t, s, "poll")
		mu := 2 / s.MeanService.Seconds() // speed 2
		lambda := s.Load * float64(tc.slots) * mu
		mean := erlangC(tc.slots, lambda/mu)/(float64(tc.slots)*mu-lambda) + 1/mu
		within(t, "mean latency (s)", res.Mean.Seconds(), mean, 0.05)
		if got := s.Capacity(); math.Abs(got-float64(tc.slots)*mu) > 1e-9 {
			t.Errorf("capacity %v, want %v", got, float64(tc.slots)*mu)
		}
	}
}

// erlangC is the probability that an arrival waits in an M/M/c queue with
// offered load a erlangs.
func erlangC(c int, a float64) float64 {
	rho := a / float64(c)
	term, sum := 1.0, 0.0 // a^k/k!
	for k := range c {
		sum += term
		term *= a / float64(k+1)
	}
	waiting := term / (1 - rho)
	return waiting / (sum + waiting)
}

func TestBlindStrategiesSplitAsDesigned(t *testing.T) {
	equal := scenario(t, "1:1:1 90%", 60_000)
	poll := run(t, equal, "poll")
	for _, n := range poll.Served {
		if n != 20_000 {
			t.Errorf("poll served %v, want 20000 each", poll.Served)
			break
		}
	}
	random := run(t, equal, "random")
	for _, n := range random.Served {
		if math.Abs(float64(n)-20_000) > 600 { // 7 standard deviations
			t.Errorf("random served %v, want about 20000 each", random.Served)
			break
		}
	}
	// Round robin makes each node's arrivals more regular than Poisson, so
	// less queueing than random's independent choices.
	if poll.P99 >= random.P99 {
		t.Errorf("equal nodes at 90%%: poll p99 %v, random p99 %v; want poll lower", poll.P99, random.P99)
	}

	unequal := scenario(t, "1:1:4 90%", 60_000)
	for _, name := range []string{"weighted", "weighted_poll"} {
		res := run(t, unequal, name)
		for k, want := range []float64{10_000, 10_000, 40_000} {
			if math.Abs(float64(res.Served[k])-want) > 600 {
				t.Errorf("%s served %v, want about 10000/10000/40000", name, res.Served)
				break
			}
		}
		if res.Overloaded() {
			t.Errorf("%s at 90%% with weights matching capacity is overloaded: %v", name, res.Offered)
		}
	}
	// Blind to capacity, random sends a third of the work to nodes with a
	// sixth of the capacity: 180% of what they can do.
	res := run(t, unequal, "random")
	if !res.Overloaded() || res.Offered[0] < 1.6 || res.Offered[2] > 0.6 {
		t.Errorf("random on 1:1:4 at 90%%: offered %v, want about 1.8/1.8/0.45", res.Offered)
	}
}

func TestSlowdownHitsStaticWeights(t *testing.T) {
	steady := run(t, scenario(t, "1:1:4 70%", 40_000), "weighted")
	slow := run(t, scenario(t, "1:1:4 slow 70%", 40_000), "weighted")
	if steady.Overloaded() {
		t.Errorf("steady: weighted overloaded: %v", steady.Offered)
	}
	// c1 keeps its sixth of the 36.4 statements/s at a fifth of its speed:
	// 6.07/s × 2 s over 4 slots after the slowdown.
	if !slow.Overloaded() {
		t.Errorf("slow: weighted not overloaded: %v", slow.Offered)
	}
	within(t, "c1's offered load after the slowdown", slow.Offered[0], 36.4/6*2/4, 0.05)
	if slow.P99 < 10*steady.P99 {
		t.Errorf("slow p99 %v, steady p99 %v; want the slowdown to show", slow.P99, steady.P99)
	}
}

// TestLoadFeedbackReachesStrategies: a strategy that reads Loads follows the
// real in-flight counts, so it copes with unequal nodes and a slowdown that
// blind strategies cannot.
func TestLoadFeedbackReachesStrategies(t *testing.T) {
	for _, name := range []string{"1:1:4 90%", "1:1:4 slow 90%"} {
		s := scenario(t, name, 60_000)
		fewest, random := run(t, s, fewestInFlight), run(t, s, "random")
		if fewest.Overloaded() {
			t.Errorf("%s: fewest-in-flight is overloaded: %v", name, fewest.Offered)
		}
		if fewest.P99*2 > random.P99 {
			t.Errorf("%s: fewest-in-flight p99 %v, random %v; want at most half", name, fewest.P99, random.P99)
		}
		t.Logf("%s: fewest-in-flight p99 %v = %.2g%% of random's %v", name, fewest.P99, 100*float64(fewest.P99)/float64(random.P99), random.P99)
	}
}

func TestDefaultScenarios(t *testing.T) {
	scenarios := loadsim.DefaultScenarios()
	var names []string
	for _, s := range scenarios {
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		names = append(names, s.Name)
	}
	want := []string{"1:1:4 70%", "1:1:4 90%", "1:1:4 slow 70%", "1:1:4 slow 90%", "1:1:1 90%"}
	if !slices.Equal(names, want) {
		t.Fatalf("scenarios %q, want %q", names, want)
	}
	// 1:1:4 with 400 ms at speed 1 and 4 slots: 10 + 10 + 40 statements/s.
	if got := scenarios[1].Capacity(); math.Abs(got-60) > 1e-9 {
		t.Errorf("1:1:4 capacity %v, want 60/s", got)
	}
	if got := scenarios[1].ArrivalRate(); math.Abs(got-54) > 1e-9 {
		t.Errorf("1:1:4 90%% arrival rate %v, want 54/s", got)
	}
	// After c1 turns five times slower: 2 + 10 + 40.
	if got := scenarios[3].Capacity(); math.Abs(got-52) > 1e-9 {
		t.Errorf("slow capacity %v, want 52/s", got)
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	good := loadsim.Scenario{Name: "ok", Nodes: []loadsim.Node{{Name: "a", Slots: 1, Speed: 1}}, Load: 0.5, Requests: 10}
	if _, err := loadsim.Run(good, "random"); err != nil {
		t.Fatalf("good scenario: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*loadsim.Scenario)
		want string
	}{
		{"no nodes", func(s *loadsim.Scenario) { s.Nodes = nil }, "no nodes"},
		{"no slots", func(s *loadsim.Scenario) { s.Nodes = []loadsim.Node{{Name: "a", Speed: 1}} }, "slots"},
		{"no speed", func(s *loadsim.Scenario) { s.Nodes = []loadsim.Node{{Name: "a", Slots: 1}} }, "speed"},
		{"NaN speed", func(s *loadsim.Scenario) { s.Nodes = []loadsim.Node{{Name: "a", Slots: 1, Speed: math.NaN()}} }, "speed"},
		{"colon in name", func(s *loadsim.Scenario) { s.Nodes = []loadsim.Node{{Name: "a:1", Slots: 1, Speed: 1}} }, "colon"},
		{"same name", func(s *loadsim.Scenario) { s.Nodes = append(s.Nodes, s.Nodes[0]) }, "twice"},
		{"zero load", func(s *loadsim.Scenario) { s.Load = 0 }, "load"},
		{"no requests", func(s *loadsim.Scenario) { s.Requests = 0 }, "requests"},
		{"warm-up 1", func(s *loadsim.Scenario) { s.Warmup = 1 }, "warm-up"},
		{"slow node out of range", func(s *loadsim.Scenario) { s.SlowFactor, s.SlowNode = 0.5, 1 }, "slow node"},
		{"slow at 2", func(s *loadsim.Scenario) { s.SlowFactor, s.SlowAt = 0.5, 2 }, "slowdown at"},
	} {
		s := good
		s.Nodes = slices.Clone(good.Nodes)
		tc.edit(&s)
		_, err := loadsim.Run(s, "random")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `scenario "ok"`) {
			t.Errorf("%s: error %v, want one naming the scenario and %q", tc.name, err, tc.want)
		}
	}
	if _, err := loadsim.Run(good, "no_such_strategy"); err == nil || !strings.Contains(err.Error(), "no_such_strategy") {
		t.Errorf("unknown strategy: error %v", err)
	}
}

func TestWarmupIsLeftOut(t *testing.T) {
	// Statements that arrive after the warm-up wait behind those queued
	// during it; with all but the last statement in the warm-up, one latency
	// is measured, and the percentiles are all that one.
	s := loadsim.Scenario{Name: "w", Nodes: []loadsim.Node{{Name: "a", Slots: 1, Speed: 1}}, Load: 0.5, Requests: 100, Warmup: 0.99, Seed: 5}
	res := run(t, s, "random")
	if res.P50 != res.P999 || res.P50 != res.Mean || res.P50 <= 0 {
		t.Errorf("one measured statement, but p50 %v, p99.9 %v, mean %v", res.P50, res.P999, res.Mean)
	}
	if res.Served[0] != 100 {
		t.Errorf("served %v, want all 100 counted", res.Served)
	}
}
