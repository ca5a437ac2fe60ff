package health_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/health/httpprobe"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

func Example() {
	now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	tracker := health.NewTracker(
		health.Policy{ConsecutiveFailures: 2, BaseEjection: time.Second},
		health.WithClock(func() time.Time { return now }),
	)
	nodes := []discovery.Node{{Addr: "10.0.0.1:8080"}, {Addr: "10.0.0.2:8080"}}
	tracker.Forget(nodes) // the nodes discovery knows

	refused := errors.New("connect: connection refused")
	fmt.Println("ejected after 1 failure:", tracker.Failure("10.0.0.1:8080", refused))
	fmt.Println("ejected after 2 failures:", tracker.Failure("10.0.0.1:8080", refused))
	version := tracker.Version()
	for _, n := range tracker.Usable(nodes) {
		fmt.Println("usable:", n.Addr)
	}

	now = now.Add(time.Second) // the ejection runs out
	fmt.Println("version changed:", tracker.Version() != version)
	fmt.Println("usable nodes:", len(tracker.Usable(nodes)))

	// Back on probation: the next failure ejects at once, for twice as long.
	tracker.Failure("10.0.0.1:8080", refused)
	st := tracker.State("10.0.0.1:8080")
	fmt.Println("ejected for", st.Until.Sub(now), "ejections", st.Ejections)
	// Output:
	// ejected after 1 failure: false
	// ejected after 2 failures: true
	// usable: 10.0.0.2:8080
	// version changed: true
	// usable nodes: 2
	// ejected for 2s ejections 2
}

func ExampleChecker_CheckNow() {
	c, err := coordinator.Start(coordinator.Options{Starting: true})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()

	nodes := []discovery.Node{{Addr: c.Addr(), Scheme: "http"}}
	tracker := health.NewTracker(health.Policy{})
	checker := health.StartChecker(10*time.Second, httpprobe.New(&http.Client{Transport: transport}),
		func() []discovery.Node { return nodes }, tracker, nil)
	defer checker.Close()

	checker.CheckNow(context.Background())
	fmt.Println("unhealthy while starting:", tracker.State(c.Addr()).Unhealthy)

	c.SetStarting(false)
	checker.CheckNow(context.Background())
	fmt.Println("unhealthy once started:", tracker.State(c.Addr()).Unhealthy)
	// Output:
	// unhealthy while starting: true
	// unhealthy once started: false
}
