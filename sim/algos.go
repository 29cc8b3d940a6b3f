package sim

import (
	"fmt"
	"math"
	"sort"

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
	route   []model.LinkID
	bytes   float64
	weight  int32
	rateCap float64
}

// prog is one call turned into what the engines need.
type prog struct {
	classes []flowClass
	// Analytic pipeline shape.
	kind   string
	units  []float64 // per pipeline unit payload bytes (ring: per loop slice bytes)
	slices int
	steps  int // ring steps per loop, or pipeline depth in hops
	latHop model.Time
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

// program builds the call for the chosen algorithm.
func (e *Env) program(call Call, des bool) (*prog, error) {
	b := &builder{e: e, call: call, des: des}
	p := call.Choice.Proto
	base := model.Micros(e.params.BaseLatUs[p])
	if call.Choice.Algo == model.AlgoNVLS || call.Choice.Algo == model.AlgoNVLSTree {
		base = model.Micros(e.params.NVLSLatUs)
	}
	if des {
		b.sched = &Schedule{}
		b.base = b.add(Op{Kind: OpDelay, Latency: base})
	}
	var pr *prog
	var err error
	switch call.Choice.Algo {
	case model.AlgoRing:
		switch call.Coll {
		case model.Broadcast, model.Reduce:
			pr, err = b.chain()
		default:
			pr, err = b.ring()
		}
	case model.AlgoTree:
		pr, err = b.tree()
	case model.AlgoNVLS:
		pr, err = b.nvls()
	case model.AlgoNVLSTree:
		pr, err = b.nvlsTree()
	case model.AlgoDirect:
		pr, err = b.direct()
	default:
		return nil, fmt.Errorf("sim: algorithm %s is not modelled", call.Choice.Algo)
	}
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
func (b *builder) hop(ch model.GraphChannel, i, n int, reduced bool) ([]model.LinkID, float64, error) {
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
			return nil, 0, err
		}
	} else {
		if x == a {
			return nil, 0, nil
		}
		route = e.Res.GPU(x, a).Route
	}
	r, capv := e.decorate(route)
	return r, capv, nil
}

// ring builds ring AllReduce, AllGather and ReduceScatter: per channel the
// buffer block is processed in loops of n chunks; each loop takes 2(n-1)
// (AllReduce) or n-1 steps in which every rank sends one chunk to the next,
// pipelined slice by slice (nccl-facts §4.1-4.2).
func (b *builder) ring() (*prog, error) {
	e, call := b.e, b.call
	c := e.Cluster
	n := c.NumRanks()
	G := c.GPUsPerNode()
	proto := call.Choice.Proto
	nc := max(call.Choice.Channels, 1)
	steps := n - 1
	if call.Coll == model.AllReduce {
		steps = 2 * (n - 1)
	}
	pr := &prog{kind: "ring", steps: steps}
	if n == 1 {
		return pr, nil
	}
	chans, weights := channelGroups(e.Tuner.Graphs.Ring, nc)
	chunk, slices := ringChunk(proto)
	D := float64(call.Bytes) / float64(nc)
	units := ringLoops(D, n, chunk)
	reduced := e.symmetric()
	nsim := n
	if reduced {
		nsim = G
	}
	// Coarsen pipeline units until the DES fits the op budget.
	for b.des && len(chans)*len(units)*steps*slices*nsim*2 > opBudget && (len(units) > 1 || slices > 1) {
		if slices > 1 {
			slices = 1
		} else {
			chunk *= 2
			units = ringLoops(D, n, chunk)
		}
		pr.Note = "pipeline units coarsened to fit the simulation budget"
	}
	if b.des && len(chans)*len(units)*steps*slices*nsim*2 > opBudget {
		// 2(n-1) steps per loop are inherent; beyond the budget the closed
		// form stands in.
		b.des, b.sched = false, nil
		pr.Note = fmt.Sprintf("ring timed analytically: %d ranks x %d channel groups is beyond the DES budget", n, len(chans))
	}
	pr.units, pr.slices = units, slices
	ccap := e.channelCap(proto)
	var total float64
	for _, u := range units {
		total += u * float64(steps)
	}
	pr.perMemb = total / model.ProtoPayload(proto)
	hopLat := model.Time(0)
	hops := make([][]hopInfo, len(chans))
	for g, ch := range chans {
		hops[g] = make([]hopInfo, nsim)
		for j := 0; j < nsim; j++ {
			route, capv, err := b.hop(ch, j, n, reduced)
			if err != nil {
				return nil, err
			}
			lat := e.stepLat(e.routeClass(route), proto)
			hops[g][j] = hopInfo{route, minCap(capv, ccap), lat}
			if g == 0 {
				// A step's data dependency walks one hop around the ring, so
				// over a loop the latency paid is the ring's mean hop latency.
				hopLat += lat / model.Time(nsim)
			}
			pr.classes = append(pr.classes, flowClass{route: route, bytes: pr.perMemb, weight: weights[g], rateCap: minCap(capv, ccap)})
		}
	}
	pr.latHop = hopLat
	if !b.des {
		return pr, nil
	}
	// DES: ops T (push) and A (arrival) per (group, loop, step, slice, rank).
	for g := range chans {
		prevT := make([]OpID, nsim) // last push by each rank
		for j := range prevT {
			prevT[j] = b.base
		}
		lastA := make([]OpID, nsim*slices) // arrival of (rank, slice) of the previous step
		for _, u := range units {
			sb := u / float64(slices) / model.ProtoPayload(proto)
			for s := 0; s < steps; s++ {
				for k := 0; k < slices; k++ {
					// A push waits for the rank's previous push and, after the
					// first step, for this slice's arrival from the previous
					// rank one step earlier.
					for j := 0; j < nsim; j++ {
						h := &hops[g][j]
						op := Op{Kind: OpTransfer, Route: h.route, Bytes: sb, Weight: weights[g], RateCap: h.cap, Channel: int32(g), Step: int32(s), Rank: int32(j)}
						if s == 0 {
							prevT[j] = b.add(op, prevT[j])
						} else {
							prevT[j] = b.add(op, prevT[j], lastA[((j-1+nsim)%nsim)*slices+k])
						}
					}
					// Arrivals are recorded after every push of the slice, so
					// the loop above always reads the previous step's.
					for j := 0; j < nsim; j++ {
						lastA[j*slices+k] = b.add(Op{Kind: OpDelay, Latency: hops[g][j].lat, Channel: int32(g), Step: int32(s), Rank: int32(j)}, prevT[j])
					}
				}
			}
		}
	}
	return pr, nil
}

// hopInfo is one transfer's route, per-member rate cap and step latency.
type hopInfo struct {
	route []model.LinkID
	cap   float64
	lat   model.Time
}

// stepChunk returns the payload of one pipeline unit of the algorithms that
// move one step per chunk (tree, broadcast, reduce): one buffer step.
func stepChunk(p model.Proto) float64 { return model.StepPayload(p) }

// ringChunk returns the ring chunk payload and slices per chunk by protocol.
func ringChunk(p model.Proto) (float64, int) {
	if p == model.ProtoSimple {
		return model.RingChunkSteps * model.StepPayloadSimple, model.RingChunkSteps / model.RingSliceSteps
	}
	return model.StepPayload(p), 1
}

// ringLoops returns the per-rank chunk payload of each loop for a channel
// block of D bytes on n ranks: full chunks, then the remainder spread over
// the n ranks (NCCL's realChunkSize).
func ringLoops(D float64, n int, chunk float64) []float64 {
	if D <= 0 {
		return []float64{0}
	}
	var out []float64
	for off := 0.0; off < D; {
		rem := D - off
		real := math.Min(chunk, math.Ceil(rem/float64(n)))
		out = append(out, real)
		off += real * float64(n)
	}
	return out
}

// chain builds ring Broadcast and Reduce: chunks flow along the ring from the
// root (Broadcast) or towards it (Reduce), n-1 hops, pipelined by chunk.
func (b *builder) chain() (*prog, error) {
	e, call := b.e, b.call
	c := e.Cluster
	n := c.NumRanks()
	proto := call.Choice.Proto
	nc := max(call.Choice.Channels, 1)
	pr := &prog{kind: "chain", steps: n - 1}
	if n == 1 {
		return pr, nil
	}
	chans, weights := channelGroups(e.Tuner.Graphs.Ring, nc)
	chunk := stepChunk(proto)
	D := float64(call.Bytes) / float64(nc)
	nChunks := int(math.Ceil(D / chunk))
	for b.des && len(chans)*nChunks*(n-1)*2 > opBudget && nChunks > 1 {
		chunk *= 2
		nChunks = int(math.Ceil(D / chunk))
		pr.Note = "pipeline units coarsened to fit the simulation budget"
	}
	nChunks = max(nChunks, 1)
	if b.des && len(chans)*nChunks*(n-1)*2 > opBudget {
		b.des, b.sched = false, nil
		pr.Note = fmt.Sprintf("%s timed analytically: %d ranks x %d channel groups is beyond the DES budget", call.Coll, n, len(chans))
	}
	ccap := e.channelCap(proto)
	pr.perMemb = D / model.ProtoPayload(proto)
	for u := 0; u < nChunks; u++ {
		pr.units = append(pr.units, math.Min(chunk, D-float64(u)*chunk))
	}
	pr.slices = 1
	hops := make([][]hopInfo, len(chans))
	for g, ch := range chans {
		for j := 0; j < n-1; j++ {
			// Broadcast from rank 0 forward; Reduce towards rank 0 along the
			// same ring, i.e. from position 1 onwards ending at 0.
			pos := j
			if call.Coll == model.Reduce {
				pos = j + 1
			}
			route, capv, err := b.hop(ch, pos%n, n, false)
			if err != nil {
				return nil, err
			}
			lat := e.stepLat(e.routeClass(route), proto)
			hops[g] = append(hops[g], hopInfo{route, minCap(capv, ccap), lat})
			pr.latHop = max(pr.latHop, lat)
			if g == 0 {
				pr.latPath += lat
			}
			pr.classes = append(pr.classes, flowClass{route: route, bytes: pr.perMemb, weight: weights[g], rateCap: minCap(capv, ccap)})
		}
	}
	if !b.des {
		return pr, nil
	}
	for g := range chans {
		prevT := make([]OpID, n-1)
		for j := range prevT {
			prevT[j] = b.base
		}
		for _, u := range pr.units {
			arr := b.base
			for j := 0; j < n-1; j++ {
				h := &hops[g][j]
				t := b.add(Op{Kind: OpTransfer, Route: h.route, Bytes: u / model.ProtoPayload(proto), Weight: weights[g], RateCap: h.cap, Channel: int32(g), Rank: int32(j)}, prevT[j], arr)
				prevT[j] = t
				arr = b.add(Op{Kind: OpDelay, Latency: h.lat}, t)
			}
		}
	}
	return pr, nil
}

// tree builds tree AllReduce: in every node a chain from the last GPU to
// the head (the GPU next to the channel's NIC) reduces, heads reduce up the
// inter-node binary tree, and the result is broadcast back down the tree
// and the chains; half the channels use each tree of the double binary
// tree, pipelined by chunk (nccl-facts §4.3).
func (b *builder) tree() (*prog, error) {
	e, call := b.e, b.call
	c := e.Cluster
	N, G := c.NumNodes(), c.GPUsPerNode()
	proto := call.Choice.Proto
	nc := max(call.Choice.Channels, 1)
	pr := &prog{kind: "tree"}
	if c.NumRanks() == 1 {
		return pr, nil
	}
	trees := model.DoubleBinaryTree(N)
	type group struct {
		ch   model.GraphChannel
		tree int
		w    int32
	}
	var groups []group
	{
		chans, ws := channelGroups(e.Tuner.Graphs.Tree, nc)
		// Split each group's channels over the two trees.
		for i, ch := range chans {
			w0 := (ws[i] + 1) / 2
			w1 := ws[i] - w0
			if N == 1 {
				w0, w1 = ws[i], 0
			}
			if w0 > 0 {
				groups = append(groups, group{ch, 0, w0})
			}
			if w1 > 0 {
				groups = append(groups, group{ch, 1, w1})
			}
		}
	}
	chunk := stepChunk(proto)
	D := float64(call.Bytes) / float64(nc)
	nChunks := max(int(math.Ceil(D/chunk)), 1)
	perChunkOps := 4 * N * G
	if b.des && len(groups)*perChunkOps > treeFlowBudget {
		// Every node's chain and tree edges are simulated and many are in
		// flight at once; beyond this size the closed form stands in.
		b.des = false
		b.sched = nil
		pr.Note = fmt.Sprintf("tree timed analytically: %d nodes x %d GPUs x %d channel groups is beyond the DES tree budget", N, G, len(groups))
	}
	for b.des && len(groups)*nChunks*perChunkOps > treeOpBudget && nChunks > 1 {
		chunk *= 2
		nChunks = max(int(math.Ceil(D/chunk)), 1)
		pr.Note = "pipeline units coarsened to fit the simulation budget"
	}
	for u := 0; u < nChunks; u++ {
		pr.units = append(pr.units, math.Min(chunk, D-float64(u)*chunk))
	}
	pr.slices = 1
	depth := int(math.Ceil(math.Log2(float64(N))))
	pr.steps = 2 * (G - 1 + depth)
	pr.perMemb = D / model.ProtoPayload(proto)
	ccap := e.channelCap(proto)
	mk := func(route []model.LinkID) hopInfo {
		r, capv := e.decorate(route)
		return hopInfo{r, minCap(capv, ccap), e.stepLat(e.routeClass(r), proto)}
	}
	for gi, g := range groups {
		// Chain edges per node (up: chain[i] -> chain[i-1]; down reverse) and tree edges.
		up := make([][]hopInfo, N)
		down := make([][]hopInfo, N)
		var netUp, netDown []hopInfo
		netUp = make([]hopInfo, N)
		netDown = make([]hopInfo, N)
		for v := 0; v < N; v++ {
			gpus := c.Nodes[v].GPUs
			for i := G - 1; i >= 1; i-- {
				a, bb := gpus[g.ch.GPUs[i]], gpus[g.ch.GPUs[i-1]]
				up[v] = append(up[v], mk(e.Res.GPU(a, bb).Route))
				down[v] = append(down[v], mk(e.Res.GPU(bb, a).Route))
			}
			if p := trees[g.tree][v]; p >= 0 {
				hv := gpus[g.ch.GPUs[0]]
				hp := c.Nodes[p].GPUs[g.ch.GPUs[0]]
				ru, err := e.netRoute(hv, g.ch.NetOut, hp, g.ch.NetIn)
				if err != nil {
					return nil, err
				}
				rd, err := e.netRoute(hp, g.ch.NetOut, hv, g.ch.NetIn)
				if err != nil {
					return nil, err
				}
				netUp[v], netDown[v] = mk(ru), mk(rd)
			}
		}
		for v := 0; v < N; v++ {
			for _, ed := range append(append([]hopInfo(nil), up[v]...), down[v]...) {
				pr.classes = append(pr.classes, flowClass{ed.route, pr.perMemb, g.w, ed.cap})
				pr.latHop = max(pr.latHop, ed.lat)
			}
			if trees[g.tree][v] >= 0 {
				for _, ed := range []hopInfo{netUp[v], netDown[v]} {
					pr.classes = append(pr.classes, flowClass{ed.route, pr.perMemb, g.w, ed.cap})
					pr.latHop = max(pr.latHop, ed.lat)
				}
			}
		}
		if gi == 0 {
			var intra, inter model.Time
			if len(up[0]) > 0 {
				intra = up[0][0].lat
			}
			for v := 0; v < N; v++ {
				if trees[g.tree][v] >= 0 {
					inter = netUp[v].lat
					break
				}
			}
			pr.latPath = 2 * (model.Time(G-1)*intra + model.Time(depth)*inter)
		}
		if !b.des {
			continue
		}
		// Children lists in node order (deterministic).
		children := make([][]int, N)
		root := 0
		for v := 0; v < N; v++ {
			if p := trees[g.tree][v]; p >= 0 {
				children[p] = append(children[p], v)
			} else {
				root = v
			}
		}
		order := topoOrder(trees[g.tree], children, root)
		// Per-sender sequencing: last op each (node, chain position, direction) issued.
		prevUp := make([][]OpID, N)
		prevDown := make([][]OpID, N)
		prevNetUp := make([]OpID, N)
		prevNetDown := make([]OpID, N)
		for v := 0; v < N; v++ {
			prevUp[v] = fill(G, b.base)
			prevDown[v] = fill(G, b.base)
			prevNetUp[v], prevNetDown[v] = b.base, b.base
		}
		for _, u := range pr.units {
			bytes := u / model.ProtoPayload(proto)
			mkT := func(ed hopInfo, deps ...OpID) (OpID, OpID) {
				t := b.add(Op{Kind: OpTransfer, Route: ed.route, Bytes: bytes, Weight: g.w, RateCap: ed.cap, Channel: int32(gi)}, deps...)
				return t, b.add(Op{Kind: OpDelay, Latency: ed.lat}, t)
			}
			headReady := make([]OpID, N) // head holds the node's partial sum
			arrivedUp := make([][]OpID, N)
			// Reduce: leaves first (reverse topological order).
			for i := len(order) - 1; i >= 0; i-- {
				v := order[i]
				arr := b.base
				for k, ed := range up[v] {
					deps := []OpID{prevUp[v][k]}
					if k > 0 {
						deps = append(deps, arr)
					}
					var t OpID
					t, arr = mkT(ed, deps...)
					prevUp[v][k] = t
				}
				ready := append([]OpID{arr}, arrivedUp[v]...)
				if p := trees[g.tree][v]; p >= 0 {
					t, a := mkT(netUp[v], append(ready, prevNetUp[v])...)
					prevNetUp[v] = t
					arrivedUp[p] = append(arrivedUp[p], a)
				} else {
					headReady[v] = b.add(Op{Kind: OpDelay}, ready...)
				}
			}
			// Broadcast: root first.
			have := make([]OpID, N)
			have[root] = headReady[root]
			for _, v := range order {
				for _, ch := range children[v] {
					t, a := mkT(netDown[ch], have[v], prevNetDown[ch])
					prevNetDown[ch] = t
					have[ch] = a
				}
				arr := have[v]
				for k := len(down[v]) - 1; k >= 0; k-- {
					var t OpID
					t, arr = mkT(down[v][k], arr, prevDown[v][k])
					prevDown[v][k] = t
				}
			}
		}
	}
	return pr, nil
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

// nvls builds single-node NVLS AllReduce: per chunk every GPU's data is
// pulled into the switch and reduced for the head GPU owning each part
// (multimem.ld_reduce), then each head multicasts its reduced part to all
// GPUs (multimem.st): per GPU about chunk*(1+1/G) up and down
// (nccl-facts §4.4).
func (b *builder) nvls() (*prog, error) {
	e, call := b.e, b.call
	c := e.Cluster
	G := c.GPUsPerNode()
	sw := c.Nodes[0].NVSwitch
	if c.NumNodes() != 1 || sw == model.None {
		return nil, fmt.Errorf("sim: NVLS is modelled on one NVSwitch node only")
	}
	nc := max(call.Choice.Channels, 1)
	pr := &prog{kind: "nvls", slices: 1, steps: 4}
	eff := e.params.NVLSEff[0]
	if c.GPUModel().Arch == model.Blackwell {
		eff = e.params.NVLSEff[1]
	}
	D := float64(call.Bytes) / float64(nc)
	chunk := float64(model.NVLSChunkBytes)
	// NVLS chunks shrink for small sizes (64K/32K/16K, nccl-facts §4.1).
	for chunk > 16*1024 && D < chunk*float64(G) {
		chunk /= 2
	}
	nChunks := max(int(math.Ceil(D/chunk)), 1)
	for b.des && nChunks*8*G > opBudget && nChunks > 1 {
		chunk *= 2
		nChunks = max(int(math.Ceil(D/chunk)), 1)
		pr.Note = "pipeline units coarsened to fit the simulation budget"
	}
	for u := 0; u < nChunks; u++ {
		pr.units = append(pr.units, math.Min(chunk, D-float64(u)*chunk))
	}
	ups := make([]model.LinkID, G)
	downs := make([]model.LinkID, G)
	for i, g := range c.Nodes[0].GPUs {
		l, ok := c.Topo.LinkBetween(g, sw)
		if !ok {
			return nil, fmt.Errorf("sim: %s has no NVLink to the NVSwitch", c.Topo.Elem(g).Name)
		}
		ups[i], downs[i] = l, c.Topo.Links[l].Reverse
	}
	lat := e.stepLat(0, model.ProtoSimple)
	pr.latHop = lat
	per := D * (1 + 1/float64(G)) / eff
	pr.perMemb = per
	w := int32(nc)
	for i := 0; i < G; i++ {
		pr.classes = append(pr.classes, flowClass{[]model.LinkID{ups[i]}, per, w, 0}, flowClass{[]model.LinkID{downs[i]}, per, w, 0})
	}
	if !b.des {
		return pr, nil
	}
	// The scatter, reduce and multicast stages run in separate warps, so
	// each stage is its own sequence per GPU and chunks pipeline through them.
	prevU1, prevD1 := fill(G, b.base), fill(G, b.base)
	prevU2, prevD2 := fill(G, b.base), fill(G, b.base)
	for _, u := range pr.units {
		full, part := u/eff, u/float64(G)/eff
		u1 := make([]OpID, G)
		for i := 0; i < G; i++ {
			u1[i] = b.add(Op{Kind: OpTransfer, Route: ups[i : i+1], Bytes: full, Weight: w, Rank: int32(i)}, prevU1[i])
			prevU1[i] = u1[i]
		}
		reduced := b.add(Op{Kind: OpDelay, Latency: lat}, u1...)
		u2 := make([]OpID, G)
		for i := 0; i < G; i++ {
			d1 := b.add(Op{Kind: OpTransfer, Route: downs[i : i+1], Bytes: part, Weight: w, Rank: int32(i)}, reduced, prevD1[i])
			u2[i] = b.add(Op{Kind: OpTransfer, Route: ups[i : i+1], Bytes: part, Weight: w, Rank: int32(i)}, d1, prevU2[i])
			prevD1[i], prevU2[i] = d1, u2[i]
		}
		mc := b.add(Op{Kind: OpDelay, Latency: lat}, u2...)
		for i := 0; i < G; i++ {
			prevD2[i] = b.add(Op{Kind: OpTransfer, Route: downs[i : i+1], Bytes: full, Weight: w, Rank: int32(i)}, mc, prevD2[i])
		}
	}
	return pr, nil
}

// nvlsLinks returns each GPU's NVLink to and from its node's NVSwitch.
func (e *Env) nvlsLinks(node int) (ups, downs []model.LinkID, err error) {
	c := e.Cluster
	sw := c.Nodes[node].NVSwitch
	if sw == model.None {
		return nil, nil, fmt.Errorf("sim: NVLS needs an NVSwitch on node %d", node)
	}
	for _, g := range c.Nodes[node].GPUs {
		l, ok := c.Topo.LinkBetween(g, sw)
		if !ok {
			return nil, nil, fmt.Errorf("sim: %s has no NVLink to the NVSwitch", c.Topo.Elem(g).Name)
		}
		ups, downs = append(ups, l), append(downs, c.Topo.Links[l].Reverse)
	}
	return ups, downs, nil
}

// nvlsEff returns the NVLS efficiency term for the cluster's GPU.
func (e *Env) nvlsEff() float64 {
	if e.Cluster.GPUModel().Arch == model.Blackwell {
		return e.params.NVLSEff[1]
	}
	return e.params.NVLSEff[0]
}

// nvlsTree builds NVLSTree AllReduce across nodes: inside every node an
// NVLS reduce-scatter leaves GPU i with the node's partial sum of shard i;
// shard i is reduced up and broadcast down NCCL's double binary tree over
// the nodes through GPU i's own NIC (rail i); an NVLS multicast then gives
// every GPU the whole result (nccl-facts §4.4: NVLS inside the node plus
// the tree between nodes). Half the channels use each tree.
func (b *builder) nvlsTree() (*prog, error) {
	e, call := b.e, b.call
	c := e.Cluster
	N, G := c.NumNodes(), c.GPUsPerNode()
	nc := max(call.Choice.Channels, 1)
	eff := e.nvlsEff()
	pr := &prog{kind: "tree", slices: 1}
	D := float64(call.Bytes) / float64(nc)
	chunk := float64(model.NVLSChunkBytes)
	nChunks := max(int(math.Ceil(D/chunk)), 1)
	trees := model.DoubleBinaryTree(N)
	depth := int(math.Ceil(math.Log2(float64(N))))
	pr.steps = 2 + 2*depth
	perChunkOps := N * G * 12
	if b.des && perChunkOps*2 > treeFlowBudget {
		b.des = false
		b.sched = nil
		pr.Note = fmt.Sprintf("NVLSTree timed analytically: %d nodes x %d GPUs is beyond the DES tree budget", N, G)
	}
	for b.des && 2*nChunks*perChunkOps > treeOpBudget && nChunks > 1 {
		chunk *= 2
		nChunks = max(int(math.Ceil(D/chunk)), 1)
		pr.Note = "pipeline units coarsened to fit the simulation budget"
	}
	for u := 0; u < nChunks; u++ {
		pr.units = append(pr.units, math.Min(chunk, D-float64(u)*chunk))
	}
	ups := make([][]model.LinkID, N)
	downs := make([][]model.LinkID, N)
	for v := 0; v < N; v++ {
		var err error
		if ups[v], downs[v], err = e.nvlsLinks(v); err != nil {
			return nil, err
		}
	}
	// Rail of GPU i: the usable NIC closest to it.
	rail := make([]int, G)
	for i, g := range c.Nodes[0].GPUs {
		best := e.Res.LocalNICs(g)
		if len(best) == 0 {
			return nil, fmt.Errorf("sim: %s has no usable NIC", c.Topo.Elem(g).Name)
		}
		for j, nic := range e.Res.NICUsable[0] {
			if nic == best[0].NIC {
				rail[i] = j
			}
		}
	}
	// Per-GPU NVLink traffic as single-node NVLS; per tree edge each shard.
	per := D * (1 + 1/float64(G)) / eff
	shard := D / float64(G)
	pr.perMemb = per
	half := [2]int32{int32((nc + 1) / 2), int32(nc / 2)}
	netLat := e.stepLat(2, model.ProtoSimple)
	nvLat := e.stepLat(0, model.ProtoSimple)
	pr.latHop = netLat
	pr.latPath = 2*nvLat + model.Time(2*depth)*netLat
	type edgeRoutes struct{ up, down hopInfo }
	edges := make([][2][]edgeRoutes, N) // [node][tree][gpu]
	for v := 0; v < N; v++ {
		for i := 0; i < G; i++ {
			pr.classes = append(pr.classes, flowClass{ups[v][i : i+1], per, int32(nc), 0}, flowClass{downs[v][i : i+1], per, int32(nc), 0})
		}
		for tr := 0; tr < 2; tr++ {
			edges[v][tr] = make([]edgeRoutes, G)
			p := trees[tr][v]
			if p < 0 || half[tr] == 0 {
				continue
			}
			for i := 0; i < G; i++ {
				hv, hp := c.Nodes[v].GPUs[i], c.Nodes[p].GPUs[i]
				ru, err := e.netRoute(hv, rail[i], hp, rail[i])
				if err != nil {
					return nil, err
				}
				rd, err := e.netRoute(hp, rail[i], hv, rail[i])
				if err != nil {
					return nil, err
				}
				u, cu := e.decorate(ru)
				d, cd := e.decorate(rd)
				edges[v][tr][i] = edgeRoutes{hopInfo{u, cu, netLat}, hopInfo{d, cd, netLat}}
				// Shard bytes per member: NVLS leaves shard/eff-free payload on the wire.
				pr.classes = append(pr.classes, flowClass{u, shard, half[tr], cu}, flowClass{d, shard, half[tr], cd})
			}
		}
	}
	if !b.des {
		return pr, nil
	}
	for tr := 0; tr < 2; tr++ {
		w := half[tr]
		if w == 0 {
			continue
		}
		children := make([][]int, N)
		root := 0
		for v := 0; v < N; v++ {
			if p := trees[tr][v]; p >= 0 {
				children[p] = append(children[p], v)
			} else {
				root = v
			}
		}
		order := topoOrder(trees[tr], children, root)
		prevU1, prevD1 := make([][]OpID, N), make([][]OpID, N)
		prevU2, prevD2 := make([][]OpID, N), make([][]OpID, N)
		prevUp, prevDown := make([][]OpID, N), make([][]OpID, N)
		for v := 0; v < N; v++ {
			prevU1[v], prevD1[v], prevU2[v], prevD2[v] = fill(G, b.base), fill(G, b.base), fill(G, b.base), fill(G, b.base)
			prevUp[v], prevDown[v] = fill(G, b.base), fill(G, b.base)
		}
		for _, u := range pr.units {
			full, part := u/eff, u/float64(G)/eff
			sh := u / float64(G)
			partial := make([][]OpID, N) // node v, GPU i holds its shard's partial sum
			for v := 0; v < N; v++ {
				u1 := make([]OpID, G)
				for i := 0; i < G; i++ {
					u1[i] = b.add(Op{Kind: OpTransfer, Route: ups[v][i : i+1], Bytes: full, Weight: w, Rank: int32(i)}, prevU1[v][i])
					prevU1[v][i] = u1[i]
				}
				red := b.add(Op{Kind: OpDelay, Latency: nvLat}, u1...)
				partial[v] = make([]OpID, G)
				for i := 0; i < G; i++ {
					d1 := b.add(Op{Kind: OpTransfer, Route: downs[v][i : i+1], Bytes: part, Weight: w, Rank: int32(i)}, red, prevD1[v][i])
					prevD1[v][i] = d1
					partial[v][i] = d1
				}
			}
			// Up the tree, leaves first, per shard.
			arrived := make([][][]OpID, N)
			for v := range arrived {
				arrived[v] = make([][]OpID, G)
			}
			final := make([][]OpID, N)
			for k := len(order) - 1; k >= 0; k-- {
				v := order[k]
				p := trees[tr][v]
				for i := 0; i < G; i++ {
					ready := append([]OpID{partial[v][i]}, arrived[v][i]...)
					if p < 0 {
						if final[v] == nil {
							final[v] = make([]OpID, G)
						}
						final[v][i] = b.add(Op{Kind: OpDelay}, ready...)
						continue
					}
					ed := edges[v][tr][i].up
					t := b.add(Op{Kind: OpTransfer, Route: ed.route, Bytes: sh, Weight: w, RateCap: ed.cap}, append(ready, prevUp[v][i])...)
					prevUp[v][i] = t
					arrived[p][i] = append(arrived[p][i], b.add(Op{Kind: OpDelay, Latency: ed.lat}, t))
				}
			}
			// Down the tree, root first.
			for _, v := range order {
				for _, ch := range children[v] {
					if final[ch] == nil {
						final[ch] = make([]OpID, G)
					}
					for i := 0; i < G; i++ {
						ed := edges[ch][tr][i].down
						t := b.add(Op{Kind: OpTransfer, Route: ed.route, Bytes: sh, Weight: w, RateCap: ed.cap}, final[v][i], prevDown[ch][i])
						prevDown[ch][i] = t
						final[ch][i] = b.add(Op{Kind: OpDelay, Latency: ed.lat}, t)
					}
				}
			}
			// Multicast inside every node.
			for v := 0; v < N; v++ {
				u2 := make([]OpID, G)
				for i := 0; i < G; i++ {
					u2[i] = b.add(Op{Kind: OpTransfer, Route: ups[v][i : i+1], Bytes: part, Weight: w, Rank: int32(i)}, final[v][i], prevU2[v][i])
					prevU2[v][i] = u2[i]
				}
				mc := b.add(Op{Kind: OpDelay, Latency: nvLat}, u2...)
				for i := 0; i < G; i++ {
					prevD2[v][i] = b.add(Op{Kind: OpTransfer, Route: downs[v][i : i+1], Bytes: full, Weight: w, Rank: int32(i)}, mc, prevD2[v][i])
				}
			}
		}
	}
	return pr, nil
}

// direct builds AlltoAll (and SendRecv) as NCCL's grouped point-to-point
// operations: every rank sends its block to every peer at once. Inter-node
// blocks go through the NIC on the destination's rail, reached over NVLink
// (PXN) when the source is not next to it. With a symmetric cluster only
// node 0's senders are simulated and each remote destination stands for
// every node at that distance.
func (b *builder) direct() (*prog, error) {
	e, call := b.e, b.call
	c := e.Cluster
	n, N, G := c.NumRanks(), c.NumNodes(), c.GPUsPerNode()
	pr := &prog{kind: "direct", slices: 1, steps: 1}
	if n == 1 {
		return pr, nil
	}
	block := float64(call.Bytes) / float64(n)
	if call.Coll == model.SendRecv {
		block = float64(call.Bytes)
	}
	reduced := e.symmetric()
	srcNodes := N
	if reduced {
		srcNodes = 1
	}
	ccap := e.channelCap(model.ProtoSimple) * 2 // two p2p channels per peer at least
	type flow struct {
		route []model.LinkID
		cap   float64
		w     int32
		lat   model.Time
	}
	var flows []flow
	addFlow := func(route []model.LinkID, w int32) {
		r, capv := e.decorate(route)
		f := flow{r, minCap(capv, ccap), w, e.stepLat(e.routeClass(r), model.ProtoSimple)}
		flows = append(flows, f)
		pr.latHop = max(pr.latHop, f.lat)
		pr.classes = append(pr.classes, flowClass{f.route, block, f.w, f.cap})
	}
	usable := e.Res.NICUsable
	for sn := 0; sn < srcNodes; sn++ {
		for sg, src := range c.Nodes[sn].GPUs {
			peers := make([]int, 0, n-1)
			if call.Coll == model.SendRecv {
				peers = append(peers, (sn*G+sg+1)%n)
			} else {
				for d := 0; d < n; d++ {
					if d != sn*G+sg {
						peers = append(peers, d)
					}
				}
			}
			// With reduction, remote peers at the same local index collapse.
			seenRemote := map[int]int32{}
			for _, d := range peers {
				dn, dg := d/G, d%G
				if dn == sn {
					addFlow(e.Res.GPU(src, c.Nodes[dn].GPUs[dg]).Route, 1)
					continue
				}
				if reduced {
					seenRemote[dg]++
					continue
				}
				route, err := b.directNet(src, sn, dn, dg, usable)
				if err != nil {
					return nil, err
				}
				addFlow(route, 1)
			}
			keys := make([]int, 0, len(seenRemote))
			for k := range seenRemote {
				keys = append(keys, k)
			}
			sort.Ints(keys)
			for _, dg := range keys {
				route, err := b.directNet(src, sn, sn, dg, usable)
				if err != nil {
					return nil, err
				}
				addFlow(route, seenRemote[dg])
			}
		}
	}
	pr.perMemb = block
	pr.units = []float64{block}
	if !b.des {
		return pr, nil
	}
	for _, f := range flows {
		b.add(Op{Kind: OpTransfer, Route: f.route, Bytes: block, Weight: f.w, RateCap: f.cap, Latency: f.lat}, b.base)
	}
	return pr, nil
}

// directNet routes a point-to-point block from src (node sn) to local GPU dg
// of node dn through the destination rail's NIC.
func (b *builder) directNet(src model.ElemID, sn, dn, dg int, usable [][]model.ElemID) ([]model.LinkID, error) {
	e := b.e
	c := e.Cluster
	dst := c.Nodes[dn].GPUs[dg]
	// The NIC closest to the destination GPU, same index on the source node (rails).
	best := e.Res.LocalNICs(dst)
	if len(best) == 0 {
		return nil, fmt.Errorf("sim: %s has no usable NIC", c.Topo.Elem(dst).Name)
	}
	inIdx := 0
	for i, nic := range usable[dn] {
		if nic == best[0].NIC {
			inIdx = i
		}
	}
	outIdx := inIdx % len(usable[sn])
	if e.Cluster.Knobs.PXNDisable {
		own := e.Res.LocalNICs(src)
		for i, nic := range usable[sn] {
			if nic == own[0].NIC {
				outIdx = i
			}
		}
	}
	return e.netRoute(src, outIdx, dst, inIdx)
}
