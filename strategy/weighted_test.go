package strategy

import (
	"math"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
)

const fitPicks = 100_000

// countPicks returns how often each node is picked in k picks.
func countPicks(t *testing.T, p Picker, nodes []discovery.Node, req *Request, k int) []int {
	t.Helper()
	counts := make([]int, len(nodes))
	for range k {
		counts[indexOf(t, nodes, mustPick(t, p, req))]++
	}
	return counts
}

func ones(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

func floats(xs ...int) []float64 {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return f
}

func TestRandomUniform(t *testing.T) {
	for _, seed := range []uint64{1, 42} {
		nodes := makeNodes(10, 9, 1, 5) // weights must not matter
		p := newRandom(Options{Seed: seed}).Build(nodes)
		checkFit(t, countPicks(t, p, nodes, nil, fitPicks), ones(10))
	}
}

func TestWeightedProportional(t *testing.T) {
	for _, seed := range []uint64{1, 42} {
		s := newWeighted(Options{Seed: seed})
		nodes := makeNodes(3, 1, 3, 9)
		checkFit(t, countPicks(t, s.Build(nodes), nodes, nil, fitPicks), floats(1, 3, 9))

		// A rebuild with other weights and another node count.
		nodes = makeNodes(4, 8, 1, 2, 5)
		checkFit(t, countPicks(t, s.Build(nodes), nodes, nil, fitPicks), floats(8, 1, 2, 5))
	}
}

// The fit check must be able to fail: weighted picks do not look uniform.
func TestChiSquareDetectsWrongProportions(t *testing.T) {
	nodes := makeNodes(3, 1, 3, 9)
	counts := countPicks(t, newWeighted(Options{Seed: 1}).Build(nodes), nodes, nil, fitPicks)
	if stat := chiSquare(counts, ones(3)); stat <= chiSquareCritical001[2] {
		t.Errorf("counts %v pass as uniform (chi-square %.2f)", counts, stat)
	}
}

// The alias table gives each node exactly its share of probability.
func TestAliasTableExact(t *testing.T) {
	weightSets := [][]int{{1, 3, 9}, {1, 1}, {5, 1, 1, 1, 1, 1, 1, 1}, {1000, 1, 7, 300, 2}, {1, 0, -4, 2}}
	for _, weights := range weightSets {
		nodes := makeNodes(len(weights), weights...)
		for i := range nodes {
			nodes[i].Weight = weights[i] // keep weights below 1, which count as 1
		}
		keep, alias := aliasTable(nodes)
		share := make([]float64, len(nodes))
		for col := range nodes {
			share[col] += keep[col]
			share[alias[col]] += 1 - keep[col]
		}
		var total float64
		for i := range nodes {
			total += float64(nodeWeight(&nodes[i]))
		}
		for i := range nodes {
			want := float64(nodeWeight(&nodes[i])) / total
			if got := share[i] / float64(len(nodes)); math.Abs(got-want) > 1e-12 {
				t.Errorf("weights %v: node %d has probability %v, want %v", weights, i, got, want)
			}
		}
	}
}
