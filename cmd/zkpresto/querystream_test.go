package main

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// queryStream is clients loops of multi-page queries ("SELECT * FROM
// rows(10)", each read to its end), client i on dbs[i%len(dbs)], run
// until stop; a loop ends at its first failure, which stop returns.
type queryStream struct {
	ran  atomic.Int64
	quit chan struct{}
	errs chan error
	wg   sync.WaitGroup
}

func startQueryStream(ctx context.Context, clients int, dbs ...*sql.DB) *queryStream {
	s := &queryStream{quit: make(chan struct{}), errs: make(chan error, clients)}
	for i := range clients {
		db := dbs[i%len(dbs)]
		s.wg.Go(func() {
			for {
				select {
				case <-s.quit:
					return
				default:
				}
				if err := readTenRows(ctx, db); err != nil {
					s.errs <- err
					return
				}
				s.ran.Add(1)
			}
		})
	}
	return s
}

// readTenRows runs one query of the stream and reads it to its end.
func readTenRows(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "SELECT * FROM rows(10)")
	if err != nil {
		return err
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil || n != 10 {
		return fmt.Errorf("a query read %d of 10 rows: %v", n, err)
	}
	return nil
}

// more waits until n more queries than now have run to their end.
func (s *queryStream) more(t *testing.T, n int64) {
	t.Helper()
	target := s.ran.Load() + n
	eventually(t, fmt.Sprintf("%d more queries", n), func() bool { return s.ran.Load() >= target })
}

// stop ends the loops, waits for them and returns their failures.
func (s *queryStream) stop() []error {
	close(s.quit)
	s.wg.Wait()
	close(s.errs)
	var out []error
	for err := range s.errs {
		out = append(out, err)
	}
	return out
}
