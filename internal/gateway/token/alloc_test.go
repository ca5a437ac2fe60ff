//go:build !race

// The race detector's instrumentation allocates, so these counts are
// measured without it: make test runs this file in a run of its own.

package token

import "testing"

func TestAllocs(t *testing.T) {
	keys := mustKeys(t, "a:"+hexA+"\nb:"+hexB)
	tok := mustSign(t, keys, coordinator, queryID)
	if n := testing.AllocsPerRun(100, func() { _, _ = keys.Sign(coordinator, queryID) }); n > 1 {
		t.Errorf("Sign: %v allocs; want at most 1 (the token)", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = keys.Verify(tok, queryID) }); n > 1 {
		t.Errorf("Verify: %v allocs; want at most 1 (the coordinator)", n)
	}
	bad := tok[:len(tok)-3] + "AAA"
	if n := testing.AllocsPerRun(100, func() { _, _ = keys.Verify(bad, queryID) }); n > 0 {
		t.Errorf("Verify of a forged token: %v allocs; want 0", n)
	}
}
