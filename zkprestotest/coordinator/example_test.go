package coordinator_test

import (
	"database/sql"
	"fmt"
	"log"

	_ "github.com/prestodb/presto-go-client/v2" // registers the "presto" driver

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

func Example() {
	c, err := coordinator.Start(coordinator.Options{Name: "c1"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	db, err := sql.Open("presto", "presto://alice@"+c.Addr()+"/hive/default?source=example")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	var node, user, catalog, schema, source, query string
	err = db.QueryRow("SELECT who_served_me").Scan(&node, &user, &catalog, &schema, &source, &query)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s served %s (%s.%s, source %s)\n", node, user, catalog, schema, source)
	fmt.Println("statements:", c.Statements())
	// Output:
	// c1 served alice (hive.default, source example)
	// statements: 1
}
