package loadsim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/strategy"
)

// DefaultMeanService is the mean service time of a statement on a node of
// speed 1 when a Scenario does not set one.
const DefaultMeanService = 400 * time.Millisecond

// DefaultUsers is how many distinct users send statements when a Scenario
// does not say.
const DefaultUsers = 1000

// Node is one simulated coordinator.
type Node struct {
	// Name names the node in reports; its address is Name + ":8080", so it
	// must be unique within a scenario and contain no colon or space.
	Name string
	// Slots is how many statements the node runs at once; more wait in its
	// queue. At least 1.
	Slots int
	// Speed scales how fast the node works: a statement takes
	// Scenario.MeanService/Speed on average. Positive.
	Speed float64
	// Weight is the weight the node is registered with, for the weighted
	// strategies. 0 means 1.
	Weight int
	// Zone is the node's zone, for zone-aware strategies.
	Zone string
}

// Capacity returns how many statements a second the node completes when
// busy, given the mean service time at speed 1.
func (n Node) Capacity(meanService time.Duration) float64 {
	return float64(n.Slots) * n.Speed / meanService.Seconds()
}

// Scenario is one simulated workload over one set of nodes.
type Scenario struct {
	// Name is a short label for tables and plots.
	Name string
	// Nodes are the coordinators.
	Nodes []Node
	// Load is the arrival rate as a share of the cluster's capacity (the
	// capacity after the slowdown, when there is one). Positive; more than 1
	// overloads even a perfect balancer.
	Load float64
	// Requests is how many statements arrive.
	Requests int
	// Warmup is the share of the statements, from the start, left out of
	// the latency percentiles and the load; in [0, 1).
	Warmup float64
	// MeanService is the mean service time on a node of speed 1; 0 means
	// DefaultMeanService.
	MeanService time.Duration
	// SlowNode is the index in Nodes of the node that slows down.
	SlowNode int
	// SlowFactor multiplies the slow node's speed (0.2: five times slower);
	// 0 means no node slows down.
	SlowFactor float64
	// SlowAt is the share of the statements that have arrived when the
	// slowdown happens, in [0, 1].
	SlowAt float64
	// ClientZone is the zone the simulated client runs in.
	ClientZone string
	// Users is how many distinct users send statements, uniformly at random;
	// 0 means DefaultUsers.
	Users int
	// Seed seeds the arrivals, the work, the users and the strategy's own
	// random choices; 0 is a seed like any other.
	Seed uint64
}

// Result is what one strategy achieved in one scenario.
type Result struct {
	// Strategy is the canonical name of the strategy.
	Strategy string
	// Scenario is the scenario's name.
	Scenario string
	// Mean, P50, P99 and P999 are latency statistics (queueing plus
	// service) over the statements after the warm-up.
	Mean, P50, P99, P999 time.Duration
	// Loads is, per node, the time-averaged number of statements in flight
	// per slot after the warm-up.
	Loads []float64
	// MaxMeanLoad is the largest of Loads divided by their mean: 1 is even.
	MaxMeanLoad float64
	// Served is how many statements each node completed, warm-up included.
	Served []int
	// Offered is, per node, the work sent to it after the warm-up (at its
	// speed when sent) divided by the slot time it had, before and after
	// the slowdown separately, whichever is higher: above 1, more work
	// arrived than the node could do, so its queue grew for that part of the
	// run and the latencies grow with the run's length.
	Offered []float64
}

// OverloadThreshold is the Offered value above which a node counts as
// overloaded. It leaves 2% for sampling noise: a node that a load-aware
// strategy keeps saturated, with a bounded queue, measures about 1 give or
// take 1% over a few thousand statements.
const OverloadThreshold = 1.02

// Overloaded reports whether some node was sent clearly more work than it
// could do (Offered above OverloadThreshold).
func (r Result) Overloaded() bool {
	return slices.ContainsFunc(r.Offered, func(o float64) bool { return o > OverloadThreshold })
}

// ArrivalRate returns the scenario's arrivals per second.
func (s Scenario) ArrivalRate() float64 {
	return s.Load * s.Capacity()
}

// Capacity returns the cluster's capacity in statements a second: after the
// slowdown, when there is one and it makes the cluster smaller.
func (s Scenario) Capacity() float64 {
	mean := s.meanService()
	var before, after float64
	for i, n := range s.Nodes {
		c := n.Capacity(mean)
		before += c
		if s.SlowFactor > 0 && i == s.SlowNode {
			c *= s.SlowFactor
		}
		after += c
	}
	return min(before, after)
}

func (s Scenario) meanService() time.Duration {
	if s.MeanService <= 0 {
		return DefaultMeanService
	}
	return s.MeanService
}

func (s Scenario) users() int {
	if s.Users <= 0 {
		return DefaultUsers
	}
	return s.Users
}

func (n Node) addr() string { return n.Name + ":8080" }

// Validate reports the first thing wrong with the scenario.
func (s Scenario) Validate() error {
	if len(s.Nodes) == 0 {
		return errors.New("no nodes")
	}
	names := make(map[string]bool, len(s.Nodes))
	for i, n := range s.Nodes {
		switch {
		case n.Name == "" || strings.ContainsAny(n.Name, ": \t\n"):
			return fmt.Errorf("node %d: name %q is empty or has a colon or space", i, n.Name)
		case names[n.Name]:
			return fmt.Errorf("node %d: name %q is used twice", i, n.Name)
		case n.Slots < 1:
			return fmt.Errorf("node %s: %d slots, want at least 1", n.Name, n.Slots)
		case !(n.Speed > 0) || math.IsInf(n.Speed, 0):
			return fmt.Errorf("node %s: speed %v, want a positive number", n.Name, n.Speed)
		case n.Weight < 0:
			return fmt.Errorf("node %s: negative weight %d", n.Name, n.Weight)
		}
		names[n.Name] = true
	}
	switch {
	case !(s.Load > 0) || math.IsInf(s.Load, 0):
		return fmt.Errorf("load %v, want a positive share of capacity", s.Load)
	case s.Requests < 1 || s.Requests > math.MaxInt32:
		return fmt.Errorf("%d requests, want 1 to %d", s.Requests, math.MaxInt32)
	case !(s.Warmup >= 0 && s.Warmup < 1):
		return fmt.Errorf("warm-up %v, want a share in [0, 1)", s.Warmup)
	case s.SlowFactor < 0 || math.IsNaN(s.SlowFactor) || math.IsInf(s.SlowFactor, 0):
		return fmt.Errorf("slow factor %v, want a positive number or 0 for none", s.SlowFactor)
	case s.SlowFactor > 0 && (s.SlowNode < 0 || s.SlowNode >= len(s.Nodes)):
		return fmt.Errorf("slow node %d, want an index below %d", s.SlowNode, len(s.Nodes))
	case s.SlowFactor > 0 && !(s.SlowAt >= 0 && s.SlowAt <= 1):
		return fmt.Errorf("slowdown at %v, want a share in [0, 1]", s.SlowAt)
	}
	return nil
}

// Run simulates scenario s with the strategy registered under name (or an
// alias). An unknown name is an error, not a silent fallback to random.
func Run(s Scenario, name string) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, fmt.Errorf("loadsim: scenario %q: %w", s.Name, err)
	}
	canonical, ok := strategy.Lookup(name)
	if !ok {
		return Result{}, fmt.Errorf("loadsim: unknown strategy %q (registered: %s)", name, strings.Join(strategy.Names(), ", "))
	}
	sim := newSimulation(s, canonical)
	if err := sim.run(); err != nil {
		return Result{}, fmt.Errorf("loadsim: scenario %q, strategy %s: %w", s.Name, canonical, err)
	}
	return sim.result(), nil
}

// nodeState is a simulated coordinator during a run.
type nodeState struct {
	slots    int
	busy     int
	speed    float64
	queue    []int32 // waiting requests, FIFO from head
	head     int
	inFlight int
	offered  [2]float64 // seconds of service sent in the window, before and after the slowdown
	load     *strategy.Load
	served   int

	// area integrates inFlight over the measured window; since is when it
	// was last brought up to date.
	area  float64
	since time.Duration
}

// completion is a statement finishing on a node.
type completion struct {
	at   time.Duration
	seq  uint64 // breaks ties in time, so that runs are reproducible
	req  int32
	node int32
}

type simulation struct {
	scenario Scenario
	name     string

	nodes  []nodeState
	picker strategy.Picker
	byAddr map[string]int
	users  []string

	arrivalRNG *rand.Rand // inter-arrival times
	workRNG    *rand.Rand // each statement's work
	userRNG    *rand.Rand // each statement's user

	meanService float64 // seconds at speed 1
	arrived     []time.Duration
	work        []float64 // in units of the mean service time at speed 1
	events      []completion
	seq         uint64

	slowed      bool          // the slowdown has happened
	slowedAt    time.Duration // when
	measuring   bool
	windowStart time.Duration
	windowEnd   time.Duration
	latencies   []time.Duration
}

func newSimulation(s Scenario, name string) *simulation {
	sim := &simulation{
		scenario:    s,
		name:        name,
		nodes:       make([]nodeState, len(s.Nodes)),
		byAddr:      make(map[string]int, len(s.Nodes)),
		users:       make([]string, s.users()),
		arrivalRNG:  rand.New(rand.NewPCG(s.Seed, 1)),
		workRNG:     rand.New(rand.NewPCG(s.Seed, 2)),
		userRNG:     rand.New(rand.NewPCG(s.Seed, 3)),
		meanService: s.meanService().Seconds(),
		arrived:     make([]time.Duration, s.Requests),
		work:        make([]float64, s.Requests),
		latencies:   make([]time.Duration, 0, s.Requests),
	}
	for i := range sim.users {
		sim.users[i] = fmt.Sprintf("user%04d", i)
	}
	loads := strategy.NewLoads()
	nodes := make([]discovery.Node, len(s.Nodes))
	for i, n := range s.Nodes {
		sim.nodes[i] = nodeState{slots: n.Slots, speed: n.Speed, load: loads.For(n.addr())}
		sim.byAddr[n.addr()] = i
		nodes[i] = discovery.Node{
			Addr:   n.addr(),
			Scheme: "http",
			Weight: max(n.Weight, 1),
			Zone:   n.Zone,
			ID:     n.addr(),
			Format: discovery.FormatStatic,
		}
	}
	// Strategies get their nodes sorted by address, as from a Snapshot.
	slices.SortFunc(nodes, func(a, b discovery.Node) int { return strings.Compare(a.Addr, b.Addr) })
	// Seed 0 would give the strategy the unseeded global source; derive a
	// non-zero seed of its own from the scenario's.
	seed := s.Seed*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d
	if seed == 0 {
		seed = 1
	}
	st, _ := strategy.New(name, strategy.Options{Seed: seed, Loads: loads, Zone: s.ClientZone})
	sim.picker = st.Build(nodes)
	return sim
}

func (sim *simulation) run() error {
	s := sim.scenario
	rate := s.ArrivalRate()
	warmup := int(s.Warmup * float64(s.Requests))
	slowAt := -1
	if s.SlowFactor > 0 {
		slowAt = int(s.SlowAt * float64(s.Requests))
	}
	var (
		req  strategy.Request // reused: Pick must not retain it
		now  time.Duration
		next = seconds(sim.arrivalRNG.ExpFloat64() / rate)
	)
	for arrived := 0; arrived < s.Requests || len(sim.events) > 0; {
		if arrived < s.Requests && (len(sim.events) == 0 || next < sim.events[0].at) {
			now = next
			i := arrived
			arrived++
			if i == slowAt {
				sim.nodes[s.SlowNode].speed *= s.SlowFactor
				sim.slowed, sim.slowedAt = true, now
			}
			if i == warmup {
				sim.startWindow(now)
			}
			sim.arrived[i] = now
			sim.work[i] = sim.workRNG.ExpFloat64()
			req.User = sim.users[sim.userRNG.IntN(len(sim.users))]
			picked, err := sim.picker.Pick(&req)
			if err != nil {
				return fmt.Errorf("pick for statement %d: %w", i, err)
			}
			if picked == nil {
				return fmt.Errorf("statement %d: the picker returned no node and no error", i)
			}
			n, ok := sim.byAddr[picked.Addr]
			if !ok {
				return fmt.Errorf("statement %d: picked %q, which is not a node", i, picked.Addr)
			}
			sim.dispatch(now, int32(i), n)
			if arrived == s.Requests {
				sim.endWindow(now)
			} else {
				next = now + seconds(sim.arrivalRNG.ExpFloat64()/rate)
			}
			continue
		}
		c := sim.pop()
		now = c.at
		sim.complete(now, c, warmup)
	}
	return nil
}

// seconds converts virtual seconds to a Duration, at least 1ns so that time
// always moves forward.
func seconds(s float64) time.Duration {
	return max(time.Duration(s*float64(time.Second)), 1)
}

// dispatch sends statement req to node n at time now.
func (sim *simulation) dispatch(now time.Duration, req int32, n int) {
	node := &sim.nodes[n]
	node.load.Begin()
	if sim.measuring {
		phase := 0
		if sim.slowed {
			phase = 1
		}
		node.offered[phase] += sim.work[req] * sim.meanService / node.speed
	}
	sim.account(node, now)
	node.inFlight++
	if node.busy < node.slots {
		node.busy++
		sim.start(now, req, n)
		return
	}
	node.queue = append(node.queue, req)
}

// start begins serving req on node n at time now, at the node's speed now.
func (sim *simulation) start(now time.Duration, req int32, n int) {
	service := seconds(sim.work[req] * sim.meanService / sim.nodes[n].speed)
	sim.push(completion{at: now + service, seq: sim.seq, req: req, node: int32(n)})
	sim.seq++
}

// complete finishes c and starts the next queued statement on its node.
func (sim *simulation) complete(now time.Duration, c completion, warmup int) {
	node := &sim.nodes[c.node]
	latency := now - sim.arrived[c.req]
	node.load.End(latency, nil)
	sim.account(node, now)
	node.inFlight--
	node.served++
	if int(c.req) >= warmup {
		sim.latencies = append(sim.latencies, latency)
	}
	if node.head < len(node.queue) {
		next := node.queue[node.head]
		node.head++
		if node.head == len(node.queue) {
			node.queue, node.head = node.queue[:0], 0
		} else if node.head > 1024 && node.head*2 > len(node.queue) {
			// Drop the consumed prefix now and then, so a long queue's
			// memory stays proportional to what waits.
			node.queue = append(node.queue[:0], node.queue[node.head:]...)
			node.head = 0
		}
		sim.start(now, next, int(c.node))
		return
	}
	node.busy--
}

// account adds the node's in-flight count since its last change to its area,
// inside the measured window.
func (sim *simulation) account(node *nodeState, now time.Duration) {
	if sim.measuring {
		node.area += float64(node.inFlight) * float64(now-node.since)
	}
	node.since = now
}

func (sim *simulation) startWindow(now time.Duration) {
	sim.measuring = true
	sim.windowStart = now
	for i := range sim.nodes {
		sim.nodes[i].area, sim.nodes[i].offered, sim.nodes[i].since = 0, [2]float64{}, now
	}
}

func (sim *simulation) endWindow(now time.Duration) {
	for i := range sim.nodes {
		sim.account(&sim.nodes[i], now)
	}
	sim.measuring = false
	sim.windowEnd = now
}

func (sim *simulation) result() Result {
	r := Result{
		Strategy: sim.name,
		Scenario: sim.scenario.Name,
		Loads:    make([]float64, len(sim.nodes)),
		Served:   make([]int, len(sim.nodes)),
		Offered:  make([]float64, len(sim.nodes)),
	}
	window := float64(sim.windowEnd - sim.windowStart)
	// How long each phase of the window lasted: before and after the
	// slowdown.
	phases := [2]float64{window, 0}
	if sim.slowed {
		split := max(sim.slowedAt, sim.windowStart)
		phases = [2]float64{float64(split - sim.windowStart), float64(sim.windowEnd - split)}
	}
	var sum, most float64
	for i, n := range sim.nodes {
		r.Served[i] = n.served
		if window > 0 {
			r.Loads[i] = n.area / window / float64(n.slots)
		}
		for p, d := range phases {
			if d > 0 {
				r.Offered[i] = max(r.Offered[i], n.offered[p]*float64(time.Second)/d/float64(n.slots))
			}
		}
		sum += r.Loads[i]
		most = max(most, r.Loads[i])
	}
	if sum > 0 {
		r.MaxMeanLoad = most / (sum / float64(len(sim.nodes)))
	}
	lat := sim.latencies
	if len(lat) > 0 {
		var total float64
		for _, l := range lat {
			total += float64(l)
		}
		r.Mean = time.Duration(total / float64(len(lat)))
		slices.Sort(lat)
		r.P50, r.P99, r.P999 = quantile(lat, 0.5), quantile(lat, 0.99), quantile(lat, 0.999)
	}
	return r
}

// quantile returns the q-quantile of sorted by the nearest-rank method.
func quantile(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// push and pop keep sim.events a binary min-heap by (at, seq).
func (sim *simulation) push(c completion) {
	h := append(sim.events, c)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !before(h[i], h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	sim.events = h
}

func (sim *simulation) pop() completion {
	h := sim.events
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		smallest, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && before(h[l], h[smallest]) {
			smallest = l
		}
		if r < len(h) && before(h[r], h[smallest]) {
			smallest = r
		}
		if smallest == i {
			break
		}
		h[i], h[smallest] = h[smallest], h[i]
		i = smallest
	}
	sim.events = h
	return top
}

func before(a, b completion) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}
