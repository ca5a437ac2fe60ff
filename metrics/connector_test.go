package metrics

import (
	"context"
	"database/sql"
	"testing"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// FromConnector exports what a real connector did: two statements on a
// static list of one live and one dead coordinator, the dead one refusing
// the first and being ejected.
func TestFromConnectorExportsTheConnectorsStats(t *testing.T) {
	live, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr()
	dead.Close() // refuses connections from now on

	cfg, err := zkdriver.ParseDSN("presto://" + deadAddr + "," + live.Addr() + "/hive;zooKeeperStrategy=poll?user=alice")
	if err != nil {
		t.Fatal(err)
	}
	connector, err := zkdriver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	for range 2 {
		if _, err := db.ExecContext(context.Background(), "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}

	wantLines(t, scrape(t, NewDriverCollector(FromConnector(connector))),
		`zkpresto_driver_picks_total{node="`+deadAddr+`"} 1`,
		`zkpresto_driver_picks_total{node="`+live.Addr()+`"} 2`,
		`zkpresto_driver_ejections_total{node="`+deadAddr+`"} 1`,
		`zkpresto_driver_ejections_total{node="`+live.Addr()+`"} 0`,
		`zkpresto_driver_failovers_total{node="`+deadAddr+`"} 1`,
		`zkpresto_driver_failovers_total{node="`+live.Addr()+`"} 0`,
		`zkpresto_driver_node_usable{node="`+deadAddr+`"} 0`,
		`zkpresto_driver_node_usable{node="`+live.Addr()+`"} 1`,
		`zkpresto_driver_failures_total{node="`+live.Addr()+`"} 0`,
		"zkpresto_discovery_nodes 2",
		"zkpresto_discovery_connected 1",
	)
}
