package driver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// TestPingAsksACoordinator checks that db.PingContext succeeds only when a
// coordinator answers GET /v1/info ready, failing over from one that is
// starting or gone, and not merely because discovery lists coordinators.
func TestPingAsksACoordinator(t *testing.T) {
	cs, err := coordinator.StartFleet(2, coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	starting, gone := cs[0], cs[1]
	starting.SetStarting(true)
	if err := gone.Stop(); err != nil {
		t.Fatal(err)
	}
	db := openPerStatement(t, "presto://"+starting.Addr()+","+gone.Addr()+";dialTimeout=1s?user=alice")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = db.PingContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "starting") {
		t.Fatalf("ping with one coordinator starting and one gone: %v, want a failure naming both", err)
	}
	starting.SetStarting(false)
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("ping with a ready coordinator: %v", err)
	}
}
