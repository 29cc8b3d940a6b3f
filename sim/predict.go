package sim

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/collsim/collsim/model"
)

// EngineKind selects how a call is timed.
type EngineKind string

// Engines.
const (
	// EngineDES executes the schedule DAG in the discrete-event flow simulator.
	EngineDES EngineKind = "des"
	// EngineAnalytic evaluates NCCL's latency + size/bandwidth form, with
	// the bandwidth of the link most loaded by the algorithm's traffic
	// matrix and the pipeline terms of its step structure (analytic.go);
	// it does not read the DES's schedule.
	EngineAnalytic EngineKind = "analytic"
)

// ParseEngine reads an engine name.
func ParseEngine(s string) (EngineKind, error) {
	switch EngineKind(s) {
	case EngineDES, EngineAnalytic:
		return EngineKind(s), nil
	}
	return "", fmt.Errorf("unknown engine %q (known: des, analytic)", s)
}

// Point is the prediction for one size, in nccl-tests terms.
type Point struct {
	// Size is nccl-tests' size column in bytes; Count its count column.
	Size  model.Bytes
	Count int64
	// TimeUs is the predicted time of one call in microseconds.
	TimeUs float64
	// AlgBW and BusBW are in GB/s (1e9 B/s) as nccl-tests computes them.
	AlgBW, BusBW float64
	// Choice is NCCL's algorithm, protocol and channel choice for the size.
	Choice model.Choice
	// Bottleneck names the most loaded link and its class; Utilisation is
	// the busiest links' share of the call time (0..1), busiest first.
	Bottleneck      string
	BottleneckClass string
	Utilisation     []LinkUse
	// Engine is the engine that produced TimeUs: EngineDES or
	// EngineAnalytic, never a silent substitute for the one requested.
	Engine EngineKind
	// Events and Ops are DES statistics (0 for the analytic engine).
	// Events counts the engine events this prediction ran: a size of a
	// Sweep (or Sweeper) whose DES schedule is identical, op for op, to the
	// previous size's takes that run's result and counts none (see
	// desMemo).
	Events int64
	Ops    int
	// Note explains a simulation shortcut taken, empty otherwise.
	Note string
}

// LinkUse is one link's load during a call.
type LinkUse struct {
	Link string
	// Busy is the link's bytes divided by its capacity, over the call time.
	Busy float64
}

// Request is what to predict.
type Request struct {
	Coll model.Collective
	// Sizes are requested sizes in bytes (nccl-tests -b/-e/-f).
	Sizes []model.Bytes
	// ElemSize is the datatype size (4 for float).
	ElemSize int
	Engine   EngineKind
	// Algo and Proto force a choice (NCCL_ALGO/NCCL_PROTO style); nil = NCCL's.
	Algo  *model.Algo
	Proto *model.Proto
	// Budget bounds each DES run (zero fields: the defaults).
	Budget Budget
	// Full switches off the symmetry reductions the DES may use where they
	// are proven exact (Env.Symmetric's one-node ring, and the bundles of
	// channel groups and GPU shards, bundle.go), so that tests can compare
	// the two on the same input.
	Full bool
	// Window is how many full pipeline units the DES simulates before it
	// checks for a steady state (0 = defaultWindow; negative = every unit).
	Window int
	// Workers is how many sizes Sweep and SweepEach run at once: 0 (the
	// default) runs GOMAXPROCS, 1 runs them one after another. The points
	// are the same either way.
	Workers int
	// Group, when set, is the worker slots and memory budget this sweep
	// shares with the other sweeps that run beside it (see SweepGroup);
	// Workers and Budget.MaxMemory are then the group's. The points are
	// the same as without it.
	Group *SweepGroup
}

// Sweep predicts every size of req. Sizes are adjusted as nccl-tests does
// (per-rank counts rounded for AllGather, ReduceScatter, AlltoAll). The
// sizes run on req.Workers goroutines at once (see SweepEach); the points
// are the same, bit for bit, whatever the count.
func (e *Env) Sweep(ctx context.Context, req Request) ([]Point, error) {
	out := make([]Point, 0, len(req.Sizes))
	err := e.SweepEach(ctx, req, func(_ int, p Point) error {
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SweepEach predicts every size of req as Sweep does and hands each point
// to each, in sweep order, as soon as it and every size before it are done
// (each runs on the caller's goroutine). The sizes are independent DES
// runs: min(req.Workers, sizes) of them run at once (Workers 0:
// GOMAXPROCS), and Workers 1 runs them one after another with a Sweeper.
// Either way a size whose DES schedule is identical, op for op, to the one
// the size before it ran takes that run's result and counts no events
// (desMemo), so the points, Events included, do not depend on the count.
// Concurrent runs share one memory budget (Budget.MaxMemory): a run starts
// only when its estimate fits beside the runs in flight, so large runs go
// one at a time. The first error in sweep order is returned, wrapped with
// its size (an error of each as it is), and the sizes after it are
// cancelled; the sizes before it are all handed to each.
func (e *Env) SweepEach(ctx context.Context, req Request, each func(i int, p Point) error) error {
	if req.ElemSize <= 0 {
		req.ElemSize = 4
	}
	if g := req.Group; g != nil {
		req.Budget.MaxMemory = g.pool.limit
		return e.sweepParallel(ctx, req, g, each)
	}
	workers := req.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers = min(workers, len(req.Sizes)); workers > 1 {
		return e.sweepParallel(ctx, req, NewSweepGroup(workers, req.Budget.MaxMemory), each)
	}
	sw := e.Sweeper()
	for i, s := range req.Sizes {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := sw.Predict(ctx, req, s)
		if err != nil {
			return fmt.Errorf("size %s: %w", model.FormatBytes(s), err)
		}
		if err := each(i, p); err != nil {
			return err
		}
	}
	return nil
}

// Sweeper predicts the sizes of a sweep one after another, as Env.Sweep
// does with one worker, for a caller that wants each point as soon as it is
// done: a size whose DES schedule is identical, op for op, to the size
// before's takes that run's result instead of running it again (exact; see
// desMemo), so the large sizes of a pipelined call cost one run between
// them. It holds the last such schedule until the next size. A Sweeper is
// not safe for concurrent use, and its Env must not be used concurrently
// with it.
type Sweeper struct {
	e    *Env
	memo desMemo
}

// Sweeper returns a Sweeper over e with no run to reuse yet.
func (e *Env) Sweeper() *Sweeper { return &Sweeper{e: e} }

// Predict times one requested size as Env.Predict does, reusing the DES run
// of the size predicted before it where the schedules are identical (the
// point's Events is then 0).
func (s *Sweeper) Predict(ctx context.Context, req Request, requested model.Bytes) (Point, error) {
	return s.e.predict(ctx, req, requested, &s.memo)
}

// p2pBlock is the bytes one rank sends one peer: an AlltoAll's share per
// peer, a SendRecv's whole buffer.
func p2pBlock(coll model.Collective, size model.Bytes, n int) float64 {
	if coll == model.SendRecv {
		return float64(size)
	}
	return float64(size) / float64(n)
}

// Predict times one requested size.
func (e *Env) Predict(ctx context.Context, req Request, requested model.Bytes) (Point, error) {
	return e.predict(ctx, req, requested, (*desMemo)(nil))
}

// predict is Predict with the DES runs of the sizes before it in a sweep
// (a nil *desMemo: none).
func (e *Env) predict(ctx context.Context, req Request, requested model.Bytes, memo runSource) (Point, error) {
	c := e.Cluster
	n := c.NumRanks()
	size, count := req.Coll.TestSize(requested, req.ElemSize, n)
	pt := Point{Size: size, Count: count}
	algo := req.Algo
	if algo == nil && (req.Coll == model.AlltoAll || req.Coll == model.SendRecv) {
		d := model.AlgoDirect
		algo = &d
	}
	choice, err := e.Tuner.Select(req.Coll, size, algo, req.Proto)
	if err != nil {
		return pt, err
	}
	pt.Choice = choice
	if size == 0 {
		// nccl-tests rounds the size down to whole elements per rank
		// (AlltoAll: a multiple of the ranks); with none left NCCL returns
		// without a launch (0.1-0.4 us measured, e.g. the 0-byte rows of
		// nccltests_h100sxm_1x4_nvlink_snellius_allgather_2.txt). Either
		// engine gives that call no time; the row still names the engine.
		pt.Engine = EngineAnalytic
		if req.Engine == EngineDES {
			pt.Engine = EngineDES
		}
		pt.Note = "nccl-tests rounds each size down to whole elements on every rank; at 0 elements NCCL returns without a call"
		return pt, nil
	}
	if choice.Algo == model.AlgoDirect && req.Proto == nil {
		// NCCL picks each point-to-point operation's protocol by its size
		// (LL below NCCL_P2P_LL_THRESHOLD per channel, model.Tuner.P2POpFor),
		// which both engines follow; the row reports it.
		pt.Choice.Proto = e.Tuner.P2POpFor(int64(p2pBlock(req.Coll, size, n))).Proto
	}
	call := Call{Coll: req.Coll, Bytes: size, Choice: choice}
	f, ph, phys, err := e.physicalForm(call)
	if err != nil {
		return pt, err
	}
	t, loads, capBound := e.analytic(f, e.baseLat(choice))
	pt.Note = joinNotes(f.note, phys)
	pt.Engine = EngineAnalytic
	if req.Engine == EngineDES {
		run, err := e.runDESMemo(ctx, req, call, false, ph, memo)
		if err != nil {
			return pt, err
		}
		t, pt.Note = run.time, joinNotes(run.note, phys)
		pt.Events, pt.Ops = run.events, run.ops
		pt.Engine = EngineDES
	}
	pt.Note = e.withFabricNotes(pt.Note)
	t, launchNote := e.launchFloor(t)
	pt.Note = joinNotes(pt.Note, launchNote)
	pt.TimeUs = t.Microseconds()
	if pt.TimeUs > 0 {
		pt.AlgBW = float64(size) / (pt.TimeUs * 1e3)
		pt.BusBW = pt.AlgBW * req.Coll.BusBWFactor(n)
	}
	if l := e.bottleneck(&pt, loads, t); l >= 0 {
		// Name the fabric mechanism behind a fabric bottleneck: of the
		// link itself, not of the first link of its name (a leaf's
		// parallel cables to one spine share one, and ECMP leaves some
		// idle).
		if m := e.fabricMechanism(f, l); m != "" {
			pt.Bottleneck += " (" + m + ")"
		}
	}
	switch {
	case capBound.kind == ceilNVLSReduce:
		// The switch's reduction sits in the NVLink domain: the NVLink
		// class, with the reduction named and its ports' load kept.
		pt.BottleneckClass = "NVLink"
		pt.Bottleneck = e.capLabel(capBound, choice.Proto) + "; its ports"
	case capBound.rate > 0:
		pt.BottleneckClass = "channel ceiling"
		pt.Bottleneck = e.capLabel(capBound, choice.Proto)
	}
	if launchNote != "" {
		pt.BottleneckClass = "host launch"
		pt.Bottleneck = fmt.Sprintf("one thread launching %d kernels per call", c.GPUsPerNode())
	}
	return pt, nil
}

// physicalForm builds the analytic form of a call with the fabric's
// physics in it: the background flows as demands, and the congestion
// physics' per-call capacities and extra latencies (physics_congestion.go),
// which both engines use. It returns what the DES needs of the same physics
// and the note that says what the physics did.
func (e *Env) physicalForm(call Call) (*form, desPhysics, string, error) {
	_, _, congestion := e.linkLayer()
	f, err := e.closedFormOf(call, congestion)
	if err != nil {
		return nil, desPhysics{}, "", err
	}
	bg, bgNote, err := e.addBackground(f)
	if err != nil {
		return nil, desPhysics{}, "", err
	}
	t0, _, _ := e.analytic(f, e.baseLat(call.Choice))
	cg := e.physics(f, t0)
	if cg != nil {
		// The congestion physics starts from the Env's capacities; a call
		// with its own (AlltoAll through an NVSwitch) keeps the lower.
		for l, c := range f.caps {
			cg.caps[l] = math.Min(cg.caps[l], c)
		}
		f.caps = cg.caps
		f.latHop += cg.maxExtraLat()
	}
	ph := desPhysics{caps: e.capsOf(f), cg: cg, bg: bg}
	return f, ph, joinNotes(bgNote, strings.Join(cg.notesOf(), "; ")), nil
}

// desPhysics is what the fabric's physics gives every DES run of a call:
// the per-call link capacities (nil: the Env's), the congestion's extra
// latencies and the background flows.
type desPhysics struct {
	caps []float64
	cg   *congestion
	bg   []bgFlow
}

// desRun is one call timed by the DES.
type desRun struct {
	time model.Time
	res  *Result
	pr   *prog
	ops  int
	// events is the engine events of every run it took (Result.Events
	// counts the one returned).
	events int64
	note   string
}

// defaultWindow is the number of full pipeline units the DES simulates
// before it looks for a steady state.
const defaultWindow = 8

// runDES builds and executes the call's schedule. A call with more full
// pipeline units than the window (M > K) is simulated on a prefix of K full
// units followed by the tail unit, and the end time of every full unit is
// read from the run. In a periodic pipeline every unit ends one period P
// after the one before it, and every further full unit delays the tail by
// the same P, so when a stretch of unit ends shows one period
// (steadyPeriod) the call takes T(K) + (M-K)P: exact for a periodic
// pipeline, and otherwise off by at most the stated spread per unit left
// out. A spacing equal to one unit's time on its busiest link (a saturated
// bottleneck, which every further unit crosses at the same cost) is
// accepted as the period. When no stretch shows one the window doubles, up
// to every unit (a full simulation). One run per window replaces the three
// prefixes (K, K+1 and K+2 units, each with the tail) an earlier version
// executed and compared. record keeps op times of the run returned.
func (e *Env) runDES(ctx context.Context, req Request, call Call, record bool, ph desPhysics) (*desRun, error) {
	return e.runDESMemo(ctx, req, call, record, ph, (*desMemo)(nil))
}

// runDESMemo is runDES that takes each run from memo: the result of an
// equal schedule's run where memo has one, else a new run it may keep.
func (e *Env) runDESMemo(ctx context.Context, req Request, call Call, record bool, ph desPhysics, memo runSource) (*desRun, error) {
	if record {
		memo = (*desMemo)(nil) // the memo's runs keep no op start times
	}
	caps := ph.caps
	if caps == nil {
		caps = e.caps
	}
	window := req.Window
	if window == 0 {
		// A unit's phases overlap the next units' only once the window
		// spans a few pipeline depths, and the units just before the tail
		// share links with it. Measured: on 4 x dgx-a100 a tree settles
		// after about 1.7 depths, and on 32 x dgx-h100 NVLSTree's last
		// depth + 5 units are disturbed by the tail, so three depths and
		// eight units leave a periodic stretch; two depths found a
		// stretch before the asymptotic state on 128 nodes (6 us off).
		// Starting there saves doublings; the periodicity check doubles
		// the window when it is too short.
		window = max(defaultWindow, 3*e.pipelineDepth(call)+8)
	}
	if window < 0 {
		window = 0
	} else if window < 5 {
		window = 5 // five unit ends show two spacings over two units
	}
	// Channel groups may run as bundles (bundle.go) unless the run keeps
	// every op's times (a timeline) or adds what the bundling check does
	// not see: background flows, the congestion physics' latencies.
	var bundleCaps []float64
	if !record && !req.Full && len(ph.bg) == 0 && ph.cg == nil {
		bundleCaps = caps
	}
	one := func(w int) (*desRun, error) {
		budget := req.Budget
		budget.hold = memo.hold(ctx)
		defer budget.hold.release()
		pr, err := e.program(call, true, desOpts{window: w, budget: budget, full: req.Full, times: record, bundleCaps: bundleCaps})
		if err != nil {
			return nil, err
		}
		nops := pr.sched.Len()
		ours := addBackgroundOps(pr.sched, ph.bg)
		ph.cg.apply(pr.sched)
		maxEvents := req.Budget.events()
		res, ran, err := memo.run(ctx, pr, caps, maxEvents, budget.hold, func(s *Schedule) (*Result, error) {
			return Execute(ctx, s, caps, ExecOptions{RecordOpTimes: record, UnitEnds: true, CallOps: nops, MaxEvents: maxEvents, What: describe(e, call, int64(nops))})
		})
		if err != nil {
			return nil, err
		}
		if res.CallOps != nops {
			// An equal schedule's run has the same call ops; guard the reuse.
			return nil, fmt.Errorf("sim: a reused DES run covers %d call ops, want %d", res.CallOps, nops)
		}
		t := res.Makespan
		if ours >= 0 {
			// Background flows outlast the call: its time is that of its
			// own ops.
			t = res.CallEnd
		}
		return &desRun{time: t, res: res, pr: pr, ops: nops, events: ran, note: pr.Note}, nil
	}
	var spent int64 // events of the windows that showed no period
	for {
		r, err := one(window)
		if err != nil {
			return nil, err
		}
		r.events += spent
		if r.pr.skipped == 0 {
			r.trim(record)
			return r, nil
		}
		// No periodic pipeline repeats units faster than one unit's bytes
		// take on its busiest link; a shorter spacing means the pipeline
		// has not filled there (its last phases do not yet overlap).
		bound := unitBound(r.pr.sched, caps, int32(window-1))
		ends := unitEnds(r.res.UnitEnd, window)
		if p, spread, saturated, ok := steadyPeriod(ends, bound); ok {
			total := window + r.pr.skipped
			r.time += model.Time(r.pr.skipped) * p
			how := fmt.Sprintf("periodic within %d ps", spread)
			if saturated {
				how = "its busiest link saturated"
			}
			r.note = joinNotes(r.note, fmt.Sprintf("DES simulated %d of %d pipeline units in full; each of the other %d adds the steady-state period of %.3f us it measured (%s)",
				window, total, r.pr.skipped, p.Microseconds(), how))
			r.trim(record)
			return r, nil
		}
		spent = r.events
		window *= 2
	}
}

// desMemo holds the last DES run of a sweep. Execute is a deterministic
// function of the schedule, the capacities and the event budget, so a run
// whose schedule equals the memo's op for op (every field, routes and
// dependencies element by element) over the same capacities and budget has
// the memo's result exactly: the large sizes of a pipelined call build the
// same window of full units and differ only in the units left out, which
// steadyPeriod adds back. A nil memo holds nothing.
type desMemo struct {
	sched     *Schedule
	caps      []float64
	maxEvents int64
	res       Result // op times included
}

// lookup returns a copy of the memo's result if s, caps and maxEvents are
// the memo's (and 0 events run), else nil, and then empties the memo so
// that its schedule can be freed while s runs. O(ops + deps + route links).
func (m *desMemo) lookup(s *Schedule, caps []float64, maxEvents int64) (*Result, int64) {
	if m == nil || m.sched == nil {
		return nil, 0
	}
	if m.maxEvents != maxEvents || !slices.Equal(m.caps, caps) || !sameSchedule(m.sched, s) {
		*m = desMemo{}
		return nil, 0
	}
	r := m.res
	return &r, 0
}

// runSource is where the DES runs of a prediction come from: a desMemo
// (the run of the size before, one size after another; nil: none) or one
// size's share of a parallel sweep's runs (sweepSize).
type runSource interface {
	// run returns the result of executing pr.sched over caps within
	// maxEvents, by exec or from an equal schedule's run, and the events
	// it counts; pr.skipped > 0 marks a run worth keeping. It may replace
	// pr.sched by an equal schedule, and lets go of hold while it waits.
	run(ctx context.Context, pr *prog, caps []float64, maxEvents int64, hold *memHold, exec func(*Schedule) (*Result, error)) (*Result, int64, error)
	// hold returns what one run's memory is reserved in (nil: nothing to
	// reserve beyond the budget's own check).
	hold(ctx context.Context) *memHold
}

// run takes the memo's result when pr's schedule is the memo's, else
// executes it and keeps the run when it left pipeline units out.
func (m *desMemo) run(_ context.Context, pr *prog, caps []float64, maxEvents int64, _ *memHold, exec func(*Schedule) (*Result, error)) (*Result, int64, error) {
	if res, ran := m.lookup(pr.sched, caps, maxEvents); res != nil {
		return res, ran, nil
	}
	res, err := exec(pr.sched)
	if err != nil {
		return nil, 0, err
	}
	if pr.skipped > 0 {
		m.store(pr.sched, caps, maxEvents, res)
	}
	return res, res.Events, nil
}

func (m *desMemo) hold(context.Context) *memHold { return nil }

// store makes the run of s the memo's. The schedule is kept as it is: the
// caller does not modify it afterwards. Only a run that left pipeline units
// out is stored: without a window a schedule holds every byte of its size,
// so the next size's cannot equal it, and keeping it would only hold its
// memory.
func (m *desMemo) store(s *Schedule, caps []float64, maxEvents int64, res *Result) {
	if m == nil {
		return
	}
	m.sched, m.caps, m.maxEvents, m.res = s, caps, maxEvents, *res
}

// sameSchedule reports whether a and b have equal ops, field by field.
func sameSchedule(a, b *Schedule) bool {
	if a.Len() != b.Len() || !slices.Equal(a.deps, b.deps) {
		return false
	}
	for i := range a.recs {
		x, y := &a.recs[i], &b.recs[i]
		// Shapes compare bit for bit; a float field that differs only in
		// its bits (0 and -0) is not equal, where == would call it so:
		// the stricter test, as the run then cannot differ.
		if x.rank != y.rank || x.depEnd != y.depEnd || a.shapes[x.shape] != b.shapes[y.shape] ||
			!slices.Equal(a.routes[x.route], b.routes[y.route]) {
			return false
		}
	}
	return true
}

// steadyPeriod looks, from the end of the prefix back, for the latest
// stretch of five unit ends whose spacings, each taken over two units (a
// call split over two trees or channel halves can alternate a short and a
// long spacing around its period), agree within periodTol, or equal the
// busiest link's time per unit (saturated), and are no shorter than it.
// The units just before the tail share links with it and the first ones
// fill the pipeline, so neither shows the period; the search skips them by
// the test itself.
func steadyPeriod(ends []model.Time, bound float64) (p, spread model.Time, saturated, ok bool) {
	for u := len(ends) - 5; u >= 0; u-- {
		p1, p2 := (ends[u+2]-ends[u])/2, (ends[u+4]-ends[u+2])/2
		if p2 <= 0 || float64(p2+periodTol) < bound {
			continue
		}
		spread = max(p1, p2) - min(p1, p2)
		saturated = math.Abs(float64(p2)-bound) <= periodTol && math.Abs(float64(p1)-bound) <= periodTol
		if saturated || spread <= periodTol {
			return p2, spread, saturated, true
		}
	}
	return 0, 0, false, false
}

// trim frees the op times of a run whose caller did not ask for them.
func (r *desRun) trim(record bool) {
	if !record {
		r.res.OpStart, r.res.OpEnd, r.res.UnitEnd = nil, nil, nil
	}
}

// unitEnds returns, for the first k pipeline units, the time the last of
// the call's ops of each unit ends (Result.UnitEnd; 0 for a unit without
// ops).
func unitEnds(unitEnd []model.Time, k int) []model.Time {
	end := make([]model.Time, k)
	copy(end, unitEnd)
	return end
}

// pipelineDepth is the number of hops a unit crosses on the critical path
// of the call's algorithm: the window starts at least that long.
func (e *Env) pipelineDepth(call Call) int {
	c := e.Cluster
	N, G := c.NumNodes(), c.GPUsPerNode()
	depth := int(math.Ceil(math.Log2(float64(max(N, 1)))))
	switch a := call.Choice.Algo; {
	case a == model.AlgoTree:
		return 2 * (G - 1 + depth)
	case a == model.AlgoNVLSTree:
		return 2 + 2*depth
	case a == model.AlgoRing && (call.Coll == model.Broadcast || call.Coll == model.Reduce):
		return c.NumRanks() - 1
	}
	return 4
}

// unitBound is the time, in picoseconds, the bytes of pipeline unit u take
// on their busiest link: no periodic pipeline repeats units faster.
func unitBound(s *Schedule, caps []float64, u int32) float64 {
	load := make([]float64, len(caps))
	for i := range s.recs {
		op := s.shape(i)
		if op.unit != u || op.kind != OpTransfer {
			continue
		}
		b := math.Float64frombits(op.bytes)
		for _, l := range s.opRoute(i) {
			load[l] += b * float64(max(op.weight, 1))
		}
	}
	var t float64
	for l, b := range load {
		if b > 0 {
			t = math.Max(t, b/caps[l])
		}
	}
	return t
}

// joinNotes joins two notes with "; ", skipping empty ones.
func joinNotes(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// periodTol is the spread, in picoseconds, allowed between consecutive
// unit periods of a periodic pipeline: completion times are rounded up to
// whole picoseconds, so identical units may differ by a picosecond each way.
const periodTol = 2

// bottleneck fills the most loaded links of a call and returns the
// busiest (-1 when no link carries anything).
func (e *Env) bottleneck(pt *Point, loads []float64, t model.Time) model.LinkID {
	if t <= 0 {
		return -1
	}
	type lu struct {
		id   int
		busy float64
	}
	var us []lu
	for l, ld := range loads {
		if ld > 0 && e.caps[l] > 0 {
			us = append(us, lu{l, ld / e.caps[l] / float64(t)})
		}
	}
	sort.SliceStable(us, func(i, j int) bool {
		if us[i].busy != us[j].busy {
			return us[i].busy > us[j].busy
		}
		return us[i].id < us[j].id
	})
	for i, u := range us {
		if i >= 8 {
			break
		}
		pt.Utilisation = append(pt.Utilisation, LinkUse{Link: e.LinkName(model.LinkID(u.id)), Busy: math.Min(u.busy, 1)})
	}
	if len(us) == 0 {
		return -1
	}
	pt.Bottleneck = e.LinkName(model.LinkID(us[0].id))
	pt.BottleneckClass = e.linkClassName(model.LinkID(us[0].id))
	return model.LinkID(us[0].id)
}

// linkClassName names the class of a link for summaries: "NVLink",
// "PCIe", "NIC", "fabric", "inter-socket", "host memory", "cross-socket P2P".
func (e *Env) linkClassName(id model.LinkID) string {
	t := e.Cluster.Topo
	if id >= e.hostBase {
		return "SHM host traffic"
	}
	if id >= e.xsockBase {
		return "cross-socket P2P"
	}
	if int(id) >= len(t.Links) {
		return "fabric" // a bundle of parallel fabric links
	}
	l := &t.Links[id]
	switch l.Kind {
	case model.LinkNVLink:
		return "NVLink"
	case model.LinkPCIe:
		return "PCIe"
	case model.LinkSMP:
		return "inter-socket"
	case model.LinkMem:
		return "host memory"
	case model.LinkNet:
		if t.Elem(l.From).Kind == model.KindNIC || t.Elem(l.To).Kind == model.KindNIC {
			return "NIC"
		}
		return "fabric"
	}
	return l.Kind.String()
}
