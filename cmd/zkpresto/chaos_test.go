package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/chaos"
)

func TestChaosQuickReportsNoDuplicates(t *testing.T) {
	requireZooKeeper(t)
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetArgs([]string{"chaos", "--quick", "--clients", "2", "--statements", "60", "--seed", "3", "--json"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("chaos: %v\n%s", err, errOut.String())
	}
	var rep chaos.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("the JSON report does not parse: %v\n%s", err, out.String())
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
	if !strings.Contains(errOut.String(), "kill-zk-leader") {
		t.Errorf("no fault lines on stderr:\n%s", errOut.String())
	}
}

func TestChaosPlanIsReproducible(t *testing.T) {
	plan := func(args ...string) string {
		cmd := newRootCommand()
		var out bytes.Buffer
		cmd.SetArgs(append([]string{"chaos", "--plan"}, args...))
		cmd.SetOut(&out)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	first := plan("--seed", "5")
	if !strings.HasPrefix(first, "zkpresto chaos --seed 5 --plan\n") {
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
		cmd := newRootCommand()
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
