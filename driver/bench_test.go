package driver_test

import (
	"database/sql"
	"testing"

	_ "github.com/prestodb/presto-go-client/v2" // the bare client, as the baseline

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/testrig/fleet"
)

// BenchmarkStatement runs the same SELECT round trip to one local
// coordinator through the bare Presto Go client and through zkpresto (a
// static host, and ZooKeeper discovery), so that one run gives the driver's
// overhead as a ratio. Allocations per statement are reported for each.
func BenchmarkStatement(b *testing.B) {
	f := fleet.StartT(b, fleet.Options{Coordinators: 1})
	c := f.Coordinators[0]
	if _, err := f.Register(c, discovery.FormatZkpresto, 1); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, driverName, dsn string) {
		db, err := sql.Open(driverName, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxIdleConns(4)
		var s served
		scan := func() {
			if err := db.QueryRow("SELECT 1").Scan(&s.Coordinator, &s.User, &s.Catalog, &s.Schema, &s.Source, &s.Query); err != nil {
				b.Fatal(err)
			}
		}
		scan() // open the pool and, for zkpresto, discovery
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			scan()
		}
	}
	b.Run("client=bare", func(b *testing.B) {
		run(b, "presto", "presto://alice@"+c.Addr()+"/hive/default")
	})
	b.Run("client=zkpresto-static", func(b *testing.B) {
		run(b, "zkpresto", "presto://"+c.Addr()+"/hive/default?user=alice")
	})
	b.Run("client=zkpresto-zookeeper", func(b *testing.B) {
		run(b, "zkpresto", f.DSN("?user=alice"))
	})
}
