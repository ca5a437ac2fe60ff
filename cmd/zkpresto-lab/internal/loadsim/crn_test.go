package loadsim_test

import (
	"reflect"
	"testing"

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/loadsim"
)

// Every strategy gets the same workload (common random numbers): what the
// simulation draws for one setting, here the watched subsets, moves nothing
// in which client sends which statement, so a strategy that ignores the
// setting gives the same latencies with it and without.
func TestWorkloadDoesNotDependOnTheSettings(t *testing.T) {
	s := loadsim.Scenario{Name: "ten", Nodes: twelve(), Load: 0.9, Requests: 20_000, Warmup: 0.05, Seed: 5, Clients: 10}
	all := run(t, s, "least_active")
	s.Watch = 2
	subset := run(t, s, "least_active")
	if !reflect.DeepEqual(all.Served, subset.Served) || all.P99 != subset.P99 || all.Mean != subset.Mean {
		t.Errorf("least_active, which reads no figures: served %v p99 %v mean %v watching every node, %v %v %v watching two",
			all.Served, all.P99, all.Mean, subset.Served, subset.P99, subset.Mean)
	}
}

// With one client and the shipped publishing, shared_p2c's own statements
// are the whole published load, and it makes least_active's picks: on the
// same workload and seed, the same latencies to the nanosecond.
func TestOneClientSharedP2CIsLeastActive(t *testing.T) {
	for _, s := range []loadsim.Scenario{
		{Name: "1:1:4 70%", Nodes: loadsim.DefaultScenarios()[0].Nodes, Load: 0.7},
		{Name: "1:1:4 90%", Nodes: loadsim.DefaultScenarios()[0].Nodes, Load: 0.9},
		{Name: "twelve 90%", Nodes: twelve(), Load: 0.9},
	} {
		s.Requests, s.Warmup, s.Seed, s.Clients = 30_000, 0.05, 1, 1
		least := run(t, s, "least_active")
		s.Publish = loadsim.DefaultPublishing()
		shared := run(t, s, "shared_p2c")
		if !shared.Published {
			t.Fatalf("%s: shared_p2c was given no figures", s.Name)
		}
		if !reflect.DeepEqual(least.Served, shared.Served) || least.P50 != shared.P50 || least.P99 != shared.P99 || least.Mean != shared.Mean {
			t.Errorf("%s: least_active served %v p50 %v p99 %v mean %v; shared_p2c %v %v %v %v", s.Name,
				least.Served, least.P50, least.P99, least.Mean, shared.Served, shared.P50, shared.P99, shared.Mean)
		}
	}
}
