package metrics_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/metrics"
	"github.com/zkpresto/zkpresto/routing"
)

// Serve a connector's figures on /metrics. Here a fixed function stands in
// for the connector.
func ExampleNewDriverCollector() {
	stats := metrics.StatsFunc(func() routing.Stats {
		return routing.Stats{
			Discovery: routing.DiscoveryStats{Connected: true},
			Nodes: []routing.NodeStats{
				{Node: discovery.Node{Addr: "10.0.0.1:8080"}, Usable: true, Picks: 42, InFlight: 3},
				{Node: discovery.Node{Addr: "10.0.0.2:8080"}, Usable: true, Picks: 40, Failures: 1},
			},
		}
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDriverCollector(stats))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if l := lines.Text(); strings.HasPrefix(l, "zkpresto_driver_picks_total") || strings.HasPrefix(l, "zkpresto_discovery_nodes") {
			fmt.Println(l)
		}
	}
	// Output:
	// zkpresto_discovery_nodes 2
	// zkpresto_driver_picks_total{node="10.0.0.1:8080"} 42
	// zkpresto_driver_picks_total{node="10.0.0.2:8080"} 40
}
