//go:build linux

package driver_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/zkprestotest/deadpeer"
	"github.com/zkpresto/zkpresto/zkprestotest/tcpproxy"
)

// BenchmarkFailoverFromADeadHost runs 1,000 statements, 20 at a time,
// under poll over a coordinator whose SYNs are dropped and a healthy one
// (behind a proxy that counts its connections), with the default
// dialRaceDelay and dialTimeout, and the dead one never ejected for long
// (ejections of a microsecond), so that every other statement meets it.
// It reports the failover time (p50, p99 and max, in ms, of the statements
// that took at least the race's delay: those the dead host was picked
// for), how many did, and the connections made to the healthy coordinator
// per statement, against the same statements with the healthy one alone:
// what the race costs in connections.
func BenchmarkFailoverFromADeadHost(b *testing.B) {
	quietPrestoClient(b)
	const statements, workers = 1000, 20
	const delay = 500 * time.Millisecond // the default dialRaceDelay
	good := startCoordinator(b, "good")
	run := func(b *testing.B, hosts string) {
		proxy := tcpproxy.StartT(b, good.Addr())
		db, _ := openConnector(b, "presto://"+fmt.Sprintf(hosts, proxy.Addr())+";zooKeeperStrategy=poll?user=alice",
			zkdriver.WithHealthPolicy(health.Policy{ConsecutiveFailures: 1 << 30, BaseEjection: time.Microsecond, MaxEjection: time.Microsecond}))
		db.SetMaxOpenConns(workers)
		// Warm up: the pool, the client sessions and a connection each.
		var warm sync.WaitGroup
		for range workers {
			warm.Go(func() {
				if _, err := db.ExecContext(context.Background(), "SELECT 1"); err != nil {
					b.Errorf("warm-up: %v", err)
				}
			})
		}
		warm.Wait()
		var mu sync.Mutex
		var latencies []time.Duration
		for b.Loop() {
			latencies = latencies[:0]
			before := proxy.Accepted()
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < statements; i += workers {
						start := time.Now()
						if _, err := db.ExecContext(context.Background(), fmt.Sprintf("SELECT %d", i)); err != nil {
							b.Errorf("statement %d: %v", i, err)
							return
						}
						mu.Lock()
						latencies = append(latencies, time.Since(start))
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(proxy.Accepted()-before)/statements, "conns/statement")
		}
		slices.Sort(latencies)
		i := slices.IndexFunc(latencies, func(d time.Duration) bool { return d >= delay })
		if i < 0 {
			b.ReportMetric(0, "failovers")
			return
		}
		over := latencies[i:]
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		b.ReportMetric(float64(len(over)), "failovers")
		b.ReportMetric(ms(over[len(over)/2]), "p50-failover-ms")
		b.ReportMetric(ms(over[len(over)*99/100]), "p99-failover-ms")
		b.ReportMetric(ms(over[len(over)-1]), "max-failover-ms")
	}
	b.Run("healthy alone", func(b *testing.B) { run(b, "%s") })
	b.Run("dead host beside it", func(b *testing.B) { run(b, deadpeer.SYNDrop(b)+",%s") })
}
