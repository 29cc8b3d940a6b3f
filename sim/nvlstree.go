package sim

import (
	"fmt"
	"math"

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
	netLat := e.stepLat(model.LatNet, model.ProtoSimple)
	nvLat := e.stepLat(model.LatNVLink, model.ProtoSimple)
	pr.latHop = netLat
	pr.latPath = 2*nvLat + model.Time(2*depth)*netLat
	type edgeRoutes struct{ up, down hopInfo }
	edges := make([][2][]edgeRoutes, N) // [node][tree][gpu]
	for v := 0; v < N; v++ {
		for i := 0; i < G; i++ {
			pr.classes = append(pr.classes, flowClass{ups[v][i : i+1], per, int32(nc), ceiling{}}, flowClass{downs[v][i : i+1], per, int32(nc), ceiling{}})
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
					t := b.add(Op{Kind: OpTransfer, Route: ed.route, Bytes: sh, Weight: w, RateCap: ed.cap.rate}, append(ready, prevUp[v][i])...)
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
						t := b.add(Op{Kind: OpTransfer, Route: ed.route, Bytes: sh, Weight: w, RateCap: ed.cap.rate}, final[v][i], prevDown[ch][i])
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
