package sim

import (
	"fmt"
	"math"
	"slices"

	"github.com/collsim/collsim/model"
)

// The analytic engine: NCCL's latency + size/bandwidth cost form
// (src/graph/tuning.cc; nccl-facts §2), with the bandwidth taken from the
// most loaded link. The load comes from the algorithm's own traffic matrix
// (who sends how many bytes to whom, from the algorithm's definition in
// nccl-facts §4) routed over the topology, and the pipeline terms from the
// algorithm's step structure. It shares only the topology, the routes, the
// graph channels and NCCL's chunk sizes with the DES; it never reads the
// DES's schedule, so a test holding the two together checks the schedule
// builders.

// demand is one entry of an algorithm's traffic matrix: members identical
// flows, each carrying bytes (wire bytes) over route, capped at ceil.
type demand struct {
	route  []model.LinkID
	bytes  float64
	weight int32
	ceil   ceiling
}

// shape is an algorithm's pipeline structure for the closed form.
type shape struct {
	kind    string    // "ring", "chain", "tree", "nvls" (CollNet), "mcast" (NVLS), "direct"
	units   []float64 // payload bytes per pipeline unit (per channel)
	slices  int       // ring: slices per chunk
	steps   int       // ring: steps per loop; chain/tree: hops on the critical path
	latHop  model.Time
	latPath model.Time // sum of hop latencies on the critical path (0 = steps x latHop)
	// stepSync: each unit after the first also pays latHop (a tree whose
	// steps wait for the hop's synchronisation, treeStepSync).
	stepSync bool
	perMemb  float64 // wire bytes one member (channel) moves
	// path lists the demands whose hops form the critical path of the
	// first unit (chain, tree), in order; nil = steps x the slowest hop.
	path []int
	// pathShare is, per entry of path, the fraction of a unit's member
	// bytes that crosses that hop (nil = all of it on every hop).
	pathShare []float64
	// pathFan is, per entry of path, how many of the first unit's edges
	// cross the hop's links at the same moment (nil or 0 = the hop alone).
	pathFan []float64
	// pathMult is, per entry of path and per link of its demand's route,
	// how many times the hop's own bytes the link carries at that moment
	// from the hop's node alone (nil or 0 = once): NVLSTree's shards of a
	// node's GPUs that leave or enter by one NIC (nvlsShardMult).
	pathMult [][]float64
}

// form is a call as the analytic engine sees it.
type form struct {
	demands []demand
	shape
	// note is what the prediction should say about the call, empty if
	// nothing.
	note string
	// caps are the call's link capacities when the congestion physics
	// changed them (nil: the Env's); the DES runs with the same.
	caps []float64
	// bgCaps are the per-member rate caps of the background jobs' flows
	// that addBackground appended after the call's own demands, in order
	// (nil: none; the call's own are the first len(demands)-len(bgCaps)).
	bgCaps []float64
}

// closedForm builds the analytic form of a call.
func (e *Env) closedForm(call Call) (*form, error) { return e.closedFormOf(call, false) }

// closedFormOf builds the analytic form of a call; with every set it
// routes every rank's traffic even where symmetry lets fewer stand for
// the rest (the congestion physics needs every port's offered load).
func (e *Env) closedFormOf(call Call, every bool) (*form, error) {
	c := e.Cluster
	if c.NumRanks() == 1 {
		return &form{shape: shape{kind: "direct"}}, nil
	}
	a := call.Choice.Algo
	switch {
	case a == model.AlgoRing && (call.Coll == model.Broadcast || call.Coll == model.Reduce):
		return e.formChain(call)
	case a == model.AlgoRing:
		return e.formRing(call)
	case a == model.AlgoTree:
		return e.formTree(call)
	case a == model.AlgoNVLS:
		return e.formNVLS(call)
	case a == model.AlgoNVLSTree:
		return e.formNVLSTree(call)
	case a == model.AlgoDirect:
		return e.formDirect(call, every)
	case a == model.AlgoCollNetDirect || a == model.AlgoCollNetChain:
		return e.formCollNet(call, a == model.AlgoCollNetDirect)
	case a == model.AlgoPAT && (call.Coll == model.AllGather || call.Coll == model.ReduceScatter):
		return e.formPAT(call)
	}
	return nil, fmt.Errorf("sim: algorithm %s is not modelled", a)
}

// gpuHop is the route and ceiling from GPU x to GPU y, through the fabric
// (leaving by NIC index out, entering by in) when they are on different
// nodes.
func (e *Env) gpuHop(x, y model.ElemID, out, in int) ([]model.LinkID, ceiling, error) {
	return e.gpuHopWays(x, y, out, in, nil)
}

// gpuHopWays is gpuHop where the call's GPUs that move traffic one way are
// known (ways, see decorateWays; nil: every GPU moves it both ways).
func (e *Env) gpuHopWays(x, y model.ElemID, out, in int, ways *oneWay) ([]model.LinkID, ceiling, error) {
	t := e.Cluster.Topo
	if x == y {
		return nil, ceiling{}, nil
	}
	var route []model.LinkID
	if t.Elem(x).Node != t.Elem(y).Node {
		var err error
		if route, err = e.netRoute(x, out, y, in); err != nil {
			return nil, ceiling{}, err
		}
	} else {
		route = e.Res.GPU(x, y).Route
	}
	r, ceil := e.decorateWays(route, ways.onlySends(x), ways.onlyReceives(y))
	return r, ceil, nil
}

// formRing: every rank sends to the next on every channel's ring; per loop
// of n chunks AllReduce takes 2(n-1) steps (reduce-scatter then
// all-gather), AllGather and ReduceScatter n-1; each rank sends one chunk
// per step (nccl-facts §4.1-4.2).
func (e *Env) formRing(call Call) (*form, error) {
	c := e.Cluster
	n, G := c.NumRanks(), c.GPUsPerNode()
	proto := call.Choice.Proto
	nc := max(call.Choice.Channels, 1)
	steps := n - 1
	if call.Coll == model.AllReduce {
		steps = 2 * (n - 1)
	}
	chunk, slices := ringChunk(proto)
	D := float64(call.Bytes) / float64(nc)
	f := &form{shape: shape{kind: "ring", steps: steps, slices: slices, units: ringLoops(D, n, chunk)}}
	f.perMemb = sumUnits(f.units) * float64(steps) / model.ProtoPayload(proto)
	ccap := e.channelCeiling(proto)
	chans, weights := channelGroups(e.Tuner.Graphs.Ring, nc)
	members := channelMembers(e.Tuner.Graphs.Ring, nc)
	var latSum model.Time
	for g, ch := range chans {
		for i := 0; i < n; i++ {
			na, ga := ringRank(ch, G, i)
			nb, gb := ringRank(ch, G, (i+1)%n)
			x, y := c.Nodes[na].GPUs[ga], c.Nodes[nb].GPUs[gb]
			route, ceil, err := e.gpuHop(x, y, ch.NetOut, ch.NetIn)
			if err != nil {
				return nil, err
			}
			if g == 0 {
				latSum += e.stepLat(e.routeClass(route), proto)
			}
			ceil = minCeiling(ceil, ccap)
			if na != nb {
				// Over the network each runtime channel's connection is
				// spread over its queue pairs, each hashed onto its own
				// ECMP route: each QP carries 1/Q of the channel's bytes
				// at 1/Q of its rate cap (physics_routes.go).
				ps, err := e.netPaths(x, ch.NetOut, y, ch.NetIn, members[g])
				if err != nil {
					return nil, err
				}
				if len(ps) > 1 || e.qps() > 1 {
					for k := range ps {
						ps[k].route, _ = e.decorate(ps[k].route)
					}
					f.demands = append(f.demands, e.splitDemands(ps, f.perMemb, ceil)...)
					continue
				}
			}
			f.demands = append(f.demands, demand{route, f.perMemb, weights[g], ceil})
		}
	}
	// A rank starts its next step once its predecessor's whole step has
	// arrived, so the step's data walks one hop around the ring: over a
	// loop the latency paid per step is the ring's mean hop latency, the
	// sum NCCL's own model charges ((nsteps-nInterSteps)*intraLat +
	// nInterSteps*interLat, tuning.cc).
	f.latHop = latSum / model.Time(n)
	f.caps = e.shmRingCaps(steps)
	return f, nil
}

// formChain: Broadcast from rank 0 (Reduce towards it) along the ring's
// order, n-1 hops, pipelined by chunk.
func (e *Env) formChain(call Call) (*form, error) {
	c := e.Cluster
	n, G := c.NumRanks(), c.GPUsPerNode()
	proto := call.Choice.Proto
	nc := max(call.Choice.Channels, 1)
	D := float64(call.Bytes) / float64(nc)
	f := &form{shape: shape{kind: "chain", steps: n - 1, slices: 1, units: chunked(D, stepChunk(proto))}}
	f.perMemb = D / model.ProtoPayload(proto)
	ccap := e.channelCeiling(proto)
	chans, weights := channelGroups(e.Tuner.Graphs.Ring, nc)
	// The chain's ends move traffic one way (decorateWays).
	ways := e.chainWays(call.Coll, chans)
	for g, ch := range chans {
		for j := 0; j < n-1; j++ {
			from := chainPos(call.Coll, j)
			na, ga := ringRank(ch, G, from%n)
			nb, gb := ringRank(ch, G, (from+1)%n)
			route, ceil, err := e.gpuHopWays(c.Nodes[na].GPUs[ga], c.Nodes[nb].GPUs[gb], ch.NetOut, ch.NetIn, &ways)
			if err != nil {
				return nil, err
			}
			lat := e.stepLat(e.routeClass(route), proto)
			f.latHop = max(f.latHop, lat)
			if g == 0 {
				f.latPath += lat
				f.path = append(f.path, len(f.demands))
			}
			f.demands = append(f.demands, demand{route, f.perMemb, weights[g], minCeiling(ceil, ccap)})
		}
	}
	return f, nil
}

// chunked splits D payload bytes into pipeline units of chunk bytes.
func chunked(D, chunk float64) []float64 {
	k := max(int(math.Ceil(D/chunk)), 1)
	out := make([]float64, k)
	for u := range out {
		out[u] = math.Min(chunk, D-float64(u)*chunk)
	}
	return out
}

// formTree: every byte of the buffer goes up a chain inside each node (the
// last GPU to the head) and up NCCL's double binary tree between the heads,
// then back down both; half the channels use each tree (nccl-facts §4.3).
// Each chain and tree edge carries the channel's whole block once each way.
func (e *Env) formTree(call Call) (*form, error) {
	c := e.Cluster
	N, G := c.NumNodes(), c.GPUsPerNode()
	proto := call.Choice.Proto
	nc := max(call.Choice.Channels, 1)
	D := float64(call.Bytes) / float64(nc)
	depth := int(math.Ceil(math.Log2(float64(N))))
	f := &form{shape: shape{kind: "tree", slices: 1, steps: 2 * (G - 1 + depth), units: chunked(D, treeChunk(proto, call.Bytes, nc, N, c.NumRanks())), stepSync: treeStepSync(proto)}}
	f.perMemb = treeWire(D, proto, e.params.TreeEff)
	// The edges are the DES's (Env.treeEdges): per group, each node's
	// chain edges up and down in turn, then its tree edge up and down.
	te, err := e.treeEdges(nc, proto)
	if err != nil {
		return nil, err
	}
	var intra, inter model.Time
	upChain, netEdge := -1, -1 // first intra and inter demand of group 0
	// add adds an edge of a group of w members; split are its routes when
	// its members take several (edgeFlows).
	add := func(ed hopInfo, split []pathShare, w int32) {
		f.latHop = max(f.latHop, ed.lat)
		if e.routeClass(ed.route) == model.LatNet {
			inter = max(inter, ed.lat)
			if netEdge < 0 {
				netEdge = len(f.demands)
			}
		} else {
			intra = max(intra, ed.lat)
			if upChain < 0 {
				upChain = len(f.demands)
			}
		}
		if split != nil {
			f.demands = append(f.demands, e.splitDemands(split, f.perMemb, ed.cap)...)
			return
		}
		f.demands = append(f.demands, demand{ed.route, f.perMemb, w, ed.cap})
	}
	n := 0
	for _, h := range te.hops {
		for v := range h.up {
			n += 2*len(h.up[v]) + max(len(h.splitUp[v]), 1) + max(len(h.splitDown[v]), 1)
		}
	}
	f.demands = make([]demand, 0, n)
	for gi, h := range te.hops {
		w := te.groups[gi].w
		for v := range h.up {
			for k := range h.up[v] {
				add(h.up[v][k], nil, w)
				add(h.down[v][k], nil, w)
			}
			if h.netUp[v].route != nil {
				add(h.netUp[v], h.splitUp[v], w)
				add(h.netDown[v], h.splitDown[v], w)
			}
		}
	}
	f.latPath = 2 * (model.Time(G-1)*intra + model.Time(depth)*inter)
	// The first chunk climbs a chain and the tree, then comes back down.
	for k := 0; k < 2*(G-1) && upChain >= 0; k++ {
		f.path = append(f.path, upChain)
	}
	for k := 0; k < 2*depth && netEdge >= 0; k++ {
		f.path = append(f.path, netEdge)
	}
	return f, nil
}

// formNVLS (AllGather and ReduceScatter with their own traffic, as
// nvlsPortBytes says): per loop of u bytes a head GPU's NVSwitch ports carry
// u(1+1/nHeads) each way (its whole loop in, its reduced chunk back, the
// chunk's multicast store out, every head's multicast in), another GPU's
// u; the operand pull up to the switch is bounded by the switch's
// reduction rate, and the loops follow one another with one NVLink step
// of synchronisation between them while the multicast delivery of one
// loop overlaps the next (device/all_reduce.h; nccl-facts §4.4).
func (e *Env) formNVLS(call Call) (*form, error) {
	c := e.Cluster
	G := c.GPUsPerNode()
	if c.NumNodes() != 1 {
		return nil, fmt.Errorf("sim: NVLS is modelled on one NVSwitch node only")
	}
	nc := max(call.Choice.Channels, 1)
	D := float64(call.Bytes) / float64(nc)
	heads := model.NVLSHeads(G)
	chunk := model.NVLSChunk(float64(call.Bytes), nc, heads, e.Cluster.Knobs.NVLSChunkSize)
	f := &form{shape: shape{kind: "mcast", slices: 1, steps: 1, units: chunked(D, chunk*float64(heads))}}
	f.latHop = e.stepLat(model.LatNVLink, model.ProtoSimple)
	eff := e.nvlsEff()
	ups, downs, err := e.nvlsLinks(0)
	if err != nil {
		return nil, err
	}
	// Per GPU port, the switch's reduction rate (per channel) over the
	// G-1 additions of each of its operands' elements, spread over G ports.
	var red, gather ceiling // per channel, on a member's payload
	if G > 1 && call.Coll != model.AllGather {
		red = ceiling{rate: e.nvlsReduce() * e.capsOf(f)[ups[0]] * float64(G) / float64(G-1) / float64(nc), kind: ceilNVLSReduce}
	}
	// AllReduce's CTA copies the loop in with its scatter warps and out
	// with its gather warps (nvlsWarpCaps).
	if call.Coll == model.AllReduce {
		scatter, g := e.nvlsWarpCaps(false)
		red = minCeiling(red, ceiling{rate: scatter, kind: ceilNVLSWarps})
		gather = ceiling{rate: g, kind: ceilNVLSWarps}
	}
	// What a GPU moves: AllReduce the loop each way (a head its chunk
	// more), ReduceScatter the loop up and its share down, AllGather its
	// share up and the loop down.
	share := D / float64(G)
	for i := range ups {
		bu, bd := D, D
		switch {
		case call.Coll == model.ReduceScatter:
			bd = share
		case call.Coll == model.AllGather:
			bu = share
		case i < heads:
			bu, bd = D*(1+1/float64(heads)), D*(1+1/float64(heads))
		}
		bu, bd = bu/eff, bd/eff
		f.perMemb = math.Max(f.perMemb, math.Max(bu, bd))
		f.demands = append(f.demands, demand{ups[i : i+1], bu, int32(nc), red.scaled(bu / D)}, demand{downs[i : i+1], bd, int32(nc), gather.scaled(bd / D)})
	}
	return f, nil
}

// formNVLSTree: NVLS inside every node (S(1+1/G) each way per GPU), and
// GPU i's 1/G shard reduced up and broadcast down the double binary tree
// of nodes through GPU i's own NIC; half the channels use each tree
// (nccl-facts §4.4). A channel works in loops of nHeads chunks of
// NVLSTree's own chunk (model.NVLSTreeChunk), and each loop's operand
// pull is followed by the same synchronisation as in single-node NVLS
// (formNVLS): the kernel's scatter, gather and reduce warps run the same
// loops (device/all_reduce.h, NVLS_TREE: loopCount = nHeads x chunkCount),
// so the pull's rate is the switch's reduction rate with one NVLink step
// per loop in series. The CTAs' scatter and gather warps bound the pull
// and the multicast delivery too, at the node's slowest role
// (nvlsTreeWarpCaps): the DES runs each tree's CTAs at their own role, and
// the call ends with its slowest CTAs.
func (e *Env) formNVLSTree(call Call) (*form, error) {
	c := e.Cluster
	N, G := c.NumNodes(), c.GPUsPerNode()
	nc := max(call.Choice.Channels, 1)
	D := float64(call.Bytes) / float64(nc)
	depth := int(math.Ceil(math.Log2(float64(N))))
	f := &form{shape: shape{kind: "tree", slices: 1, steps: 2 + 2*depth, units: e.nvlsTreeUnits(call, nc, G)}}
	f.perMemb = D * (1 + 1/float64(G)) / e.nvlsEff()
	netLat := e.stepLat(model.LatNet, model.ProtoSimple)
	nvLat := e.stepLat(model.LatNVLink, model.ProtoSimple)
	f.latHop = netLat
	f.latPath = 2*nvLat + model.Time(2*depth)*netLat
	trees := model.DoubleBinaryTree(N)
	half := [2]int32{int32((nc + 1) / 2), int32(nc / 2)}
	members := nvlsTreeMembers(nc)
	shard := D / float64(G)
	up, down, net := 0, 0, -1 // demand indices of the first loop's path
	// The demands of the path's network hop's node, tree and direction,
	// per GPU (its shard's edge): they cross the hop's links together.
	var shardEdges [][2]int
	netV, netTr := -1, -1
	for v := 0; v < N; v++ {
		ups, downs, err := e.nvlsLinks(v)
		if err != nil {
			return nil, err
		}
		// The node's slowest CTA sets its pace: where it has a parent in
		// either tree its CTAs keep fewer copy warps (nvlsWarpCaps).
		scatter, gather := e.nvlsTreeWarpCaps(trees, half, v)
		var red ceiling
		if G > 1 {
			// The operand pull (D of the bytes) at the switch's reduction
			// rate, or as fast as the scatter warps feed it, each loop's
			// pull then its synchronisation.
			c := minCeiling(ceiling{rate: e.nvlsReduce() * e.capsOf(f)[ups[0]] * float64(G) / float64(G-1) / float64(nc), kind: ceilNVLSReduce},
				ceiling{rate: scatter, kind: ceilNVLSWarps})
			r := D / (D/c.rate + float64(len(f.units))*float64(nvLat))
			red = ceiling{rate: r * f.perMemb / D, kind: c.kind}
		}
		out := ceiling{rate: gather, kind: ceilNVLSWarps}.scaled(f.perMemb / D)
		if v == 0 {
			up, down = len(f.demands), len(f.demands)+1
		}
		for i := range ups {
			f.demands = append(f.demands, demand{ups[i : i+1], f.perMemb, int32(nc), red}, demand{downs[i : i+1], f.perMemb, int32(nc), out})
		}
		for tr := 0; tr < 2; tr++ {
			p := trees[tr][v]
			if p < 0 || half[tr] == 0 {
				continue
			}
			for i := 0; i < G; i++ {
				hv, hp := c.Nodes[v].GPUs[i], c.Nodes[p].GPUs[i]
				rail, err := e.railOf(hv)
				if err != nil {
					return nil, err
				}
				for k, pair := range [2][2]model.ElemID{{hv, hp}, {hp, hv}} {
					route, ceil, err := e.gpuHop(pair[0], pair[1], rail, rail)
					if err != nil {
						return nil, err
					}
					if net < 0 {
						net, netV, netTr = len(f.demands), v, tr
					}
					ds, err := e.hopDemands(pair[0], rail, pair[1], rail, members[tr], route, shard, half[tr], ceil)
					if err != nil {
						return nil, err
					}
					if v == netV && tr == netTr && k == 0 {
						shardEdges = append(shardEdges, [2]int{len(f.demands), len(f.demands) + len(ds)})
					}
					f.demands = append(f.demands, ds...)
				}
			}
		}
	}
	// The first loop's critical path: its pull up the switch ports, its
	// shard (1/G of the loop's payload) over 2 x depth tree hops, its
	// multicast down the ports.
	if net >= 0 {
		fans := treePathFans(trees, half, depth)
		mult := nvlsShardMult(f.demands, shardEdges, net)
		f.path, f.pathShare, f.pathFan, f.pathMult = []int{up}, []float64{1}, []float64{1}, [][]float64{nil}
		for k := 0; k < 2*depth; k++ {
			f.path = append(f.path, net)
			f.pathShare = append(f.pathShare, shard/f.perMemb)
			f.pathFan = append(f.pathFan, fans[k])
			f.pathMult = append(f.pathMult, mult)
		}
		f.path, f.pathShare, f.pathFan, f.pathMult = append(f.path, down), append(f.pathShare, 1), append(f.pathFan, 1), append(f.pathMult, nil)
	}
	return f, nil
}

// nvlsShardMult returns, per link of demand net's route, how many times
// the bytes of net's own shard edge the link carries from all the shard
// edges of its node, tree and direction (edges: per GPU, the half-open
// range of its demands, the first GPU's holding net). Every GPU of a node
// sends its shard up the tree at the same moment, each through its rail's
// NIC (railOf, as the DES's nvlsTree routes it): where a node has fewer
// NICs than GPUs, several shards cross one NIC, and through PXN the
// NVLink and PCIe links before it, together (G/NICs of them on the
// NIC's cable). Links only the hop's own shard crosses get 1.
func nvlsShardMult(ds []demand, edges [][2]int, net int) []float64 {
	if len(edges) == 0 || net < edges[0][0] || net >= edges[0][1] {
		return nil
	}
	route := ds[net].route
	on := func(r [2]int, l model.LinkID) float64 {
		var b float64
		for _, d := range ds[r[0]:r[1]] {
			if slices.Contains(d.route, l) {
				b += d.bytes * float64(max(d.weight, 1))
			}
		}
		return b
	}
	out := make([]float64, len(route))
	for j, l := range route {
		out[j] = 1
		own := on(edges[0], l)
		if own <= 0 {
			continue
		}
		var all float64
		for _, r := range edges {
			all += on(r, l)
		}
		out[j] = math.Max(all/own, 1)
	}
	return out
}

// treePathFans returns how many edges of the first pipeline unit share
// each network hop of its critical path through NCCL's double binary tree
// (trees; a tree counts where half[tr] > 0), 2 x depth entries: up from
// the tree's deepest leaf to the root, then back down. Going up, a hop
// ends in a parent's NIC together with the partial sums of the parent's
// other children whose subtrees are as deep (they are ready at the same
// moment); going down, a parent sends the result to all its children at
// once. Entries past the deepest chain (shorter than depth) are 1.
func treePathFans(trees [2][]int, half [2]int32, depth int) []float64 {
	out := make([]float64, 2*depth)
	for i := range out {
		out[i] = 1
	}
	for tr, parent := range trees {
		if half[tr] == 0 {
			continue
		}
		n := len(parent)
		height := make([]int, n) // hops from a node down to its deepest leaf
		for v := range parent {
			for u, h := v, 0; u >= 0; u, h = parent[u], h+1 {
				height[u] = max(height[u], h)
			}
		}
		leaf := 0 // the deepest node
		for v := range parent {
			if hopsToRoot(parent, v) > hopsToRoot(parent, leaf) {
				leaf = v
			}
		}
		for i, u := 0, leaf; parent[u] >= 0 && i < depth; i, u = i+1, parent[u] {
			p := parent[u]
			var same, all float64
			for c := range parent {
				if parent[c] == p {
					all++
					if height[c] == height[u] {
						same++
					}
				}
			}
			out[i] = math.Max(out[i], same)
			out[2*depth-1-i] = math.Max(out[2*depth-1-i], all)
		}
	}
	return out
}

// hopsToRoot is the number of tree edges from v up to its tree's root.
func hopsToRoot(parent []int, v int) int {
	h := 0
	for u := v; parent[u] >= 0; u = parent[u] {
		h++
	}
	return h
}

// railOf is the index, among its node's usable NICs, of the NIC closest to
// GPU g (its rail).
func (e *Env) railOf(g model.ElemID) (int, error) {
	best := e.Res.LocalNICs(g)
	if len(best) == 0 {
		return 0, fmt.Errorf("sim: %s has no usable NIC", e.Cluster.Topo.Elem(g).Name)
	}
	node := e.Cluster.Topo.Elem(g).Node
	for j, nic := range e.Res.NICUsable[node] {
		if nic == best[0].NIC {
			return j, nil
		}
	}
	return 0, nil
}

// formDirect: AlltoAll sends S/n from every rank to every other rank at
// once, SendRecv S from each rank to the next, as grouped point-to-point
// operations; inter-node blocks leave through the NIC on the destination's
// rail (PXN). On a symmetric cluster every node's links carry what node
// 0's do, so only the blocks node 0 sends or receives are routed: node 0's
// links then carry their whole load and no link carries more.
func (e *Env) formDirect(call Call, every bool) (*form, error) {
	c := e.Cluster
	n, G := c.NumRanks(), c.GPUsPerNode()
	block := p2pBlock(call.Coll, call.Bytes, n)
	op := e.Tuner.P2POpFor(int64(block))
	// A small operation runs LL (P2POpFor): its links carry LL's wire bytes.
	wire := block / model.ProtoPayload(op.Proto)
	f := &form{shape: shape{kind: "direct", slices: 1, steps: 1, units: []float64{block}, perMemb: wire}}
	// NCCL spreads each send over a number of p2p channels that grows with
	// its size (model.Tuner.P2POpFor); each channel is one CTA, and over
	// the network one connection.
	f.note = p2pNote(op, block)
	// peerCeil returns a block's ceiling and its latency: one step plus
	// the receiver's lag behind the last step (p2pTail).
	peerCeil := func(route []model.LinkID, capv ceiling) (ceiling, model.Time) {
		class := e.routeClass(route)
		ch := ceiling{rate: e.channelCap(op.Proto) * e.params.P2PChanShare, kind: ceilPeerChannels}
		if class == model.LatNet {
			ch = minCeiling(ch, ceiling{rate: e.params.NetChanGBps * 1e-3, kind: ceilNetChannel})
		}
		ch = minCeiling(ch, capv)
		lat := e.stepLat(class, op.Proto) + e.p2pTail(class, op, block, ch.rate)
		ch.rate *= float64(op.Channels)
		return ch, lat
	}
	// All-to-all through an NVSwitch gets less of it than permutation
	// traffic (a2aCaps).
	f.caps = e.a2aCaps(call.Coll)
	sym := e.symmetric() && !every
	var rails []int // p2pRails, once the first block crosses the network
	for s := 0; s < n; s++ {
		src := c.Nodes[s/G].GPUs[s%G]
		for d := 0; d < n; d++ {
			if d == s || (call.Coll == model.SendRecv && d != (s+1)%n) || (sym && s >= G && d >= G) {
				continue
			}
			dst := c.Nodes[d/G].GPUs[d%G]
			var route []model.LinkID
			var ceil ceiling
			if d/G == s/G {
				route, ceil = e.decorate(e.Res.GPU(src, dst).Route)
			} else {
				if rails == nil {
					var err error
					if rails, err = e.p2pRails(); err != nil {
						return nil, err
					}
				}
				paths, total, err := e.p2pNet(rails, s, d, op.Channels)
				if err != nil {
					return nil, err
				}
				for _, p := range paths {
					frac := float64(p.n) / float64(total)
					route, ceil := e.decorate(p.route)
					pc, lat := peerCeil(route, ceil)
					f.latHop = max(f.latHop, lat)
					f.demands = append(f.demands, demand{route, wire * frac, 1, pc.scaled(frac)})
				}
				continue
			}
			pc, lat := peerCeil(route, ceil)
			f.latHop = max(f.latHop, lat)
			f.demands = append(f.demands, demand{route, wire, 1, pc})
		}
	}
	return f, nil
}

// formCollNet: CollNet AllReduce over SHARP (nccl-facts, CollNet rows of
// the bandwidth table; NCCL src/graph/tuning.cc). Direct:
// every GPU of a node is a head; it sends 1/G of the buffer to each peer
// over NVLink (reduce-scatter), its own part up its NIC into the SHARP
// tree, gets the reduced part back and sends it to each peer (all-gather).
// Chain: one head per usable NIC; the node's GPUs reduce along a chain to
// it over NVLink and the result comes back down. The network carries each
// byte once each way (no 2(n-1)/n factor, NCCL's CollNet bandwidth in
// tuning.cc); a head's port streams at the SHARP aggregation rate. The
// latency is NCCL's flat CollNet form: the NVLink hops of one part and
// the switches' aggregation (sharp.lat.us), paid once per pipeline unit
// in and out, shared between the two directions.
func (e *Env) formCollNet(call Call, direct bool) (*form, error) {
	pl, err := e.planCollNet(call, direct)
	if err != nil {
		return nil, err
	}
	c := e.Cluster
	N, G := c.NumNodes(), c.GPUsPerNode()
	S := float64(call.Bytes)
	// Wire bytes per member flow over the call: a head's part, S / heads.
	part := S / float64(pl.heads)
	f := &form{shape: shape{kind: "nvls", slices: 1, steps: 4, units: chunked(S, collNetChunk), perMemb: part}}
	port := func(p sharpPort) {
		f.demands = append(f.demands, demand{p.up, part, 1, ceiling{rate: p.cap}}, demand{p.down, part, 1, ceiling{rate: p.cap}})
	}
	if direct {
		f.latHop = (2*pl.intraLat + pl.sharpLat) / 2
		for v := 0; v < N; v++ {
			for i := 0; i < G; i++ {
				for j := 0; j < G; j++ {
					if i != j {
						in, out := pl.nvl(v, j, i), pl.nvl(v, i, j)
						f.demands = append(f.demands, demand{in.route, part, 1, in.cap}, demand{out.route, part, 1, in.cap})
					}
				}
				port(pl.ports[v][i])
			}
		}
		return f, nil
	}
	// Chain: G-1 NVLink hops each way around the head, per chain.
	f.latHop = (2*model.Time(G-1)*pl.intraLat + pl.sharpLat) / 2
	for v := 0; v < N; v++ {
		for h := 0; h < pl.heads; h++ {
			for k := 0; k+1 < G; k++ {
				a, b := e.chainGPU(h, k, G), e.chainGPU(h, k+1, G)
				f.demands = append(f.demands, demand{pl.nvl(v, b, a).route, part, 1, ceiling{}}, demand{pl.nvl(v, a, b).route, part, 1, ceiling{}})
			}
			port(pl.ports[v][h])
		}
	}
	return f, nil
}

// analytic returns the closed-form time of a call, the per-link load
// (bytes) its traffic matrix puts on every link, and the binding
// per-member rate cap when a cap rather than a link limits the call (0
// otherwise). base is NCCL's per-call base latency.
func (e *Env) analytic(f *form, base model.Time) (model.Time, []float64, ceiling) {
	caps := e.capsOf(f)
	loads := make([]float64, len(caps))
	var tCap float64
	var bindCap ceiling
	for _, d := range f.demands {
		w := float64(max(d.weight, 1))
		for _, l := range d.route {
			loads[l] += d.bytes * w
		}
		if c := d.ceil; c.rate > 0 && d.bytes/c.rate > tCap {
			tCap, bindCap = d.bytes/c.rate, c
		}
	}
	var tBW float64
	for l, ld := range loads {
		if ld > 0 && caps[l] > 0 {
			tBW = math.Max(tBW, ld/caps[l])
		}
	}
	tData := math.Max(tBW, tCap) // ps for one member's bytes
	if tCap <= tBW*1.001 {
		bindCap = ceiling{}
	}
	if f.perMemb <= 0 || tData <= 0 {
		return base + f.latHop, loads, ceiling{}
	}
	rate := f.perMemb / tData // wire bytes per ps per member
	lat := float64(f.latHop)
	eff := unitEff(&f.shape)
	var total float64
	switch f.kind {
	case "ring":
		// Each step moves its slices, then pays the step's synchronisation
		// (the sender's fence and flag, the receiver's poll before it
		// forwards; across nodes the proxy's completion): the next step
		// waits for it, so it adds to the transfer instead of hiding under
		// the other slices, as NCCL's own model adds nsteps x hwLat to
		// bytes/bw (tuning.cc ncclTopoGetAlgoTime). It shows at mid sizes:
		// 8x H100 AllGather at 64 MiB takes 205 us where the transfer
		// alone takes 174 (xxrjun file); 8x A100 AllReduce at 32 MiB 378
		// against 253 (thanos file).
		for _, u := range f.units {
			st := u / float64(f.slices) / eff / rate
			total += float64(f.steps) * (float64(f.slices)*st + lat)
		}
	case "chain", "tree":
		// Steady state at the bottleneck rate for all but the first unit;
		// the first unit fills the pipeline hop by hop, each hop at the
		// rate one channel group gets on it while the hop carries nothing
		// but the first unit's edges that cross it at the same moment (fan
		// of them, pathFan; one where the path does not say), each link
		// also carrying the hop's node's other edges that cross it with
		// the hop (pathMult: NVLSTree's shards through one NIC). alone is in
		// the demand's bytes; share is the fraction of a member's bytes the
		// demand carries, so the steady rate it is never below is rate x
		// share.
		alone := func(d *demand, share, fan float64, mult []float64) float64 {
			r := math.Inf(1)
			if d.ceil.rate > 0 {
				r = d.ceil.rate
			}
			for j, l := range d.route {
				m := 1.0
				if j < len(mult) {
					m = math.Max(mult[j], 1)
				}
				r = math.Min(r, caps[l]/float64(max(d.weight, 1))/math.Max(fan, 1)/m)
			}
			return math.Max(r, rate*share)
		}
		first := f.units[0] / eff
		var fill float64
		if f.path != nil {
			for k, i := range f.path {
				share, fan := 1.0, 1.0
				if k < len(f.pathShare) {
					share = f.pathShare[k]
				}
				if k < len(f.pathFan) {
					fan = f.pathFan[k]
				}
				var mult []float64
				if k < len(f.pathMult) {
					mult = f.pathMult[k]
				}
				fill += first * share / alone(&f.demands[i], share, fan, mult)
			}
		} else {
			slow := math.Inf(1)
			for i := range f.demands {
				slow = math.Min(slow, alone(&f.demands[i], 1, 1, nil))
			}
			fill = float64(f.steps) * first / slow
		}
		path := float64(f.latPath)
		if path == 0 {
			path = float64(f.steps) * lat
		}
		total = (sumUnits(f.units)/eff-first)/rate + fill + path
		if f.stepSync {
			// Every unit after the first pays the slowest hop's
			// synchronisation (treeStepSync).
			total += float64(len(f.units)-1) * lat
		}
	case "mcast":
		// NVLS: the loops' transfers up the GPUs' switch ports (operand
		// pulls, stores) follow one another, each followed by one step of
		// synchronisation; the multicast deliveries down the ports
		// pipeline behind them, and the last loop's then arrives.
		tUp, tDown := e.mcastTimes(f, loads, caps)
		sum := sumUnits(f.units)
		var gate float64 // a loop's pull and store done, plus the step
		for _, u := range f.units {
			gate += u/sum*tUp + lat
			total = math.Max(total, gate) + u/sum*tDown
		}
	case "nvls":
		// Each unit moves u*perMemb/sum(units) wire bytes per GPU each way;
		// one extra unit time fills the reduce/multicast pipeline.
		wirePerPayload := f.perMemb / sumUnits(f.units)
		for _, u := range f.units {
			total += u * wirePerPayload / rate
		}
		total += 2*lat + f.units[0]*wirePerPayload/rate
	default: // direct
		total = tData + lat
	}
	return base + model.Time(math.Ceil(total)), loads, bindCap
}

// mcastTimes are the times one member's bytes of an NVLS call take up and
// down the GPUs' NVSwitch ports (ps): the slowest port each way at the
// call's link loads, up with the reduction or scatter-warp ceiling, down
// with the gather-warp ceiling.
func (e *Env) mcastTimes(f *form, loads, caps []float64) (up, down float64) {
	ups, downs, err := e.nvlsLinks(0)
	if err != nil {
		return 0, 0
	}
	for i := range ups {
		if l := ups[i]; caps[l] > 0 {
			up = math.Max(up, loads[l]/caps[l])
		}
		if l := downs[i]; caps[l] > 0 {
			down = math.Max(down, loads[l]/caps[l])
		}
	}
	for _, d := range f.demands {
		if d.ceil.rate <= 0 || (d.ceil.kind != ceilNVLSReduce && d.ceil.kind != ceilNVLSWarps) || len(d.route) == 0 {
			continue
		}
		if slices.Contains(downs, d.route[0]) {
			down = math.Max(down, d.bytes/d.ceil.rate)
		} else {
			up = math.Max(up, d.bytes/d.ceil.rate)
		}
	}
	return up, down
}

// unitEff converts pipeline-unit payload to wire bytes: perMemb is wire
// bytes, units are payload, so their ratio is the protocol efficiency.
func unitEff(s *shape) float64 {
	t := sumUnits(s.units)
	if s.kind == "ring" {
		t *= float64(s.steps)
	}
	if t <= 0 || s.perMemb <= 0 {
		return 1
	}
	return t / s.perMemb
}

func sumUnits(u []float64) float64 {
	var s float64
	for _, x := range u {
		s += x
	}
	return s
}
