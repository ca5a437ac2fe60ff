package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkpresto/zkpresto/gateway"
)

// GatewaySource is what a GatewayCollector reads: a *gateway.Gateway.
type GatewaySource interface {
	Requests() []gateway.RequestCount
	RequestLatencies() []gateway.RequestLatency
	DrainCuts() uint64
	AffinityCookies() []gateway.AffinityCount
}

// GatewayCollector exports a gateway's request counts by kind and status,
// its latencies by kind and its affinity cookies by outcome. Create it with NewGatewayCollector.
type GatewayCollector struct {
	src                              GatewaySource
	requests, latency, cut, affinity *prometheus.Desc
}

// NewGatewayCollector returns a collector that reads src at every scrape.
func NewGatewayCollector(src GatewaySource) *GatewayCollector {
	return &GatewayCollector{
		src: src,
		requests: prometheus.NewDesc("zkpresto_gateway_requests_total",
			"Requests the gateway answered, by kind (submit, followup, query, info, oauth2, other) and HTTP status.", []string{"kind", "status"}, nil),
		latency: prometheus.NewDesc("zkpresto_gateway_request_duration_seconds",
			"How long the gateway took to serve a request, until its answer was relayed whole, by kind.", []string{"kind"}, nil),
		cut: prometheus.NewDesc("zkpresto_gateway_drain_cut_requests_total",
			"Requests in flight that a drain cut because --drain-timeout passed.", nil, nil),
		affinity: prometheus.NewDesc("zkpresto_gateway_affinity_cookies_total",
			"Affinity cookies by outcome: set (handed out), followed, and those set aside: invalid (forged, malformed, of another purpose or key), expired, other group, unusable (coordinator not listed, ready or usable). Absent unless --affinity-cookie is set.", []string{"outcome"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *GatewayCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.latency
	ch <- c.cut
	ch <- c.affinity
}

// Collect implements prometheus.Collector.
func (c *GatewayCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.src.Requests() {
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(r.Count), r.Kind, strconv.Itoa(r.Status))
	}
	for _, h := range c.src.RequestLatencies() {
		buckets := make(map[float64]uint64, len(h.Buckets))
		for i, n := range h.Buckets {
			buckets[gateway.LatencyBounds[i]] = n
		}
		ch <- prometheus.MustNewConstHistogram(c.latency, h.Count, h.Sum, buckets, h.Kind)
	}
	ch <- prometheus.MustNewConstMetric(c.cut, prometheus.CounterValue, float64(c.src.DrainCuts()))
	for _, a := range c.src.AffinityCookies() {
		ch <- prometheus.MustNewConstMetric(c.affinity, prometheus.CounterValue, float64(a.Count), a.Outcome)
	}
}
