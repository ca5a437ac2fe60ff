package strategy

import (
	"math/bits"
	"slices"

	"github.com/zkpresto/zkpresto/discovery"
)

// ringPointsPerNode is how many points each node puts on the hash ring. It
// trades balance against build cost: a node's share of the keys varies by
// about 1/sqrt(points) around 1/n (at 100 nodes the busiest node gets about
// 1.23 times the mean), and a ring for 1000 nodes takes about 2 ms to build
// from nothing and under 1 ms to rebuild when a node joins or leaves.
// Evener balance comes from the load bound (ConsistentHashConfig.LoadBound),
// not from more points: 1.05 times the mean by points alone would take
// thousands per node and a build ten times slower.
const ringPointsPerNode = 128

// hashRing is a consistent-hash ring: each node owns the keys that hash into
// the arcs ending at its points. A point's position depends only on its
// node's address, so the ring is a pure function of the node set (every
// process agrees), and removing a node hands only that node's arcs to the
// nodes that follow them: no other key changes owner.
//
// A point is one uint64: its position (the top 32 bits of its hash) above
// the index of its node, so that sorting the words sorts by position and,
// on equal positions, by node index, which is address order; removing a
// node then never changes the owner of a point another node holds. Eight
// bytes a point keep the ring small enough for the build to stay in cache.
type hashRing struct {
	points []uint64 // sorted
	// An index by the top bits of a position: the points whose positions
	// start with b are points[starts[b]:starts[b+1]], about two of them.
	starts []uint32
	shift  uint
}

// newHashRing builds the ring for nodes with perNode points each; nodes must
// not be empty. Points are placed with a counting sort on their top bits and
// then an insertion sort, which only ever moves a point within its bucket:
// O(points) in all, where a comparison sort of the whole ring costs
// O(points·log points) and dominated the build.
func newHashRing(nodes []discovery.Node, perNode int) *hashRing {
	total := len(nodes) * perNode
	r := newEmptyRing(total)
	buckets := len(r.starts) - 1
	// Hashing a point is cheaper than storing it twice, so both passes
	// compute the positions.
	bases := make([]uint64, len(nodes))
	for i := range nodes {
		bases[i] = hashString(nodes[i].Addr)
		for v := range perNode {
			r.starts[ringPosition(bases[i], v)>>r.shift+1]++
		}
	}
	for b := 1; b <= buckets; b++ {
		r.starts[b] += r.starts[b-1]
	}
	next := make([]uint32, buckets)
	copy(next, r.starts[:buckets])
	for i := range nodes {
		for v := range perNode {
			pos := ringPosition(bases[i], v)
			b := pos >> r.shift
			r.points[next[b]] = uint64(pos)<<32 | uint64(i)
			next[b]++
		}
	}
	pts := r.points
	for i := 1; i < len(pts); i++ {
		p := pts[i]
		j := i
		for j > 0 && pts[j-1] > p {
			pts[j] = pts[j-1]
			j--
		}
		pts[j] = p
	}
	return r
}

// newEmptyRing allocates a ring of total points with its index, sized for
// about two points per bucket.
func newEmptyRing(total int) *hashRing {
	width := max(bits.Len(uint(total-1))-1, 0) // buckets = 2^width ≥ total/2
	return &hashRing{
		points: make([]uint64, total),
		starts: make([]uint32, 1<<width+1),
		shift:  uint(32 - width),
	}
}

// maxRingChange is the largest change, in nodes added plus nodes removed as
// a fraction of the new node count, that rebuild handles by moving points;
// beyond it hashing and sorting afresh is as cheap.
const maxRingChange = 0.25

// rebuild returns the ring for nodes given r, the ring for prev (both sorted
// by Addr), or nil when the sets differ too much for that to pay. It keeps
// the points of the nodes that stay, renumbered, and merges in those of the
// nodes that joined: sequential passes over the ring, where newHashRing
// scatters every point to a random place and sorts it there, which at 1000
// nodes takes twice as long. The result equals newHashRing(nodes, perNode).
func (r *hashRing) rebuild(prev, nodes []discovery.Node, perNode int) *hashRing {
	if len(nodes) == 0 || len(prev) == 0 {
		return nil
	}
	// renumber[i] is the new index of prev[i], or -1 when it left.
	renumber := make([]int32, len(prev))
	var joined []uint64 // the points of the nodes that joined, sorted below
	changes, i, j := 0, 0, 0
	for i < len(prev) || j < len(nodes) {
		switch {
		case j == len(nodes) || i < len(prev) && prev[i].Addr < nodes[j].Addr:
			renumber[i] = -1
			i++
			changes++
		case i == len(prev) || nodes[j].Addr < prev[i].Addr:
			if changes++; float64(changes) > maxRingChange*float64(len(nodes)) {
				return nil
			}
			base := hashString(nodes[j].Addr)
			for v := range perNode {
				joined = append(joined, uint64(ringPosition(base, v))<<32|uint64(j))
			}
			j++
		default:
			renumber[i] = int32(j)
			i++
			j++
		}
	}
	if float64(changes) > maxRingChange*float64(len(nodes)) {
		return nil
	}
	slices.Sort(joined)
	out := newEmptyRing(len(nodes) * perNode)
	// Renumbering keeps the order of the nodes that stay, so their points
	// stay sorted among themselves.
	k := 0
	for _, p := range r.points {
		owner := renumber[uint32(p)]
		if owner < 0 {
			continue
		}
		p = p&^0xffffffff | uint64(owner)
		for len(joined) > 0 && joined[0] < p {
			out.points[k] = joined[0]
			joined = joined[1:]
			k++
		}
		out.points[k] = p
		k++
	}
	k += copy(out.points[k:], joined)
	if k != len(out.points) {
		return nil // prev was not the set r was built for; start afresh
	}
	out.index()
	return out
}

// index fills starts from the sorted points: it counts the points per
// bucket and sums the counts, which unlike searching for each bucket's
// first point has no branch to mispredict.
func (r *hashRing) index() {
	starts, shift := r.starts, r.shift
	for _, p := range r.points {
		starts[uint32(p>>32)>>shift+1]++
	}
	for b := 1; b < len(starts); b++ {
		starts[b] += starts[b-1]
	}
}

// ringPosition is the position of a node's v-th point.
func ringPosition(base uint64, v int) uint32 {
	return uint32(mix64(base+uint64(v+1)*0x9e3779b97f4a7c15) >> 32)
}

// pointAt returns the index of the first point at or after the position of
// key hash h, wrapping past the end of the ring.
func (r *hashRing) pointAt(h uint64) int {
	pos := uint32(h >> 32)
	b := pos >> r.shift
	i, end := int(r.starts[b]), int(r.starts[b+1])
	// Every point from end on lies above pos, so the scan stops in pos's
	// bucket. A point at pos itself sorts at or above pos<<32.
	for i < end && r.points[i] < uint64(pos)<<32 {
		i++
	}
	if i == len(r.points) {
		return 0
	}
	return i
}

// owner returns the node index of point i.
func (r *hashRing) owner(i int) int { return int(uint32(r.points[i])) }

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
