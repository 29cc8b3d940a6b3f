package sim

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/collsim/collsim/model"
)

// A parallel sweep runs its sizes as independent predictions on a few
// goroutines at once. What they share is read-only once the sweep starts:
// the Env (its capacities, names and tuning tables are fixed by NewEnv, and
// its model.Resolution has every node resolved first, see resolveAll), the
// cluster's topology and fabric (whose one lazy table, the hop counts per
// leaf, is guarded by its own mutex), and the Env's bundling decisions
// (a sync.Map of results each run would compute alike, bundle.go). Each DES run builds its own schedule,
// engine and network (Execute), so the scratch state of a run belongs to
// the goroutine that runs it. The rest is here:
//
//   - cores: a size runs only while it holds one of the sweep's worker
//     slots, and lends it to the next size while it waits (for a run of an
//     equal schedule another size is executing, or for memory);
//   - runs: the DES runs a size may take instead of executing its own
//     schedule (sweepRuns), so that the sizes of a pipelined call whose
//     schedules are identical cost one run between them, however they fall
//     on the workers;
//   - memory: one budget for the runs in flight (memPool);
//   - events: which runs a sequential sweep would have reused, decided in
//     sweep order once every size before is done (attempt), so that Events
//     is what Sweep with one worker reports.

// sweepRuns are the DES runs of a parallel sweep that another size may
// take: every run that left pipeline units out (those a sequential sweep's
// desMemo keeps), from the moment it starts. Two runs in it never have
// equal schedules, so equal runs are the same *sweepRun.
type sweepRuns struct {
	mu   sync.Mutex
	runs []*sweepRun
}

// sweepRun is one DES run of a parallel sweep. Its fields other than last
// are written before done is closed and read-only after.
type sweepRun struct {
	sched     *Schedule
	caps      []float64
	maxEvents int64
	done      chan struct{}
	res       *Result // nil when the run failed
	// last is the latest size (sweep index) that took or ran it, guarded
	// by sweepRuns.mu.
	last int
}

// find returns the run of a schedule equal to s over the same capacities
// and event budget, nil if none. Called with mu held.
func (r *sweepRuns) find(s *Schedule, caps []float64, maxEvents int64) *sweepRun {
	for _, x := range r.runs {
		if x.maxEvents == maxEvents && x.sched.Len() == s.Len() && slices.Equal(x.caps, caps) && sameSchedule(x.sched, s) {
			return x
		}
	}
	return nil
}

// remove drops x from the runs. Called with mu held.
func (r *sweepRuns) remove(x *sweepRun) {
	if i := slices.Index(r.runs, x); i >= 0 {
		r.runs = slices.Delete(r.runs, i, i+1)
	}
}

// forget lets go of the runs no size after done can need to tell apart:
// those whose last size is done at or before done, except keep (the run of
// the last attempt up to done, which the next attempt compares with). A
// size after done that builds an equal schedule runs it again, which costs
// time but not exactness: it is not next to any size that took the run.
func (r *sweepRuns) forget(done int, keep *sweepRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = slices.DeleteFunc(r.runs, func(x *sweepRun) bool { return x != keep && x.last <= done })
}

// attempt is one DES run a size asked for (a size asks once per window it
// tries): the shared run it took or ran (nil: one it ran and did not share),
// whether it left pipeline units out, and its events.
type attempt struct {
	run    *sweepRun
	keep   bool
	events int64
}

// sweepSize is one size's share of a parallel sweep: its runSource.
type sweepSize struct {
	idx  int
	runs *sweepRuns
	pool *memPool
	// cores is the sweep's worker slots; the size holds one while held.
	cores    chan struct{}
	held     bool
	attempts []attempt
}

// idle lends the size's worker slot to another size.
func (z *sweepSize) idle() {
	if z.held {
		z.held = false
		<-z.cores
	}
}

// busy takes a worker slot back.
func (z *sweepSize) busy(ctx context.Context) error {
	if z.held {
		return nil
	}
	select {
	case z.cores <- struct{}{}:
		z.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (z *sweepSize) hold(ctx context.Context) *memHold {
	return &memHold{ctx: ctx, pool: z.pool, idle: z.idle, busy: z.busy}
}

// run takes the sweep's run of a schedule equal to pr.sched (waiting for it
// while another size executes it, its slot and memory lent meanwhile, and
// then timing pr with that run's schedule), or executes pr.sched, shared
// with the sizes that build an equal one when it left units out. A shared
// run that failed (its size cancelled, or its own error) is run again here.
// The events returned are the run's; the sweep decides in order which of
// them a sequential sweep would not have run (fixEvents).
func (z *sweepSize) run(ctx context.Context, pr *prog, caps []float64, maxEvents int64, hold *memHold, exec func(*Schedule) (*Result, error)) (*Result, int64, error) {
	keep := pr.skipped > 0
	for {
		z.runs.mu.Lock()
		x := z.runs.find(pr.sched, caps, maxEvents)
		if x == nil && !keep {
			z.runs.mu.Unlock()
			res, err := exec(pr.sched)
			if err != nil {
				return nil, 0, err
			}
			z.attempts = append(z.attempts, attempt{events: res.Events})
			return res, res.Events, nil
		}
		if x == nil {
			x = &sweepRun{sched: pr.sched, caps: caps, maxEvents: maxEvents, done: make(chan struct{}), last: z.idx}
			z.runs.runs = append(z.runs.runs, x)
			z.runs.mu.Unlock()
			res, err := exec(pr.sched)
			z.runs.mu.Lock()
			x.res = res
			if err != nil {
				z.runs.remove(x)
			}
			close(x.done)
			z.runs.mu.Unlock()
			if err != nil {
				return nil, 0, err
			}
			z.attempts = append(z.attempts, attempt{run: x, keep: true, events: res.Events})
			own := *res // the caller trims its copy; x.res stays whole
			return &own, res.Events, nil
		}
		x.last = max(x.last, z.idx)
		z.runs.mu.Unlock()
		// The schedules are equal: time pr with the run's own, so that
		// this size's copy can be freed while it waits.
		pr.sched = x.sched
		select {
		case <-x.done:
		default:
			hold.release()
			z.idle()
			select {
			case <-x.done:
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
			if err := z.busy(ctx); err != nil {
				return nil, 0, err
			}
		}
		if x.res == nil {
			// Its run failed: run it here (the loop finds no equal run,
			// or another size's retry of it).
			if err := hold.grow(pr.sched.memEstimate(len(caps))); err != nil {
				return nil, 0, err
			}
			continue
		}
		r := *x.res
		z.attempts = append(z.attempts, attempt{run: x, keep: keep, events: r.Events})
		return &r, r.Events, nil
	}
}

// eventsInOrder replays, in sweep order, what a sequential sweep's desMemo
// would have done with a size's attempts: an attempt takes the run before
// it when that run was kept (it left units out, or was itself taken) and
// is the same run, and then counts no events. prev and prevKept carry the
// last attempt from size to size; it returns the size's events.
func eventsInOrder(as []attempt, prev **sweepRun, prevKept *bool) int64 {
	var events int64
	for _, a := range as {
		hit := *prevKept && a.run != nil && a.run == *prev
		if !hit {
			events += a.events
		}
		*prev, *prevKept = a.run, hit || a.keep
	}
	return events
}

// resolveAll resolves every node's paths in e.Res, which resolves a node's
// on first use; after it the Resolution is only read, so predictions may
// run concurrently.
func (e *Env) resolveAll() {
	for _, n := range e.Cluster.Nodes {
		if len(n.GPUs) > 0 {
			e.Res.GPU(n.GPUs[0], n.GPUs[0]) // resolves the GPU's node
		}
	}
}

// SweepGroup is the worker slots and the memory budget that sweeps running
// at once share, as the sizes of one parallel sweep share them: the seeds
// of one fabric (predict --seeds), each a sweep of its own Env. A size runs
// only while it holds one of the group's slots and lends it while it waits;
// the runs in flight, whatever their sweep, reserve their memory in the
// group's one budget (memPool), so runs that fit the budget alone never
// fail for running beside others. What each sweep shares with its own sizes
// (the runs a size may take from another, the order the points are handed
// over in) stays its own, so every sweep's points are the ones it gives
// alone. A SweepGroup is safe for concurrent use.
type SweepGroup struct {
	pool  *memPool
	cores chan struct{}
}

// NewSweepGroup returns a group of workers slots (GOMAXPROCS when 0 or
// less) and maxMemory bytes of budget (DefaultMaxMemory when 0 or less).
func NewSweepGroup(workers int, maxMemory int64) *SweepGroup {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &SweepGroup{pool: newMemPool(Budget{MaxMemory: maxMemory}.memory()), cores: make(chan struct{}, workers)}
}

// Workers is the group's number of slots.
func (g *SweepGroup) Workers() int { return cap(g.cores) }

// sweepParallel is SweepEach on the slots and memory budget of g: the
// sweep's own (SweepEach, two or more slots) or the group it shares with
// other sweeps (Request.Group).
func (e *Env) sweepParallel(ctx context.Context, req Request, g *SweepGroup, each func(int, Point) error) error {
	e.resolveAll()
	parent := ctx
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	n := len(req.Sizes)
	runs := &sweepRuns{}
	pool, cores := g.pool, g.cores
	type result struct {
		pt       Point
		err      error
		attempts []attempt
	}
	results := make([]result, n)
	finished := make(chan int, n) // every size sends at most once
	var mu sync.Mutex             // guards stop and cancels
	stop := n                     // sizes from stop on are not started (an earlier one failed)
	cancels := make([]context.CancelFunc, n)
	cancelAfter := func(i int) {
		mu.Lock()
		defer mu.Unlock()
		stop = min(stop, i+1)
		for j := i + 1; j < n; j++ {
			if cancels[j] != nil {
				cancels[j]()
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // start the sizes in order, each when a slot is free
		defer wg.Done()
		for i := range n {
			select {
			case cores <- struct{}{}:
			case <-ctx.Done():
				results[i].err = ctx.Err()
				finished <- i
				return
			}
			mu.Lock()
			if i >= stop {
				mu.Unlock()
				<-cores
				return
			}
			sctx, cancel := context.WithCancel(ctx)
			cancels[i] = cancel
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cancel()
				z := &sweepSize{idx: i, runs: runs, pool: pool, cores: cores, held: true}
				pt, err := e.predict(sctx, req, req.Sizes[i], z)
				z.idle()
				results[i] = result{pt: pt, err: err, attempts: z.attempts}
				finished <- i
			}()
		}
	}()
	// Hand the points over in order as they are done; the first error in
	// sweep order stops the sizes after it.
	done := make([]bool, n)
	var prev *sweepRun
	prevKept := false
	failed, next := n, 0
	var failure error
	for next < failed {
		i := <-finished
		done[i] = true
		if err := results[i].err; err != nil && i < failed {
			failed = i
			failure = fmt.Errorf("size %s: %w", model.FormatBytes(req.Sizes[i]), err)
			cancelAfter(i)
		}
		for next < failed && done[next] {
			if err := parent.Err(); err != nil {
				// Cancelled: hand over nothing more, as a sequential
				// sweep starts no size after.
				failed, failure = next, err
				break
			}
			r := &results[next]
			if len(r.attempts) > 0 {
				r.pt.Events = eventsInOrder(r.attempts, &prev, &prevKept)
			}
			runs.forget(next, prev)
			if err := each(next, r.pt); err != nil {
				failed, failure = next, err
				cancelAfter(next)
				break
			}
			r.pt = Point{} // handed over; let go of its slices
			next++
		}
	}
	cancelAll()
	wg.Wait()
	if failure != nil && parent.Err() != nil {
		return parent.Err()
	}
	return failure
}
