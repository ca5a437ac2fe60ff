package registrar_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// A registrar for a coordinator that clients reach over https. Run (not
// called here, it needs ZooKeeper) would hold a znode with this name and data
// while the coordinator's /v1/info says it is ready, with the coordinator's
// version filled in.
func ExampleNew() {
	reg, err := registrar.New(registrar.Config{
		Servers:        []string{"zk1:2181", "zk2:2181", "zk3:2181"},
		Namespace:      "presto",
		AdvertiseURI:   "https://10.0.0.5:8443",
		CoordinatorURL: "http://127.0.0.1:8080",
		Weight:         2,
		Zone:           "eu-1",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	node := reg.Node()
	fmt.Println(discovery.ZnodeName(node))
	fmt.Println(string(discovery.FormatZnodeData(node)))
	// Output:
	// serverUri=10.0.0.5:8443;version=;sequence=
	// uri=https://10.0.0.5:8443;weight=2;zone=eu-1;
}

// A Go service that registers its coordinator itself, as Curator users do
// with ServiceDiscovery.registerService: Run holds the znode while the
// coordinator is ready and deletes it when ctx ends. Here a local
// ZooKeeper and a coordinator simulator stand in for the real ones.
func ExampleRegistrar_Run() {
	zks, err := zkserver.Start(zkserver.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer zks.Close()
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	reg, err := registrar.New(registrar.Config{
		Servers:      []string{zks.Addr()},
		AdvertiseURI: c.URL(),
		Interval:     50 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(ctx) }()
	for deadline := time.Now().Add(20 * time.Second); !reg.Status().Registered && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Println("registered:", reg.Status().Registered, strings.HasPrefix(reg.Status().Path, "/presto/serverUri="+c.Addr()))
	stop()
	fmt.Println("Run returned:", <-done, "registered:", reg.Status().Registered)
	// Output:
	// registered: true true
	// Run returned: <nil> registered: false
}
