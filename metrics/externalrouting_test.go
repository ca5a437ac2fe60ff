package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/metrics"
)

type hookFigures gateway.ExternalRoutingFigures

func (h hookFigures) ExternalRouting() gateway.ExternalRoutingFigures {
	return gateway.ExternalRoutingFigures(h)
}

func TestExternalRoutingCollectorFollowsPrometheusConventions(t *testing.T) {
	buckets := make([]uint64, len(gateway.ExternalRoutingBounds))
	for i := 3; i < len(buckets); i++ {
		buckets[i] = 3
	}
	src := hookFigures{
		Latency:   gateway.RequestLatency{Kind: "external_routing", Count: 3, Sum: 0.02, Buckets: buckets},
		Answers:   map[string]uint64{"group": 4, "none": 1},
		CacheHits: 3,
		Failures:  map[string]uint64{gateway.HookTimeout: 2},
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewExternalRoutingCollector(src))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				name += " " + l.GetValue()
			}
			switch {
			case m.GetHistogram() != nil:
				got[name] = float64(m.GetHistogram().GetSampleCount())
			default:
				got[name] = m.GetCounter().GetValue()
			}
		}
	}
	want := map[string]float64{
		"zkpresto_gateway_external_routing_duration_seconds":             3,
		"zkpresto_gateway_external_routing_answers_total group":          4,
		"zkpresto_gateway_external_routing_answers_total refuse":         0,
		"zkpresto_gateway_external_routing_answers_total none":           1,
		"zkpresto_gateway_external_routing_cache_hits_total":             3,
		"zkpresto_gateway_external_routing_failures_total timeout":       2,
		"zkpresto_gateway_external_routing_failures_total error":         0,
		"zkpresto_gateway_external_routing_failures_total bad_answer":    0,
		"zkpresto_gateway_external_routing_failures_total unknown_group": 0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: %v (%v), want %v", k, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
}
