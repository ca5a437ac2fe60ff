package chaos

import (
	"slices"
	"testing"
	"time"
)

func TestPlanIsReproducibleAndKeepsCoordinatorsServing(t *testing.T) {
	opts := DefaultOptions()
	first := Plan(opts)
	if !slices.Equal(first, Plan(opts)) {
		t.Fatal("the same options gave two schedules")
	}
	opts.Seed = 2
	if slices.Equal(first, Plan(opts)) {
		t.Fatal("seeds 1 and 2 gave the same schedule")
	}
	for _, seed := range []uint64{1, 2, 3, 42} {
		opts.Seed = seed
		events := Plan(opts)
		counts := map[Action]int{}
		unavailable := map[int]bool{}
		for i, e := range events {
			if i > 0 && e.At < events[i-1].At {
				t.Fatalf("seed %d: event %d (%v) before event %d (%v)", seed, i, e, i-1, events[i-1])
			}
			counts[e.Action]++
			switch e.Action {
			case Crash, StartingOn, ResetOn:
				if unavailable[e.Coordinator] {
					t.Fatalf("seed %d: %v hits a coordinator that is already unavailable", seed, e)
				}
				unavailable[e.Coordinator] = true
				if len(unavailable) > opts.MaxUnavailable {
					t.Fatalf("seed %d: %d coordinators unavailable at %v", seed, len(unavailable), e.At)
				}
				if e.At >= opts.Duration {
					t.Fatalf("seed %d: fault %v after the run", seed, e)
				}
			case Recover, StartingOff, ResetOff:
				if !unavailable[e.Coordinator] {
					t.Fatalf("seed %d: %v ends a fault that is not on", seed, e)
				}
				delete(unavailable, e.Coordinator)
			}
		}
		if counts[Crash] != counts[Recover] || counts[StartingOn] != counts[StartingOff] || counts[ResetOn] != counts[ResetOff] || counts[KillLeader] != counts[RestartZooKeeper] {
			t.Fatalf("seed %d: unbalanced schedule %v", seed, counts)
		}
		// 60 s: leader kills at 10, 30 and 50 s; crashes every 1.5 s unless two are down.
		if counts[KillLeader] != 3 || counts[Crash] < 10 || counts[StartingOn] == 0 || counts[ResetOn] == 0 || counts[Deregister] == 0 {
			t.Fatalf("seed %d: schedule %v", seed, counts)
		}
	}
}

func TestPlanHonoursDisabledFaults(t *testing.T) {
	opts := DefaultOptions()
	opts.CrashEvery, opts.StartingEvery, opts.ResetEvery = -1, -1, -1
	for _, e := range Plan(opts) {
		if e.Coordinator >= 0 {
			t.Fatalf("coordinator fault %v with crashes, starting and reset phases disabled", e)
		}
	}
	opts = DefaultOptions()
	opts.LeaderKillEvery, opts.DeregisterAfter = -1, -1
	for _, e := range Plan(opts) {
		if e.Action == KillLeader || e.Action == Deregister {
			t.Fatalf("%v although disabled", e)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for name, o := range map[string]Options{
		"all unavailable": {Coordinators: 2, MaxUnavailable: 2},
		"latency range":   {MinLatency: 20 * time.Millisecond, MaxLatency: 10 * time.Millisecond},
		"down range":      {MinDown: 5 * time.Second, MaxDown: time.Second},
		"kills overlap":   {LeaderKillEvery: time.Second, LeaderDownFor: 2 * time.Second},
		"small ensemble":  {ZooKeeperServers: 1},
		"negative":        {Clients: -1},
	} {
		if err := o.withDefaults().validate(); err == nil {
			t.Errorf("%s: %+v passed", name, o)
		}
	}
	if err := DefaultOptions().validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := Quick().validate(); err != nil {
		t.Errorf("quick: %v", err)
	}
}

func TestPercentilesNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := percentiles(ds)
	want := Percentiles{N: 100, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got := percentiles(nil); got != (Percentiles{}) {
		t.Fatalf("empty: %+v", got)
	}
}
