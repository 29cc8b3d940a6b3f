package study

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// forEach runs fn(0) .. fn(n-1) on up to GOMAXPROCS goroutines, taking
// indices in increasing order, and returns the error of the lowest index
// that failed (so the error does not depend on scheduling); after a
// failure no higher index is started. It stops early when ctx is
// cancelled and returns ctx's error.
func forEach(ctx context.Context, n int, fn func(i int) error) error {
	return forEachN(ctx, n, 0, fn)
}

// forEachN is forEach on at most workers goroutines (0: GOMAXPROCS).
func forEachN(ctx context.Context, n, workers int, fn func(i int) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	errs := make([]error, n)
	var next atomic.Int64
	var failedAt atomic.Int64
	failedAt.Store(int64(n))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || int64(i) > failedAt.Load() {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[i] = err
				} else {
					errs[i] = fn(i)
				}
				if errs[i] != nil {
					for {
						cur := failedAt.Load()
						if int64(i) >= cur || failedAt.CompareAndSwap(cur, int64(i)) {
							break
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
