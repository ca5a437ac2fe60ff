package strategy

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
)

var benchSizes = []int{3, 100, 1000}

// benchNodes returns n nodes with weights 1 to 10, so the weighted
// strategies have work to do.
func benchNodes(n int) []discovery.Node {
	weights := make([]int, n)
	for i := range weights {
		weights[i] = 1 + i%10
	}
	return makeNodes(n, weights...)
}

// benchRequests are users for user_hash; the other strategies ignore them.
var benchRequests = func() []Request {
	reqs := make([]Request, 1024)
	for i := range reqs {
		reqs[i] = Request{User: fmt.Sprintf("analyst-%d@example.com", i)}
	}
	return reqs
}()

var sinkNode *discovery.Node

func BenchmarkPick(b *testing.B) {
	for _, name := range builtinNames {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				s, _ := New(name, Options{})
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

func BenchmarkPickParallel(b *testing.B) {
	for _, name := range builtinNames {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				s, _ := New(name, Options{})
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

func BenchmarkBuild(b *testing.B) {
	nodes := benchNodes(1000)
	for _, name := range builtinNames {
		b.Run(name+"/n=1000", func(b *testing.B) {
			s, _ := New(name, Options{})
			b.ReportAllocs()
			for b.Loop() {
				s.Build(nodes)
			}
		})
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
