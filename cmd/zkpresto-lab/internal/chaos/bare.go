package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"time"

	_ "github.com/prestodb/presto-go-client/v2" // the bare client, as "presto"
)

// BareResult is how the Presto Go client alone handled one statement sent
// to a coordinator that refuses connections.
type BareResult struct {
	// Took is the time until QueryContext returned.
	Took time.Duration
	// Err is what it returned.
	Err error
	// TimedOut reports that the timeout ended the statement first.
	TimedOut bool
}

// MeasureBare runs one statement through sql.Open("presto", ...) against a
// loopback port nothing listens on, and reports how long the client took to
// give up, waiting at most timeout. Expect about BareClientRefused; the
// client also logs each retry through zerolog's global logger.
func MeasureBare(ctx context.Context, timeout time.Duration) (BareResult, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return BareResult{}, fmt.Errorf("chaos: finding a free port: %w", err)
	}
	addr := l.Addr().String()
	l.Close() // now the port refuses connections
	db, err := sql.Open("presto", "presto://chaos@"+addr+"/hive/default")
	if err != nil {
		return BareResult{}, fmt.Errorf("chaos: opening the bare client: %w", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	rows, err := db.QueryContext(ctx, "SELECT 1")
	took := time.Since(start)
	if err == nil {
		rows.Close()
		return BareResult{}, fmt.Errorf("chaos: a statement to the refused port %s succeeded", addr)
	}
	return BareResult{Took: took, Err: err, TimedOut: ctx.Err() != nil}, nil
}
