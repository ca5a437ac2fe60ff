package tcpproxy

import "testing"

// StartT starts a proxy to target for a test and closes it at the test's
// end, failing the test if it cannot start or close.
func StartT(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p, err := Start(target)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := p.Close(); err != nil {
			tb.Errorf("closing the proxy: %v", err)
		}
	})
	return p
}
