package sim

import (
	"fmt"

	"github.com/collsim/collsim/model"
)

// nvlsTreeAlgo schedules NVLSTree AllReduce.
type nvlsTreeAlgo struct{}

func (nvlsTreeAlgo) name() string { return "NVLSTree AllReduce" }

func (nvlsTreeAlgo) applies(a model.Algo, coll model.Collective) bool {
	return a == model.AlgoNVLSTree
}

func (nvlsTreeAlgo) build(b *builder) (*prog, error) { return b.nvlsTree() }

// nvlsTree builds NVLSTree AllReduce across nodes: inside every node an
// NVLS reduce-scatter leaves GPU i with the node's partial sum of shard i;
// shard i is reduced up and broadcast down NCCL's double binary tree over
// the nodes through GPU i's own NIC (rail i); an NVLS multicast then gives
// every GPU the whole result (nccl-facts §4.4: NVLS inside the node plus
// the tree between nodes). Half the channels use each tree. Each CTA
// copies its channel's input in with its scatter warps and the result out
// with its gather warps, as many as NCCL leaves them in the CTA's role on
// that tree (nvlsWarpCaps): fewer where the node has a parent.
func (b *builder) nvlsTree() (*prog, error) {
	e, call := b.e, b.call
	c := e.Cluster
	N, G := c.NumNodes(), c.GPUsPerNode()
	nc := max(call.Choice.Channels, 1)
	eff := e.nvlsEff()
	pr := &prog{}
	pr.units = e.nvlsTreeUnits(call, nc, G)
	trees := model.DoubleBinaryTree(N)
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
	half := [2]int32{int32((nc + 1) / 2), int32(nc / 2)}
	members := nvlsTreeMembers(nc)
	netLat := e.stepLat(model.LatNet, model.ProtoSimple)
	nvLat := e.stepLat(model.LatNVLink, model.ProtoSimple)
	edges := make([][2][]nvlsEdge, N) // [node][tree][gpu]
	for v := 0; v < N; v++ {
		for tr := 0; tr < 2; tr++ {
			edges[v][tr] = make([]nvlsEdge, G)
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
				su, err := e.edgeFlows(hv, rail[i], hp, rail[i], members[tr])
				if err != nil {
					return nil, err
				}
				sd, err := e.edgeFlows(hp, rail[i], hv, rail[i], members[tr])
				if err != nil {
					return nil, err
				}
				edges[v][tr][i] = nvlsEdge{hopInfo{route: u, cap: cu, lat: netLat}, hopInfo{route: d, cap: cd, lat: netLat}, su, sd}
			}
		}
	}
	if !b.des {
		return pr, nil
	}
	sim, skipped := b.simUnits(pr.units)
	pr.skipped = skipped
	// Per tree and node, the operand pull's cap (the switch's reduction
	// rate, or the scatter warps' if lower) and the multicast delivery's
	// (the gather warps'), both per channel on the ops' bytes: a CTA whose
	// rank has a parent in the tree keeps fewer copy warps (nvlsWarpCaps).
	rcap := e.nvlsReduceCap(nc, G)
	var pull, out [2][]float64
	for tr := 0; tr < 2; tr++ {
		pull[tr], out[tr] = make([]float64, N), make([]float64, N)
		for v := 0; v < N; v++ {
			scap, gcap := e.nvlsWarpCaps(trees[tr][v] >= 0)
			pull[tr][v], out[tr][v] = minRate(rcap, scap)/eff, gcap/eff
		}
	}
	// The node's GPUs (shards) that the fabric treats alike run as one
	// lane (bundle.go): its ops stand for each of them, its flows cross
	// all their links. Without bundling every GPU is its own lane.
	lanes := b.nvlsLanes(G, half, pull, out, ups, downs, edges)
	nl := len(lanes)
	laneUp, laneDown, edges := mergeLanes(lanes, ups, downs, edges)
	// Per unit and tree, per node: the NVLS stages (4G transfers and two
	// reductions) and per GPU up to two ops each way on its tree edge.
	// Dependencies: two per NVLS transfer and G per reduction (10G per
	// node), and per GPU and node on the tree at most 3 for its reduce
	// edge, 3 for its broadcast edge and one per child's arrival (counted
	// once per child): 17G per node; a split edge (edgeFlows) adds up to
	// splitFan ops, each waiting on at most 5. A lane counts as one GPU.
	units := 2 * int64(len(sim)) * int64(N)
	extra := int64(len(sim)) * int64(N) * int64(2*nl*(e.splitFan(int(half[0]))+e.splitFan(int(half[1]))))
	nops := units*int64(8*nl+2) + extra
	if err := b.reserve(nops, units*int64(17*nl)+5*extra); err != nil {
		return nil, err
	}
	// The operand pull is bounded by the switch's reduction rate, as in
	// single-node NVLS (nvlsReduceCap), and by the scatter warps; the
	// multicast delivery by the gather warps.
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
		prevUp, prevDown := make([][][]OpID, N), make([][][]OpID, N) // per GPU and route of its edge (addSplit)
		gate := fill(N, b.base)                                      // node v's previous loop pulled and synchronised
		for v := 0; v < N; v++ {
			prevU1[v], prevD1[v], prevU2[v], prevD2[v] = fill(nl, b.base), fill(nl, b.base), fill(nl, b.base), fill(nl, b.base)
			prevUp[v], prevDown[v] = make([][]OpID, nl), make([][]OpID, nl)
			for i := 0; i < nl; i++ {
				prevUp[v][i], prevDown[v][i] = splitPrev(edges[v][tr][i].splitUp, b.base), splitPrev(edges[v][tr][i].splitDown, b.base)
			}
		}
		// Per-unit state, reset unit after unit: partial[v][i] is node v's
		// GPU i's partial sum of its shard, arrived[v][i] the children's
		// partial sums it waits for, final[v][i] the shard's total there.
		partial, final := grid(N, nl), grid(N, nl)
		arrived := make([][][]OpID, N)
		for v := range arrived {
			arrived[v] = make([][]OpID, nl)
		}
		u1, u2 := make([]OpID, nl), make([]OpID, nl)
		// rank is the global rank of lane i's first GPU in node v.
		rank := func(v, i int) int32 { return int32(v*G + lanes[i][0]) }
		for ui, u := range sim {
			b.unit = int32(ui)
			full, part := u/eff, u/float64(G)/eff
			sh := u / float64(G)
			for v := 0; v < N; v++ {
				for i := 0; i < nl; i++ {
					u1[i] = b.add(Op{Kind: OpTransfer, Route: laneUp[v][i], Bytes: full, Weight: w, RateCap: pull[tr][v], Channel: int32(tr), Rank: rank(v, i)}, prevU1[v][i], gate[v])
					prevU1[v][i] = u1[i]
				}
				// The loop's pull, then its synchronisation, before the
				// next loop's pull (as in single-node NVLS).
				red := b.add(Op{Kind: OpDelay, Latency: nvLat, Channel: int32(tr), Rank: -1}, u1...)
				gate[v] = red
				for i := 0; i < nl; i++ {
					d1 := b.add(Op{Kind: OpTransfer, Route: laneDown[v][i], Bytes: part, Weight: w, Channel: int32(tr), Rank: rank(v, i)}, red, prevD1[v][i])
					prevD1[v][i] = d1
					partial[v][i] = d1
				}
			}
			// Up the tree, leaves first, per shard.
			for v := range arrived {
				for i := range arrived[v] {
					arrived[v][i] = arrived[v][i][:0]
				}
			}
			for k := len(order) - 1; k >= 0; k-- {
				v := order[k]
				p := trees[tr][v]
				for i := 0; i < nl; i++ {
					ready := b.depList(partial[v][i], arrived[v][i]...)
					if p < 0 {
						final[v][i] = b.add(Op{Kind: OpDelay, Channel: int32(tr), Rank: rank(v, i)}, ready...)
						continue
					}
					ed := edges[v][tr][i].up
					t := b.addSplit(Op{Kind: OpTransfer, Route: ed.route, Bytes: sh, Weight: w, RateCap: ed.cap.rate, Channel: int32(tr), Rank: rank(v, i)}, edges[v][tr][i].splitUp, prevUp[v][i], ready...)
					arrived[p][i] = append(arrived[p][i], b.add(Op{Kind: OpDelay, Latency: ed.lat, Channel: int32(tr), Rank: rank(p, i)}, t))
				}
			}
			// Down the tree, root first.
			for _, v := range order {
				for _, ch := range children[v] {
					for i := 0; i < nl; i++ {
						ed := edges[ch][tr][i].down
						t := b.addSplit(Op{Kind: OpTransfer, Route: ed.route, Bytes: sh, Weight: w, RateCap: ed.cap.rate, Channel: int32(tr), Rank: rank(v, i)}, edges[ch][tr][i].splitDown, prevDown[ch][i], final[v][i])
						final[ch][i] = b.add(Op{Kind: OpDelay, Latency: ed.lat, Channel: int32(tr), Rank: rank(ch, i)}, t)
					}
				}
			}
			// Multicast inside every node.
			for v := 0; v < N; v++ {
				for i := 0; i < nl; i++ {
					u2[i] = b.add(Op{Kind: OpTransfer, Route: laneUp[v][i], Bytes: part, Weight: w, Channel: int32(tr), Rank: rank(v, i)}, final[v][i], prevU2[v][i])
					prevU2[v][i] = u2[i]
				}
				mc := b.add(Op{Kind: OpDelay, Latency: nvLat, Channel: int32(tr), Rank: -1}, u2...)
				for i := 0; i < nl; i++ {
					prevD2[v][i] = b.add(Op{Kind: OpTransfer, Route: laneDown[v][i], Bytes: full, Weight: w, RateCap: out[tr][v], Channel: int32(tr), Rank: rank(v, i)}, mc, prevD2[v][i])
				}
			}
		}
	}
	return pr, nil
}
