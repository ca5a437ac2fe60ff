package strategy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/zkpresto/zkpresto/discovery"
)

var benchSizes = []int{3, 100, 1000}

// benchNodes returns n nodes with weights 1 to 10, so the weighted
// strategies have work to do, and zones a, b, c, so local_first does too.
func benchNodes(n int) []discovery.Node {
	nodes := make([]discovery.Node, n)
	for i := range nodes {
		nodes[i] = discovery.Node{
			Addr:   fmt.Sprintf("10.0.%d.%d:8080", i/256, i%256),
			Weight: 1 + i%10,
			Zone:   string(rune('a' + i%3)),
		}
	}
	return discovery.NewSnapshot("bench", 1, nodes).Nodes
}

// benchOptions gives local_first a zone that a third of the nodes are in.
var benchOptions = Options{Zone: "b"}

// benchRequests are users for the hash strategies; the others ignore them.
var benchRequests = func() []Request {
	reqs := make([]Request, 1024)
	for i := range reqs {
		reqs[i] = Request{User: fmt.Sprintf("analyst-%d@example.com", i)}
	}
	return reqs
}()

var sinkNode *discovery.Node

// BenchmarkPick is the cost of one Pick, in one goroutine. global_poll runs
// without a shared counter here (BenchmarkPickGlobalPollZooKeeper has one).
func BenchmarkPick(b *testing.B) {
	for _, name := range builtinNames {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				s, _ := New(name, benchOptions)
				p := s.Build(benchNodes(n))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					node, err := p.Pick(&benchRequests[i%len(benchRequests)])
					if err != nil {
						b.Fatal(err)
					}
					sinkNode = node
					i++
				}
			})
		}
	}
}

// BenchmarkPickParallel is BenchmarkPick from GOMAXPROCS goroutines at once.
func BenchmarkPickParallel(b *testing.B) {
	for _, name := range builtinNames {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				s, _ := New(name, benchOptions)
				p := s.Build(benchNodes(n))
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					i := rand.IntN(len(benchRequests))
					for pb.Next() {
						if _, err := p.Pick(&benchRequests[i%len(benchRequests)]); err != nil {
							b.Error(err)
							return
						}
						i++
					}
				})
			})
		}
	}
}

// BenchmarkPickWithReport is what a statement costs a load-aware strategy:
// the pick plus the completion report the driver makes, Begin and End on
// the picked node's Load.
func BenchmarkPickWithReport(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		for _, name := range loadAwareNames {
			for _, n := range benchSizes {
				mode := "serial"
				if parallel {
					mode = "parallel"
				}
				b.Run(fmt.Sprintf("%s/%s/n=%d", mode, name, n), func(b *testing.B) {
					nodes := benchNodes(n)
					opts := benchOptions
					opts.Loads = NewLoads()
					s, _ := New(name, opts)
					p := s.Build(nodes)
					loads := opts.Loads.ForNodes(nodes)
					statement := func() {
						node, err := p.Pick(nil)
						if err != nil {
							b.Fatal(err)
						}
						l := loads[nodeIndex(nodes, node)]
						l.Begin()
						l.End(time.Millisecond, nil)
					}
					b.ReportAllocs()
					if !parallel {
						for b.Loop() {
							statement()
						}
						return
					}
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							statement()
						}
					})
				})
			}
		}
	}
}

// nodeIndex is node's index in nodes by address arithmetic, standing in for
// the *Load the driver keeps with each statement, so that the benchmark
// measures the report and not a lookup.
func nodeIndex(nodes []discovery.Node, node *discovery.Node) int {
	return int((uintptr(unsafe.Pointer(node)) - uintptr(unsafe.Pointer(&nodes[0]))) / unsafe.Sizeof(nodes[0]))
}

// BenchmarkBuild is the cost of a rebuild when the node set changes: it
// alternates between n nodes and the same nodes less one.
func BenchmarkBuild(b *testing.B) {
	for _, name := range builtinNames {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				benchBuild(b, func(opts Options) Strategy { s, _ := New(name, opts); return s }, n)
			})
		}
	}
	b.Run("consistent_hash_bounded/n=1000", func(b *testing.B) {
		benchBuild(b, ConsistentHash(ConsistentHashConfig{LoadBound: 1.25}), 1000)
	})
	// A ring from nothing, as on a connector's first build or after a change
	// too large to apply to the previous ring.
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("consistent_hash_first/n=%d", n), func(b *testing.B) {
			nodes := benchNodes(n)
			b.ReportAllocs()
			for b.Loop() {
				newConsistentHash(Options{}).Build(nodes)
			}
		})
	}
}

func benchBuild(b *testing.B, f Factory, n int) {
	all := benchNodes(n)
	sets := [][]discovery.Node{all, slices.Delete(slices.Clone(all), n/2, n/2+1)}
	opts := benchOptions
	opts.Loads = NewLoads()
	s := f(opts)
	s.Build(all) // the driver's table knows the nodes already
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Build(sets[i%2])
		i++
	}
}

// BenchmarkPickWeightedExpanded is the baseline for BenchmarkPick/weighted:
// the scheme Presto Router uses, which on every call lists each node
// weight-many times and picks an entry uniformly.
func BenchmarkPickWeightedExpanded(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			nodes := benchNodes(n)
			b.ReportAllocs()
			for b.Loop() {
				var expanded []*discovery.Node
				for i := range nodes {
					for range nodes[i].Weight {
						expanded = append(expanded, &nodes[i])
					}
				}
				sinkNode = expanded[rand.IntN(len(expanded))]
			}
		})
	}
}
