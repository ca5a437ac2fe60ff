package strategy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/zkpresto/zkpresto/discovery"
)

// HashKey says which request field consistent_hash routes by when the
// request carries no explicit Request.Key.
type HashKey uint8

const (
	// HashByUser routes by Request.User (the default, and what user_hash does).
	HashByUser HashKey = iota
	// HashBySource routes by Request.Source, falling back to Request.User
	// when the source is empty.
	HashBySource
)

// String returns "user" or "source".
func (k HashKey) String() string {
	if k == HashBySource {
		return "source"
	}
	return "user"
}

// ParseHashKey parses "user" or "source" (any case), as a DSN value such as
// hashKey=source would give it. An empty string means HashByUser.
func ParseHashKey(s string) (HashKey, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "user":
		return HashByUser, nil
	case "source":
		return HashBySource, nil
	}
	return HashByUser, fmt.Errorf("strategy: hash key %q: want user or source", s)
}

// ConsistentHashConfig is consistent_hash's Config: what it takes beyond
// Options.
type ConsistentHashConfig struct {
	// Key is the request field hashed when Request.Key is empty.
	Key HashKey
	// LoadBound, when at least 1, caps every node's in-flight statements at
	// LoadBound times the mean, rounded up (consistent hashing with bounded
	// loads, Mirrokni, Thorup and Zadimoghaddam 2018): a key whose node is
	// full goes to the next node clockwise on the ring that is not. 1.25 is
	// a common choice; the closer to 1, the evener the load and the more
	// keys leave their node while it is busy. Below 1 (the default, 0): no
	// bound, every key always goes to its own node. The load is the in-flight
	// count from Options.Loads, which the driver reports into.
	LoadBound float64
}

// ConsistentHash returns a Factory for consistent_hash with cfg; the
// registered name "consistent_hash" is ConsistentHash with the zero config
// (by user, no bound).
func ConsistentHash(cfg ConsistentHashConfig) Factory {
	return func(opts Options) Strategy { return newHashStrategy(cfg, opts) }
}

// newConsistentHash is consistent_hash as its Config (the DSN's hashKey
// and hashLoadBound keys) configures it.
func newConsistentHash(opts Options) Strategy {
	cfg, _ := opts.Config.(ConsistentHashConfig)
	return newHashStrategy(cfg, opts)
}

// Format returns cfg as consistent_hash's option keys: hashKey and
// hashLoadBound, those that differ from the defaults.
func (cfg ConsistentHashConfig) Format() map[string]string {
	m := make(map[string]string)
	if cfg.Key != HashByUser {
		m[keyHashKey] = cfg.Key.String()
	}
	if cfg.LoadBound >= 1 {
		m[keyHashLoadBound] = strconv.FormatFloat(cfg.LoadBound, 'g', -1, 64)
	}
	return m
}

// consistent_hash's option keys.
const (
	keyHashKey       = "hashKey"
	keyHashLoadBound = "hashLoadBound"
)

// errLoadBound is the reason a hashLoadBound is refused.
var errLoadBound = errors.New("want a number from 1 to 100, such as 1.25")

// consistentHashParser reads consistent_hash's options.
var consistentHashParser = ConfigParser{
	Keys: []ConfigKey{
		{Name: keyHashKey, Default: "`user`",
			Doc: "what `consistent_hash` routes by without a routing key on the context: `user` or `source`"},
		{Name: keyHashLoadBound, Default: "off",
			Doc: "`consistent_hash` with bounded loads: no coordinator gets more than this factor (≥ 1, e.g. `1.25`) of the mean in-flight load"},
	},
	Parse: func(values map[string]string, _ ConfigEnv) (Config, error) {
		var cfg ConsistentHashConfig
		if v, ok := values[keyHashKey]; ok {
			switch strings.ToLower(v) {
			case "user":
			case "source":
				cfg.Key = HashBySource
			default:
				return nil, BadOption(keyHashKey, v, errors.New("want user or source"))
			}
		}
		if v, ok := values[keyHashLoadBound]; ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f >= 1 && f <= 100) {
				// 0 would mean off: in a DSN it is a bad value.
				return nil, BadOption(keyHashLoadBound, v, errLoadBound)
			}
			cfg.LoadBound = f
		}
		return cfg, nil
	},
}

// newUserHash is user_hash: the consistent_hash ring by user, unbounded, so
// that a user's statements always reach the same node while it is present.
func newUserHash(opts Options) Strategy {
	return newHashStrategy(ConsistentHashConfig{Key: HashByUser}, opts)
}

// hashStrategy maps a routing key to a node on a consistent-hash ring
// (hashRing): Request.Key, else the configured field. The same key reaches
// the same node for as long as that node is present, in every process, and
// when a node leaves only the keys it owned move, about 1/n of them. Requests
// without any key are spread at random. Node weights are not used.
//
// Why a ring with points and an optional load bound, among the designs that
// keep a key's node a pure function of the node set: jump hash cannot remove
// an arbitrary node; rendezvous hashing balances to 1.02 but costs O(n) per
// pick; Maglev picks in O(1) but moves keys between nodes that stay;
// multi-probe consistent hashing balances to about 1.05 with 21 probes, i.e.
// 21 ring lookups per pick. A ring with 128 points per node picks with one
// hash and one indexed lookup, builds in O(points) (and a rebuild reuses the
// previous ring), and moves only the departed node's keys; but alone it
// balances only to about 1.23 times the mean at 100 nodes. The bound, when
// set, brings the busiest node within LoadBound of the mean for as long as
// the load lasts. TestConsistentHashFigures measures both.
type hashStrategy struct {
	loadAware // loads is read only with a bound
	cfg       ConsistentHashConfig
	last      *hashPicker
}

func newHashStrategy(cfg ConsistentHashConfig, opts Options) *hashStrategy {
	s := &hashStrategy{cfg: cfg}
	if s.bounded() {
		s.loadAware = newLoadAware(opts)
	} else {
		s.rng = newRNG(opts.Seed) // no load table: unbounded hashing reads none
	}
	return s
}

func (s *hashStrategy) bounded() bool { return s.cfg.LoadBound >= 1 && !math.IsInf(s.cfg.LoadBound, 1) }

func (s *hashStrategy) Build(nodes []discovery.Node) Picker {
	p := &hashPicker{nodes: nodes, rng: s.rng, key: s.cfg.Key}
	if len(nodes) == 0 {
		return p
	}
	if s.last != nil && s.last.ring != nil {
		p.ring = s.last.ring.rebuild(s.last.nodes, nodes, ringPointsPerNode)
	}
	if p.ring == nil {
		p.ring = newHashRing(nodes, ringPointsPerNode)
	}
	s.last = p
	if s.bounded() {
		p.bound = s.cfg.LoadBound
		p.loads = s.loadsFor(nodes)
	}
	return p
}

type hashPicker struct {
	nodes []discovery.Node
	rng   *rng
	key   HashKey
	ring  *hashRing
	bound float64 // 0: unbounded
	loads []*Load // parallel to nodes when bounded
}

func (p *hashPicker) Pick(req *Request) (*discovery.Node, error) {
	n := len(p.nodes)
	if n == 0 {
		return nil, ErrNoNodes
	}
	key := p.routingKey(req)
	if key == "" {
		if n == 1 {
			return &p.nodes[0], nil
		}
		return &p.nodes[p.rng.intN(n)], nil
	}
	at := p.ring.pointAt(hashString(key))
	if p.bound == 0 {
		return &p.nodes[p.ring.owner(at)], nil
	}
	return &p.nodes[p.boundedOwner(at)], nil
}

func (p *hashPicker) routingKey(req *Request) string {
	if req == nil {
		return ""
	}
	if req.Key != "" {
		return req.Key
	}
	if p.key == HashBySource && req.Source != "" {
		return req.Source
	}
	return req.User
}

// boundedOwner walks the ring from point at to the first node whose
// in-flight count is below the capacity ceil(bound·(total+1)/n), the +1
// being the statement being placed. Such a node always exists, since some
// node is at or below the mean, so one lap is enough.
//
// The total is a sum over every node's load, O(n) per pick; it is skipped
// when the key's own node is idle, which is under any capacity.
func (p *hashPicker) boundedOwner(at int) int {
	r := p.ring
	owner := r.owner(at)
	if p.loads[owner].InFlight() <= 0 {
		return owner
	}
	var total int64
	for _, l := range p.loads {
		total += max(l.InFlight(), 0)
	}
	capacity := int64(math.Ceil(p.bound * float64(total+1) / float64(len(p.loads))))
	for range r.points {
		o := r.owner(at)
		if p.loads[o].InFlight() < capacity {
			return o
		}
		if at++; at == len(r.points) {
			at = 0
		}
	}
	return owner // loads changed under us throughout a lap; stay put
}
