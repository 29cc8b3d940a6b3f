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
	return ForEach(ctx, n, workers, func(_ context.Context, i int) error { return fn(i) })
}

// ForEach runs fn(ctx_i, i) for i = 0 .. n-1 on at most workers goroutines
// (0: GOMAXPROCS), taking indices in increasing order, and returns the
// error of the lowest index that failed, so that the error does not
// depend on the scheduling. After a failure at i no index above i is
// started, and the contexts of those above i already running are
// cancelled (their results would not be used); the indices below i run
// on, as one of them may fail too and its error comes first. It stops
// early when ctx is cancelled and returns ctx's error.
func ForEach(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	errs := make([]error, n)
	var next atomic.Int64
	var mu sync.Mutex // guards failedAt and running
	failedAt := n     // the lowest index that failed so far (n: none)
	running := make([]context.CancelFunc, n)
	// start registers index i as running, unless an index below it failed.
	start := func(i int) (context.Context, bool) {
		mu.Lock()
		defer mu.Unlock()
		if i > failedAt {
			return nil, false
		}
		c, cancel := context.WithCancel(ctx)
		running[i] = cancel
		return c, true
	}
	// end unregisters i; a failure cancels the running indices above it.
	end := func(i int, err error) {
		mu.Lock()
		defer mu.Unlock()
		running[i]()
		running[i] = nil
		if err == nil || i >= failedAt {
			return
		}
		failedAt = i
		for j := i + 1; j < n; j++ {
			if running[j] != nil {
				running[j]()
			}
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				c, ok := start(i)
				if !ok {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[i] = err
				} else {
					errs[i] = fn(c, i)
				}
				end(i, errs[i])
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
