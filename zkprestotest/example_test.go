package zkprestotest_test

import (
	"database/sql"
	"fmt"
	"log"

	"github.com/zkpresto/zkpresto/discovery"
	_ "github.com/zkpresto/zkpresto/driver" // registers the "zkpresto" driver
	"github.com/zkpresto/zkpresto/zkprestotest"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/tcpproxy"
)

// A user's integration test: it starts a ZooKeeper and two coordinators
// registered there, opens the driver with the cluster's DSN and runs a
// query, which the driver sends to a coordinator it found in ZooKeeper. In
// a test function the first lines are
//
//	func TestReport(t *testing.T) {
//		cluster := zkprestotest.NewCluster(t, zkprestotest.Options{Coordinators: 2})
//		db, err := sql.Open("zkpresto", cluster.DSN("?user=alice"))
//		...
//
// and the cluster stops when the test ends.
func Example_integrationTest() {
	cluster, err := zkprestotest.Start(zkprestotest.Options{Coordinators: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	db, err := sql.Open("zkpresto", cluster.DSN("?user=alice"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// The simulators answer rows(N) with a bigint column n holding 1..N.
	rows, err := db.Query("SELECT n FROM rows(3)")
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			log.Fatal(err)
		}
		fmt.Println("n =", n)
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// n = 1
	// n = 2
	// n = 3
}

// Trino coordinators registered as Apache Curator writes them: the DSN is a
// trino:// one, and the answer names the coordinator that served it.
func Example_trinoCurator() {
	cluster, err := zkprestotest.Start(zkprestotest.Options{
		Flavour: coordinator.Trino,
		Format:  discovery.FormatCurator,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	db, err := sql.Open("zkpresto", cluster.DSN(";zooKeeperStrategy=poll?user=bob"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	var node, user, catalog, schema, source, query string
	if err := db.QueryRow("SELECT who_served_me").Scan(&node, &user, &catalog, &schema, &source, &query); err != nil {
		log.Fatal(err)
	}
	fmt.Println(node, "served", user, "as", cluster.Coordinators[0].Flavour())
	// Output:
	// c1 served bob as trino
}

// Faults: a coordinator dies and the driver sends the next statements to
// the other one; ZooKeeper is cut from the driver and the driver keeps
// serving from the coordinators it last saw.
func Example_faults() {
	cluster, err := zkprestotest.Start(zkprestotest.Options{Coordinators: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	zk, err := tcpproxy.Start(cluster.Ensemble())
	if err != nil {
		log.Fatal(err)
	}
	defer zk.Close()

	db, err := sql.Open("zkpresto", cluster.DSNAt(zk.Addr(), "?user=carol"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		log.Fatal(err)
	}

	if err := cluster.Coordinators[0].Stop(); err != nil {
		log.Fatal(err)
	}
	zk.Drop()
	served := map[string]int{}
	for range 4 {
		var node, user, catalog, schema, source, query string
		if err := db.QueryRow("SELECT who_served_me").Scan(&node, &user, &catalog, &schema, &source, &query); err != nil {
			log.Fatal(err)
		}
		served[node]++
	}
	fmt.Println(served)
	// Output:
	// map[c2:4]
}
