package registrar_test

import (
	"fmt"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/registrar"
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
