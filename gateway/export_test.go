package gateway

import (
	"net/http"
	"time"
)

// CheckEveryDispatch makes g follow the former rule, where the gateway
// made the first GET of every submission itself: for the benchmark that
// compares it with dispatchChecks' rule in one run.
func CheckEveryDispatch(g *Gateway) { g.checks.always = true }

// SetClock makes g read the time from now, for the expiry of its OAuth2
// routing cookies.
func SetClock(g *Gateway, now func() time.Time) { g.now = now }

// RewriteChallenge is g.rewriteChallenge.
func RewriteChallenge(g *Gateway, h http.Header, public, base string) {
	g.rewriteChallenge(h, public, base)
}

// SetAffinityClock makes g's affinity cookies read the time from now.
func SetAffinityClock(g *Gateway, now func() time.Time) { g.affinity.now = now }
