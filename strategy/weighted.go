package strategy

import "github.com/zkpresto/zkpresto/discovery"

// weightedStrategy picks with probability proportional to Node.Weight using
// Vose's alias method: O(n) to build, O(1) and one random draw per pick.
// (Expanding a list of sum(weights) entries per pick, as Presto Router does,
// costs O(sum of weights) time and memory on every call.)
type weightedStrategy struct {
	rng *rng
}

func newWeighted(opts Options) Strategy {
	return &weightedStrategy{rng: newRNG(opts.Seed)}
}

func (s *weightedStrategy) Build(nodes []discovery.Node) Picker {
	return newWeightedPicker(nodes, s.rng)
}

// newWeightedPicker returns a picker over nodes with probability
// proportional to weight; p2c draws its candidates with one too.
func newWeightedPicker(nodes []discovery.Node, rng *rng) *weightedPicker {
	p := &weightedPicker{nodes: nodes, rng: rng}
	if len(nodes) > 1 {
		p.keep, p.alias = aliasTable(nodes)
	}
	return p
}

type weightedPicker struct {
	nodes []discovery.Node
	rng   *rng
	// Column i is chosen uniformly; it yields node i with probability keep[i]
	// and node alias[i] otherwise.
	keep  []float64
	alias []int32
}

func (p *weightedPicker) Pick(*Request) (*discovery.Node, error) {
	n := len(p.nodes)
	switch n {
	case 0:
		return nil, ErrNoNodes
	case 1:
		return &p.nodes[0], nil
	}
	return &p.nodes[p.index(p.rng.float64())], nil
}

// index returns the index of the node that r, uniform in [0, 1), draws with
// probability proportional to weight. The picker must have at least two
// nodes.
func (p *weightedPicker) index(r float64) int {
	n := len(p.nodes)
	// One draw serves both choices: its integer part is the column and its
	// fractional part the biased coin.
	u := r * float64(n)
	col := int(u)
	if col >= n { // rounding at the very top of [0, n)
		col = n - 1
	}
	// A select rather than an early return, which the compiler turns into a
	// conditional move: the coin is unpredictable, and a mispredicted branch
	// costs more than loading alias every time.
	k := int(p.alias[col])
	if u-float64(col) < p.keep[col] {
		k = col
	}
	return k
}

// nodeWeight is a node's weight, treating values below 1 as 1 as
// discovery.NewSnapshot does, for nodes built by hand.
func nodeWeight(n *discovery.Node) int {
	return max(n.Weight, 1)
}

// aliasTable builds Vose's alias table for the nodes' weights.
func aliasTable(nodes []discovery.Node) (keep []float64, alias []int32) {
	n := len(nodes)
	var total float64
	for i := range nodes {
		total += float64(nodeWeight(&nodes[i]))
	}
	// scaled[i] is node i's share in units of one column (mean 1).
	scaled := make([]float64, n)
	small := make([]int32, 0, n)
	large := make([]int32, 0, n)
	for i := range nodes {
		scaled[i] = float64(nodeWeight(&nodes[i])) * float64(n) / total
		if scaled[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	keep = make([]float64, n)
	alias = make([]int32, n)
	for len(small) > 0 && len(large) > 0 {
		s := small[len(small)-1]
		small = small[:len(small)-1]
		l := large[len(large)-1]
		keep[s], alias[s] = scaled[s], l
		// The large node gives column s what s lacks.
		scaled[l] = (scaled[l] + scaled[s]) - 1
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// Whatever is left is 1 up to rounding error.
	for _, i := range large {
		keep[i], alias[i] = 1, i
	}
	for _, i := range small {
		keep[i], alias[i] = 1, i
	}
	return keep, alias
}
