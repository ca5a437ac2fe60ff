package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/metrics"
)

type gatewayFigures struct {
	requests  []gateway.RequestCount
	latencies []gateway.RequestLatency
	cuts      uint64
	affinity  []gateway.AffinityCount
}

func (g gatewayFigures) Requests() []gateway.RequestCount           { return g.requests }
func (g gatewayFigures) RequestLatencies() []gateway.RequestLatency { return g.latencies }
func (g gatewayFigures) DrainCuts() uint64                          { return g.cuts }
func (g gatewayFigures) AffinityCookies() []gateway.AffinityCount   { return g.affinity }

func TestGatewayCollectorFollowsPrometheusConventions(t *testing.T) {
	buckets := make([]uint64, len(gateway.LatencyBounds))
	for i := range buckets {
		buckets[i] = 2 // both requests within the first bound
	}
	src := gatewayFigures{
		requests:  []gateway.RequestCount{{Kind: "submit", Status: 200, Count: 7}, {Kind: "submit", Status: 503, Count: 2}},
		latencies: []gateway.RequestLatency{{Kind: "submit", Count: 2, Sum: 0.004, Buckets: buckets}},
		cuts:      3,
		affinity:  []gateway.AffinityCount{{Outcome: "set", Count: 5}, {Outcome: "invalid", Count: 1}},
	}
	reg := prometheus.NewPedanticRegistry() // checks the descriptions and the metrics' consistency
	reg.MustRegister(metrics.NewGatewayCollector(src))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, f := range families {
		got[f.GetName()+" "+f.GetType().String()] = len(f.GetMetric())
		for _, m := range f.GetMetric() {
			if h := m.GetHistogram(); h != nil && (h.GetSampleCount() != 2 || len(h.GetBucket()) != len(gateway.LatencyBounds)) {
				t.Errorf("histogram %v", h)
			}
			if c := m.GetCounter(); c != nil && f.GetName() == "zkpresto_gateway_requests_total" && len(m.GetLabel()) != 2 {
				t.Errorf("counter labels %v", m.GetLabel())
			}
			if f.GetName() == "zkpresto_gateway_drain_cut_requests_total" && m.GetCounter().GetValue() != 3 {
				t.Errorf("drain cuts %v, want 3", m.GetCounter())
			}
			if f.GetName() == "zkpresto_gateway_affinity_cookies_total" && (len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "outcome") {
				t.Errorf("affinity cookie labels %v", m.GetLabel())
			}
		}
	}
	want := map[string]int{"zkpresto_gateway_requests_total COUNTER": 2, "zkpresto_gateway_request_duration_seconds HISTOGRAM": 1,
		"zkpresto_gateway_drain_cut_requests_total COUNTER": 1, "zkpresto_gateway_affinity_cookies_total COUNTER": 2}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d series, want %d (all: %v)", k, got[k], n, got)
		}
	}
}
