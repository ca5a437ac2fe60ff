package metrics_test

import (
	"bufio"
	"context"
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

// Export a routing core's figures: a *routing.Router, the core of a driver
// connector and of each gateway group, is a StatsSource as it is, and so
// is a *driver.Connector.
func ExampleFromConnector() {
	router, err := routing.New(routing.Config{
		Discoverer: discovery.NewStatic("etl", []discovery.Node{{Addr: "10.0.0.1:8080"}, {Addr: "10.0.0.2:8080"}}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer router.Close()
	if err := router.Open(context.Background()); err != nil { // a static list: no I/O
		fmt.Println(err)
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDriverCollector(metrics.FromConnector(router)))
	families, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range families {
		if f.GetName() == "zkpresto_discovery_nodes" || f.GetName() == "zkpresto_driver_node_usable" {
			for _, m := range f.GetMetric() {
				node := ""
				for _, l := range m.GetLabel() {
					node = l.GetValue()
				}
				fmt.Println(f.GetName(), node, m.GetGauge().GetValue())
			}
		}
	}
	// Output:
	// zkpresto_discovery_nodes  2
	// zkpresto_driver_node_usable 10.0.0.1:8080 1
	// zkpresto_driver_node_usable 10.0.0.2:8080 1
}
