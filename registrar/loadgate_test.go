package registrar

import (
	"testing"
	"time"
)

// However fast the figure moves and however often it is read, writes stay
// within one per MinGap; a figure that does not move is rewritten once per
// Refresh, and a failed read takes it out once.
func TestLoadGateStaysWithinBudget(t *testing.T) {
	g := LoadGate{Threshold: 2, MinGap: 100 * time.Millisecond, Refresh: 5 * time.Second}
	start := time.Unix(1_700_000_000, 0)
	now, writes, total := start, 0, 0
	for i := range 100_000 { // 100 s read every millisecond, moving by 3 each time
		now = start.Add(time.Duration(i) * time.Millisecond)
		total += 3
		if g.Due(now, total, 0, true) {
			g.Written(now, total, 0, true)
			writes++
		}
	}
	span := now.Sub(start)
	if limit := int(span/g.MinGap) + 1; writes > limit || writes < limit*9/10 {
		t.Errorf("%d writes in %s with a figure that always moves: want about %d and never more", writes, span, limit)
	}
	// Still: only the refreshes.
	g = LoadGate{Threshold: 2, MinGap: 100 * time.Millisecond, Refresh: 5 * time.Second}
	writes = 0
	for i := range 100_000 {
		now = start.Add(time.Duration(i) * time.Millisecond)
		moved := i % 2 // within the threshold
		if g.Due(now, 10+moved, 0, true) {
			g.Written(now, 10+moved, 0, true)
			writes++
		}
	}
	if want := int(span/g.Refresh) + 1; writes != want {
		t.Errorf("%d writes of a still figure in %s, want %d (the first and one per refresh)", writes, span, want)
	}
	// A read fails: one write without the figure, then nothing until it is
	// back; before anything was written, nothing at all.
	if !g.Due(now.Add(time.Second), 0, 0, false) {
		t.Error("a failed read does not take the figure out")
	}
	g.Written(now.Add(time.Second), 0, 0, false)
	if g.Due(now.Add(time.Minute), 0, 0, false) {
		t.Error("a figure already out is written out again")
	}
	if !g.Due(now.Add(time.Minute), 10, 0, true) {
		t.Error("a figure back is not written")
	}
	fresh := LoadGate{Threshold: 2, MinGap: time.Millisecond, Refresh: time.Second}
	if fresh.Due(now, 0, 0, false) {
		t.Error("nothing written yet and nothing to write, yet due")
	}
}

// A burst lets writes come closer than MinGap after a quiet spell, yet over
// any long span they stay within one per MinGap (plus the burst), and a
// burst spent is not there again until the bucket refills.
func TestLoadGateBurstKeepsTheBudget(t *testing.T) {
	g := LoadGate{Threshold: 1, MinGap: 100 * time.Millisecond, Refresh: 5 * time.Second, Burst: 3, Slots: 4}
	start := time.Unix(1_700_000_000, 0)
	writes := 0
	for i := range 100_000 { // the figure moves every millisecond for 100 s
		now := start.Add(time.Duration(i) * time.Millisecond)
		if g.Due(now, i%8, 0, true) {
			g.Written(now, i%8, 0, true)
			writes++
		}
	}
	if limit := 1000 + g.Burst; writes > limit || writes < 990 {
		t.Errorf("%d writes in 100 s at one per 100ms with bursts of %d: want about 1000, at most %d", writes, g.Burst, limit)
	}
	// Quiet, then three writes at once, then none until 100ms later.
	now := start.Add(time.Hour)
	for k := range 3 {
		if !g.Due(now, k*2, 0, true) {
			t.Fatalf("write %d of a burst after a quiet hour is not due", k+1)
		}
		g.Written(now, k*2, 0, true)
	}
	if g.Due(now.Add(99*time.Millisecond), 9, 0, true) {
		t.Error("a fourth write within the burst's 100ms")
	}
	if !g.Due(now.Add(100*time.Millisecond), 9, 0, true) {
		t.Error("no write 100ms after the burst")
	}
}

// With Slots known, the crossing between "has a free slot" and "full" is
// written at once (within the budget) even when the total moved by less
// than the threshold, and only the crossing: moving within "full" by one is
// not written.
func TestLoadGateWritesTheFreeFullCrossing(t *testing.T) {
	g := LoadGate{Threshold: 2, MinGap: 100 * time.Millisecond, Refresh: 5 * time.Second, Slots: 4}
	now := time.Unix(1_700_000_000, 0)
	g.Written(now, 3, 0, true) // one slot free
	now = now.Add(50 * time.Millisecond)
	if g.Due(now, 4, 0, true) {
		t.Error("the crossing is written within the minimum gap")
	}
	now = now.Add(50 * time.Millisecond)
	if !g.Due(now, 4, 0, true) {
		t.Error("3 running of 4 → 4 running (full), a move by 1: not written")
	}
	g.Written(now, 4, 0, true)
	now = now.Add(time.Second)
	if g.Due(now, 4, 1, true) {
		t.Error("full → still full, a move by 1: written")
	}
	if !g.Due(now, 3, 0, true) {
		t.Error("full → a slot free, a move by 1: not written")
	}
	// Without Slots, the same move by one is not worth a write.
	blind := LoadGate{Threshold: 2, MinGap: 100 * time.Millisecond, Refresh: 5 * time.Second}
	blind.Written(now, 4, 0, true)
	if blind.Due(now.Add(time.Second), 3, 0, true) {
		t.Error("without slots, a move by 1 is written")
	}
}

// The two sources' answers, as the servers write them, and what is refused.
func TestParseLoadAnswers(t *testing.T) {
	// PrestoDB's ClusterStatsResource.ClusterStats.
	r, q, err := parsePrestoCluster([]byte(`{"runningQueries":7,"blockedQueries":1,"queuedQueries":3,"activeWorkers":4,"runningDrivers":90,"reservedMemory":0.0,"totalInputRows":5,"totalInputBytes":6,"totalCpuTimeSecs":7}`))
	if err != nil || r != 7 || q != 3 {
		t.Errorf("presto: %d running, %d queued, %v", r, q, err)
	}
	// airlift's MBeanResource for trino.execution:name=QueryManager.
	r, q, err = parseTrinoQueryManager([]byte(`{"objectName":"trino.execution:name=QueryManager","className":"io.trino.execution.SqlQueryManager","attributes":[
		{"name":"RunningQueries","type":"long","readable":true,"writable":false,"value":12},
		{"name":"QueuedQueries","type":"long","readable":true,"writable":false,"value":4},
		{"name":"ExecutionTime.AllTime.P50","type":"double","value":"NaN"}],"operations":[]}`))
	if err != nil || r != 12 || q != 4 {
		t.Errorf("trino: %d running, %d queued, %v", r, q, err)
	}
	for _, bad := range []string{`{}`, `{"runningQueries":1}`, `{"runningQueries":-1,"queuedQueries":0}`, `{"runningQueries":1e12,"queuedQueries":0}`, `[`, `{"runningQueries":"1","queuedQueries":0}`} {
		if _, _, err := parsePrestoCluster([]byte(bad)); err == nil {
			t.Errorf("presto %s: accepted", bad)
		}
	}
	for _, bad := range []string{`{}`, `{"attributes":[{"name":"RunningQueries","value":1}]}`, `{"attributes":[{"name":"RunningQueries","value":"x"},{"name":"QueuedQueries","value":1}]}`, `{"attributes":[{"name":"RunningQueries","value":-4},{"name":"QueuedQueries","value":1}]}`} {
		if _, _, err := parseTrinoQueryManager([]byte(bad)); err == nil {
			t.Errorf("trino %s: accepted", bad)
		}
	}
}
