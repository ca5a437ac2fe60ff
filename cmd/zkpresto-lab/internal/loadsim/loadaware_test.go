package loadsim_test

import (
	"testing"
)

// TestLoadAwareBeatBlind: the strategy package's load-aware strategies must
// beat the capacity-blind ones on p99 at 90% load: by half or more on
// unequal nodes (where random and poll overload the small ones), and still
// clearly on equal nodes.
func TestLoadAwareBeatBlind(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		atMost   float64 // p99 as a share of random's
	}{
		{"1:1:4 90%", 0.5},
		{"1:1:1 90%", 0.7},
	} {
		s := scenario(t, tc.scenario, 100_000)
		random, poll := run(t, s, "random"), run(t, s, "poll")
		for _, name := range []string{"least_active", "p2c"} {
			res := run(t, s, name)
			ratio := float64(res.P99) / float64(random.P99)
			t.Logf("%s: %s p99 %v = %.3g%% of random's %v (poll %v)", tc.scenario, name, res.P99, 100*ratio, random.P99, poll.P99)
			if ratio > tc.atMost {
				t.Errorf("%s: %s p99 %v is %.3g%% of random's %v, want at most %.0f%%", tc.scenario, name, res.P99, 100*ratio, random.P99, 100*tc.atMost)
			}
			if res.P99 >= poll.P99 {
				t.Errorf("%s: %s p99 %v, poll %v; want lower", tc.scenario, name, res.P99, poll.P99)
			}
			if res.Overloaded() {
				t.Errorf("%s: %s overloaded a node: %v", tc.scenario, name, res.Offered)
			}
		}
	}
}
