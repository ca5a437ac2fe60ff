package spread

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A pool sends its statements through the driver, reads them to the end
// and reports each one's latency; the same seed sends the same sequence.
func TestRunPool(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{MaxRunning: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var first []float64
	for run := range 2 {
		var out bytes.Buffer
		before := c.Statements()
		err := RunPool(context.Background(), &out, PoolOptions{DSN: "presto://" + c.Addr() + "/?user=spread", Rate: 40, Mean: 5 * time.Millisecond, Duration: 500 * time.Millisecond, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		var r poolReport
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("report %q: %v", out.String(), err)
		}
		sent := int(c.Statements() - before)
		if r.Failed != 0 || len(r.LatenciesMillis) == 0 || len(r.LatenciesMillis) != sent {
			t.Fatalf("run %d: %d latencies, %d failed, the coordinator saw %d statements", run, len(r.LatenciesMillis), r.Failed, sent)
		}
		if run == 0 {
			first = r.LatenciesMillis
		} else if len(r.LatenciesMillis) != len(first) {
			t.Errorf("the same seed sent %d statements, then %d", len(first), len(r.LatenciesMillis))
		}
	}
}

// Settings that cannot make a bounded run are refused before anything
// starts.
func TestRunRefusesBadOptions(t *testing.T) {
	good := Options{Zkpresto: "zkpresto", Self: "lab"}
	for _, tc := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Zkpresto = "" }, "binary"},
		{func(o *Options) { o.Pools, o.Gateways = -1, 0 }, "clients"},
		{func(o *Options) { o.Pools = 200 }, "clients"},
		{func(o *Options) { o.Slots = -1 }, "slots"},
		{func(o *Options) { o.Duration = time.Hour }, "duration"},
		{func(o *Options) { o.Duration, o.Warmup = time.Second, 2*time.Second }, "warm-up"},
		{func(o *Options) { o.Load = 3 }, "load"},
		{func(o *Options) { o.MeanService = time.Microsecond }, "mean service"},
	} {
		o := good
		tc.edit(&o)
		if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", o, err, tc.want)
		}
	}
	if err := RunPool(context.Background(), &bytes.Buffer{}, PoolOptions{DSN: "presto://127.0.0.1:1", Rate: 0, Mean: time.Second, Duration: time.Second}); err == nil {
		t.Error("a pool with rate 0 ran")
	}
}
