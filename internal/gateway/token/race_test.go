//go:build race

package token

// raceEnabled tells TestAllocs that allocation counts are the race
// detector's, not the package's.
const raceEnabled = true
