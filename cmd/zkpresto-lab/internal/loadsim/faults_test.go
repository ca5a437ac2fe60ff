package loadsim_test

import (
	"context"
	"testing"

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/loadsim"
)

// faultRequests is how many statements each case of the fault tests sends:
// a fraction of the suite's, for a test that stays short under the race
// detector.
const faultRequests = 60_000

// suiteRows runs the 50-client cases of the suite whose scenario is one of
// variations: shared_p2c on the shipped settings, and the local-only
// strategies when local (in the first variation only: they read no
// figures, so a variation of the publishing does not change them). It
// returns the rows by scenario, capacities and strategy.
func suiteRows(t *testing.T, local bool, variations ...string) map[[3]string]loadsim.Row {
	t.Helper()
	cases, err := loadsim.Suite(loadsim.SuiteOptions{Requests: faultRequests, Seed: 1, Clients: 50})
	if err != nil {
		t.Fatal(err)
	}
	var kept []loadsim.Case
	for _, c := range cases {
		for k, v := range variations {
			if c.Variation == v && (c.Strategy == loadsim.Shared && c.Defaults || c.Strategy != loadsim.Shared && local && k == 0) {
				kept = append(kept, c)
			}
		}
	}
	if len(kept) == 0 {
		t.Fatalf("no case of the suite is any of %q", variations)
	}
	rows, err := loadsim.RunSuite(context.Background(), kept, nil)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[[3]string]loadsim.Row{}
	for _, r := range rows {
		byKey[[3]string{r.Scenario, r.Capacities, r.Strategy}] = r
	}
	return byKey
}

const twelveEqual = "1:1:1:1:1:1:1:1:1:1:1:1"

// A registrar that publishes load=0 for ever (a stuck one) once drew every
// client's statements to its coordinator, whose queue then grew without
// bound (p99 1,908 times the central queue's among twelve): shared_p2c
// distrusts a figure below this client's own statements there, and
// compares a pair with the liar as p2c does (the big coordinator of 1:1:4
// lying once took 2.5 times the central queue's p99). And a big
// coordinator that stops publishing but keeps serving once sent nearly
// every pair back to local counts after 15 s (2.53 times the central
// queue's p99): it is now estimated alone, from this client's statements
// there. 50 clients at 90% load, the shipped settings.
func TestSharedP2CWithstandsALiarAndASilentCoordinator(t *testing.T) {
	rows := suiteRows(t, false, "liar", "silent")
	for _, c := range []struct {
		scenario, capacities string
		p99                  float64
	}{
		{"liar", twelveEqual, 1.2},
		// The big one lying: near p2c's 1.33×, not 2.5× on counts alone.
		{"liar", "1:1:4", 1.4},
		{"silent", "1:1:4", 1.2},
	} {
		r, ok := rows[[3]string{c.scenario, c.capacities, loadsim.Shared}]
		if !ok {
			t.Fatalf("no row for %s on %s", c.scenario, c.capacities)
		}
		t.Logf("%s on %s: shared_p2c p99 %.3f× the central queue's, mean %.3f×", c.scenario, c.capacities, r.P99OverIdeal, r.MeanOverIdeal)
		if r.P99OverIdeal > c.p99 {
			t.Errorf("%s on %s: shared_p2c p99 %.3f× the central queue's, want at most %.2f×", c.scenario, c.capacities, r.P99OverIdeal, c.p99)
		}
	}
}

// Notifications that arrive late make the published figures worth less:
// shared_p2c weighs a figure by how late figures arrive, measured in the
// node's statements, and leaves a pair whose figures are worth little to
// p2c's comparison, so that at 200 ms, 1 s and 2 s late it is no worse
// than the best strategy on local counts alone (it once was at 1 s: 1.95×
// the central queue's p99 against p2c's 1.31× on 1:1:4; and at 2 s on
// twelve equal, 1.56× against least_active's 1.43×; at 2 s within 5%, the
// noise between p2c and shared_p2c placing as p2c does). 50 clients at 90%
// load, both layouts.
func TestSharedP2CLateNotificationsNoWorseThanLocal(t *testing.T) {
	rows := suiteRows(t, true, "delay 1s", "delay 200ms", "delay 2s")
	for _, scenario := range []string{"delay 200ms", "delay 1s", "delay 2s"} {
		for _, capacities := range []string{"1:1:4", twelveEqual} {
			shared, ok := rows[[3]string{scenario, capacities, loadsim.Shared}]
			if !ok {
				t.Fatalf("no shared_p2c row for %s on %s", scenario, capacities)
			}
			best, bestName := 0.0, ""
			for _, name := range loadsim.LocalOnly {
				if r := rows[[3]string{"delay 1s", capacities, name}]; bestName == "" || r.P99OverIdeal < best {
					best, bestName = r.P99OverIdeal, name
				}
			}
			t.Logf("%s on %s: shared_p2c p99 %.3f×, best local-only %s %.3f×", scenario, capacities, shared.P99OverIdeal, bestName, best)
			// At 2 s, on three coordinators, nearly every pair is placed as
			// p2c places it: the two differ by their random draws alone.
			tolerance := 1.0
			if scenario == "delay 2s" {
				tolerance = 1.05
			}
			if shared.P99OverIdeal > best*tolerance {
				t.Errorf("%s on %s: shared_p2c p99 %.3f× the central queue's, worse than %s's %.3f×", scenario, capacities, shared.P99OverIdeal, bestName, best)
			}
		}
	}
}
