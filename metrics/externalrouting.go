package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkpresto/zkpresto/gateway"
)

// ExternalRoutingSource is what an ExternalRoutingCollector reads: a
// *gateway.Gateway.
type ExternalRoutingSource interface {
	ExternalRouting() gateway.ExternalRoutingFigures
}

// ExternalRoutingCollector exports what a gateway's external routing hook
// did: its latency, its answers and cache hits, and its failures by kind.
// Create it with NewExternalRoutingCollector.
type ExternalRoutingCollector struct {
	src                              ExternalRoutingSource
	latency, answers, hits, failures *prometheus.Desc
}

// NewExternalRoutingCollector returns a collector that reads src at every
// scrape.
func NewExternalRoutingCollector(src ExternalRoutingSource) *ExternalRoutingCollector {
	return &ExternalRoutingCollector{
		src: src,
		latency: prometheus.NewDesc("zkpresto_gateway_external_routing_duration_seconds",
			"How long the external routing hook took to answer or fail, cache hits left out.", nil, nil),
		answers: prometheus.NewDesc("zkpresto_gateway_external_routing_answers_total",
			"Answers of the external routing hook the gateway used, cache hits included, by answer (group, refuse, none).", []string{"answer"}, nil),
		hits: prometheus.NewDesc("zkpresto_gateway_external_routing_cache_hits_total",
			"Answers of the external routing hook taken from its cache.", nil, nil),
		failures: prometheus.NewDesc("zkpresto_gateway_external_routing_failures_total",
			"Times the external routing hook failed and the selectors decided, by kind (timeout, error, bad_answer, unknown_group).", []string{"kind"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *ExternalRoutingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.latency
	ch <- c.answers
	ch <- c.hits
	ch <- c.failures
}

// Collect implements prometheus.Collector. Every answer and failure kind
// is exported from the start, at 0 until it happens.
func (c *ExternalRoutingCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.src.ExternalRouting()
	buckets := make(map[float64]uint64, len(gateway.ExternalRoutingBounds))
	for i, bound := range gateway.ExternalRoutingBounds {
		if i < len(f.Latency.Buckets) {
			buckets[bound] = f.Latency.Buckets[i]
		}
	}
	ch <- prometheus.MustNewConstHistogram(c.latency, f.Latency.Count, f.Latency.Sum, buckets)
	for _, a := range []string{"group", "refuse", "none"} {
		ch <- prometheus.MustNewConstMetric(c.answers, prometheus.CounterValue, float64(f.Answers[a]), a)
	}
	ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(f.CacheHits))
	kinds := []string{gateway.HookTimeout, gateway.HookError, gateway.HookBadAnswer, gateway.HookUnknownGroup}
	for k := range f.Failures {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	for _, k := range kinds {
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(f.Failures[k]), k)
	}
}
