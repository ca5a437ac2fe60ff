//go:build !race

package token

// raceEnabled tells TestAllocs that allocation counts are the package's.
const raceEnabled = false
