package sim

import (
	"fmt"

	"github.com/collsim/collsim/model"
)

// opBudget bounds the ops one DES run builds; above it, pipeline units are
// coarsened (doubled) until the schedule fits. Coarser units keep every byte
// and every link share, but pipeline fill is modelled at a coarser grain.
const opBudget = 3_000_000

// treeFlowBudget bounds the transfers one tree pipeline chunk puts in
// flight in the DES (4 per GPU per channel group); larger trees are timed by
// the analytic engine, which the DES matches within a few percent at sizes
// where both run (see TestDESMatchesAnalytic).
const treeFlowBudget = 16384

// treeOpBudget bounds the ops of a tree or NVLSTree DES run. Every node's
// transfers are simulated and many are in flight at once, so each op costs
// more than in a ring; above the budget the pipeline chunks are coarsened.
const treeOpBudget = 400_000

// flowClass aggregates, for the analytic engine, all transfers of one call
// that share a route: each member carries Bytes over Route, Weight members.
type flowClass struct {
	route  []model.LinkID
	bytes  float64
	weight int32
	ceil   ceiling
}

// prog is one call turned into what the engines need.
type prog struct {
	classes []flowClass
	// caps are this call's link capacities when the congestion physics
	// changed them (nil: the Env's).
	caps []float64
	// Analytic pipeline shape.
	kind   string
	units  []float64 // per pipeline unit payload bytes (ring: per loop slice bytes)
	slices int
	steps  int // ring steps per loop, or pipeline depth in hops
	latHop model.Time
	// syncAfterStep is true for rings: each step's synchronisation
	// follows its slices instead of hiding under them (see the analytic
	// ring in predict.go).
	syncAfterStep bool
	// latPath is the sum of hop latencies along the critical path of one
	// pipeline unit (tree, chain); 0 means steps x latHop.
	latPath model.Time
	base    model.Time
	perMemb float64 // wire bytes one member (channel) moves in total
	// Schedule for the DES (nil when only the analytic engine runs).
	sched *Schedule
	// Note explains a coarsening or a fallback.
	Note string
}

// builder holds state while building one call.
type builder struct {
	e     *Env
	call  Call
	des   bool
	sched *Schedule
	deps  []OpID // arena for dependency lists
	base  OpID
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
	if len(deps) > 0 {
		start := len(b.deps)
		b.deps = append(b.deps, deps...)
		op.Deps = b.deps[start:len(b.deps):len(b.deps)]
	}
	return b.sched.Add(op)
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
	// build turns the call into flow classes for the analytic engine and,
	// when b.des is set, a schedule for the DES.
	build(b *builder) (*prog, error)
}

// algorithms lists every modelled algorithm; the first that applies builds
// the call.
var algorithms = [...]algorithm{ringAlgo{}, chainAlgo{}, treeAlgo{}, nvlsAlgo{}, nvlsTreeAlgo{}, directAlgo{}, collNetDirectAlgo{}, collNetChainAlgo{}}

// lookupAlgorithm returns the builder of a call.
func lookupAlgorithm(a model.Algo, coll model.Collective) (algorithm, error) {
	for _, al := range algorithms {
		if al.applies(a, coll) {
			return al, nil
		}
	}
	return nil, fmt.Errorf("sim: algorithm %s is not modelled", a)
}

// program builds the call for the chosen algorithm.
func (e *Env) program(call Call, des bool) (*prog, error) {
	al, err := lookupAlgorithm(call.Choice.Algo, call.Coll)
	if err != nil {
		return nil, err
	}
	b := &builder{e: e, call: call, des: des}
	p := call.Choice.Proto
	base := model.Micros(e.params.BaseLatUs[p])
	switch call.Choice.Algo {
	case model.AlgoNVLS, model.AlgoNVLSTree:
		base = model.Micros(e.params.NVLSLatUs)
	case model.AlgoCollNetDirect, model.AlgoCollNetChain:
		// NCCL's CollNet base latency is 0 (tuning.cc); the launch remains.
		base = model.Micros(launchOverheadUs)
	}
	if des {
		b.sched = &Schedule{}
		b.base = b.add(Op{Kind: OpDelay, Latency: base})
	}
	pr, err := al.build(b)
	if err != nil {
		return nil, err
	}
	pr.base = base
	pr.sched = b.sched
	return pr, nil
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
	r, ceil := e.decorate(route)
	return r, ceil, nil
}

// hopInfo is one transfer's route, per-member rate cap and step latency.
type hopInfo struct {
	route []model.LinkID
	cap   ceiling
	lat   model.Time
}

// stepChunk returns the payload of one pipeline unit of the algorithms that
// move one step per chunk (tree, broadcast, reduce): one buffer step.
func stepChunk(p model.Proto) float64 { return model.StepPayload(p) }

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
