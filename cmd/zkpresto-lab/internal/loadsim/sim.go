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
	"github.com/zkpresto/zkpresto/registrar"
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
	// Seed seeds the arrivals, the work, the users, each statement's
	// client and the strategy's own random choices; 0 is a seed like any
	// other.
	Seed uint64
	// Clients is how many independent clients send the statements, each
	// with its own strategy instance, picker and local counts, like as many
	// *sql.DB or gateway replicas; every arrival comes from one of them
	// uniformly at random. 0 means 1.
	Clients int
	// Watch, when positive, is how many coordinators' data each client
	// watches: a random subset of that size per client, as a large fleet
	// configures to bound ZooKeeper's notifications (the driver's
	// loadWatchSubset). The client knows every coordinator; the others are
	// given to its strategy as unwatched (discovery.PublishedLoad.Unwatched),
	// as discovery does. 0 means every coordinator.
	Watch int
	// Publish is how coordinators publish their load through ZooKeeper, for
	// the strategies that read it (PublishedReaders). The zero value
	// publishes nothing.
	Publish Publishing
	// Fault, when not FaultNone, makes the registrar of node FaultNode
	// misbehave while the node keeps serving: from the start for a liar,
	// from when FaultAt's share of the statements has arrived for a silent
	// one.
	Fault     Fault
	FaultNode int
	FaultAt   float64
}

// Fault is how a registrar misbehaves.
type Fault int

const (
	// FaultNone is a registrar that publishes its coordinator's true count.
	FaultNone Fault = iota
	// FaultLiar publishes 0 running and 0 queued for ever (a bug, a stuck
	// registrar), on its refresh schedule, so its figure is always fresh.
	FaultLiar
	// FaultSilent stops writing (a registrar that died or lost its
	// session's write access): its last figure ages.
	FaultSilent
)

// PublishedReaders are the strategies that read the load coordinators
// publish (discovery.Node.Load). For them the simulation delivers every
// write to the clients watching the coordinator and rebuilds their pickers,
// as the driver's watched cache does; the others are built once, so that a
// stateful picker (a round-robin position) is not reset by writes it
// ignores.
var PublishedReaders = []string{"shared_p2c"}

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
	// Published says whether the strategy was given published load (it
	// reads it and the scenario publishes it).
	Published bool
	// Writes is, per node, how many times its registrar wrote its znode
	// during the run; IdleListWrites how often the idle list was written.
	Writes         []int
	IdleListWrites int
	// Notifications is how many data-change notifications ZooKeeper sent to
	// clients: each write once per client watching it.
	Notifications int
	// Span is the virtual time from the first arrival to the last.
	Span time.Duration
}

// WritesPerNodeSecond returns the mean writes a second per coordinator
// (idle-list writes shared among them).
func (r Result) WritesPerNodeSecond() float64 {
	if r.Span <= 0 || len(r.Writes) == 0 {
		return 0
	}
	total := r.IdleListWrites
	for _, w := range r.Writes {
		total += w
	}
	return float64(total) / float64(len(r.Writes)) / r.Span.Seconds()
}

// MaxWritesPerNodeSecond returns the writes a second of the coordinator
// that wrote most, plus the idle list's share.
func (r Result) MaxWritesPerNodeSecond() float64 {
	if r.Span <= 0 || len(r.Writes) == 0 {
		return 0
	}
	return float64(slices.Max(r.Writes)+r.IdleListWrites/len(r.Writes)) / r.Span.Seconds()
}

// NotificationsPerSecond returns ZooKeeper's notifications a second to all
// clients together.
func (r Result) NotificationsPerSecond() float64 {
	if r.Span <= 0 {
		return 0
	}
	return float64(r.Notifications) / r.Span.Seconds()
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
	case s.Clients < 0 || s.Clients > 1_000_000:
		return fmt.Errorf("%d clients, want 0 to 1000000", s.Clients)
	case s.Watch < 0 || s.Watch > len(s.Nodes):
		return fmt.Errorf("each client watches %d coordinators, want 0 (all) to %d", s.Watch, len(s.Nodes))
	case s.Fault < FaultNone || s.Fault > FaultSilent:
		return fmt.Errorf("fault %d, want %d to %d", s.Fault, FaultNone, FaultSilent)
	case s.Fault != FaultNone && (s.FaultNode < 0 || s.FaultNode >= len(s.Nodes)):
		return fmt.Errorf("faulty node %d, want an index below %d", s.FaultNode, len(s.Nodes))
	case s.Fault != FaultNone && !(s.FaultAt >= 0 && s.FaultAt <= 1):
		return fmt.Errorf("fault at %v, want a share in [0, 1]", s.FaultAt)
	}
	return s.Publish.validate()
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

// CentralQueue is the Strategy name of RunIdeal's results.
const CentralQueue = "central queue"

// RunIdeal simulates scenario s with one central FIFO queue over all the
// capacity instead of a strategy and per-node queues: a statement starts on
// the fastest node with a free slot, or waits in the one queue for the first
// slot to free up. No balancer over separate queues does better; the same
// arrivals and work as Run's make its p99 the ideal the others are measured
// against.
func RunIdeal(s Scenario) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, fmt.Errorf("loadsim: scenario %q: %w", s.Name, err)
	}
	sim := newSimulation(s, "")
	if err := sim.run(); err != nil {
		return Result{}, fmt.Errorf("loadsim: scenario %q, %s: %w", s.Name, CentralQueue, err)
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
	served   int

	// area integrates inFlight over the measured window; since is when it
	// was last brought up to date.
	area  float64
	since time.Duration

	// Publishing: the registrar's gate (the product's), how many writes it
	// made, and what the clients see now (the last write older than the
	// notification delay) with its version.
	gate     registrar.LoadGate
	writes   int
	watchers int
	visible  discovery.PublishedLoad
	version  uint64
	idle     bool // as last written to the idle list
	idleSeen bool // as the clients see the idle list
}

// event is a statement finishing on a node or a registrar's tick.
type event struct {
	at   time.Duration
	seq  uint64 // breaks ties in time, so that runs are reproducible
	req  int32  // -1 for a tick
	node int32
}

// write is a registrar's write on its way to the clients.
type write struct {
	at    time.Duration
	node  int32
	total int32 // running+queued, or for the idle list 1 idle, 0 not
	idle  bool  // an idle-list write
}

// client is one independent client: its own strategy, load table and
// picker over every coordinator, of which it watches some.
type client struct {
	strategy strategy.Strategy
	loads    *strategy.Loads
	picker   strategy.Picker
	nodes    []int    // node indices, sorted by address
	watching []bool   // parallel to nodes: the client watches the node's data
	watched  []int    // indices into nodes of the watched ones
	built    []uint64 // parallel to watched: the node's version at the last build
	nodeLoad []*strategy.Load
	byAddr   map[string]int // address → index into nodes
}

type simulation struct {
	scenario Scenario
	name     string // "" runs the central queue
	central  []int32
	reads    bool // the strategy reads published figures
	publish  Publishing

	nodes   []nodeState
	clients []client
	users   []string

	// Random choices of the simulation itself, each from a stream of its
	// own, so that what one strategy makes it draw (registrars' phases,
	// idle-list choices) moves nothing another strategy sees.
	subsetRNG *rand.Rand // the watched subsets
	tickRNG   *rand.Rand // the registrars' phases
	idleRNG   *rand.Rand // idle-list choices

	// The workload, drawn from the seed alone before the run (common random
	// numbers): every strategy and the central queue get the same
	// statements, at the same times, with the same work, users and
	// clients, so that their figures differ by how they balance alone.
	meanService float64 // seconds at speed 1
	arrived     []time.Duration
	work        []float64 // in units of the mean service time at speed 1
	user        []int32   // index into users
	from        []int32   // the client that sends it
	reqLoad     []*strategy.Load
	events      []event
	seq         uint64
	now         time.Duration
	done        bool          // every statement has arrived
	span        time.Duration // from the first arrival to the last

	inbox         []write // writes not yet seen by the clients, in time order
	inboxHead     int
	idleWrites    int
	notifications int

	silenced    bool          // a FaultSilent registrar has stopped
	slowed      bool          // the slowdown has happened
	slowedAt    time.Duration // when
	measuring   bool
	windowStart time.Duration
	windowEnd   time.Duration
	latencies   []time.Duration
}

// simEpoch is the wall-clock time virtual time 0 stands for, for published
// read times and the strategies' clock.
var simEpoch = time.Unix(1_700_000_000, 0)

func newSimulation(s Scenario, name string) *simulation {
	sim := &simulation{
		scenario:    s,
		name:        name,
		reads:       slices.Contains(PublishedReaders, name) && s.Publish.Enabled(),
		publish:     s.Publish,
		nodes:       make([]nodeState, len(s.Nodes)),
		users:       make([]string, s.users()),
		subsetRNG:   rand.New(rand.NewPCG(s.Seed, 5)),
		tickRNG:     rand.New(rand.NewPCG(s.Seed, 6)),
		idleRNG:     rand.New(rand.NewPCG(s.Seed, 7)),
		meanService: s.meanService().Seconds(),
		reqLoad:     make([]*strategy.Load, s.Requests),
		latencies:   make([]time.Duration, 0, s.Requests),
	}
	sim.arrived, sim.work, sim.user, sim.from = drawWorkload(s)
	for i := range sim.users {
		sim.users[i] = fmt.Sprintf("user%04d", i)
	}
	refresh := s.Publish.Refresh
	if refresh == 0 {
		refresh = math.MaxInt64 // never rewrite an unchanged figure
	}
	for i, n := range s.Nodes {
		sim.nodes[i] = nodeState{slots: n.Slots, speed: n.Speed, idle: true, idleSeen: true,
			gate: registrar.LoadGate{Threshold: s.Publish.Threshold, MinGap: s.Publish.MinGap, Burst: s.Publish.Burst,
				Refresh: refresh, Slots: n.Slots}}
	}
	if name == "" {
		return sim
	}
	// Strategies get their nodes sorted by address, as from a Snapshot.
	order := make([]int, len(s.Nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(s.Nodes[a].addr(), s.Nodes[b].addr()) })
	sim.clients = make([]client, max(s.Clients, 1))
	for k := range sim.clients {
		c := &sim.clients[k]
		c.nodes = order
		c.watching = make([]bool, len(order))
		if s.Watch > 0 && s.Watch < len(order) {
			pick := sim.subsetRNG.Perm(len(order))[:s.Watch]
			slices.Sort(pick)
			for _, p := range pick {
				c.watching[p] = true
			}
		} else {
			for j := range c.watching {
				c.watching[j] = true
			}
		}
		for j, n := range c.nodes {
			if c.watching[j] {
				sim.nodes[n].watchers++
				c.watched = append(c.watched, j)
			}
		}
		c.loads = strategy.NewLoads()
		c.byAddr = make(map[string]int, len(c.nodes))
		c.built = make([]uint64, len(c.watched))
		all := make([]discovery.Node, len(c.nodes))
		for j, n := range c.nodes {
			c.byAddr[s.Nodes[n].addr()] = j
			all[j].Addr = s.Nodes[n].addr()
		}
		c.nodeLoad = c.loads.ForNodes(all) // one copy of the table, not one per node
		// Seed 0 would give the strategy the unseeded global source; derive
		// a non-zero seed of its own from the scenario's (client 0's is what
		// a one-client run has always used).
		seed := s.Seed*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d + uint64(k)*0xbf58476d1ce4e5b9
		if seed == 0 {
			seed = 1
		}
		c.strategy, _ = strategy.New(name, strategy.Options{
			Seed: seed, Loads: c.loads, Zone: s.ClientZone,
			Now: func() time.Time { return simEpoch.Add(sim.now) },
		})
		sim.build(c)
	}
	return sim
}

// drawWorkload returns, for every statement of s, when it arrives, its
// work, its user and its client, from s's seed alone: arrivals at the
// scenario's rate, Poisson; work exponential with mean 1; users and clients
// uniform. Each has a stream of its own.
func drawWorkload(s Scenario) (arrived []time.Duration, work []float64, user, from []int32) {
	arrivalRNG := rand.New(rand.NewPCG(s.Seed, 1))
	workRNG := rand.New(rand.NewPCG(s.Seed, 2))
	userRNG := rand.New(rand.NewPCG(s.Seed, 3))
	clientRNG := rand.New(rand.NewPCG(s.Seed, 4))
	rate, users, clients := s.ArrivalRate(), s.users(), max(s.Clients, 1)
	arrived = make([]time.Duration, s.Requests)
	work = make([]float64, s.Requests)
	user = make([]int32, s.Requests)
	from = make([]int32, s.Requests)
	var now time.Duration
	for i := range s.Requests {
		now += seconds(arrivalRNG.ExpFloat64() / rate)
		arrived[i] = now
		work[i] = workRNG.ExpFloat64()
		user[i] = int32(userRNG.IntN(users))
		if clients > 1 {
			from[i] = int32(clientRNG.IntN(clients))
		}
	}
	return arrived, work, user, from
}

// build rebuilds c's picker over its nodes as the client sees them.
func (sim *simulation) build(c *client) {
	nodes := make([]discovery.Node, len(c.nodes))
	for j, i := range c.nodes {
		n := sim.scenario.Nodes[i]
		nodes[j] = discovery.Node{
			Addr:   n.addr(),
			Scheme: "http",
			Weight: max(n.Weight, 1),
			Zone:   n.Zone,
			ID:     n.addr(),
			Format: discovery.FormatStatic,
		}
		switch {
		case !c.watching[j]:
			nodes[j].Load = discovery.PublishedLoad{Unwatched: true}
		case sim.reads:
			nodes[j].Load = sim.nodes[i].visible
		}
	}
	for k, j := range c.watched {
		c.built[k] = sim.nodes[c.nodes[j]].version
	}
	c.picker = c.strategy.Build(nodes)
}

func (sim *simulation) run() error {
	s := sim.scenario
	warmup := int(s.Warmup * float64(s.Requests))
	slowAt := -1
	if s.SlowFactor > 0 {
		slowAt = int(s.SlowAt * float64(s.Requests))
	}
	if sim.reads {
		for n := range sim.nodes {
			// Registrars start out of step, as real ones do.
			sim.push(event{at: seconds(sim.tickRNG.Float64() * sim.publish.tick().Seconds()), seq: sim.seq, req: -1, node: int32(n)})
			sim.seq++
		}
	}
	var (
		req      strategy.Request // reused: Pick must not retain it
		arrived  int
		first    = sim.arrived[0]
		lastSeen time.Duration
	)
	for arrived < s.Requests || len(sim.events) > 0 {
		if arrived < s.Requests && (len(sim.events) == 0 || sim.arrived[arrived] < sim.events[0].at) {
			now := sim.arrived[arrived]
			sim.now = now
			i := arrived
			arrived++
			if s.Fault == FaultSilent && i == int(s.FaultAt*float64(s.Requests)) {
				sim.silenced = true
			}
			if i == slowAt {
				sim.nodes[s.SlowNode].speed *= s.SlowFactor
				sim.slowed, sim.slowedAt = true, now
			}
			if i == warmup {
				sim.startWindow(now)
			}
			req.User = sim.users[sim.user[i]]
			n, err := sim.pick(i, &req)
			if err != nil {
				return err
			}
			sim.dispatch(now, int32(i), n)
			if arrived == s.Requests {
				sim.endWindow(now)
				lastSeen = now
			}
			continue
		}
		e := sim.pop()
		sim.now = e.at
		if e.req < 0 {
			sim.tick(e)
			continue
		}
		sim.complete(e.at, e, warmup)
	}
	sim.span = lastSeen - first
	return nil
}

// pick chooses the node for statement i: the central queue's choice, or the
// choice of the client the statement comes from.
func (sim *simulation) pick(i int, req *strategy.Request) (int, error) {
	if sim.name == "" {
		return -1, nil
	}
	c := &sim.clients[sim.from[i]]
	if sim.reads {
		sim.deliver()
		for k, j := range c.watched {
			if c.built[k] != sim.nodes[c.nodes[j]].version {
				sim.build(c)
				break
			}
		}
		if sim.publish.IdleList {
			if j, ok := sim.idleChoice(c); ok {
				sim.reqLoad[i] = c.nodeLoad[j]
				return c.nodes[j], nil
			}
		}
	}
	picked, err := c.picker.Pick(req)
	if err != nil {
		return 0, fmt.Errorf("pick for statement %d: %w", i, err)
	}
	if picked == nil {
		return 0, fmt.Errorf("statement %d: the picker returned no node and no error", i)
	}
	j, ok := c.byAddr[picked.Addr]
	if !ok {
		return 0, fmt.Errorf("statement %d: picked %q, which is not a node", i, picked.Addr)
	}
	sim.reqLoad[i] = c.nodeLoad[j]
	return c.nodes[j], nil
}

// idleChoice returns a watched node the idle list shows with a free slot,
// uniformly at random, if there is one.
func (sim *simulation) idleChoice(c *client) (int, bool) {
	seen, choice := 0, -1
	for _, j := range c.watched {
		if sim.nodes[c.nodes[j]].idleSeen {
			seen++
			if sim.idleRNG.IntN(seen) == 0 { // reservoir sampling
				choice = j
			}
		}
	}
	return choice, choice >= 0
}

// deliver shows the clients every write at least the notification delay old.
func (sim *simulation) deliver() {
	for sim.inboxHead < len(sim.inbox) && sim.inbox[sim.inboxHead].at+sim.publish.Delay <= sim.now {
		w := sim.inbox[sim.inboxHead]
		sim.inboxHead++
		node := &sim.nodes[w.node]
		if w.idle {
			node.idleSeen = w.total == 1
			continue
		}
		node.version++
		running := min(int(w.total), node.slots)
		node.visible = discovery.PublishedLoad{Running: running, Queued: int(w.total) - running, Slots: node.slots,
			ReadAt: simEpoch.Add(w.at)}
	}
	if sim.inboxHead > 4096 && sim.inboxHead*2 > len(sim.inbox) {
		sim.inbox = append(sim.inbox[:0], sim.inbox[sim.inboxHead:]...)
		sim.inboxHead = 0
	}
}

// tick is a registrar reading its coordinator and perhaps writing.
func (sim *simulation) tick(e event) {
	node := &sim.nodes[e.node]
	p := sim.publish
	now := e.at
	total := node.inFlight
	if int(e.node) == sim.scenario.FaultNode {
		switch {
		case sim.scenario.Fault == FaultLiar:
			total = 0
		case sim.scenario.Fault == FaultSilent && sim.silenced:
			return // and no more ticks: it never writes again
		}
	}
	running := min(total, node.slots)
	// On change, the registrar's own gate decides (registrar.LoadGate);
	// periodic publishing writes every tick.
	due := p.Periodic > 0 || node.gate.Due(simEpoch.Add(now), running, total-running, true)
	if due {
		node.gate.Written(simEpoch.Add(now), running, total-running, true)
		node.writes++
		sim.notifications += node.watchers
		sim.inbox = append(sim.inbox, write{at: now, node: e.node, total: int32(total)})
	}
	if sim.done {
		return // the run is draining: no more picks to inform
	}
	sim.push(event{at: now + p.tick(), seq: sim.seq, req: -1, node: e.node})
	sim.seq++
}

// idleChanged writes the idle list when node n gained or lost its last free
// slot.
func (sim *simulation) idleChanged(n int) {
	if !sim.reads || !sim.publish.IdleList {
		return
	}
	node := &sim.nodes[n]
	idle := node.busy < node.slots
	if idle == node.idle {
		return
	}
	node.idle = idle
	sim.idleWrites++
	sim.notifications += len(sim.clients)
	v := int32(0)
	if idle {
		v = 1
	}
	sim.inbox = append(sim.inbox, write{at: sim.now, node: int32(n), total: v, idle: true})
}

// seconds converts virtual seconds to a Duration, at least 1ns so that time
// always moves forward.
func seconds(s float64) time.Duration {
	return max(time.Duration(s*float64(time.Second)), 1)
}

// dispatch sends statement req to node n at time now; n < 0 is the central
// queue.
func (sim *simulation) dispatch(now time.Duration, req int32, n int) {
	if n < 0 {
		if n = sim.fastestFree(); n < 0 {
			sim.central = append(sim.central, req)
			return
		}
	}
	node := &sim.nodes[n]
	if l := sim.reqLoad[req]; l != nil {
		l.Begin()
	}
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
		sim.idleChanged(n)
		return
	}
	node.queue = append(node.queue, req)
}

// fastestFree returns the fastest node with a free slot (the first of equals),
// or -1.
func (sim *simulation) fastestFree() int {
	best := -1
	for i := range sim.nodes {
		n := &sim.nodes[i]
		if n.busy < n.slots && (best < 0 || n.speed > sim.nodes[best].speed) {
			best = i
		}
	}
	return best
}

// start begins serving req on node n at time now, at the node's speed now.
func (sim *simulation) start(now time.Duration, req int32, n int) {
	service := seconds(sim.work[req] * sim.meanService / sim.nodes[n].speed)
	sim.push(event{at: now + service, seq: sim.seq, req: req, node: int32(n)})
	sim.seq++
}

// complete finishes c and starts the next queued statement on its node.
func (sim *simulation) complete(now time.Duration, c event, warmup int) {
	node := &sim.nodes[c.node]
	latency := now - sim.arrived[c.req]
	if l := sim.reqLoad[c.req]; l != nil {
		l.End(latency, nil)
	}
	sim.account(node, now)
	node.inFlight--
	node.served++
	if int(c.req) >= warmup {
		sim.latencies = append(sim.latencies, latency)
	}
	if sim.name == "" && len(sim.central) > 0 {
		// The central queue's head takes the freed slot; it was counted in
		// no node until now.
		next := sim.central[0]
		sim.central = sim.central[1:]
		if sim.measuring {
			phase := 0
			if sim.slowed {
				phase = 1
			}
			node.offered[phase] += sim.work[next] * sim.meanService / node.speed
		}
		node.inFlight++
		sim.start(now, next, int(c.node))
		return
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
	sim.idleChanged(int(c.node))
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
	sim.done = true
}

func (sim *simulation) result() Result {
	name := sim.name
	if name == "" {
		name = CentralQueue
	}
	r := Result{
		Strategy:       name,
		Scenario:       sim.scenario.Name,
		Loads:          make([]float64, len(sim.nodes)),
		Served:         make([]int, len(sim.nodes)),
		Offered:        make([]float64, len(sim.nodes)),
		Writes:         make([]int, len(sim.nodes)),
		Published:      sim.reads,
		IdleListWrites: sim.idleWrites,
		Notifications:  sim.notifications,
		Span:           sim.span,
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
		r.Writes[i] = n.writes
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
func (sim *simulation) push(c event) {
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

func (sim *simulation) pop() event {
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

func before(a, b event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}
