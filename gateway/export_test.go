package gateway

import "time"

// CheckEveryDispatch makes g follow the former rule, where the gateway
// made the first GET of every submission itself: for the benchmark that
// compares it with dispatchChecks' rule in one run.
func CheckEveryDispatch(g *Gateway) { g.checks.always = true }

// SetAffinityClock makes g's affinity cookies read the time from now.
func SetAffinityClock(g *Gateway, now func() time.Time) { g.affinity.now = now }
