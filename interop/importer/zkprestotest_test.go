package importer

import (
	"database/sql"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/zkprestotest"
)

// A user's integration test imports the test kit from a module of its own:
// nothing it needs is internal, and it runs with the releases of
// go-zookeeper and presto-go-client that an importer gets.
func TestUserIntegrationTestWithTheKit(t *testing.T) {
	cluster := zkprestotest.NewCluster(t, zkprestotest.Options{Coordinators: 2, Format: discovery.FormatCurator})
	db, err := sql.Open("zkpresto", cluster.DSN("?user=alice"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	served := map[string]bool{}
	for range 20 {
		var node, user, catalog, schema, source, query string
		if err := db.QueryRow("SELECT who_served_me").Scan(&node, &user, &catalog, &schema, &source, &query); err != nil {
			t.Fatal(err)
		}
		if user != "alice" {
			t.Fatalf("%s served user %q, want alice", node, user)
		}
		served[node] = true
	}
	if !served["c1"] || !served["c2"] {
		t.Fatalf("20 statements reached %v, want both coordinators found in ZooKeeper", served)
	}
}
