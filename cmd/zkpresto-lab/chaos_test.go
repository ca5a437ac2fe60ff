package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/chaos"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

func TestChaosQuickReportsNoDuplicates(t *testing.T) {
	zkserver.Require(t)
	out, errOut, err := run([]string{"chaos", "--quick", "--clients", "2", "--statements", "60", "--seed", "3", "--json"}, "")
	if err != nil {
		t.Fatalf("chaos: %v\n%s", err, errOut)
	}
	var rep chaos.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("the JSON report does not parse: %v\n%s", err, out)
	}
	if rep.Options.Clients != 2 || rep.Options.Statements != 60 || rep.Options.Seed != 3 {
		t.Errorf("flags not applied: %+v", rep.Options)
	}
	if rep.Run != 120 || rep.Duplicates != 0 {
		t.Errorf("%d statements run, %d duplicates; want 120 and 0", rep.Run, rep.Duplicates)
	}
	if rep.Faults.Crashes == 0 || rep.Faults.LeaderKills == 0 {
		t.Errorf("faults %+v", rep.Faults)
	}
	if !strings.Contains(errOut, "kill-zk-leader") {
		t.Errorf("no fault lines on stderr:\n%s", errOut)
	}
}

func TestChaosPlanIsReproducible(t *testing.T) {
	plan := func(args ...string) string {
		out, _, err := run(append([]string{"chaos", "--plan"}, args...), "")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := plan("--seed", "5")
	if !strings.HasPrefix(first, "zkpresto-lab chaos --seed 5 --plan\n") {
		t.Errorf("the plan does not start with its command:\n%s", first)
	}
	if first != plan("--seed", "5") {
		t.Error("the same seed printed two schedules")
	}
	if first == plan("--seed", "6") {
		t.Error("seeds 5 and 6 printed the same schedule")
	}
	if strings.Count(first, "kill-zk-leader") != 3 {
		t.Errorf("want 3 leader kills in the default 60 s run:\n%s", first)
	}
}

func TestChaosRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"chaos", "--coordinators", "2", "--max-unavailable", "2"}, "so that one serves"},
		{[]string{"chaos", "--clients", "-1"}, "must not be negative"},
	} {
		if _, _, err := run(tc.args, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
