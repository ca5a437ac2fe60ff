package gateway_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// BenchmarkGatewaySubmissionRule is what each statement costs under the
// submission rule (dispatchChecks: the client makes its own first GET of a
// coordinator the gateway has seen dispatch) against the former one
// (the gateway made every first GET itself), both measured in the same
// moments: each iteration runs the small statement once through a gateway
// of each rule, in turn, over the same coordinator. It reports each rule's
// p50 (<rule>-p50-ns), the new rule's over the old (lazy-x-every), and the
// requests a statement makes of the gateway and of the coordinator under
// each (<rule>-gateway-req/stmt, <rule>-coord-req/stmt). The rule's cost
// is the client's first GET, one more request through the gateway; the
// coordinator serves the same requests under both.
func BenchmarkGatewaySubmissionRule(b *testing.B) {
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	rules := []string{"lazy", "every"}
	bases := make([]string, len(rules))
	hits := make([]int64, len(rules))
	for i, rule := range rules {
		g, _ := staticGateway(b, gateway.Config{}, c.Addr())
		if rule == "every" {
			gateway.CheckEveryDispatch(g)
		}
		bases[i] = serveGateway(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i]++ // one statement at a time: no race
			g.ServeHTTP(w, r)
		})).URL
		if _, err := statementRows(bases[i], smallStatement, nil, nil); err != nil { // warm, and proven
			b.Fatal(err)
		}
	}
	// The coordinator's requests, counted over a few statements (its
	// record of them is bounded, and copied whole to be read).
	const counted = 10
	coordCalls := make([]float64, len(rules))
	for i := range rules {
		calls := len(c.Calls())
		for range counted {
			if _, err := statementRows(bases[i], smallStatement, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
		coordCalls[i] = float64(len(c.Calls())-calls) / counted
	}
	durations := make([][]time.Duration, len(rules))
	from := make([]int64, len(rules))
	copy(from, hits)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		for k := range rules {
			i := (n + k) % len(rules) // the order turns: a drift of the machine falls on both
			start := time.Now()
			if _, err := statementRows(bases[i], smallStatement, nil, nil); err != nil {
				b.Fatal(err)
			}
			durations[i] = append(durations[i], time.Since(start))
		}
		n++
	}
	b.StopTimer()
	if n == 0 {
		return
	}
	p50 := make([]float64, len(rules))
	for i, rule := range rules {
		d := durations[i]
		p50[i] = float64(median(d).Nanoseconds())
		b.ReportMetric(p50[i], rule+"-p50-ns")
		b.ReportMetric(float64(hits[i]-from[i])/float64(n), rule+"-gateway-req/stmt")
		b.ReportMetric(coordCalls[i], rule+"-coord-req/stmt")
	}
	b.ReportMetric(p50[0]/p50[1], "lazy-x-every")
}

// median is the middle of d, which it sorts.
func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
