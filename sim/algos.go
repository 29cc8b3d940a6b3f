package sim

import (
	"fmt"
	"runtime"

	"github.com/collsim/collsim/model"
)

// prog is one call's DES schedule and what it leaves out.
type prog struct {
	// units are the payload bytes of every pipeline unit (chunk or ring
	// loop) per channel, in order.
	units []float64
	sched *Schedule
	// skipped is how many full pipeline units the DES schedule leaves out
	// (see builder.simUnits); 0 when it holds every unit.
	skipped int
	// Note explains a simulation shortcut taken, empty otherwise.
	Note string
	// reserved is builder.reserved: what the memory estimate counted.
	reserved [2]int64
}

// builder holds state while building one call.
type builder struct {
	e     *Env
	call  Call
	des   bool
	sched *Schedule
	base  OpID
	// window is how many full pipeline units the DES builds at most (0 =
	// all); see simUnits.
	window int
	// budget bounds the schedule the DES builds.
	budget Budget
	// unit labels the ops being added with their pipeline unit.
	unit int32
	// full switches the symmetry reductions off (Request.Full).
	full bool
	// fold lets a transfer that only its arrival waits on carry the
	// arrival's latency (addThen) instead of a delay op of its own: off
	// when the run records op times, so that a timeline shows the step
	// latencies apart.
	fold bool
	// bundleCaps are the link capacities the run will use, for the check
	// that lets channel groups the fabric treats alike run as one
	// (bundle.go); nil: every group on its own.
	bundleCaps []float64
	// reserved is the ops and dependency entries reserve was told the
	// schedule holds at most (the base op aside).
	reserved [2]int64
	// Scratch dependency lists, reused op after op (Schedule.add copies
	// what it is given): deps for the builders' own lists, split for
	// addSplit's (which a builder's list may be handed to) and parts for
	// the ops addSplit joins.
	deps, split, parts []OpID
}

// depList returns the builder's deps scratch holding first and then rest;
// it is valid until the next call.
func (b *builder) depList(first OpID, rest ...OpID) []OpID {
	b.deps = append(append(b.deps[:0], first), rest...)
	return b.deps
}

// Call is one collective call.
type Call struct {
	Coll model.Collective
	// Bytes is NCCL's size: the buffer for AllReduce/Broadcast/Reduce, the
	// total (all ranks) buffer for AllGather/ReduceScatter/AlltoAll.
	Bytes  model.Bytes
	Choice model.Choice
}

func (b *builder) add(op Op, deps ...OpID) OpID {
	op.Unit = b.unit
	return b.sched.add(&op, deps)
}

// algorithm is one of NCCL's algorithms as collsim schedules it. A new
// algorithm (CollNet, PAT, an imported schedule) is one file with a type
// that implements it, and one row in algorithms.
type algorithm interface {
	// name says what it builds, for errors and notes.
	name() string
	// applies reports whether it builds calls of the collective with the
	// algorithm NCCL chose.
	applies(a model.Algo, coll model.Collective) bool
	// build turns the call into a schedule for the DES (b.sched) when
	// b.des is set.
	build(b *builder) (*prog, error)
}

// algorithms lists every modelled algorithm; the first that applies builds
// the call.
var algorithms = [...]algorithm{ringAlgo{}, chainAlgo{}, treeAlgo{}, nvlsAlgo{}, nvlsTreeAlgo{}, directAlgo{}, collNetDirectAlgo{}, collNetChainAlgo{}, patAlgo{}}

// lookupAlgorithm returns the builder of a call.
func lookupAlgorithm(a model.Algo, coll model.Collective) (algorithm, error) {
	for _, al := range algorithms {
		if al.applies(a, coll) {
			return al, nil
		}
	}
	return nil, fmt.Errorf("sim: algorithm %s is not modelled", a)
}

// desOpts shape the DES schedule program builds.
type desOpts struct {
	// window is how many full pipeline units to build at most (0 = all).
	window int
	// budget refuses, before allocating it, a schedule beyond it.
	budget Budget
	// full switches the symmetry reductions off.
	full bool
	// times is set when the run records every op's start and end
	// (ExecOptions.RecordOpTimes), for the memory estimate.
	times bool
	// bundleCaps are the link capacities of the run when channel groups
	// may be bundled (bundle.go): nil when every op must stand for itself
	// (a recorded timeline) or the run adds flows or latencies the check
	// does not see (background traffic, congestion physics).
	bundleCaps []float64
}

// program builds the call for the chosen algorithm. With des set it also
// builds the DES schedule as o says.
func (e *Env) program(call Call, des bool, o desOpts) (*prog, error) {
	al, err := lookupAlgorithm(call.Choice.Algo, call.Coll)
	if err != nil {
		return nil, err
	}
	b := &builder{e: e, call: call, des: des, window: o.window, budget: o.budget, full: o.full, bundleCaps: o.bundleCaps}
	b.budget.times = o.times
	b.fold = des && !o.times
	if des {
		b.sched = &Schedule{}
		b.base = b.add(Op{Kind: OpDelay, Latency: e.baseLat(call.Choice)})
	}
	pr, err := al.build(b)
	if err != nil {
		return nil, err
	}
	pr.sched, pr.reserved = b.sched, b.reserved
	if !des {
		pr.sched = nil
	} else if err := b.budget.checkBuilt(e, call, b.sched); err != nil {
		return nil, err
	}
	return pr, nil
}

// simUnits returns the pipeline units the DES builds for a call whose
// units are full units followed by at most one smaller tail: all of them
// when there are at most b.window full units (or the window is off), else
// the first b.window full units and the tail. skipped is how many full
// units were left out; Predict adds them back at the steady-state period
// it measures (see steadyPeriod). Ops added while building unit i should
// carry label i (b.unit).
func (b *builder) simUnits(units []float64) (sim []float64, skipped int) {
	full := len(units)
	if full > 1 && units[full-1] != units[0] {
		full-- // the tail
	}
	if !b.des || b.window <= 0 || full <= b.window {
		return units, 0
	}
	sim = append(append(make([]float64, 0, b.window+1), units[:b.window]...), units[full:]...)
	return sim, full - b.window
}

// reserve checks that a DES schedule of ops operations and deps dependency
// entries fits the budget and allocates it; it is called before any DES op
// is built. The schedule already holds the base op.
func (b *builder) reserve(ops, deps int64) error {
	if err := b.budget.check(b.e, b.call, ops, deps); err != nil {
		return err
	}
	if ops*bytesPerOp+deps*bytesPerDep >= collectBefore {
		// The schedule of the size before is garbage now, but the heap
		// has not grown to twice its live data, so no collection would
		// free it before this one is allocated beside it (measured: 8.5
		// GB resident at the start of the 32 MiB tree on 4,096 nodes,
		// the 16 MiB one's 2.8 GB still held). A collection here frees it
		// for this one to reuse, at the cost of marking what is live
		// between runs (the Env, a kept schedule).
		runtime.GC()
	}
	b.reserved = [2]int64{ops, deps}
	b.sched.grow(int(ops), int(deps))
	return nil
}

// collectBefore is the schedule size (its heap bytes as the estimate
// counts them) from which reserve collects the heap first: assumption, at
// 1 GiB a collection (tens of milliseconds with a few hundred MB live) is
// small beside building and running the schedule (at 256 MiB the 1,024-node
// sweep peaked at 0.96 GB instead of 1.31 but took 196 s of CPU instead of
// 167 in one run each, not told apart from the machine's noise).
const collectBefore = 1 << 30

// baseLat is the fixed latency of a call of the chosen algorithm and
// protocol: NCCL's base latency (tuning.cc's baseLat; NVLS and NVLSTree
// have their own) with the launch overhead, plus what the run mode adds
// (runLatency: serial launches of one thread, a VM). Both engines take it
// from here.
func (e *Env) baseLat(ch model.Choice) model.Time {
	switch ch.Algo {
	case model.AlgoNVLS, model.AlgoNVLSTree:
		return model.Micros(e.params.NVLSLatUs) + e.runLat
	case model.AlgoCollNetDirect, model.AlgoCollNetChain:
		// NCCL's CollNet base latency is 0 (tuning.cc); the launch remains.
		return model.Micros(launchOverheadUs) + e.runLat
	}
	return model.Micros(e.params.BaseLatUs[ch.Proto]) + e.runLat
}

// channelGroups returns the distinct graph channels the nc runtime channels
// use and how many runtime channels map to each (NCCL duplicates graph
// channels: runtime channel i runs graph channel i mod nGraph).
func channelGroups(g *model.Graph, nc int) ([]model.GraphChannel, []int32) {
	var chans []model.GraphChannel
	var weights []int32
	key := func(ch model.GraphChannel) string { return fmt.Sprint(ch.GPUs, ch.NetIn, ch.NetOut) }
	idx := map[string]int{}
	for i := 0; i < nc; i++ {
		ch := g.Channels[i%len(g.Channels)]
		k := key(ch)
		j, ok := idx[k]
		if !ok {
			j = len(chans)
			idx[k] = j
			chans = append(chans, ch)
			weights = append(weights, 0)
		}
		weights[j]++
	}
	return chans, weights
}

// ringRank maps ring position i to (node, local GPU index) for a channel.
func ringRank(ch model.GraphChannel, G, i int) (node, gpu int) {
	return i / G, ch.GPUs[i%G]
}

// hop returns the route and latency class from ring position i to i+1 in a
// channel; with reduced set the ring is node 0 only and the hop leaving it
// wraps to node 0's first GPU through the network.
func (b *builder) hop(ch model.GraphChannel, i, n int, reduced bool) ([]model.LinkID, ceiling, error) {
	return b.hopWays(ch, i, n, reduced, nil)
}

// hopWays is hop where the call's GPUs that move traffic one way are known
// (ways, see decorateWays; nil: every GPU moves it both ways).
func (b *builder) hopWays(ch model.GraphChannel, i, n int, reduced bool, ways *oneWay) ([]model.LinkID, ceiling, error) {
	e := b.e
	c := e.Cluster
	G := len(ch.GPUs)
	na, ga := ringRank(ch, G, i)
	nb, gb := ringRank(ch, G, (i+1)%n)
	if reduced {
		nb = 0
		na = 0
	}
	x := c.Nodes[na].GPUs[ga]
	a := c.Nodes[nb].GPUs[gb]
	inter := (i+1)%G == 0 && c.NumNodes() > 1
	var route []model.LinkID
	if inter {
		var err error
		if route, err = e.netRoute(x, ch.NetOut, a, ch.NetIn); err != nil {
			return nil, ceiling{}, err
		}
	} else {
		if x == a {
			return nil, ceiling{}, nil
		}
		route = e.Res.GPU(x, a).Route
	}
	r, ceil := e.decorateWays(route, ways.onlySends(x), ways.onlyReceives(a))
	return r, ceil, nil
}

// oneWay records which GPUs send and which receive in a call, so that a
// GPU that only does one of them is known (decorateWays).
type oneWay struct {
	sends, receives map[model.ElemID]bool
}

// add records a transfer from GPU x to GPU a.
func (w *oneWay) add(x, a model.ElemID) {
	if w.sends == nil {
		w.sends, w.receives = map[model.ElemID]bool{}, map[model.ElemID]bool{}
	}
	w.sends[x], w.receives[a] = true, true
}

// onlySends reports whether GPU x sends and never receives (false on nil).
func (w *oneWay) onlySends(x model.ElemID) bool { return w != nil && w.sends[x] && !w.receives[x] }

// onlyReceives reports whether GPU a receives and never sends.
func (w *oneWay) onlyReceives(a model.ElemID) bool {
	return w != nil && w.receives[a] && !w.sends[a]
}

// hopInfo is one transfer's route, per-member rate cap and step latency.
type hopInfo struct {
	route []model.LinkID
	cap   ceiling
	lat   model.Time
	// rid is route's index in the schedule being built plus one, once a
	// builder has interned it (Schedule.routeID); 0: not yet.
	rid int32
}

// stepChunk returns the payload of one pipeline unit of the algorithms that
// move one step per chunk (tree, broadcast, reduce): one buffer step.
func stepChunk(p model.Proto) float64 { return model.StepPayload(p) }

// grid returns n rows of g OpIDs each, over one allocation.
func grid(n, g int) [][]OpID {
	flat := make([]OpID, n*g)
	out := make([][]OpID, n)
	for v := range out {
		out[v] = flat[v*g : (v+1)*g : (v+1)*g]
	}
	return out
}

func fill(n int, v OpID) []OpID {
	out := make([]OpID, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// topoOrder lists tree nodes parents before children (BFS from the root).
func topoOrder(parent []int, children [][]int, root int) []int {
	order := []int{root}
	for i := 0; i < len(order); i++ {
		order = append(order, children[order[i]]...)
	}
	return order
}
