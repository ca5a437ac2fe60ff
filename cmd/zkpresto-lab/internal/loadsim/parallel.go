package loadsim

import (
	"context"
	"fmt"
	"runtime"
	"sync"
)

// parallel runs job(0) to job(n-1), in that order, on one worker per CPU
// (at most n), and then, under a lock, done after each one when done is
// not nil. It stops handing out jobs when ctx is done, and returns ctx's
// error then, else the error of the first job, in index order, that
// failed. Each simulation is deterministic on its own, so what the jobs
// return does not depend on the scheduling.
func parallel(ctx context.Context, n int, job func(i int) error, done func()) error {
	errs := make([]error, n)
	jobs := make(chan int)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := range jobs {
				errs[i] = job(i)
				if done != nil {
					mu.Lock()
					done()
					mu.Unlock()
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("loadsim: %w", err)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
