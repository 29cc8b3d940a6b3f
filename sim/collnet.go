package sim

import (
	"fmt"

	"github.com/collsim/collsim/model"
)

// collNetDirectAlgo schedules CollNetDirect AllReduce: SHARP in-network
// reduction with every GPU of a node a head on its own NIC.
type collNetDirectAlgo struct{}

func (collNetDirectAlgo) name() string { return "CollNetDirect AllReduce (SHARP)" }

func (collNetDirectAlgo) applies(a model.Algo, coll model.Collective) bool {
	return a == model.AlgoCollNetDirect && coll == model.AllReduce
}

func (collNetDirectAlgo) build(b *builder) (*prog, error) { return b.collNet(true) }

// collNetChunk is the pipeline unit of a CollNet call, all heads together
// (assumption: one 512 KiB Simple step per head of an 8-GPU node, NCCL's
// step size, nccl-facts §4.1).
const collNetChunk = 8 * model.StepPayloadSimple

// sharpPort is one head GPU's way into the SHARP tree: the route from the
// GPU through its NIC onto the leaf switch and the route back.
type sharpPort struct {
	up, down []model.LinkID
	// cap is the streaming-aggregation rate of the port in bytes/ps.
	cap float64
}

// sharpPortOf routes GPU g of node v to the SHARP tree through the NIC
// closest to it: the GPU-to-NIC path, then the NIC's cable to its leaf
// (taken from the fabric route to the same NIC of another node).
func (e *Env) sharpPortOf(v int, g model.ElemID) (sharpPort, error) {
	c, r := e.Cluster, e.Res
	best := r.LocalNICs(g)
	if len(best) == 0 {
		return sharpPort{}, fmt.Errorf("sim: %s has no NIC for CollNet", c.Topo.Elem(g).Name)
	}
	nic := best[0].NIC
	idx := -1
	for i, n := range r.NICUsable[v] {
		if n == nic {
			idx = i
		}
	}
	peer := (v + 1) % c.NumNodes()
	if idx < 0 || idx >= len(r.NICUsable[peer]) {
		return sharpPort{}, fmt.Errorf("sim: %s's NIC is not usable for CollNet", c.Topo.Elem(g).Name)
	}
	other := r.NICUsable[peer][idx]
	out, err := c.Fabric.Route(model.FlowKey{SrcNIC: nic, DstNIC: other, SrcGPU: g, DstGPU: model.None})
	if err != nil {
		return sharpPort{}, err
	}
	in, err := c.Fabric.Route(model.FlowKey{SrcNIC: other, DstNIC: nic, SrcGPU: model.None, DstGPU: g})
	if err != nil {
		return sharpPort{}, err
	}
	send, recv := r.NetTo(g, nic), r.NetTo(g, nic)
	if send == nil || recv == nil {
		return sharpPort{}, fmt.Errorf("sim: %s cannot reach its NIC", c.Topo.Elem(g).Name)
	}
	up := append(append([]model.LinkID(nil), send.Send...), out[0])
	down := append([]model.LinkID{in[len(in)-1]}, recv.Recv...)
	line := float64(c.Topo.Elem(nic).NIC.Speed.LineGBps())
	return sharpPort{up: up, down: down, cap: e.params.Physics.SHARPEff * line * 1e-3}, nil
}

// collNet builds CollNet AllReduce. Direct: inside each node every GPU
// sends 1/G of each chunk to each peer (the head that owns that part,
// reduce-scatter over NVLink), each head sends its part up its NIC to the
// SHARP tree, the switches reduce across nodes and return the result
// (sharp.lat.us after the last node's part arrives), and each head sends
// it to its peers (all-gather over NVLink). The network carries each byte
// once each way, with no 2(n-1)/n factor; NVLink carries 2(G-1)/G of the
// buffer out of each GPU, which is what caps busbw on DGX nodes
// (nccl#320). Chain (direct=false): the node's GPUs
// reduce along a chain to one head per channel, which uses its NIC, and
// the result goes back down the chain.
//
// The switches' own links are not loaded: each leaf forwards one reduced
// stream per head upwards, at most what one node's cable carries, so on a
// fabric the node cables bound SHARP (assumption; it holds for any leaf
// oversubscription up to the nodes per leaf).
func (b *builder) collNet(direct bool) (*prog, error) {
	e, call := b.e, b.call
	pl, err := e.planCollNet(call, direct)
	if err != nil {
		return nil, err
	}
	pr := &prog{units: chunked(float64(call.Bytes), collNetChunk)}
	if !b.des {
		return pr, nil
	}
	c := e.Cluster
	N, G := c.NumNodes(), c.GPUsPerNode()
	sim, skipped := b.simUnits(pr.units)
	pr.skipped = skipped
	// Per chunk: Direct has G scatters, an up and a down and G-1 gathers
	// per GPU and one aggregation per head; Chain 2(G-1) hops, an up and a
	// down per chain and node, one aggregation per chain.
	perChunk := int64(N*G*(2*G+1) + G)
	if !direct {
		perChunk = int64(pl.heads * (2*N*G + 1))
	}
	nops := int64(len(sim)) * perChunk
	if err := b.reserve(nops, nops*2); err != nil {
		return nil, err
	}
	if direct {
		b.collNetDirectDES(sim, pl.ports, pl.nvl, pl.sharpLat)
	} else {
		b.collNetChainDES(sim, pl.ports, pl.nvl, pl.sharpLat, pl.heads)
	}
	return pr, nil
}

// collNetPlan is what both engines take from the topology for a CollNet
// call: the head ports onto the SHARP tree, the NVLink hops inside each
// node, the latencies, and how many heads share the buffer.
type collNetPlan struct {
	heads              int
	ports              [][]sharpPort
	nvl                func(v, i, j int) hopInfo
	intraLat, sharpLat model.Time
}

// planCollNet routes a CollNet call (Direct with every GPU a head, Chain
// with one head per usable NIC).
func (e *Env) planCollNet(call Call, direct bool) (*collNetPlan, error) {
	c := e.Cluster
	N, G := c.NumNodes(), c.GPUsPerNode()
	if ok, why := c.CollNetAble(call.Choice.Algo); !ok {
		return nil, fmt.Errorf("sim: %s is not available: %s", call.Choice.Algo, why)
	}
	pl := &collNetPlan{heads: G}
	if !direct {
		pl.heads = min(G, len(e.Res.NICUsable[0]))
	}
	// Routes: per node, the head ports and the NVLink routes between GPUs.
	pl.ports = make([][]sharpPort, N)
	for v := 0; v < N; v++ {
		for h := 0; h < pl.heads; h++ {
			p, err := e.sharpPortOf(v, c.Nodes[v].GPUs[e.collNetHead(h, G, pl.heads, direct)])
			if err != nil {
				return nil, err
			}
			pl.ports[v] = append(pl.ports[v], p)
		}
	}
	pl.nvl = func(v, i, j int) hopInfo {
		r, capv := e.decorate(e.Res.GPU(c.Nodes[v].GPUs[i], c.Nodes[v].GPUs[j]).Route)
		return hopInfo{route: r, cap: capv, lat: e.stepLat(e.routeClass(r), model.ProtoSimple)}
	}
	pl.intraLat = pl.nvl(0, 0, 1).lat
	pl.sharpLat = model.Micros(e.params.Physics.SHARPLatUs)
	return pl, nil
}

// collNetHead is the GPU that is head h: every GPU in Direct, for Chain the
// GPU at the head of chain h.
func (e *Env) collNetHead(h, G, heads int, direct bool) int {
	if direct {
		return h
	}
	return e.chainGPU(h, 0, G)
}

// collNetDirectDES adds the Direct schedule: per chunk, scatter to heads,
// up, in-network reduction, down, gather; each stage pipelines chunk after
// chunk on its own.
func (b *builder) collNetDirectDES(units []float64, ports [][]sharpPort, nvl func(v, i, j int) hopInfo, sharpLat model.Time) {
	c := b.e.Cluster
	N, G := c.NumNodes(), c.GPUsPerNode()
	prevS := make([]OpID, N*G*G)
	prevG := make([]OpID, N*G*G)
	prevU := fill(N*G, b.base)
	prevD := fill(N*G, b.base)
	for i := range prevS {
		prevS[i], prevG[i] = b.base, b.base
	}
	hops := make([]hopInfo, N*G*G)
	for v := 0; v < N; v++ {
		for i := 0; i < G; i++ {
			for j := 0; j < G; j++ {
				if i != j {
					hops[(v*G+i)*G+j] = nvl(v, i, j)
				}
			}
		}
	}
	for ui, u := range units {
		b.unit = int32(ui)
		s := u / float64(G)
		ups := make([]OpID, 0, N)
		for i := 0; i < G; i++ {
			ups = ups[:0]
			for v := 0; v < N; v++ {
				in := []OpID{prevU[v*G+i]}
				for j := 0; j < G; j++ {
					if j == i {
						continue
					}
					k := (v*G+j)*G + i
					h := &hops[k]
					prevS[k] = b.add(Op{Kind: OpTransfer, Route: h.route, Bytes: s, RateCap: h.cap.rate, Latency: h.lat, Rank: int32(v*G + j)}, prevS[k])
					in = append(in, prevS[k])
				}
				p := ports[v][i]
				prevU[v*G+i] = b.add(Op{Kind: OpTransfer, Route: p.up, Bytes: s, RateCap: p.cap, Rank: int32(v*G + i)}, in...)
				ups = append(ups, prevU[v*G+i])
			}
			agg := b.add(Op{Kind: OpDelay, Latency: sharpLat, Rank: int32(i)}, ups...)
			for v := 0; v < N; v++ {
				p := ports[v][i]
				d := b.add(Op{Kind: OpTransfer, Route: p.down, Bytes: s, RateCap: p.cap, Rank: int32(v*G + i)}, agg, prevD[v*G+i])
				prevD[v*G+i] = d
				for j := 0; j < G; j++ {
					if j == i {
						continue
					}
					k := (v*G+i)*G + j
					h := &hops[k]
					prevG[k] = b.add(Op{Kind: OpTransfer, Route: h.route, Bytes: s, RateCap: h.cap.rate, Latency: h.lat, Rank: int32(v*G + i)}, d, prevG[k])
				}
			}
		}
	}
}
