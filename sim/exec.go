package sim

import (
	"context"
	"fmt"
	"math"

	"github.com/collsim/collsim/model"
)

// ExecOptions tunes Execute.
type ExecOptions struct {
	// RecordOpTimes fills Result.OpStart and Result.OpEnd (two int64 per op).
	RecordOpTimes bool
	// RecordOpEnds fills Result.OpEnd alone (one int64 per op).
	RecordOpEnds bool
	// UnitEnds fills Result.UnitEnd and Result.CallEnd from the first
	// CallOps ops (0: every op), in one int64 per pipeline unit instead
	// of one per op.
	UnitEnds bool
	CallOps  int
	// MaxEvents stops the run with a *BudgetError once the engine has
	// processed more events (0 = no bound); What describes the run in it.
	MaxEvents int64
	What      string
}

// Result is what Execute measured.
type Result struct {
	// Makespan is the time the last op completed, in picoseconds (0 for an
	// empty schedule).
	Makespan model.Time
	// OpStart[i] is when op i became ready (its last dependency completed;
	// 0 for ops without dependencies), before its Latency. OpEnd[i] is when
	// it completed. Both are nil unless ExecOptions.RecordOpTimes is set;
	// ExecOptions.RecordOpEnds fills OpEnd alone.
	OpStart, OpEnd []model.Time
	// UnitEnd[u] is when the last op labelled with pipeline unit u among
	// the first CallOps ops completed (0 for a unit without any), and
	// CallEnd when the last of those ops did; both are set only with
	// ExecOptions.UnitEnds.
	UnitEnd []model.Time
	CallEnd model.Time
	CallOps int
	// LinkBytes is the bytes each link carried (Bytes x Weight per
	// traversal), indexed by model.LinkID; it equals Schedule.LinkLoad.
	LinkBytes []float64
	// LinkBusy is the time each link carried at least one flow, indexed by
	// model.LinkID.
	LinkBusy []model.Time
	// Events is the number of engine events processed.
	Events int64
	// Flows is the number of network flows started (one per transfer op).
	Flows int64
	// Recomputes is the number of max-min rate recomputations.
	Recomputes int64
}

// Event arguments: the low 32 bits hold the op ID shifted left by two and
// a tag in the low two bits; the high 32 bits hold the op's shape index, so that
// a completion finds the op's pipeline unit in the small shape table
// instead of reading the op's record, which is no longer in cache when the
// op ends (ops end in an order far from their IDs).
const (
	tagStart    = 0 // start op's flow (a transfer whose latency has elapsed)
	tagComplete = 1 // op completed
	tagArrive   = 2 // a transfer's flow ended; it completes After later
	tagMask     = 3
)

// maxExecOps is the most ops an event argument can name (30 bits).
const maxExecOps = 1 << 30

// executor is the per-run state of Execute: flat slices indexed by op ID.
type executor struct {
	s    *Schedule
	eng  *Engine
	net  *Network
	x    []xop // per op, and one more that ends the successor lists
	succ []OpID
	// orig is the schedule's ID of each op: the executor numbers ops by
	// their depth in the dependency graph (see build), and x, succ and the
	// event arguments use its numbers.
	orig []OpID
	// raw holds x, succ and orig outside the Go heap until the run ends.
	raw      rawArena
	start    []model.Time
	end      []model.Time
	done     int
	makespan model.Time
	// unitEnd, callEnd and callOps are ExecOptions.UnitEnds' (unitEnd nil
	// without it).
	unitEnd   []model.Time
	callEnd   model.Time
	callOps   int
	maxEvents int64
	what      string
}

// xop is the executor's state of its op i, in 16 bytes (four to a cache
// line): the count of unfinished dependencies, where the op's successors
// start in executor.succ (they end where op i+1's start), and the op's
// shape and route (copies of its record's). The numbering (build) keeps
// ops that run together close, but successors still land on lines of
// their own; the op's latency and kind are read from its shape
// (Schedule.shapes, a small table that stays in cache) when it becomes
// ready, through the line the completion that readied it has just
// touched, rather than through its record in Schedule.recs, which would
// be a second miss.
type xop struct {
	succ         int32
	remaining    int32
	shape, route int32
}

// Execute runs schedule s over links with the given capacities (bytes per
// picosecond, indexed by model.LinkID) and returns its timing. Ops without
// dependencies become ready at time 0. When an op's last dependency
// completes at t, an OpDelay completes at t+Latency and an OpTransfer starts
// its flow (Route, Bytes, Weight, RateCap) at t+Latency and completes when
// the flow does; transfers share links max-min fairly (see Network).
//
// The schedule is validated first (Schedule.Validate); an op routed over a
// link of zero capacity is an error naming the op and link, as are a NaN or
// infinite size, a NaN rate cap and a nil s. If ctx is cancelled the run
// stops with ctx.Err(); other run-time errors are *EventError. Execute does
// not modify s and keeps no reference to it after returning.
//
// Time is O(ops + deps + events x log(pending events)) plus, per recompute,
// the work on the flows that instant's starts and ends can affect (see
// Network); memory is O(ops + deps + links) with no per-op heap allocation.
func Execute(ctx context.Context, s *Schedule, capacity []float64, opts ExecOptions) (*Result, error) {
	if s == nil {
		return nil, fmt.Errorf("sim: Execute with a nil schedule")
	}
	if err := s.Validate(len(capacity)); err != nil {
		return nil, err
	}
	if s.Len() >= maxExecOps {
		return nil, fmt.Errorf("sim: a schedule of %d ops is more than the %d one run can execute", s.Len(), maxExecOps)
	}
	eng := NewEngine()
	net, err := NewNetwork(eng, capacity)
	if err != nil {
		return nil, err
	}
	x := &executor{s: s, eng: eng, net: net, maxEvents: opts.MaxEvents, what: opts.What}
	defer x.raw.free()
	if err := x.build(capacity); err != nil {
		return nil, err
	}
	if opts.RecordOpTimes {
		x.start = make([]model.Time, s.Len())
	}
	if opts.RecordOpTimes || opts.RecordOpEnds {
		x.end = make([]model.Time, s.Len())
	}
	if opts.UnitEnds {
		x.callOps = s.Len()
		if opts.CallOps > 0 {
			x.callOps = min(opts.CallOps, s.Len())
		}
		units := int32(-1)
		for i := range x.callOps {
			units = max(units, s.shape(i).unit)
		}
		x.unitEnd = make([]model.Time, units+1)
	}
	if err := x.roots(); err != nil {
		return nil, err
	}
	if err := eng.Run(ctx); err != nil {
		return nil, err
	}
	if x.done != s.Len() {
		// Unreachable for a validated DAG; guard against a silent wrong answer.
		return nil, fmt.Errorf("sim: run ended with %d of %d ops complete", x.done, s.Len())
	}
	return &Result{
		Makespan:   x.makespan,
		OpStart:    x.start,
		OpEnd:      x.end,
		UnitEnd:    x.unitEnd,
		CallEnd:    x.callEnd,
		CallOps:    x.callOps,
		LinkBytes:  net.LinkBytes(),
		LinkBusy:   net.LinkBusy(),
		Events:     eng.Events(),
		Flows:      net.Flows(),
		Recomputes: net.Recomputes(),
	}, nil
}

// build checks op kinds, sizes and link capacities and fills the
// dependency counters and the successor lists (CSR, successors in
// ascending order) in the executor's own numbering of the ops: by depth
// (the longest chain of dependencies that leads to an op), the schedule's
// order within a depth. Ops that run at about the same time are then
// close in x and succ, where the schedule's order (a builder adds a
// channel's or a rank's ops together) puts them far apart, each its own
// cache miss; nothing else depends on the numbering (roots are readied in
// the schedule's order, which is theirs at depth 0, and op times are
// reported under the schedule's IDs). Four passes over the ops, no
// allocation beyond the result slices (outside the Go heap, see
// rawArena).
func (x *executor) build(capacity []float64) error {
	s := x.s
	n := s.Len()
	// Each shape and route is checked once, at the first op that has it,
	// so the error names the op the check of every op would.
	shapeOK := make([]bool, len(s.shapes))
	routeOK := make([]bool, len(s.routes))
	var err error
	if x.x, err = rawSlice[xop](&x.raw, n+1); err != nil {
		return err
	}
	if x.orig, err = rawSlice[OpID](&x.raw, n); err != nil {
		return err
	}
	// Every dependency is one successor edge.
	if x.succ, err = rawSlice[OpID](&x.raw, s.depStart(n)); err != nil {
		return err
	}
	// pos[i] is first op i's depth, then its number; dependencies come
	// before their ops (Schedule.Validate), so one pass finds depths. It
	// is unmapped once the lists are built.
	pos, err := rawSlice[int32](&x.raw, n)
	if err != nil {
		return err
	}
	defer release(&x.raw, pos)
	var count []int32 // ops per depth
	for i := range s.recs {
		r := &s.recs[i]
		op := &s.shapes[r.shape]
		if !shapeOK[r.shape] {
			if op.kind != OpTransfer && op.kind != OpDelay {
				return fmt.Errorf("sim: op %d has unknown kind %d", i, op.kind)
			}
			bytes, rateCap := math.Float64frombits(op.bytes), math.Float64frombits(op.rateCap)
			if math.IsNaN(bytes) || math.IsInf(bytes, 0) || math.IsNaN(rateCap) {
				return fmt.Errorf("sim: op %d has size %v and rate cap %v (want finite numbers)", i, bytes, rateCap)
			}
		}
		if !routeOK[r.route] {
			for _, l := range s.routes[r.route] {
				if !(capacity[l] > 0) {
					return fmt.Errorf("sim: op %d routes over link %d, which has zero capacity", i, l)
				}
			}
		}
		shapeOK[r.shape], routeOK[r.route] = true, true
		depth := int32(0)
		for _, d := range s.opDeps(i) {
			depth = max(depth, pos[d]+1)
		}
		pos[i] = depth
		if int(depth) == len(count) {
			count = append(count, 0)
		}
		count[depth]++
	}
	// Exclusive prefix sums: count[d] is the first number of depth d.
	next := int32(0)
	for d, c := range count {
		count[d], next = next, next+c
	}
	for i := range pos {
		d := pos[i]
		pos[i] = count[d]
		count[d]++
		x.orig[pos[i]] = OpID(i)
	}
	for i := range s.recs {
		r := &s.recs[i]
		o := &x.x[pos[i]]
		deps := s.opDeps(i)
		o.remaining = int32(len(deps))
		o.shape, o.route = r.shape, r.route
		for _, d := range deps {
			x.x[pos[d]].succ++
		}
	}
	// Inclusive prefix sums: x[d].succ is the end of d's range (x[n].succ
	// is every dependency, len(x.succ)) ...
	for i := 1; i <= n; i++ {
		x.x[i].succ += x.x[i-1].succ
	}
	// ... and filling backwards, by the successors' numbers, moves it to
	// the start with each list ascending.
	for j := n - 1; j >= 0; j-- {
		deps := s.opDeps(int(x.orig[j]))
		for k := len(deps) - 1; k >= 0; k-- {
			d := pos[deps[k]]
			x.x[d].succ--
			x.succ[x.x[d].succ] = OpID(j)
		}
	}
	return nil
}

// roots readies the ops without dependencies at time 0.
func (x *executor) roots() error {
	for j := range x.s.recs {
		if x.x[j].remaining == 0 {
			if err := x.ready(OpID(j), 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// ready is called when op id's last dependency completed at now.
func (x *executor) ready(id OpID, now model.Time) error {
	if x.start != nil {
		x.start[x.orig[id]] = now
	}
	sh := x.x[id].shape
	op := &x.s.shapes[sh]
	if op.kind == OpDelay {
		x.at(now+op.latency, eventArg(id, sh, tagComplete))
		return nil
	}
	if op.latency == 0 {
		x.startFlow(id)
		return nil
	}
	x.at(now+op.latency, eventArg(id, sh, tagStart))
	return nil
}

// eventArg is the event argument of op id, of shape sh, with tag.
func eventArg(id OpID, sh int32, tag int64) int64 {
	return int64(sh)<<32 | int64(id)<<2 | tag
}

// at queues the executor's event arg (eventArg) at t; at the current time
// it goes after the running event in the same tier, so it is legal from
// any handler.
func (x *executor) at(t model.Time, arg int64) {
	if t == x.eng.Now() {
		x.eng.ScheduleNow(x, arg)
	} else {
		x.eng.ScheduleActor(t, x, arg)
	}
}

// startFlow starts op id's flow. build has made the checks Network.Start
// makes (Schedule.Validate the ranges and signs, build finite sizes and
// capacities), so the flow goes in unchecked.
func (x *executor) startFlow(id OpID) {
	r := &x.x[id]
	op := &x.s.shapes[r.shape]
	tag := int64(tagComplete)
	if op.after > 0 {
		tag = tagArrive
	}
	x.net.start(&Flow{
		Route:   x.s.routes[r.route],
		Bytes:   math.Float64frombits(op.bytes),
		Weight:  op.weight,
		RateCap: math.Float64frombits(op.rateCap),
		Done:    x,
		Arg:     eventArg(id, r.shape, tag),
	})
}

// Act handles the executor's events and flow completions.
func (x *executor) Act(now model.Time, arg int64) error {
	id := OpID(uint32(arg) >> 2)
	switch arg & tagMask {
	case tagStart:
		x.startFlow(id)
		return nil
	case tagArrive:
		sh := int32(arg >> 32)
		x.at(now+x.s.shapes[sh].after, eventArg(id, sh, tagComplete))
		return nil
	}
	if x.end != nil {
		x.end[x.orig[id]] = now
	}
	// Only background ops (past CallOps) need the schedule's ID here.
	if x.unitEnd != nil && (x.callOps == len(x.orig) || int(x.orig[id]) < x.callOps) {
		x.callEnd = max(x.callEnd, now)
		if u := x.s.shapes[arg>>32].unit; u >= 0 {
			x.unitEnd[u] = max(x.unitEnd[u], now)
		}
	}
	if x.maxEvents > 0 && x.eng.Events() > x.maxEvents {
		return &BudgetError{Budget: "events", Estimate: x.eng.Events(), Limit: x.maxEvents, Flag: "--max-events", What: x.what, Running: true}
	}
	x.done++
	x.makespan = max(x.makespan, now)
	for _, s := range x.succ[x.x[id].succ:x.x[id+1].succ] {
		x.x[s].remaining--
		if x.x[s].remaining == 0 {
			if err := x.ready(s, now); err != nil {
				return err
			}
		}
	}
	return nil
}
