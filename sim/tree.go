package sim

import (
	"math"
	"sync"

	"github.com/collsim/collsim/model"
)

// treeAlgo schedules tree AllReduce.
type treeAlgo struct{}

func (treeAlgo) name() string { return "tree AllReduce" }

func (treeAlgo) applies(a model.Algo, coll model.Collective) bool {
	return a == model.AlgoTree
}

func (treeAlgo) build(b *builder) (*prog, error) { return b.tree() }

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
	pr := &prog{}
	if c.NumRanks() == 1 {
		return pr, nil
	}
	trees := model.DoubleBinaryTree(N)
	te, err := e.treeEdges(nc, proto)
	if err != nil {
		return nil, err
	}
	groups := te.groups
	chunk := treeChunk(proto, call.Bytes, nc, N, c.NumRanks())
	sync := treeStepSync(proto)
	D := float64(call.Bytes) / float64(nc)
	nChunks := max(int(math.Ceil(D/chunk)), 1)
	for u := 0; u < nChunks; u++ {
		pr.units = append(pr.units, math.Min(chunk, D-float64(u)*chunk))
	}
	var sim []float64
	if b.des {
		var skipped int
		sim, skipped = b.simUnits(pr.units)
		pr.skipped = skipped
	}
	if !b.des {
		return pr, nil
	}
	// Groups the fabric treats alike run as one bundle (bundle.go).
	bundles := b.treeBundles(te)
	{
		// Per unit and bundle (whose ops are one group's): two ops per
		// chain edge each way, two per tree edge each way, one for the
		// root's sum, and up to splitFan more per split network hop
		// (edgeFlows). Dependencies per node: a
		// chain edge's transfer waits on at most two ops and its arrival
		// on one, each way (6(G-1) in all, 3(G-1)-1 up as its first
		// transfer waits on one); a tree edge's reduce waits on the
		// child's chain and children (counted once per child, N-1 in
		// all) and its last send, its broadcast on two, and each arrival
		// on one: at most 6G per node for G >= 2, 7 for G = 1. A split
		// hop's routes each wait on what the hop waits on (at most four)
		// and its join on every route: at most 5 per op it adds.
		fan := 0 // split network hops (edgeFlows), summed over the groups
		for _, bu := range bundles {
			fan += 2 * e.splitFan(int(groups[bu.groups[0]].w))
		}
		// A hop whose arrival alone waits on it (treeStepSync) is one op
		// with its arrival when the builder folds them (addThen): two
		// ops fewer per chain edge and one per tree edge, each way, and
		// as many dependencies.
		perNode, depsPerNode := int64(4*(G-1)+5), int64(max(6*G, 7))
		if sync && b.fold {
			perNode, depsPerNode = int64(2*(G-1)+3), int64(max(4*G, 5))
		}
		units := int64(len(bundles)) * int64(len(sim)) * int64(N)
		extra := int64(len(sim)) * int64(N) * int64(fan)
		nops := units*perNode + extra
		if err := b.reserve(nops, units*depsPerNode+5*extra); err != nil {
			return nil, err
		}
	}
	for _, bu := range bundles {
		gi, g := bu.groups[0], groups[bu.groups[0]]
		rid := bu.hops.intern(b.sched)
		up, down, netUp, netDown, splitUp, splitDown := bu.hops.up, bu.hops.down, bu.hops.netUp, bu.hops.netDown, bu.hops.splitUp, bu.hops.splitDown
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
		prevNetUp := make([][]OpID, N) // per route of the edge (addSplit)
		prevNetDown := make([][]OpID, N)
		for v := 0; v < N; v++ {
			prevUp[v] = fill(G, b.base)
			prevDown[v] = fill(G, b.base)
			prevNetUp[v], prevNetDown[v] = splitPrev(splitUp[v], b.base), splitPrev(splitDown[v], b.base)
		}
		// rankOf is the global rank of chain position i of node v.
		rankOf := func(v, i int) int32 { return int32(v*G + g.ch.GPUs[i]) }
		// Per-unit state, reset unit after unit: arrivedUp[v] is the
		// children's partial sums node v's head waits for, have[v] when it
		// holds the result.
		have := make([]OpID, N)
		arrivedUp := make([][]OpID, N)
		for ui, u := range sim {
			b.unit = int32(ui)
			bytes := treeWire(u, proto, e.params.TreeEff)
			// mkSplitT is mkT for a network edge: its routes follow their
			// own previous ops in prev (addSplit), or with treeStepSync
			// the previous unit's arrival; it returns the arrival.
			mkSplitT := func(ed hopInfo, split []pathShare, prev []OpID, from, to int32, deps ...OpID) OpID {
				op := Op{Kind: OpTransfer, Route: ed.route, rid: ed.rid, Bytes: bytes, Weight: g.w, RateCap: ed.cap.rate, Channel: int32(gi), Rank: from}
				// With treeStepSync only the arrival waits on the hop.
				a := b.addSplitThen(op, split, prev, ed.lat, Op{Channel: int32(gi), Rank: to}, sync, deps...)
				if sync {
					for k := range prev {
						prev[k] = a
					}
				}
				return a
			}
			// mkT returns the op the edge's next unit waits for (the
			// transfer, or with treeStepSync its arrival) and the arrival.
			mkT := func(ed hopInfo, from, to int32, deps ...OpID) (OpID, OpID) {
				op := Op{Kind: OpTransfer, Route: ed.route, rid: ed.rid, Bytes: bytes, Weight: g.w, RateCap: ed.cap.rate, Channel: int32(gi), Rank: from}
				arrival := Op{Channel: int32(gi), Rank: to}
				if sync {
					// Only the arrival waits on the transfer: one op with it.
					a := b.addThen(op, ed.lat, arrival, deps...)
					return a, a
				}
				t := b.add(op, deps...)
				arrival.Kind, arrival.Latency = OpDelay, ed.lat
				return t, b.add(arrival, t)
			}
			for v := range arrivedUp {
				arrivedUp[v] = arrivedUp[v][:0]
			}
			// Reduce: leaves first (reverse topological order).
			for i := len(order) - 1; i >= 0; i-- {
				v := order[i]
				arr := b.base
				for k, ed := range up[v] {
					ed.rid = rid.up[v*(G-1)+k]
					deps := b.depList(prevUp[v][k])
					if k > 0 {
						b.deps = append(deps, arr) // keep the scratch if it grew
						deps = b.deps
					}
					var t OpID
					t, arr = mkT(ed, rankOf(v, G-1-k), rankOf(v, G-2-k), deps...)
					prevUp[v][k] = t
				}
				ready := b.depList(arr, arrivedUp[v]...)
				if p := trees[g.tree][v]; p >= 0 {
					ed := netUp[v]
					ed.rid = rid.netUp[v]
					a := mkSplitT(ed, splitUp[v], prevNetUp[v], rankOf(v, 0), rankOf(p, 0), ready...)
					arrivedUp[p] = append(arrivedUp[p], a)
				} else {
					have[v] = b.add(Op{Kind: OpDelay, Channel: int32(gi), Rank: rankOf(v, 0)}, ready...) // the root holds the sum
				}
			}
			// Broadcast: root first (have[root] was set above).
			for _, v := range order {
				for _, ch := range children[v] {
					ed := netDown[ch]
					ed.rid = rid.netDown[ch]
					have[ch] = mkSplitT(ed, splitDown[ch], prevNetDown[ch], rankOf(v, 0), rankOf(ch, 0), have[v])
				}
				arr := have[v]
				for k := len(down[v]) - 1; k >= 0; k-- {
					var t OpID
					ed := down[v][k]
					ed.rid = rid.down[v*(G-1)+k]
					t, arr = mkT(ed, rankOf(v, G-2-k), rankOf(v, G-1-k), arr, prevDown[v][k])
					prevDown[v][k] = t
				}
			}
		}
	}
	return pr, nil
}

// treeGroup is one channel group of a tree AllReduce on one tree of the
// double binary tree: its graph channel, the tree, and its runtime
// channels (members) and their count.
type treeGroup struct {
	ch      model.GraphChannel
	tree    int
	w       int32
	members []int
}

// treeEdges are the channel groups of a tree AllReduce on nc channels of
// one protocol and every group's hops: routes, ceilings and latencies that
// do not depend on the size, so that the sizes of a sweep, their DES
// schedules and analytic forms alike, compute them once (Env.treeEdges).
// Read-only once built, but for bundled, set once.
type treeEdges struct {
	groups []treeGroup
	hops   []treeHops
	// bundled are the groups' bundles under the Env's own capacities
	// (treeBundles), found on first use.
	bundleOnce sync.Once
	bundled    []treeBundle
}

// treeEdgesKey names the edges of a tree: they depend on the channel
// count and the protocol alone.
type treeEdgesKey struct {
	nc    int
	proto model.Proto
}

// treeEdgeCache keeps the tree edges of the latest channel count and
// protocol asked for: the sizes of a sweep ask in order, so consecutive
// sizes share a key, and one entry bounds what the Env holds (at 4,096
// nodes and 16 channels some 60 MB).
type treeEdgeCache struct {
	mu  sync.Mutex
	key treeEdgesKey
	te  *treeEdges
}

// treeEdges returns the tree edges of nc channels of protocol proto, from
// the cache when its entry is theirs. Callers only read them.
func (e *Env) treeEdges(nc int, proto model.Proto) (*treeEdges, error) {
	k := treeEdgesKey{nc, proto}
	c := &e.treeCache
	c.mu.Lock()
	if c.te != nil && c.key == k {
		te := c.te
		c.mu.Unlock()
		return te, nil
	}
	c.mu.Unlock()
	te, err := e.buildTreeEdges(nc, proto)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.key, c.te = k, te
	c.mu.Unlock()
	return te, nil
}

// buildTreeEdges computes the tree edges of nc channels of protocol
// proto: the channel groups split over the two trees (half the channels
// each), and per group and node its chain edges (up: chain[i] ->
// chain[i-1], down the reverse) and its tree edges to the node's parent,
// each on its share of the CTA (treeSplit).
func (e *Env) buildTreeEdges(nc int, proto model.Proto) (*treeEdges, error) {
	c := e.Cluster
	N, G := c.NumNodes(), c.GPUsPerNode()
	trees := model.DoubleBinaryTree(N)
	te := &treeEdges{}
	chans, _ := channelGroups(e.Tuner.Graphs.Tree, nc)
	members := channelMembers(e.Tuner.Graphs.Tree, nc)
	for i, ch := range chans {
		for tr, m := range treeMembers(members[i], N) {
			if len(m) > 0 {
				te.groups = append(te.groups, treeGroup{ch, tr, int32(len(m)), m})
			}
		}
	}
	upCap, downCap := e.treeCeilings(proto)
	mkWith := func(route []model.LinkID, ccap ceiling) hopInfo {
		r, capv := e.decorate(route)
		return hopInfo{route: r, cap: minCeiling(capv, ccap), lat: e.treeHopLat(e.routeClass(r), proto)}
	}
	mkUp := func(route []model.LinkID) hopInfo { return mkWith(route, upCap) }
	mkDown := func(route []model.LinkID) hopInfo { return mkWith(route, downCap) }
	te.hops = make([]treeHops, len(te.groups))
	for gi, g := range te.groups {
		h := treeHops{up: make([][]hopInfo, N), down: make([][]hopInfo, N), netUp: make([]hopInfo, N), netDown: make([]hopInfo, N),
			splitUp: make([][]pathShare, N), splitDown: make([][]pathShare, N)}
		// One backing array for every node's chain edges each way.
		chainUp, chainDown := make([]hopInfo, 0, N*max(G-1, 0)), make([]hopInfo, 0, N*max(G-1, 0))
		for v := 0; v < N; v++ {
			gpus := c.Nodes[v].GPUs
			lo := len(chainUp)
			for i := G - 1; i >= 1; i-- {
				a, bb := gpus[g.ch.GPUs[i]], gpus[g.ch.GPUs[i-1]]
				chainUp = append(chainUp, mkUp(e.Res.GPU(a, bb).Route))
				chainDown = append(chainDown, mkDown(e.Res.GPU(bb, a).Route))
			}
			h.up[v], h.down[v] = chainUp[lo:len(chainUp):len(chainUp)], chainDown[lo:len(chainDown):len(chainDown)]
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
				h.netUp[v], h.netDown[v] = mkUp(ru), mkDown(rd)
				if h.splitUp[v], err = e.edgeFlows(hv, g.ch.NetOut, hp, g.ch.NetIn, g.members); err != nil {
					return nil, err
				}
				if h.splitDown[v], err = e.edgeFlows(hp, g.ch.NetOut, hv, g.ch.NetIn, g.members); err != nil {
					return nil, err
				}
			}
		}
		te.hops[gi] = h
	}
	return te, nil
}

// treeChunk is the payload of one pipeline unit of a tree AllReduce of
// nBytes on nc channels. Across nodes NCCL shrinks the LL128 step so that
// a call has enough chunks for the tree's steps (enqueue.cc, the Tree
// LL128 case of the chunk size: with nsteps = 1 + floor(log2 nNodes) +
// 0.1 ppn, halve the 614,400 B step while nBytes/(nc*chunk) < 64 nsteps/ppn
// and it is above 128 KiB, then while below 16 nsteps/ppn and above
// 32 KiB); every other case runs whole buffer steps.
func treeChunk(p model.Proto, nBytes model.Bytes, nc, nNodes, nRanks int) float64 {
	if p != model.ProtoLL128 || nNodes <= 1 {
		return stepChunk(p)
	}
	step := int64(math.Round(model.StepPayloadLL128 / model.ProtoPayload(p)))
	ppn := float64(nRanks) / float64(nNodes)
	nsteps := 1 + math.Floor(math.Log2(float64(nNodes))) + 0.1*ppn
	chunk := step
	per := func() float64 { return float64(int64(nBytes) / (int64(nc) * chunk)) }
	for per() < nsteps*64/ppn && chunk > 131072 {
		chunk /= 2
	}
	for per() < nsteps*16/ppn && chunk > 32768 {
		chunk /= 2
	}
	return float64(chunk) * model.ProtoPayload(p)
}

// treeSplit is the share of a tree channel's CTA that the reduce-up edges
// (child to parent) and the broadcast-down edges (parent to child) run on.
// Every rank of a tree but its root splits its threads between the two
// (NCCL device/all_reduce.h runTreeSplit): for LL and LL128 70% reduce and
// 30% broadcast ("receiving from up to 3 sources is more compute intensive
// than sending to 3 dests"), and every edge has a non-root end, its child.
// The per-CTA ceilings of LL and LL128 (chan.cap.ll*, NCCL's per-channel
// ring figures for LL128) are those of a CTA that moves one flow with all
// its threads, so the shares scale them. Simple splits too (half plus two
// warps up), but its ceiling (chan.cap.simple) is NCCL's per-channel Tree
// figure (perChMaxTreeBw), which already describes a tree's CTA: it is
// left whole.
func treeSplit(p model.Proto) (up, down float64) {
	if p == model.ProtoSimple {
		return 1, 1
	}
	return 0.7, 0.3
}

// treeCeilings are the per-CTA ceilings of a tree's reduce-up and
// broadcast-down edges (treeSplit), in the wire bytes treeWire counts: a
// tree bound by its CTAs moves its payload at their rate.
func (e *Env) treeCeilings(p model.Proto) (up, down ceiling) {
	c := e.channelCeiling(p)
	u, d := treeSplit(p)
	up, down = c, c
	up.rate *= u / e.params.TreeEff
	down.rate *= d / e.params.TreeEff
	return up, down
}

// treeEff is the default of tree.eff (its source is in the term table).
const treeEff = 0.92

// treeWire is the link bytes a tree AllReduce edge moves for u bytes of
// payload: the protocol's wire bytes over the tree's efficiency eff
// (tree.eff), so that a tree bound by a link gets eff of the rate a ring
// gets on it, while one bound by its CTAs (whose ceilings treeCeilings
// scales alike) is not slowed, as NCCL's own model has it (tuning.cc:
// min(busBw x .92, nChannels x perChMaxTreeBw)). What is lost, NCCL's code
// does not say; the figure is its developers' and agrees with what a tree
// and a ring reach on the same NICs (the term's source).
func treeWire(u float64, p model.Proto, eff float64) float64 {
	return u / (model.ProtoPayload(p) * eff)
}

// treeStepSync says whether a tree edge's next unit waits for the hop's
// synchronisation after the previous one (as every ring step does, the
// ring form), instead of overlapping it. An assumption for LL128, the
// protocol whose tree chunks NCCL shrinks to 37-150 KB at mid sizes
// (treeChunk), so that the per-step cost shows: on 2x 4 H100 over NDR200
// (snellius_h100_2x4 case, NCCL 2.22.3) tree LL128 adds 52 GB/s algbw per
// extra byte at 8-32 MiB (75 KB chunks: 7.1 us on the wire per channel at
// tree.eff + 4.0 us of lat.step.net.ll128 per step gives 52) and 69-73 at
// 64-256 MiB (150-600 KB chunks), where the overlapped pipeline gives 82
// throughout;
// the same assumption moves ABCI A100 4x8 (mid regime 31% -> 14%) and AWS
// p4d over EFA (49% -> 45%) toward their runs. Simple is left overlapped: its 512 KiB
// tree steps reach 0.94 of the NIC bound on the same nodes at 0.5-8 GiB,
// which 14 us (lat.step.net.simple) per step would cut to about 0.76.
func treeStepSync(p model.Proto) bool { return p == model.ProtoLL128 }

// treeHopLat is the latency of one tree hop of a route class: inside a
// node the step latency of its class; between nodes, on the network stacks
// of NCCL releases before treeNetGenMinor, the tree's own network hop
// latency (lat.tree.net: NCCL's hwLat NET Tree row, above the ring's), from
// it the ring's (lat.step.net); plus the NIC kind's or stack's extra
// network latency either way.
func (e *Env) treeHopLat(class model.LatClass, p model.Proto) model.Time {
	if class != model.LatNet || e.Cluster.Version.AtLeast(treeNetGenMinor) {
		return e.stepLat(class, p)
	}
	return model.Micros(e.params.TreeNetLatUs[p] + e.netLatUs)
}

// treeNetGenMinor is the first NCCL minor release whose network stack
// generation pays the ring's network hop latency on a tree hop too. An
// assumption keyed on the release as the stack generation's marker: NCCL
// 2.18 retuned its latency tables (base latencies, the network overhead;
// tuning.cc v2.18.1-1) for the systems of its time, and the data hold one
// run pair on a stack that new, snellius_h100_1x4 and snellius_h100_2x4
// (NCCL 2.22.3, NDR200): 8 B AllReduce takes 17.0 us on one node and 17.5
// on two, so the tree's two network hops cost no more than a ring's
// (lat.step.net.ll, 2.7 us); the ABCI runs (NCCL 2.8.4, EDR/HDR) pay
// 4.4-6.6 us per tree hop (lat.tree.net).
const treeNetGenMinor = 18

// TreeNetLatApplies reports whether the lat.tree.net terms time a tree's
// network hops on c (NCCL releases before 2.18); newer ones use the ring's
// lat.step.net.
func TreeNetLatApplies(c *model.Cluster) bool {
	return c.NumNodes() > 1 && !c.Version.AtLeast(treeNetGenMinor)
}
