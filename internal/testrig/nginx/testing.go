package nginx

import (
	"testing"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

// StartT starts nginx for a test in front of upstream, in the test's
// temporary directory, and stops it when the test ends. When nginx is not
// installed the test is skipped, or fails when the CI environment variable
// is set, because CI must run these tests. On failure the error log is
// logged.
func StartT(tb testing.TB, opts Options) *Proxy {
	tb.Helper()
	Require(tb)
	if opts.Dir == "" {
		opts.Dir = tb.TempDir()
	}
	p, err := Start(opts)
	if err != nil {
		tb.Fatalf("start nginx: %v", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("nginx %s error log:\n%s", p.Addr(), lastLines(p.ErrorLog(), 40))
		}
		if err := p.Close(); err != nil {
			tb.Errorf("stop nginx: %v", err)
		}
	})
	return p
}

// Require ends a test that needs nginx when it cannot run here: it skips
// the test, or fails it when the CI environment variable is set.
func Require(tb testing.TB) {
	tb.Helper()
	testutil.RequireTool(tb, "nginx", Available())
}
