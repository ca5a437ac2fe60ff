package gatewayrig_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	_ "github.com/prestodb/presto-go-client/v2"

	"github.com/zkpresto/zkpresto/internal/testrig/gatewayrig"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// A many-page result through the rig arrives whole, every follow-up on
// the other replica, and the statement ran once.
func TestStartServesThroughBothReplicas(t *testing.T) {
	rig := gatewayrig.Start(t, gatewayrig.Options{Coordinator: coordinator.Options{BatchRows: 5}})
	db, err := sql.Open("presto", "presto://alice@"+strings.TrimPrefix(rig.Front, "http://")+"/hive/default")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var n, sum int64
	rows, err := db.QueryContext(ctx, "SELECT * FROM rows(50)")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		n, sum = n+1, sum+v
	}
	if err := rows.Err(); err != nil || n != 50 || sum != 50*51/2 {
		t.Fatalf("%d rows summing to %d, %v", n, sum, err)
	}
	if h := rig.Hits(); h[0] < 5 || h[1] < 5 {
		t.Fatalf("requests per replica %v: both should have served follow-ups", h)
	}
	if rig.Statements() != 1 || rig.Running() != 0 || len(rig.Calls()) < 10 {
		t.Fatalf("%d statements, %d running, %d calls", rig.Statements(), rig.Running(), len(rig.Calls()))
	}
}

// Start takes the test's testing.TB, so this example is compiled but not
// run: a test connects its client to rig.Front.
func ExampleStart() {
	testTrinoClient := func(t *testing.T) {
		rig := gatewayrig.Start(t, gatewayrig.Options{Coordinator: coordinator.Options{Flavour: coordinator.Trino}})
		fmt.Println("connect to", rig.Front, "in front of", len(rig.Coordinators), "coordinators")
	}
	_ = testTrinoClient
}
