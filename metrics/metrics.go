// Package metrics exports zkpresto's figures as Prometheus collectors: what
// a registrar did (zkpresto register), what a driver connector sees and
// does per coordinator, and what a gateway answered and how fast.
//
// Prometheus, not OpenTelemetry: the Prometheus text format is what the
// systems around Presto already scrape (Presto's own JMX exporter setups,
// ZooKeeper's metrics provider, Kubernetes), it needs no collector process
// or exporter pipeline, and a collector that reads figures at scrape time
// costs nothing between scrapes. OpenTelemetry users can still scrape these
// collectors with the OpenTelemetry Collector's Prometheus receiver.
//
// The collectors read a snapshot function at each scrape; they keep no
// state of their own and are safe for concurrent use. The labels are node
// (a coordinator's host:port), and a gateway request's kind and status,
// never a user, a DSN or a credential.
// Series of a coordinator that left discovery disappear with it.
//
// To expose two connectors from one process, register each under its own
// constant label:
//
//	prometheus.WrapRegistererWith(prometheus.Labels{"pool": "etl"}, reg).MustRegister(c)
package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/routing"
)

// RegistrarCollector exports a registrar's status. Create it with
// NewRegistrarCollector.
type RegistrarCollector struct {
	status func() registrar.Status

	registered, healthy, connected                     *prometheus.Desc
	registrations, healthFailures, sessionReRegistered *prometheus.Desc
	lastCheck                                          *prometheus.Desc
	loadWrites, publishedQueries, readinessWrites      *prometheus.Desc
	notReady                                           *prometheus.Desc
}

// NewRegistrarCollector returns a collector that calls status at every
// scrape.
func NewRegistrarCollector(status func() registrar.Status) *RegistrarCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("zkpresto_registrar_"+name, help, nil, nil)
	}
	return &RegistrarCollector{
		status:              status,
		registered:          d("registered", "1 while the coordinator's znode is registered in ZooKeeper, else 0."),
		healthy:             d("coordinator_healthy", "1 while the coordinator passes its /v1/info health check, else 0."),
		connected:           d("zookeeper_connected", "1 while the registrar has a ZooKeeper session, else 0."),
		registrations:       d("registrations_total", "Registrations of the coordinator: znodes created, but for the replacements of a readiness change."),
		healthFailures:      d("health_check_failures_total", "Failed health checks, including answers that the coordinator is starting."),
		sessionReRegistered: d("session_reregistrations_total", "Registrations made again because the ZooKeeper session holding the previous one expired."),
		lastCheck:           d("last_check_timestamp_seconds", "Unix time of the last health check; 0 before the first."),
		loadWrites:          d("load_writes_total", "Writes of the coordinator's load figures into its znode (register --load-source)."),
		publishedQueries:    d("published_queries", "Running plus queued queries in the load figure last written; absent while none is published."),
		readinessWrites:     d("readiness_writes_total", "Readiness changes written, each by a znode that replaces the registration, created before the old one is deleted."),
		notReady: prometheus.NewDesc("zkpresto_registrar_coordinator_not_ready",
			"1 while the coordinator answers but is marked not ready in its registration (notready=), by reason: starting, a node state (SHUTTING_DOWN, DRAINING, DRAINED), workers (fewer than --min-workers) or drained (an operator's mark); absent while ready.",
			[]string{"reason"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *RegistrarCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.registered, c.healthy, c.connected, c.registrations,
		c.healthFailures, c.sessionReRegistered, c.lastCheck, c.loadWrites, c.publishedQueries, c.readinessWrites, c.notReady} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *RegistrarCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.status()
	ch <- prometheus.MustNewConstMetric(c.registered, prometheus.GaugeValue, boolValue(s.Registered))
	ch <- prometheus.MustNewConstMetric(c.healthy, prometheus.GaugeValue, boolValue(s.Healthy))
	ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, boolValue(s.Connected))
	ch <- prometheus.MustNewConstMetric(c.registrations, prometheus.CounterValue, float64(s.Registrations))
	ch <- prometheus.MustNewConstMetric(c.healthFailures, prometheus.CounterValue, float64(s.HealthCheckFailures))
	ch <- prometheus.MustNewConstMetric(c.sessionReRegistered, prometheus.CounterValue, float64(s.SessionReRegistrations))
	ch <- prometheus.MustNewConstMetric(c.lastCheck, prometheus.GaugeValue, unixSeconds(s.LastCheck))
	ch <- prometheus.MustNewConstMetric(c.loadWrites, prometheus.CounterValue, float64(s.LoadWrites))
	ch <- prometheus.MustNewConstMetric(c.readinessWrites, prometheus.CounterValue, float64(s.ReadinessWrites))
	if s.Load.Known() {
		ch <- prometheus.MustNewConstMetric(c.publishedQueries, prometheus.GaugeValue, float64(s.Load.Total()))
	}
	if s.NotReady != "" {
		// "workers:0/1" is counted as workers: one series per reason,
		// not per figure.
		reason, _, _ := strings.Cut(s.NotReady, ":")
		ch <- prometheus.MustNewConstMetric(c.notReady, prometheus.GaugeValue, 1, reason)
	}
}

// StatsSource supplies a router's figures at each scrape: a
// *driver.Connector and a *routing.Router are both one, and the package
// imports neither's type. Stats must be cheap (no I/O) and safe for
// concurrent use.
type StatsSource interface {
	Stats() routing.Stats
}

// StatsFunc adapts a function to StatsSource.
type StatsFunc func() routing.Stats

// Stats calls f.
func (f StatsFunc) Stats() routing.Stats { return f() }

// DriverCollector exports a connector's figures. Create it with
// NewDriverCollector.
type DriverCollector struct {
	src StatsSource
	now func() time.Time

	connected, stale, nodes, skipped                     *prometheus.Desc
	usable, ready, picks, failures, failovers, ejections *prometheus.Desc
	inFlight, latency                                    *prometheus.Desc
}

// NewDriverCollector returns a collector that reads src at every scrape.
func NewDriverCollector(src StatsSource) *DriverCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("zkpresto_"+name, help, labels, nil)
	}
	return &DriverCollector{
		src:       src,
		now:       time.Now,
		connected: d("discovery_connected", "1 while discovery has a live ZooKeeper session (always for a static host list), else 0."),
		stale:     d("discovery_stale_seconds", "How long discovery has served its last known list without a ZooKeeper session; 0 while connected."),
		nodes:     d("discovery_nodes", "Coordinators discovery lists now."),
		skipped:   d("discovery_skipped_znodes", "Registrations that could not be parsed and are ignored."),
		usable:    d("driver_node_usable", "1 while the coordinator is a candidate for new statements (ready, not ejected nor unhealthy), else 0.", "node"),
		ready:     d("driver_node_ready", "1 unless the coordinator's registration marks it not ready (notready=: starting, shutting down, too few workers, drained), else 0.", "node"),
		picks:     d("driver_picks_total", "Statements started on the coordinator.", "node"),
		failures:  d("driver_failures_total", "Statements that failed on the coordinator.", "node"),
		failovers: d("driver_failovers_total", "Statements moved to another coordinator because this one failed before accepting them.", "node"),
		ejections: d("driver_ejections_total", "Times the coordinator was ejected.", "node"),
		inFlight:  d("driver_in_flight", "Statements running on the coordinator now.", "node"),
		latency:   d("driver_latency_seconds", "Moving average of statement latency on the coordinator.", "node"),
	}
}

// Describe implements prometheus.Collector.
func (c *DriverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.connected, c.stale, c.nodes, c.skipped, c.usable, c.ready, c.picks,
		c.failures, c.failovers, c.ejections, c.inFlight, c.latency} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *DriverCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	stale := 0.0
	if !s.Discovery.Connected && !s.Discovery.StaleSince.IsZero() {
		stale = max(c.now().Sub(s.Discovery.StaleSince).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, boolValue(s.Discovery.Connected))
	ch <- prometheus.MustNewConstMetric(c.stale, prometheus.GaugeValue, stale)
	ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(len(s.Nodes)))
	ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.GaugeValue, float64(s.Discovery.Skipped))
	seen := make(map[string]bool, len(s.Nodes))
	for _, n := range s.Nodes {
		// Two entries for one address would make the scrape fail;
		// discovery never lists an address twice, but do not trust it.
		addr := n.Node.Addr
		if addr == "" || seen[addr] {
			continue
		}
		seen[addr] = true
		ch <- prometheus.MustNewConstMetric(c.usable, prometheus.GaugeValue, boolValue(n.Usable), addr)
		ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, boolValue(n.Node.Ready()), addr)
		ch <- prometheus.MustNewConstMetric(c.picks, prometheus.CounterValue, float64(n.Picks), addr)
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(n.Failures), addr)
		ch <- prometheus.MustNewConstMetric(c.failovers, prometheus.CounterValue, float64(n.Failovers), addr)
		ch <- prometheus.MustNewConstMetric(c.ejections, prometheus.CounterValue, float64(n.Ejections), addr)
		ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(n.InFlight), addr)
		ch <- prometheus.MustNewConstMetric(c.latency, prometheus.GaugeValue, n.Latency.Seconds(), addr)
	}
}

var (
	_ prometheus.Collector = (*RegistrarCollector)(nil)
	_ prometheus.Collector = (*DriverCollector)(nil)
)

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
