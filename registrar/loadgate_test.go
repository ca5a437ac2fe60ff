package registrar

import (
	"testing"
	"time"
)

// However fast the figure moves and however often it is read, writes stay
// within one per MinGap; a figure that does not move is rewritten once per
// Refresh, and a failed read takes it out once.
func TestLoadGateStaysWithinBudget(t *testing.T) {
	g := loadGate{threshold: 2, minGap: 100 * time.Millisecond, refresh: 5 * time.Second}
	start := time.Unix(1_700_000_000, 0)
	now, writes, total := start, 0, 0
	for i := range 100_000 { // 100 s read every millisecond, moving by 3 each time
		now = start.Add(time.Duration(i) * time.Millisecond)
		total += 3
		if g.due(now, total, true) {
			g.written(now, total, true)
			writes++
		}
	}
	span := now.Sub(start)
	if limit := int(span/g.minGap) + 1; writes > limit || writes < limit*9/10 {
		t.Errorf("%d writes in %s with a figure that always moves: want about %d and never more", writes, span, limit)
	}
	// Still: only the refreshes.
	g = loadGate{threshold: 2, minGap: 100 * time.Millisecond, refresh: 5 * time.Second}
	writes = 0
	for i := range 100_000 {
		now = start.Add(time.Duration(i) * time.Millisecond)
		moved := i % 2 // within the threshold
		if g.due(now, 10+moved, true) {
			g.written(now, 10+moved, true)
			writes++
		}
	}
	if want := int(span/g.refresh) + 1; writes != want {
		t.Errorf("%d writes of a still figure in %s, want %d (the first and one per refresh)", writes, span, want)
	}
	// A read fails: one write without the figure, then nothing until it is
	// back; before anything was written, nothing at all.
	if !g.due(now.Add(time.Second), 0, false) {
		t.Error("a failed read does not take the figure out")
	}
	g.written(now.Add(time.Second), 0, false)
	if g.due(now.Add(time.Minute), 0, false) {
		t.Error("a figure already out is written out again")
	}
	if !g.due(now.Add(time.Minute), 10, true) {
		t.Error("a figure back is not written")
	}
	fresh := loadGate{threshold: 2, minGap: time.Millisecond, refresh: time.Second}
	if fresh.due(now, 0, false) {
		t.Error("nothing written yet and nothing to write, yet due")
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
