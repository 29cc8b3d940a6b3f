package sim

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	"github.com/collsim/collsim/model"
)

// Budget bounds one DES run. A run that would exceed it is refused before
// its schedule is allocated (or, for events, stopped when it passes the
// bound) with a *BudgetError; the DES never hands a call to another engine.
// Zero fields take the defaults below.
type Budget struct {
	// MaxMemory bounds the bytes the schedule and its execution state take
	// (estimated from the op and dependency counts before building).
	MaxMemory int64
	// MaxEvents bounds the engine events of one call.
	MaxEvents int64

	// times is set when the run records every op's start and end
	// (ExecOptions.RecordOpTimes): 16 bytes more per op.
	times bool

	// hold, when set, reserves the memory check estimates in a pool the
	// runs of a parallel sweep share (see memPool).
	hold *memHold
}

// Default budgets. Assumption: 8 GiB is the memory the largest target
// (32,768 GPUs) may use on a workstation, and 2e9 events is a few minutes
// of simulation at the network's rate of several million events per
// second; both are raised with the flags the error names.
const (
	DefaultMaxMemory = 8 << 30
	DefaultMaxEvents = 2_000_000_000
)

func (b Budget) memory() int64 {
	if b.MaxMemory > 0 {
		return b.MaxMemory
	}
	return DefaultMaxMemory
}

func (b Budget) events() int64 {
	if b.MaxEvents > 0 {
		return b.MaxEvents
	}
	return DefaultMaxEvents
}

// Memory of a DES run. Per op: its 16-byte record in the schedule (shape,
// route, dependency end and rank; Schedule), with its start and end times
// when the run records them; per dependency entry its 4 bytes in the
// schedule. What is on the Go heap counts twice over: assumption, Go's
// collector (GOGC=100) lets the heap grow to about twice the live data
// before it collects (measured: 5.3 GB resident for 2.5 GB of schedules on
// 1,024 dgx-h100 nodes). The executor's 16-byte xop per op (dependency
// counter, successor offset, shape and route), its 4-byte schedule ID and
// depth, and its 4-byte successor edge per dependency are mapped outside the
// heap where the system allows it (rawArena) and count once there
// (execBytes). Per link, the network's state (ten per-link arrays, the
// link's list of flow classes, its results): assumption, 384 bytes live,
// twice over (measured: the heap peaked 3.9 MB, about 510 bytes per link,
// above twice the schedule of a 64 KiB tree on a 64-node leaf-spine of 7,688
// links, so 768 leaves a margin for the collector's timing;
// TestMemoryEstimateBoundsHeap).
// The schedule's shape and route tables are not known before it is built;
// Budget.checkBuilt adds them once it is (Schedule.tableBytes), before it
// runs.
const (
	bytesPerOp    = 2 * bytesPerRec
	bytesPerTimes = 2 * 2 * int64(unsafe.Sizeof(model.Time(0)))
	bytesPerDep   = 2 * 4
	bytesPerLink  = 2 * 384
	// eventsPerOp is the engine events an op costs at least: its start or
	// completion, and for a transfer the network's completion callback.
	eventsPerOp = 2
)

// execBytes is the estimate of the executor's per-op state and successor
// lists for ops ops and deps dependency entries: once where they are
// mapped outside the heap, twice where they are too small to be.
func execBytes(ops, deps int64) int64 {
	cost := func(b int64) int64 {
		if b >= rawMinBytes {
			return rawHeapFactor * b
		}
		return 2 * b
	}
	// The xops, the successor edges, and per op its schedule ID and the
	// depth build numbers it by (4 bytes each).
	return cost((ops+1)*int64(unsafe.Sizeof(xop{}))) + cost(deps*4) + 2*cost(ops*4)
}

// opBytes is the schedule's estimate per op of a run under b.
func (b Budget) opBytes() int64 {
	if b.times {
		return bytesPerOp + bytesPerTimes
	}
	return bytesPerOp
}

// linkBytes is the estimate of the network's state over links links.
func linkBytes(links int) int64 { return int64(links) * bytesPerLink }

// memEstimate is the memory estimate of running s over links links
// without recording op times: its ops, dependencies and links as
// Budget.check counts them, and its tables, twice over as the rest.
func (s *Schedule) memEstimate(links int) int64 {
	return Budget{}.builtEstimate(s, links)
}

// builtEstimate is the memory estimate of running s over links links
// under b.
func (b Budget) builtEstimate(s *Schedule, links int) int64 {
	ops, deps := int64(s.Len()), int64(s.depCount())
	return ops*b.opBytes() + deps*bytesPerDep + execBytes(ops, deps) + linkBytes(links) + 2*s.tableBytes()
}

// BudgetError says which budget a DES run exceeds, by how much, and which
// flag raises it.
type BudgetError struct {
	// Budget is "memory" or "events".
	Budget string
	// Estimate and Limit are in bytes (memory) or events.
	Estimate, Limit int64
	// Flag is the command-line flag that raises the budget.
	Flag string
	// What describes the call and the cluster.
	What string
	// Running is set when the run was stopped on reaching the bound rather
	// than refused from its estimate.
	Running bool
}

func (e *BudgetError) Error() string {
	if e.Budget == "memory" {
		return fmt.Sprintf("sim: %s needs ~%s of memory, above the memory budget of %s; raise %s or use --engine analytic",
			e.What, fmtMem(e.Estimate), fmtMem(e.Limit), e.Flag)
	}
	if e.Running {
		return fmt.Sprintf("sim: %s passed the event budget of %d events; raise %s or use --engine analytic", e.What, e.Limit, e.Flag)
	}
	return fmt.Sprintf("sim: %s needs ~%d engine events, above the event budget of %d; raise %s or use --engine analytic",
		e.What, e.Estimate, e.Limit, e.Flag)
}

func fmtMem(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d B", b)
}

// describe names a call on a cluster for budget errors.
func describe(e *Env, call Call, ops int64) string {
	c := e.Cluster
	return fmt.Sprintf("the DES of %s %s %s (%s, %d channels) on %d nodes x %d GPUs (%d GPUs, %d ops)",
		call.Coll, model.FormatBytes(call.Bytes), call.Choice.Algo, call.Choice.Proto, call.Choice.Channels, c.NumNodes(), c.GPUsPerNode(), c.NumRanks(), ops)
}

// check refuses a schedule of ops operations and deps dependency entries
// beyond the budget.
func (b Budget) check(e *Env, call Call, ops, deps int64) error {
	if mem := ops*b.opBytes() + deps*bytesPerDep + execBytes(ops, deps) + linkBytes(len(e.caps)); mem > b.memory() {
		return &BudgetError{Budget: "memory", Estimate: mem, Limit: b.memory(), Flag: "--max-memory", What: describe(e, call, ops)}
	}
	if ev := ops * eventsPerOp; ev > b.events() {
		return &BudgetError{Budget: "events", Estimate: ev, Limit: b.events(), Flag: "--max-events", What: describe(e, call, ops)}
	}
	return b.hold.grow(ops*b.opBytes() + deps*bytesPerDep + execBytes(ops, deps) + linkBytes(len(e.caps)))
}

// checkBuilt refuses the built schedule s beyond the memory budget, now
// that its tables are known (builtEstimate), before it runs.
func (b Budget) checkBuilt(e *Env, call Call, s *Schedule) error {
	mem := b.builtEstimate(s, len(e.caps))
	if mem > b.memory() {
		return &BudgetError{Budget: "memory", Estimate: mem, Limit: b.memory(), Flag: "--max-memory", What: describe(e, call, int64(s.Len()))}
	}
	return b.hold.grow(mem)
}

// memPool is the memory budget the concurrent DES runs of a parallel sweep
// share: a run reserves its estimate before its schedule is built (where
// Budget.check passes it) and gives it back when its execution ends, and
// waits while the runs in flight leave too little. A run alone is refused
// only beyond the whole budget, as in a sequential sweep, so runs that fit
// the budget one at a time never fail for running beside others: they wait
// their turn. The schedule a sweep keeps for reuse (desMemo, sweepRun) is
// not counted, as it is not in a sequential sweep.
type memPool struct {
	mu    sync.Mutex
	limit int64
	free  int64
	// wake is closed, and replaced, whenever memory is given back.
	wake chan struct{}
}

func newMemPool(limit int64) *memPool {
	return &memPool{limit: limit, free: limit, wake: make(chan struct{})}
}

// take reserves n bytes if they are free, else returns a channel that is
// closed when memory is next given back.
func (p *memPool) take(n int64) (bool, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n <= p.free {
		p.free -= n
		return true, nil
	}
	return false, p.wake
}

// give returns n bytes to the pool.
func (p *memPool) give(n int64) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	p.free += n
	close(p.wake)
	p.wake = make(chan struct{})
	p.mu.Unlock()
}

// memHold is one DES run's reservation in a memPool: the largest estimate
// Budget.check has passed for its schedule (a builder may check a first
// estimate and then the exact one). While it waits it lends its core to
// another size (idle, then busy before it goes on; nil: no sweep's cores).
// A nil memHold reserves nothing.
type memHold struct {
	ctx  context.Context
	pool *memPool
	held int64
	idle func()
	busy func(context.Context) error
}

// grow raises the reservation for an estimate of n bytes. It never waits
// while it holds memory: a run that cannot add to its reservation at once
// gives it back and waits for the whole, so two runs cannot wait on each
// other. The reservation is twice the estimate, capped at the whole
// budget: the Go heap grows to about twice its live bytes between
// collections (GOGC=100), so two runs whose estimates fit side by side
// can together hold twice as much (the 8,192-GPU sweep reached 9.3 GB RSS
// on two workers under the 8 GiB budget, against 4.9 GB on one); a run
// that fits the budget alone still runs, as in a sequential sweep.
func (h *memHold) grow(n int64) error {
	if h == nil {
		return nil
	}
	n = min(2*n, h.pool.limit)
	if n <= h.held {
		return nil
	}
	if ok, _ := h.pool.take(n - h.held); ok {
		h.held = n
		return nil
	}
	h.release()
	lent := false
	for {
		ok, wake := h.pool.take(n)
		if ok {
			break
		}
		if !lent && h.idle != nil {
			h.idle()
			lent = true
		}
		select {
		case <-wake:
		case <-h.ctx.Done():
			return h.ctx.Err()
		}
	}
	h.held = n
	if lent {
		if err := h.busy(h.ctx); err != nil {
			h.release()
			return err
		}
	}
	return nil
}

// release gives the reservation back.
func (h *memHold) release() {
	if h == nil {
		return
	}
	h.pool.give(h.held)
	h.held = 0
}
