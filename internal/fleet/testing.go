package fleet

import (
	"os"
	"testing"

	"github.com/zkpresto/zkpresto/internal/zkserver"
)

// StartT starts a fleet for a test and closes it at the test's end. Without
// ZooKeeper on the machine the test fails under CI and is skipped elsewhere.
func StartT(tb testing.TB, opts Options) *Fleet {
	tb.Helper()
	if opts.Ensemble == "" {
		if err := zkserver.Available(); err != nil {
			if os.Getenv("CI") != "" {
				tb.Fatalf("ZooKeeper is required under CI: %v", err)
			}
			tb.Skipf("ZooKeeper not installed: %v", err)
		}
	}
	f, err := Start(opts)
	if err != nil {
		tb.Fatalf("starting the fleet: %v", err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}
