package zkserver

import (
	"testing"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

// StartT starts a standalone server for a test and closes it when the test
// ends. When ZooKeeper is not installed the test is skipped, or fails when
// the CI environment variable is set (see Require). On failure the end of
// the server log is logged.
func StartT(tb testing.TB) *Server {
	tb.Helper()
	Require(tb)
	s, err := Start(Options{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatalf("start ZooKeeper: %v", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("ZooKeeper %s log tail:\n%s", s.Addr(), s.LogTail(errorTailLines))
		}
		if err := s.Close(); err != nil {
			tb.Errorf("close ZooKeeper: %v", err)
		}
	})
	return s
}

// StartEnsembleT starts an n-server ensemble for a test and closes it when
// the test ends; missing ZooKeeper is handled as in StartT.
func StartEnsembleT(tb testing.TB, n int) *Ensemble {
	tb.Helper()
	Require(tb)
	e, err := StartEnsemble(n, Options{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatalf("start ZooKeeper ensemble: %v", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			for i, s := range e.Servers {
				tb.Logf("ZooKeeper server %d (%s) log tail:\n%s", i, s.Addr(), s.LogTail(errorTailLines))
			}
		}
		if err := e.Close(); err != nil {
			tb.Errorf("close ZooKeeper ensemble: %v", err)
		}
	})
	return e
}

// Require ends a test that needs ZooKeeper when it cannot run here: it
// skips the test, or fails it when the CI environment variable is set, so
// that a CI job that must run the test cannot pass by skipping it. The
// message says what is missing and how to install it. A test that must fail
// wherever ZooKeeper is missing uses zkprestotest.NewCluster, or Start.
func Require(tb testing.TB) {
	tb.Helper()
	testutil.RequireTool(tb, "ZooKeeper", Available())
}
