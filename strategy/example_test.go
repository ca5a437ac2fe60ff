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
