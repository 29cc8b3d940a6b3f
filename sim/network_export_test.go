package sim

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/collsim/collsim/model"
)

// DESSchedule returns the schedule the DES engine executes for one call of
// req.Coll at the requested size (as Predict sizes it), every pipeline unit
// included, or the error that refuses it (a budget). Test-only: it lets benchmarks time the
// network alone.
func (e *Env) DESSchedule(req Request, requested model.Bytes) (*Schedule, error) {
	if req.ElemSize <= 0 {
		req.ElemSize = 4
	}
	size, _ := req.Coll.TestSize(requested, req.ElemSize, e.Cluster.NumRanks())
	ch, err := e.Tuner.Select(req.Coll, size, req.Algo, req.Proto)
	if err != nil {
		return nil, err
	}
	pr, err := e.program(Call{Coll: req.Coll, Bytes: size, Choice: ch}, true, desOpts{budget: req.Budget, full: req.Full})
	if err != nil {
		return nil, err
	}
	return pr.sched, nil
}

// NetStats is what ExecuteNetStats measures of one run.
type NetStats struct {
	Makespan   model.Time
	Flows      int64 // flows started
	Classes    int64 // flow classes created
	Recomputes int64
	Events     int64
	OpEnd      []model.Time // completion time per op
}

// ExecuteNetStats runs s as Execute does and returns the network's
// counters; classes false starts every flow in a class of its own, to
// measure what classes save. Test-only.
func ExecuteNetStats(ctx context.Context, s *Schedule, capacity []float64, classes bool) (NetStats, error) {
	if err := s.Validate(len(capacity)); err != nil {
		return NetStats{}, err
	}
	eng := NewEngine()
	net, err := NewNetwork(eng, capacity)
	if err != nil {
		return NetStats{}, err
	}
	net.noJoin = !classes
	x := &executor{s: s, eng: eng, net: net}
	defer x.raw.free()
	if err := x.build(capacity); err != nil {
		return NetStats{}, err
	}
	x.start = make([]model.Time, s.Len())
	x.end = make([]model.Time, s.Len())
	if err := x.roots(); err != nil {
		return NetStats{}, err
	}
	if err := eng.Run(ctx); err != nil {
		return NetStats{}, err
	}
	if x.done != s.Len() {
		return NetStats{}, fmt.Errorf("run ended with %d of %d ops complete", x.done, s.Len())
	}
	return NetStats{Makespan: x.makespan, Flows: net.Flows(), Classes: net.classes, Recomputes: net.Recomputes(), Events: eng.Events(), OpEnd: x.end}, nil
}

// MemEstimate is the memory estimate the budget checks for running s
// over links links (Schedule.memEstimate). Test-only.
func (s *Schedule) MemEstimate(links int) int64 { return s.memEstimate(links) }

// ExecStateBytes is what Execute maps outside the Go heap for s, where it
// maps (the executor's per-op state and successor lists, each once it
// reaches rawMinBytes). Test-only.
func (s *Schedule) ExecStateBytes() int64 {
	var n int64
	for _, b := range []int64{int64(s.Len()+1) * int64(unsafe.Sizeof(xop{})), int64(s.depCount()) * 4} {
		if b >= rawMinBytes && rawHeapFactor == 1 {
			n += b
		}
	}
	return n
}

// HeapScheduleBytes is what s itself holds on the Go heap. Test-only.
func (s *Schedule) HeapScheduleBytes() int64 {
	return int64(s.Len())*bytesPerRec + int64(s.depCount())*4 + s.tableBytes()
}
