package routing_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
)

// A Router over a static list: Run picks a coordinator per statement and,
// when the caller reports that the statement never reached it, tries
// another.
func ExampleRouter_Run() {
	r, err := routing.New(routing.Config{
		Discoverer: discovery.NewStatic("static", []discovery.Node{{Addr: "10.0.0.1:8080"}, {Addr: "10.0.0.2:8080"}}),
		Strategy:   strategy.Named("poll"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()

	a, err := r.Run(context.Background(), &strategy.Request{User: "alice"}, nil, func(a *routing.Attempt) (routing.Outcome, error) {
		fmt.Println("trying", a.Node.Addr)
		if a.Node.Addr == "10.0.0.1:8080" {
			return routing.NotSent, errors.New("connection refused")
		}
		return routing.Answered, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	a.End(nil) // the statement's results were read
	for _, n := range r.Stats().Nodes {
		fmt.Printf("%s picks=%d failovers=%d usable=%t\n", n.Node.Addr, n.Picks, n.Failovers, n.Usable)
	}
	// Output:
	// trying 10.0.0.1:8080
	// trying 10.0.0.2:8080
	// 10.0.0.1:8080 picks=1 failovers=1 usable=false
	// 10.0.0.2:8080 picks=1 failovers=0 usable=true
}

// Pick alone, for a caller that runs its own attempt loop.
func ExampleRouter_Pick() {
	r, _ := routing.New(routing.Config{
		Discoverer: discovery.NewStatic("static", []discovery.Node{{Addr: "10.0.0.1:8080"}, {Addr: "10.0.0.2:8080", Weight: 3}}),
		// user_hash keeps each user on one coordinator.
		Strategy: strategy.Named("user_hash"),
	})
	defer r.Close()
	first, _ := r.Pick(context.Background(), &strategy.Request{User: "bob"}, nil)
	again, _ := r.Pick(context.Background(), &strategy.Request{User: "bob"}, nil)
	fmt.Println(first.Addr == again.Addr)
	// Output: true
}
