package strategy

import (
	"math/rand/v2"
	"sync"
)

// cacheLine is the size of a CPU cache line on the platforms we run on, for
// padding counters that many cores write.
const cacheLine = 64

// rng is the random source of one strategy instance and the pickers it
// builds. A nil *rng uses math/rand/v2's top-level functions, which are
// lock-free and per-thread; a seeded rng serialises a PCG source behind a
// mutex so that a test or simulation sees the same sequence every run.
type rng struct {
	mu     sync.Mutex
	source *rand.Rand
}

// newRNG returns nil (the lock-free global source) for seed 0 and a
// reproducible source otherwise.
func newRNG(seed uint64) *rng {
	if seed == 0 {
		return nil
	}
	// The second PCG word only has to differ from the first; any odd constant
	// keeps streams for nearby seeds apart.
	return &rng{source: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// intN returns a uniform int in [0, n); n must be positive.
func (g *rng) intN(n int) int {
	if g == nil {
		return rand.IntN(n)
	}
	g.mu.Lock()
	v := g.source.IntN(n)
	g.mu.Unlock()
	return v
}

// float64 returns a uniform float64 in [0, 1).
func (g *rng) float64() float64 {
	if g == nil {
		return rand.Float64()
	}
	g.mu.Lock()
	v := g.source.Float64()
	g.mu.Unlock()
	return v
}

// uint64 returns a uniform uint64.
func (g *rng) uint64() uint64 {
	if g == nil {
		return rand.Uint64()
	}
	g.mu.Lock()
	v := g.source.Uint64()
	g.mu.Unlock()
	return v
}
