package discovery_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
)

func ExampleNewStatic() {
	d := discovery.NewStatic("c2:8080,c1:8080", []discovery.Node{
		{Addr: "c2:8080", Weight: 3},
		{Addr: "c1:8080"},
	})
	defer d.Close()
	for _, n := range d.Snapshot().Nodes { // sorted by address, defaults filled
		fmt.Println(n.URL(), n.Weight)
	}
	// Output:
	// http://c1:8080 1
	// http://c2:8080 3
}

// OpenZooKeeper needs a running ensemble, so this example is compiled but
// not run.
func ExampleOpenZooKeeper() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	zk, err := discovery.OpenZooKeeper(ctx, discovery.ZooKeeperConfig{
		Servers: []string{"zk1:2181", "zk2:2181", "zk3:2181"},
		Path:    "/presto",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer zk.Close()
	stop := zk.Subscribe(func(s *discovery.Snapshot) {
		fmt.Println("coordinators now:", s.Addrs())
	})
	defer stop()
	if st := zk.Status(); st.Nodes == 0 {
		fmt.Println("no coordinators:", st.Problem)
	}
}
