package sim

import (
	"fmt"
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

// Per-op memory of a DES run: the op itself, its execution state
// (dependency counter, successor offset, start and end times) and, per
// dependency entry, the entry and its successor edge, all twice over:
// assumption, Go's collector (GOGC=100) lets the heap grow to about twice
// the live data before it collects (measured: 5.3 GB resident for 2.5 GB of
// schedules on 1,024 dgx-h100 nodes).
const (
	bytesPerOp  = 2 * (int64(unsafe.Sizeof(Op{})) + 4 + 4 + 16)
	bytesPerDep = 2 * (4 + 4)
	// eventsPerOp is the engine events an op costs at least: its start or
	// completion, and for a transfer the network's completion callback.
	eventsPerOp = 2
)

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
	if mem := ops*bytesPerOp + deps*bytesPerDep; mem > b.memory() {
		return &BudgetError{Budget: "memory", Estimate: mem, Limit: b.memory(), Flag: "--max-memory", What: describe(e, call, ops)}
	}
	if ev := ops * eventsPerOp; ev > b.events() {
		return &BudgetError{Budget: "events", Estimate: ev, Limit: b.events(), Flag: "--max-events", What: describe(e, call, ops)}
	}
	return nil
}
