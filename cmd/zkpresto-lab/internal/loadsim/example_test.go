package loadsim_test

import (
	"fmt"

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/loadsim"
)

func ExampleRun() {
	s := loadsim.Scenario{
		Name: "three equal nodes",
		Nodes: []loadsim.Node{
			{Name: "c1", Slots: 4, Speed: 1},
			{Name: "c2", Slots: 4, Speed: 1},
			{Name: "c3", Slots: 4, Speed: 1},
		},
		Load:     0.8,
		Requests: 3000,
		Seed:     7,
	}
	res, err := loadsim.Run(s, "round_robin")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Strategy, res.Served, res.Overloaded())
	// Output:
	// poll [1000 1000 1000] false
}
