package zkserver_test

import (
	"fmt"
	"log"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// ExampleStart starts a standalone server and asks it, with the srvr
// four-letter word, what it is.
func ExampleStart() {
	server, err := zkserver.Start(zkserver.Options{})
	if err != nil {
		log.Fatal(err) // without ZooKeeper, the error says what to install
	}
	defer server.Close()
	mode, err := server.Mode()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(mode)
	// Output: standalone
}

// Example starts a three-server ensemble, crashes its leader and waits for
// the others to elect a new one. Which server leads differs from run to
// run, so the example is compiled but not run by go test.
func Example() {
	if err := zkserver.Available(); err != nil {
		log.Fatal(err)
	}
	ensemble, err := zkserver.StartEnsemble(3, zkserver.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer ensemble.Close()
	fmt.Println("connect string:", ensemble.Connect())

	leader, err := ensemble.Leader()
	if err != nil {
		log.Fatal(err)
	}
	if err := ensemble.Servers[leader].Kill(); err != nil {
		log.Fatal(err)
	}
	newLeader, err := ensemble.WaitLeader(30 * time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("leader moved from server %d to server %d\n", leader, newLeader)
}
