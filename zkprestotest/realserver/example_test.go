package realserver_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"

	_ "github.com/zkpresto/zkpresto/driver" // registers the "zkpresto" driver
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// A user's integration test against a real Trino found through a real
// ZooKeeper: the server is registered by zkpresto's registrar, and the
// driver reads it from ZooKeeper as in production. In a test function the
// first lines are
//
//	func TestReport(t *testing.T) {
//		cluster := realserver.NewCluster(t, realserver.ClusterOptions{Flavour: coordinator.Trino})
//		db, err := sql.Open("zkpresto", cluster.DSN("?user=alice"))
//		...
//
// and since a server takes tens of seconds to start, a test binary with
// many such tests starts one cluster in TestMain with StartCluster.
func Example_trino() {
	cluster, err := realserver.StartCluster(realserver.ClusterOptions{Flavour: coordinator.Trino})
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	db, err := sql.Open("zkpresto", cluster.DSN("?user=alice"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// The DSN's catalog and schema are tpch and tiny.
	var nations int
	if err := db.QueryRow("SELECT count(*) FROM nation").Scan(&nations); err != nil {
		log.Fatal(err)
	}
	var node string
	if err := db.QueryRow("SELECT node_id FROM system.runtime.nodes").Scan(&node); err != nil {
		log.Fatal(err)
	}
	fmt.Println(nations, "nations, served by", node)
	// Output: 25 nations, served by trino1
}

// A statement straight on a server, apart from any client under test: the
// test kit's own check of what the server holds.
func ExampleServer_Query() {
	s, err := realserver.Start(realserver.Options{Flavour: coordinator.Presto, Name: "p1"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	res, err := s.Query(context.Background(), "SELECT name FROM tpch.tiny.region ORDER BY regionkey LIMIT 2")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Columns, res.Rows)
	// Output: [name] [[AFRICA] [AMERICA]]
}
