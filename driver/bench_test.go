package driver_test

import (
	"database/sql"
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	_ "github.com/prestodb/presto-go-client/v2" // the bare client, as the baseline

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
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

// BenchmarkPageMemory reads one page of 32 rows of 1 MiB (32 MiB of JSON,
// uncompressed: the simulator's repeated letters would compress 1000:1)
// through the bare Presto Go client and through zkpresto, and reports the
// peak of the heap's live and not yet collected objects while the page is
// read, as a multiple of the page (peak/page), sampled every 100 µs above
// the heap before the statement.
func BenchmarkPageMemory(b *testing.B) {
	const rows, width = 32, 1 << 20
	c, err := coordinator.Start(coordinator.Options{NoGzip: true, BatchRows: rows})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	page := float64(rows * width)
	run := func(b *testing.B, driverName, dsn string) {
		db, err := sql.Open(driverName, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		var worst float64
		for b.Loop() {
			runtime.GC()
			base := heapObjects()
			stop := make(chan struct{})
			peak := make(chan uint64)
			go func() {
				var top uint64
				t := time.NewTicker(100 * time.Microsecond)
				defer t.Stop()
				for {
					select {
					case <-stop:
						peak <- max(top, heapObjects())
						return
					case <-t.C:
						top = max(top, heapObjects())
					}
				}
			}()
			r, err := db.Query(fmt.Sprintf("SELECT * FROM bigrows(%d, %d)", rows, width))
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for r.Next() {
				var k int64
				var s sql.RawBytes
				if err := r.Scan(&k, &s); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if err := r.Err(); err != nil || n != rows {
				b.Fatalf("%d rows, %v", n, err)
			}
			r.Close()
			close(stop)
			if top := <-peak; top > base {
				worst = max(worst, float64(top-base)/page)
			}
		}
		b.ReportMetric(worst, "peak/page")
	}
	b.Run("client=bare", func(b *testing.B) {
		run(b, "presto", "presto://alice@"+c.Addr()+"/hive/default")
	})
	b.Run("client=zkpresto", func(b *testing.B) {
		run(b, "zkpresto", "presto://"+c.Addr()+"/hive/default?user=alice")
	})
}

// heapObjects is the bytes of heap objects, live or not yet swept.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
