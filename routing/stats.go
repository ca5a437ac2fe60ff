package routing

import (
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
)

// Stats is a point-in-time view of a Router: what discovery lists, and per
// coordinator what the Router did with it.
type Stats struct {
	// Strategy is the name of the strategy in use.
	Strategy string
	// Discovery describes the discovery source.
	Discovery DiscoveryStats
	// Nodes has one entry per coordinator discovery lists now, in address
	// order.
	Nodes []NodeStats
}

// DiscoveryStats describes the discovery source.
type DiscoveryStats struct {
	// Source names the ensemble and path (or the static host list).
	Source string
	// Open is false until discovery was first used.
	Open bool
	// Connected is true while the ZooKeeper session is live (always true
	// for a static list).
	Connected bool
	// StaleSince is when the ZooKeeper connection was lost; zero while connected.
	StaleSince time.Time
	// LastChange is when the node set last changed.
	LastChange time.Time
	// Generation counts the snapshots discovery published.
	Generation uint64
	// Nodes is the number of coordinators listed; Skipped the number of
	// registrations that could not be parsed.
	Nodes, Skipped int
	// Problem explains an empty list, e.g. a missing namespace.
	Problem string
}

// NodeStats is what the Router knows of one coordinator.
type NodeStats struct {
	// Node is the coordinator as discovery lists it.
	Node discovery.Node
	// Usable is true when the node is a candidate for new statements (not
	// ejected nor unhealthy).
	Usable bool
	// Picks is the number of statements started on the node.
	Picks uint64
	// Failures is the number of statements that ended with an error there.
	Failures uint64
	// Failovers is the number of statements moved to another node because
	// this one failed before accepting them.
	Failovers uint64
	// Ejections is how many times the node was ejected; Ejected and
	// EjectedUntil describe the current ejection, Unhealthy an active
	// health check's verdict.
	Ejections    uint64
	Ejected      bool
	EjectedUntil time.Time
	Unhealthy    bool
	// LastError is the node's latest failure, if any.
	LastError string
	// InFlight is the number of statements running there now.
	InFlight int64
	// Latency is the moving average of statement latency.
	Latency time.Duration
}

// Stats returns the Router's current figures. It does no I/O and does not
// open discovery.
func (r *Router) Stats() Stats {
	st := Stats{Strategy: r.strategyName}
	d := r.disc.Load()
	if d == nil {
		if r.cfg.ZooKeeper != nil {
			st.Discovery.Source = r.cfg.ZooKeeper.Ensemble() + r.cfg.ZooKeeper.Path
		} else {
			st.Discovery.Source = r.cfg.Discoverer.Snapshot().Source
		}
		return st
	}
	snap := d.Snapshot()
	st.Discovery = DiscoveryStats{Source: snap.Source, Open: true, Connected: true, Generation: snap.Generation, Nodes: len(snap.Nodes)}
	ds := d.Status()
	st.Discovery.Connected, st.Discovery.StaleSince, st.Discovery.LastChange = ds.Connected, ds.StaleSince, ds.LastChange
	st.Discovery.Skipped, st.Discovery.Problem = ds.Skipped, ds.Problem
	usable := map[string]bool{}
	if ps := r.picked.Load(); ps != nil && ps.snap == snap {
		for _, n := range ps.nodes {
			usable[n.Addr] = true
		}
	} else {
		for _, n := range readyNodes(snap.Nodes) {
			usable[n.Addr] = true
		}
	}
	loads := r.loads.Snapshot()
	for _, n := range snap.Nodes {
		ns := NodeStats{Node: n, Usable: usable[n.Addr]}
		if l, ok := loads[n.Addr]; ok {
			ns.Picks, ns.Failures, ns.InFlight, ns.Latency = l.Started(), l.Failed(), l.InFlight(), l.Latency()
		}
		if v, ok := r.failovers.Load(n.Addr); ok {
			ns.Failovers = v.(*atomic.Uint64).Load()
		}
		h := r.health.State(n.Addr)
		ns.Ejections, ns.Ejected, ns.EjectedUntil, ns.Unhealthy, ns.LastError = h.Ejections, h.Ejected, h.Until, h.Unhealthy, h.LastError
		st.Nodes = append(st.Nodes, ns)
	}
	return st
}
