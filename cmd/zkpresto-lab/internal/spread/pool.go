package spread

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/zkpresto/zkpresto/internal/cli"
)

// PoolCommand is the first argument that makes Options.Self run as a pool
// (RunPool).
const PoolCommand = "spread-pool"

// poolReport is what a pool prints when it is done.
type poolReport struct {
	LatenciesMillis []float64 `json:"latencies_ms"`
	Failed          int       `json:"failed"`
}

// PoolOptions configure one pool.
type PoolOptions struct {
	// DSN is the driver's DSN: ZooKeeper discovery, or a gateway replica as
	// its one host.
	DSN string
	// Rate is the statements a second, as Poisson arrivals.
	Rate float64
	// Mean is the mean of each statement's exponential time on the
	// coordinator.
	Mean time.Duration
	// Duration is how long statements keep arriving.
	Duration time.Duration
	// Seed seeds the arrivals and the statements' lengths, so that every
	// strategy gets the same sequence from a pool.
	Seed uint64
}

// RunPool sends statements through one *sql.DB as o says, waits for them
// all, and writes its report (every statement's latency) to out as JSON.
func RunPool(ctx context.Context, out io.Writer, o PoolOptions) error {
	if !(o.Rate > 0 && o.Rate <= 10_000) || o.Mean < time.Millisecond || o.Duration <= 0 || o.Duration > 10*time.Minute {
		return fmt.Errorf("spread pool: rate %v/s, mean %s, duration %s: want a rate up to 10000/s, a mean of at least 1ms, up to 10m", o.Rate, o.Mean, o.Duration)
	}
	connector, err := cli.OpenConnector(o.DSN)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	// A gateway replica that has just started may not list its
	// coordinators yet: wait for it, bounded.
	for deadline := time.Now().Add(20 * time.Second); ; {
		err := db.PingContext(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("spread pool: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var (
		mu     sync.Mutex
		report poolReport
		wg     sync.WaitGroup
	)
	rng := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	start := time.Now()
	end := start.Add(o.Duration)
	for next := start; next.Before(end); next = next.Add(time.Duration(rng.ExpFloat64() / o.Rate * float64(time.Second))) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(next)):
		}
		sleep := max(int(rng.ExpFloat64()*float64(o.Mean/time.Millisecond)), 1)
		wg.Go(func() {
			began := time.Now()
			err := query(ctx, db, fmt.Sprintf("SELECT sleep(%d)", sleep))
			took := time.Since(began)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				report.Failed++
				return
			}
			report.LatenciesMillis = append(report.LatenciesMillis, float64(took)/float64(time.Millisecond))
		})
	}
	wg.Wait()
	return json.NewEncoder(out).Encode(report)
}

// query runs stmt and reads its rows to the end.
func query(ctx context.Context, db *sql.DB, stmt string) error {
	rows, err := db.QueryContext(ctx, stmt)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}
