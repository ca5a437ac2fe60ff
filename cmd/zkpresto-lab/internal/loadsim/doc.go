// Package loadsim measures how well the load-balancing strategies spread
// work over coordinators of unequal capacity, in a deterministic
// discrete-event simulation.
//
// Nothing sleeps and nothing touches the network: time is virtual, and a run
// of half a million statements takes well under a second. Every arrival calls
// the real strategy code, exactly as the driver does: one Strategy per run,
// created with strategy.New and a fixed seed, Build once over the nodes, Pick
// per statement (with one of many users, so hash strategies spread), and
// Load.Begin when the statement is sent and Load.End with its latency when it
// completes, so load-aware strategies see true in-flight counts and
// latencies, in virtual time.
//
// # The model
//
//   - Arrivals are open-loop Poisson: statements keep coming at a fixed rate
//     whatever the latency, as they do from many independent clients.
//   - A coordinator runs Slots statements at a time; more wait in its FIFO
//     queue. A statement's work is drawn from an exponential distribution
//     (so one node alone is an M/M/c queue, which the tests check against
//     theory); on a node of speed s it takes MeanService/s on average. The
//     work is drawn per statement, not per node.
//   - The workload (arrival times, work, users and, with several clients,
//     which client sends each statement) is drawn from the seed before the
//     run, each from a stream of its own, apart from the simulation's other
//     random choices (watched subsets, registrars' phases, idle-list
//     choices): every strategy and the central queue get the same workload
//     (common random numbers), so their figures differ by how they balance,
//     not by what they were sent. Each client's strategy is seeded the same
//     under every strategy, so two strategies that decide alike give the
//     same figures to the nanosecond.
//   - A node's capacity is Slots × Speed / MeanService statements a second.
//     The default scenarios give every node 4 slots and get the capacity
//     ratio 1:1:4 from speed: the big coordinator, like a cluster with four
//     times the workers, runs each statement four times faster. Its weight
//     is 4, the others' 1, which is what an operator would register, so the
//     weighted strategies split the work in proportion to capacity.
//   - A slowdown multiplies one node's speed by a factor when a given share
//     of the statements has arrived; statements already running finish at
//     the old speed.
//   - The arrival rate is Load times the cluster's capacity. In a scenario
//     with a slowdown, capacity means the capacity after it (the least the
//     cluster has during the run), so a strategy that follows the slowdown
//     can keep latency bounded and one that does not is overloaded.
//   - Latency is completion minus arrival: queueing plus service.
//   - Clients (Scenario.Clients) are independent: each has its own strategy
//     instance, load table and picker, as separate *sql.DB or gateway
//     replicas do, and each arrival comes from one of them at random, so
//     each sees only its own share of the load.
//   - Coordinators may publish their load (Scenario.Publish): a registrar
//     per coordinator reads its true running plus queued count and writes
//     it, periodically or when it has moved enough, within a write budget;
//     each write reaches the clients watching the coordinator a
//     notification delay later, and their pickers are rebuilt, as the
//     driver's watched cache does. Only PublishedReaders are given figures.
//     The registrars decide when to write with the registrar's own gate
//     (registrar.LoadGate). A client may watch the data of a random subset
//     of the coordinators (Scenario.Watch, the driver's loadWatchSubset):
//     it knows every coordinator, and its strategy is given the others as
//     unwatched, as discovery gives them.
//   - RunIdeal replaces the strategy and the per-node queues by one central
//     FIFO queue over all the slots (a statement starts at once on the
//     fastest free node), the reference the many-client suite (Suite) is
//     measured against. With unequal nodes it is not a bound: a strategy
//     that waits for the fast node rather than starting on a slow one can
//     beat it at moderate load.
//
// # What is measured
//
// The first Warmup share of statements (started on an empty system) is left
// out of the latency percentiles. A node's load is its time-averaged number
// of statements in flight (running or queued) per slot, over the part of the
// run when statements arrive after the warm-up; 1 means all slots are
// always busy, more means a queue. Result.MaxMeanLoad is the largest node
// load divided by the mean over nodes: 1 is perfectly even, and a large
// value means one node is queueing while others idle. A node's offered load
// (Result.Offered) is the work sent to it per slot-second, before and after
// the slowdown separately; above OverloadThreshold the node was sent more
// than it can do, its queue grows without bound, and the latencies of that
// run grow with its length rather than settling: they say "overloaded", not
// how slow.
package loadsim
