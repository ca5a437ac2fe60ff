package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/routing"
)

// scrape serves the collectors as Prometheus does and returns the text.
func scrape(t *testing.T, cs ...prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry() // also checks Describe against Collect
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s\n%s", resp.Status, body)
	}
	return string(body)
}

func wantLines(t *testing.T, text string, lines ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		have[l] = true
	}
	for _, l := range lines {
		if !have[l] {
			t.Errorf("scrape lacks %q:\n%s", l, text)
		}
	}
}

func TestRegistrarCollector(t *testing.T) {
	status := registrar.Status{}
	c := NewRegistrarCollector(func() registrar.Status { return status })
	wantLines(t, scrape(t, c),
		"zkpresto_registrar_registered 0",
		"zkpresto_registrar_last_check_timestamp_seconds 0",
		"# TYPE zkpresto_registrar_registrations_total counter",
		"zkpresto_registrar_load_writes_total 0",
	)
	if text := scrape(t, c); strings.Contains(text, "zkpresto_registrar_published_queries") {
		t.Errorf("a published-queries gauge without a published figure:\n%s", text)
	}

	status = registrar.Status{
		Registered: true, Healthy: true, Connected: true,
		Registrations: 3, HealthCheckFailures: 5, SessionReRegistrations: 1,
		LastCheck:  time.Unix(1700000000, 500_000_000),
		LoadWrites: 12, ReadinessWrites: 2, Load: discovery.PublishedLoad{Running: 4, Queued: 3, ReadAt: time.Unix(1700000000, 0)},
	}
	wantLines(t, scrape(t, c),
		"zkpresto_registrar_registered 1",
		"zkpresto_registrar_coordinator_healthy 1",
		"zkpresto_registrar_zookeeper_connected 1",
		"zkpresto_registrar_registrations_total 3",
		"zkpresto_registrar_health_check_failures_total 5",
		"zkpresto_registrar_session_reregistrations_total 1",
		"zkpresto_registrar_last_check_timestamp_seconds 1.7000000005e+09",
		"zkpresto_registrar_load_writes_total 12",
		"zkpresto_registrar_readiness_writes_total 2",
		"zkpresto_registrar_published_queries 7",
	)
	if text := scrape(t, c); strings.Contains(text, "zkpresto_registrar_coordinator_not_ready{") {
		t.Errorf("a not-ready gauge for a ready coordinator:\n%s", text)
	}
	status.Healthy, status.NotReady = false, "workers:0/1"
	wantLines(t, scrape(t, c), `zkpresto_registrar_coordinator_not_ready{reason="workers"} 1`)
}

func TestDriverCollector(t *testing.T) {
	now := time.Unix(1700000000, 0)
	stats := routing.Stats{
		Discovery: routing.DiscoveryStats{Connected: false, StaleSince: now.Add(-90 * time.Second), Skipped: 2},
		Nodes: []routing.NodeStats{
			{Node: discovery.Node{Addr: "10.0.0.1:8080"}, Usable: true, Picks: 7, Failures: 1, InFlight: 2, Latency: 250 * time.Millisecond},
			{Node: discovery.Node{Addr: "10.0.0.2:8080", NotReady: "drained"}, Ejections: 1, Failovers: 4},
			{Node: discovery.Node{Addr: "10.0.0.2:8080"}, Picks: 99}, // a duplicate must not break the scrape
		},
	}
	c := NewDriverCollector(StatsFunc(func() routing.Stats { return stats }))
	c.now = func() time.Time { return now }
	text := scrape(t, c)
	wantLines(t, text,
		"zkpresto_discovery_connected 0",
		"zkpresto_discovery_stale_seconds 90",
		"zkpresto_discovery_skipped_znodes 2",
		`zkpresto_driver_picks_total{node="10.0.0.1:8080"} 7`,
		`zkpresto_driver_picks_total{node="10.0.0.2:8080"} 0`,
		`zkpresto_driver_failures_total{node="10.0.0.1:8080"} 1`,
		`zkpresto_driver_in_flight{node="10.0.0.1:8080"} 2`,
		`zkpresto_driver_latency_seconds{node="10.0.0.1:8080"} 0.25`,
		`zkpresto_driver_node_usable{node="10.0.0.1:8080"} 1`,
		`zkpresto_driver_node_usable{node="10.0.0.2:8080"} 0`,
		`zkpresto_driver_node_ready{node="10.0.0.1:8080"} 1`,
		`zkpresto_driver_node_ready{node="10.0.0.2:8080"} 0`,
		`zkpresto_driver_ejections_total{node="10.0.0.2:8080"} 1`,
		`zkpresto_driver_failovers_total{node="10.0.0.2:8080"} 4`,
	)

	stats.Discovery = routing.DiscoveryStats{Connected: true}
	stats.Nodes = nil
	wantLines(t, scrape(t, c), "zkpresto_discovery_connected 1", "zkpresto_discovery_stale_seconds 0", "zkpresto_discovery_nodes 0")
}
