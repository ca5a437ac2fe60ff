package strategy

import "testing"

// Pick is on every connection's path; the built-ins must not allocate.
func TestPickDoesNotAllocate(t *testing.T) {
	nodes := makeNodes(100, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	requests := map[string]*Request{"user": {User: "carol"}, "key": {Key: "k"}, "empty": {}, "nil": nil}
	for _, name := range builtinNames {
		for _, seed := range []uint64{0, 13} {
			s, _ := New(name, Options{Seed: seed})
			p := s.Build(nodes)
			for what, req := range requests {
				allocs := testing.AllocsPerRun(1000, func() {
					if _, err := p.Pick(req); err != nil {
						t.Fatal(err)
					}
				})
				if allocs != 0 {
					t.Errorf("%s (seed %d, %s request): %v allocations per Pick, want 0", name, seed, what, allocs)
				}
			}
		}
	}
	// The incremental weighted round robin too.
	defer func(old int) { maxSmoothCycle = old }(maxSmoothCycle)
	maxSmoothCycle = 1
	p := newWeightedPoll(Options{}).Build(nodes)
	if _, ok := p.(*smoothWeightedPicker); !ok {
		t.Fatalf("picker is %T, want the incremental one", p)
	}
	if allocs := testing.AllocsPerRun(1000, func() { _, _ = p.Pick(nil) }); allocs != 0 {
		t.Errorf("incremental weighted_poll: %v allocations per Pick, want 0", allocs)
	}
}
