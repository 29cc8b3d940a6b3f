package sim

import (
	"fmt"

	"github.com/collsim/collsim/model"
)

// OpID identifies an operation in a Schedule (an index into Schedule.Ops).
type OpID int32

// OpKind is what an operation does.
type OpKind uint8

// Operation kinds.
const (
	// OpTransfer moves Bytes over Route once Latency has elapsed after its
	// dependencies completed.
	OpTransfer OpKind = iota
	// OpDelay takes Latency and moves nothing (a reduction, a kernel launch,
	// a proxy hand-off).
	OpDelay
)

// Op is one node of a schedule DAG.
type Op struct {
	Kind OpKind
	// Route is the sequence of directed links a transfer crosses. A transfer
	// with an empty route is a local copy that completes after Latency.
	Route []model.LinkID
	// Bytes is what each member flow carries over the wire (payload plus
	// protocol overhead), in bytes.
	Bytes float64
	// Weight is the number of identical member flows this op stands for
	// (channels that share the route); each member gets its own fair share.
	// 0 is read as 1.
	Weight int32
	// Latency is the fixed time before bytes start to flow (transfer) or the
	// whole duration (delay).
	Latency model.Time
	// RateCap bounds each member flow's rate in bytes per picosecond (a
	// per-channel limit such as one CTA's copy rate); 0 means no cap.
	RateCap float64
	// Deps are the operations that must complete before this one starts.
	// Every dependency must have a smaller ID (schedules are built in
	// topological order).
	Deps []OpID
	// Channel, Step and Rank label the op for traces and tests: the channel
	// group, the algorithm step and the global rank of the GPU that sends
	// (transfer) or works (delay); Rank is -1 when no single GPU does.
	Channel, Step, Rank int32
	// Unit is the pipeline unit (chunk or loop) the op belongs to, counted
	// from 0 in the order the schedule processes them.
	Unit int32
}

// Schedule is a DAG of operations in topological order.
type Schedule struct {
	Ops []Op
}

// Add appends op and returns its ID.
func (s *Schedule) Add(op Op) OpID {
	s.Ops = append(s.Ops, op)
	return OpID(len(s.Ops) - 1)
}

// Validate checks that dependencies point backwards, weights and sizes are
// sane and routes use links below numLinks. The error names the op.
func (s *Schedule) Validate(numLinks int) error {
	for i := range s.Ops {
		op := &s.Ops[i]
		for _, d := range op.Deps {
			if d < 0 || int(d) >= i {
				return fmt.Errorf("sim: op %d depends on op %d (dependencies must come first)", i, d)
			}
		}
		if op.Weight < 0 || op.Bytes < 0 || op.Latency < 0 || op.RateCap < 0 {
			return fmt.Errorf("sim: op %d has a negative weight, size, latency or rate cap", i)
		}
		for _, l := range op.Route {
			if l < 0 || int(l) >= numLinks {
				return fmt.Errorf("sim: op %d routes over link %d of %d", i, l, numLinks)
			}
		}
		if op.Kind == OpDelay && len(op.Route) > 0 {
			return fmt.Errorf("sim: delay op %d has a route", i)
		}
	}
	return nil
}

// LinkLoad returns, for every link, the bytes the schedule's transfers put
// on it (Bytes x Weight summed over the ops that cross it). It is the
// schedule's own accounting, independent of timing, used by the analytic
// engine and by tests that check an algorithm moves what its formula says.
func (s *Schedule) LinkLoad(numLinks int) []float64 {
	load := make([]float64, numLinks)
	for i := range s.Ops {
		op := &s.Ops[i]
		w := float64(max(op.Weight, 1))
		for _, l := range op.Route {
			load[l] += op.Bytes * w
		}
	}
	return load
}
