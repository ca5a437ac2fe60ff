package strategy

import (
	"math/bits"
	"slices"

	"github.com/zkpresto/zkpresto/discovery"
)

// pointsPerNode is how many points each node puts on the hash ring. More
// points spread keys more evenly at the cost of a larger ring to build and
// search.
const pointsPerNode = 160

// userHashStrategy maps Request.Key (or Request.User when Key is empty) to a
// node with a consistent-hash ring. The same key reaches the same node for as
// long as that node is present, in every process (the hash is fixed and
// unseeded), and when a node leaves only the keys it owned move. Requests
// without a key are spread at random.
type userHashStrategy struct {
	rng *rng
}

func newUserHash(opts Options) Strategy {
	return &userHashStrategy{rng: newRNG(opts.Seed)}
}

func (s *userHashStrategy) Build(nodes []discovery.Node) Picker {
	p := &userHashPicker{nodes: nodes, rng: s.rng}
	if len(nodes) == 0 {
		return p
	}
	type point struct {
		hash uint64
		node int32
	}
	points := make([]point, 0, len(nodes)*pointsPerNode)
	for i := range nodes {
		base := hashString(nodes[i].Addr)
		for v := range uint64(pointsPerNode) {
			points = append(points, point{hash: mix64(base + (v+1)*0x9e3779b97f4a7c15), node: int32(i)})
		}
	}
	// Ties between nodes go to the lower address, so removing a node never
	// changes the owner of a point held by another node.
	slices.SortFunc(points, func(a, b point) int {
		if a.hash != b.hash {
			if a.hash < b.hash {
				return -1
			}
			return 1
		}
		return int(a.node - b.node)
	})
	p.hashes = make([]uint64, len(points))
	p.owners = make([]int32, len(points))
	for i, pt := range points {
		p.hashes[i], p.owners[i] = pt.hash, pt.node
	}
	p.indexRing()
	return p
}

type userHashPicker struct {
	nodes []discovery.Node
	rng   *rng
	// The ring: sorted point hashes and the node owning each point.
	hashes []uint64
	owners []int32
	// An index into the ring by the top bits of a hash: the points whose
	// hashes start with b are hashes[starts[b]:starts[b+1]], about one per
	// bucket, so a pick searches a handful of points instead of the ring.
	starts      []uint32
	bucketShift uint
}

// indexRing fills starts with one bucket per point, rounded up to a power of
// two.
func (p *userHashPicker) indexRing() {
	width := 1 // bits of a hash that pick its bucket
	for 1<<width < len(p.hashes) {
		width++
	}
	buckets := 1 << width
	p.bucketShift = uint(64 - width)
	p.starts = make([]uint32, buckets+1)
	i := 0
	for b := range buckets {
		for i < len(p.hashes) && p.hashes[i]>>p.bucketShift < uint64(b) {
			i++
		}
		p.starts[b] = uint32(i)
	}
	p.starts[buckets] = uint32(len(p.hashes))
}

func (p *userHashPicker) Pick(req *Request) (*discovery.Node, error) {
	n := len(p.nodes)
	if n == 0 {
		return nil, ErrNoNodes
	}
	var key string
	if req != nil {
		key = req.Key
		if key == "" {
			key = req.User
		}
	}
	if key == "" {
		if n == 1 {
			return &p.nodes[0], nil
		}
		return &p.nodes[p.rng.intN(n)], nil
	}
	return &p.nodes[p.owners[p.pointAt(hashString(key))]], nil
}

// pointAt returns the index of the first ring point at or after h, wrapping
// past the end of the ring.
func (p *userHashPicker) pointAt(h uint64) int {
	// Every point from starts[b+1] on hashes above h, so the search stays in
	// h's bucket and ends at most at the bucket's end.
	b := h >> p.bucketShift
	lo, hi := int(p.starts[b]), int(p.starts[b+1])
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if p.hashes[mid] < h {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(p.hashes) {
		return 0
	}
	return lo
}

// hashString hashes a key eight bytes at a time, in the manner of xxHash:
// each word is multiplied by an odd constant and folded into a rotating
// state, and a final mix64 spreads every input bit over the output, so that
// keys differing only in their last bytes land far apart on the ring. It is
// fixed and unseeded, so every process places a key at the same point.
func hashString(s string) uint64 {
	const (
		prime1 = 0x9e3779b97f4a7c15
		prime2 = 0xc2b2ae3d27d4eb4f
	)
	h := uint64(len(s)) * prime1
	for len(s) >= 8 {
		word := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = bits.RotateLeft64(h^(word*prime2), 31) * prime1
		s = s[8:]
	}
	if len(s) > 0 {
		var word uint64
		for i := len(s) - 1; i >= 0; i-- {
			word = word<<8 | uint64(s[i])
		}
		h = bits.RotateLeft64(h^(word*prime2), 31) * prime1
	}
	return mix64(h)
}

// mix64 is the 64-bit finaliser from MurmurHash3: a bijection whose every
// output bit depends on every input bit.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb53a185ec863
	h ^= h >> 33
	return h
}
