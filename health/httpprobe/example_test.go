package httpprobe_test

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

// A probe asks a coordinator for /v1/info: one that is starting fails it
// with health.ErrStarting, one that runs passes.
func ExampleNew() {
	c, err := coordinator.Start(coordinator.Options{Starting: true})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()

	probe := httpprobe.New(&http.Client{Transport: transport, Timeout: 5 * time.Second})
	node := discovery.Node{Addr: c.Addr(), Scheme: "http"}

	err = probe(context.Background(), node)
	fmt.Println("starting:", errors.Is(err, health.ErrStarting))

	c.SetStarting(false)
	fmt.Println("running:", probe(context.Background(), node))
	// Output:
	// starting: true
	// running: <nil>
}
