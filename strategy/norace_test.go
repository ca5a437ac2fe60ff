//go:build !race

package strategy

// raceEnabled is true under the race detector, which slows atomic operations
// about a hundredfold; tests that make millions of them scale down.
const raceEnabled = false
