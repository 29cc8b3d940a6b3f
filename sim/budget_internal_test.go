package sim

import (
	"context"
	"errors"
	"testing"
)

// TestMemPoolHoldsWithinBudget: the runs of a parallel sweep never hold
// more than the budget together. A reservation that does not fit waits,
// holding nothing and lending its core, until another is given back; one
// that must grow and cannot gives its own back first, so two runs never
// wait on each other; a cancelled wait holds nothing. A reservation is
// twice the estimate (the Go heap's headroom), capped at the budget, so a
// run that fits the budget alone still runs.
func TestMemPoolHoldsWithinBudget(t *testing.T) {
	ctx := context.Background()
	pool := newMemPool(100)
	hold := func(lent chan<- struct{}) *memHold {
		h := &memHold{ctx: ctx, pool: pool}
		if lent != nil {
			h.idle = func() { close(lent) }
			h.busy = func(context.Context) error { return nil }
		}
		return h
	}
	a := hold(nil)
	if err := a.grow(35); err != nil || pool.free != 30 {
		t.Fatalf("first reservation (an estimate of 35, reserved twice over): error %v, %d free", err, pool.free)
	}
	lent := make(chan struct{})
	b := hold(lent)
	got := make(chan error)
	go func() { got <- b.grow(35) }()
	<-lent // b waits, having lent its core
	pool.mu.Lock()
	free := pool.free
	pool.mu.Unlock()
	if free != 30 {
		t.Errorf("while the second run waits: %d free, want 30", free)
	}
	a.release()
	if err := <-got; err != nil || b.held != 70 || pool.free != 30 {
		t.Fatalf("second reservation after the first is given back: error %v, held %d, %d free", err, b.held, pool.free)
	}
	// Growing past what is free gives the reservation back and waits for
	// the whole.
	c := hold(nil)
	if err := c.grow(10); err != nil || pool.free != 10 {
		t.Fatalf("third reservation (estimate 10): error %v, %d free", err, pool.free)
	}
	lent = make(chan struct{})
	c.idle = func() { close(lent) }
	c.busy = func(context.Context) error { return nil }
	go func() { got <- c.grow(20) }()
	<-lent
	pool.mu.Lock()
	free = pool.free
	pool.mu.Unlock()
	if free != 30 || c.held != 0 {
		t.Errorf("a growing run that waits: %d free, holds %d; want 30 free, nothing held", free, c.held)
	}
	b.release()
	if err := <-got; err != nil || c.held != 40 || pool.free != 60 {
		t.Fatalf("grown to 40: error %v, held %d, %d free", err, c.held, pool.free)
	}
	// A cancelled wait returns the context's error and holds nothing.
	cctx, cancel := context.WithCancel(ctx)
	d := &memHold{ctx: cctx, pool: pool}
	cancel()
	if err := d.grow(45); !errors.Is(err, context.Canceled) || d.held != 0 || pool.free != 60 {
		t.Errorf("cancelled wait: error %v, held %d, %d free", err, d.held, pool.free)
	}
	c.release()
	if pool.free != 100 {
		t.Errorf("all given back: %d free, want 100", pool.free)
	}
	e := hold(nil)
	if err := e.grow(80); err != nil || e.held != 100 || pool.free != 0 {
		t.Errorf("an estimate of 80 alone: error %v, held %d, %d free; want the whole budget", err, e.held, pool.free)
	}
	e.release()
	// A nil hold (a sequential sweep) reserves nothing.
	var none *memHold
	if err := none.grow(1 << 40); err != nil {
		t.Errorf("nil hold: %v", err)
	}
	none.release()
}
