package fleet_test

import (
	"fmt"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

// Start needs ZooKeeper installed, so this example is compiled but not run.
func ExampleStart() {
	f, err := fleet.Start(fleet.Options{Coordinators: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	for _, c := range f.Coordinators {
		if _, err := f.Register(c, discovery.FormatZkpresto, 1); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println(f.DSN(";zooKeeperStrategy=poll?user=alice"))
}

func ExampleZnode() {
	name, data, _, err := fleet.Znode(discovery.FormatHive, discovery.Node{Addr: "10.0.0.1:8080", Version: "0.289"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(name)
	fmt.Println(string(data))
	// Output:
	// serverUri=10.0.0.1:8080;version=0.289;sequence=
	// hive.server2.thrift.bind.host=10.0.0.1;hive.server2.thrift.port=8080;hive.server2.transport.mode=binary
}
