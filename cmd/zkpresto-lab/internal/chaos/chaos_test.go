package chaos_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/chaos"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

func TestQuickRunNeverDuplicatesAStatement(t *testing.T) {
	zkserver.Require(t)
	opts := chaos.Quick()
	// Every statement runs, however busy the machine: the counts below
	// are the test's, not the clock's.
	opts.FinishAll = true
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := chaos.Run(ctx, opts, &progress)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, progress.String())
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("faults:\n%s\nreport:\n%s", progress.String(), text.String())

	if rep.Duplicates != 0 {
		t.Errorf("%d statements reached a coordinator twice: %v", rep.Duplicates, rep.DuplicateTexts)
	}
	if rep.NoCoordinatorWhileServing != 0 {
		t.Errorf("%d statements found no coordinator while one was serving throughout", rep.NoCoordinatorWhileServing)
	}
	// Every client finished its statements, and none waited for its
	// statement timeout.
	if rep.Run != rep.Planned {
		t.Errorf("%d of %d statements run", rep.Run, rep.Planned)
	}
	if n := rep.Outcomes[chaos.Deadline]; n != 0 {
		t.Errorf("%d statements ran into their deadline", n)
	}
	if n := rep.Outcomes[chaos.Other]; n != 0 {
		t.Errorf("%d statements failed otherwise: %v", n, rep.Errors[chaos.Other])
	}
	// The schedule did happen, and the driver failed over because of it.
	f := rep.Faults
	if f.Crashes == 0 || f.Recoveries != f.Crashes || f.StartingPhases == 0 || f.ResetPhases == 0 || f.LeaderKills == 0 {
		t.Errorf("faults %+v", f)
	}
	if len(rep.FaultErrors) != 0 {
		t.Errorf("faults not carried out: %v", rep.FaultErrors)
	}
	if rep.FailedOver == 0 || rep.AfterFailover.N == 0 {
		t.Errorf("no statement failed over (%d failed over, %d of them ok)", rep.FailedOver, rep.AfterFailover.N)
	}
	accepted, reset := 0, 0
	for _, c := range rep.Coordinators {
		accepted += c.Accepted
		reset += c.Reset
	}
	// Statements reached coordinators while they reset: the race of the
	// reset with the end of the write was run.
	if reset == 0 {
		t.Error("no statement was read by a resetting coordinator")
	}
	if ok := rep.Outcomes[chaos.OK]; accepted < ok {
		t.Errorf("coordinators accepted %d statements, but %d succeeded", accepted, ok)
	}
	for _, want := range []string{"reached a coordinator twice: 0", "failover extra", "ZooKeeper leader kills"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
