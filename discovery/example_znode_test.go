package discovery_test

import (
	"fmt"

	"github.com/zkpresto/zkpresto/discovery"
)

// A Kyuubi server's registration and one written by `zkpresto register`,
// read the same way.
func ExampleParseZnode() {
	kyuubi, err := discovery.ParseZnode("serverUri=10.0.0.1:10009;version=1.7.0;sequence=0000000001", []byte("10.0.0.1:10009"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(kyuubi.Format, kyuubi.URL(), kyuubi.Weight, kyuubi.Version)

	ours, err := discovery.ParseZnode("serverUri=10.0.0.9:8443;version=0.287;sequence=0000000042",
		[]byte("uri=https://10.0.0.9:8443;weight=4;zone=rack-2;version=0.287;"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ours.Format, ours.URL(), ours.Weight, ours.Zone)

	_, err = discovery.ParseZnode("coord-1:http", nil)
	fmt.Println(err)
	// Output:
	// hive http://10.0.0.1:10009 1 1.7.0
	// zkpresto https://10.0.0.9:8443 4 rack-2
	// discovery: znode "coord-1:http": port "http" is not a number
}

// Registering a node: create an ephemeral-sequential child named with the
// ZnodeName prefix and holding the FormatZnodeData data.
func ExampleFormatZnodeData() {
	n := discovery.Node{
		Addr: "10.0.0.9:8443", Scheme: "https", Weight: 4, Zone: "rack-2", Version: "0.287",
		Metadata: map[string]string{"cluster": "etl"},
	}
	fmt.Println(discovery.ZnodeName(n))
	fmt.Println(string(discovery.FormatZnodeData(n)))
	// Output:
	// serverUri=10.0.0.9:8443;version=0.287;sequence=
	// uri=https://10.0.0.9:8443;weight=4;zone=rack-2;version=0.287;cluster=etl;
}
