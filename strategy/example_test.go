package strategy_test

import (
	"errors"
	"fmt"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/strategy"
)

func ExampleNew() {
	s, name := strategy.New("ROUND_ROBIN", strategy.Options{})
	snap := discovery.NewSnapshot("example", 1, []discovery.Node{
		{Addr: "10.0.0.3:8080"}, {Addr: "10.0.0.1:8080"}, {Addr: "10.0.0.2:8080"},
	})
	picker := s.Build(snap.Nodes)
	fmt.Println(name)
	for range 5 {
		node, err := picker.Pick(&strategy.Request{User: "alice"})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(node.URL())
	}
	// Output:
	// poll
	// http://10.0.0.1:8080
	// http://10.0.0.2:8080
	// http://10.0.0.3:8080
	// http://10.0.0.1:8080
	// http://10.0.0.2:8080
}

func ExampleRegisterFunc() {
	// Usually done once, from an init function. ErrNameTaken means the name
	// is already in use, here by an earlier run of this example.
	err := strategy.RegisterFunc("last_host", func(hosts []string) string {
		return hosts[len(hosts)-1]
	}, "LAST")
	if err != nil && !errors.Is(err, strategy.ErrNameTaken) {
		fmt.Println(err)
		return
	}

	s, name := strategy.New("last", strategy.Options{})
	snap := discovery.NewSnapshot("example", 1, []discovery.Node{
		{Addr: "10.0.0.1:8080"}, {Addr: "10.0.0.2:8080"},
	})
	node, err := s.Build(snap.Nodes).Pick(&strategy.Request{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(name, node.Addr)
	// Output:
	// last_host 10.0.0.2:8080
}

// least_active sends the next statement to the node with the fewest in
// flight; the driver reports starts and ends into Options.Loads.
func ExampleNew_leastActive() {
	snap := discovery.NewSnapshot("example", 1, []discovery.Node{
		{Addr: "10.0.0.1:8080"}, {Addr: "10.0.0.2:8080"}, {Addr: "10.0.0.3:8080"},
	})
	loads := strategy.NewLoads()
	s, name := strategy.New("ACTIVE_WEIGHT", strategy.Options{Loads: loads})
	picker := s.Build(snap.Nodes)
	loads.For("10.0.0.1:8080").Begin()
	loads.For("10.0.0.3:8080").Begin()
	node, err := picker.Pick(&strategy.Request{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(name, node.Addr)
	// Output:
	// least_active 10.0.0.2:8080
}

// consistent_hash routes by Request.Key, else by the user or, as configured
// here, the source; when a node leaves only its keys move.
func ExampleConsistentHash() {
	nodes := discovery.NewSnapshot("example", 1, []discovery.Node{
		{Addr: "10.0.0.1:8080"}, {Addr: "10.0.0.2:8080"}, {Addr: "10.0.0.3:8080"},
	}).Nodes
	s := strategy.ConsistentHash(strategy.ConsistentHashConfig{Key: strategy.HashBySource})(strategy.Options{})
	req := &strategy.Request{User: "alice", Source: "nightly-etl"}
	before, _ := s.Build(nodes).Pick(req)
	var others []discovery.Node
	for _, n := range nodes {
		if n.Addr != before.Addr {
			others = append(others, n)
		}
	}
	// A node that does not own the source leaves: the source stays put.
	after, _ := s.Build(discovery.NewSnapshot("example", 2, []discovery.Node{*before, others[0]}).Nodes).Pick(req)
	fmt.Println(before.Addr == after.Addr)
	// Output:
	// true
}
