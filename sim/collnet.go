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
// GPU through its NIC onto the leaf switch and the route back, and, for the
// node that carries its switch's reduced stream (sharpTree), the fabric
// links above the leaf up to the tree's root and back down.
type sharpPort struct {
	up, down []model.LinkID
	// cap is the streaming-aggregation rate of the port in bytes/ps.
	cap float64
	// nic and g are the head's NIC and GPU.
	nic, g model.ElemID
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
	return sharpPort{up: up, down: down, cap: e.params.Physics.SHARPEff * line * 1e-3, nic: nic, g: g}, nil
}

// sharpTree loads the fabric links above the leaves with the SHARP tree's
// reduced streams. A switch reduces the streams of one head (one NIC's
// shard, a SHARP tree per channel) that reach it into one and forwards that
// upwards; the root returns the result, which every switch replicates
// downwards. So each link between switches carries one stream per head and
// direction, not one per node: per head, the first node (in node order)
// whose stream reaches a switch carries the switch's forwarded stream on
// its own port, over the links the fabric routes it on (adaptive: the
// switch's uplink bundle, all its uplinks together; static and ECMP: the
// link its routing picks for a flow to the farthest node of the job; an
// assumption: SHARP's Aggregation Manager lays the trees out, and where
// it puts a tree on a static or ECMP fabric is not public); the other
// nodes' streams merge into it there. The root is the lowest tier that
// joins all the job's nodes on the head's rail: a job under one leaf loads
// no uplink. The streams are modelled cut-through (an assumption from
// SHARPv2's streaming aggregation, Graham et al. ISC 2020, no published
// per-hop figure), so a switch-to-switch link that carries less than the
// node cables bounds the call, and a degraded or down uplink slows it.
func (e *Env) sharpTree(pl *collNetPlan) error {
	c := e.Cluster
	fb := c.Fabric
	N := c.NumNodes()
	if fb == nil || fb.Plan == nil || fb.Plan.Kind == model.FabricSingleSwitch || N < 2 {
		return nil
	}
	t := c.Topo
	base, bundles := fb.BundleBase(), fb.Bundles()
	ends := func(l model.LinkID) (model.ElemID, model.ElemID) {
		if l >= base {
			m := bundles[l-base].Links[0]
			return t.Links[m].From, t.Links[m].To
		}
		return t.Links[l].From, t.Links[l].To
	}
	tier := func(x model.ElemID) int {
		if tr, _, ok := fb.SwitchTier(x); ok {
			return tr
		}
		return -1
	}
	// upOf is the part of a route that climbs from the source leaf (after
	// the source cable); downOf the part that descends to the destination
	// leaf (before the destination cable).
	upOf := func(r []model.LinkID) []model.LinkID {
		n := 1
		for n < len(r)-1 {
			a, b := ends(r[n])
			if tier(b) <= tier(a) {
				break
			}
			n++
		}
		return r[1:n]
	}
	downOf := func(r []model.LinkID) []model.LinkID {
		n := len(r) - 1
		for n > 1 {
			a, b := ends(r[n-1])
			if tier(b) >= tier(a) {
				break
			}
			n--
		}
		return r[n : len(r)-1]
	}
	// leafKey names the switches a NIC's ports reach: nodes with the same
	// key sit under the same leaves, so one peer per key is enough to find
	// the farthest one.
	leafKey := func(nic model.ElemID) string {
		k := ""
		for _, l := range t.Out[nic] {
			if tier(t.Links[l].To) == 0 {
				k += fmt.Sprintf("%d,", t.Links[l].To)
			}
		}
		return k
	}
	// key names the stream a link carries: the switch it leaves (up) or
	// enters (down), or, for a bundle, the bundle.
	type streamKey struct {
		head int
		down bool
		id   int64
	}
	// A spine stands for its pod (the spines above the same leaves): a
	// pod forwards one stream per head to the cores, whichever spine a
	// leaf's stream was hashed to.
	pod := map[model.ElemID]model.ElemID{}
	podOf := func(sw model.ElemID) model.ElemID {
		if tier(sw) != 1 {
			return sw
		}
		if p, ok := pod[sw]; ok {
			return p
		}
		p := sw
		for _, l := range t.Out[sw] {
			if to := t.Links[l].To; tier(to) == 0 && (p == sw || to < p) {
				p = to
			}
		}
		pod[sw] = p
		return p
	}
	key := func(h int, l model.LinkID, down bool) streamKey {
		if l >= base {
			return streamKey{h, down, -1 - int64(l-base)}
		}
		if down {
			return streamKey{h, down, int64(podOf(t.Links[l].To))}
		}
		return streamKey{h, down, int64(podOf(t.Links[l].From))}
	}
	seen := map[streamKey]bool{}
	maxUp := fb.Plan.Tiers - 1
	for h := range pl.ports[0] {
		// One peer per distinct leaf set on this head's rail.
		var peers []int
		keys := map[string]bool{}
		for u := 0; u < N; u++ {
			p := pl.ports[u][h]
			if k := leafKey(p.nic); !keys[k] {
				keys[k] = true
				peers = append(peers, u)
			}
		}
		if len(peers) < 2 {
			continue // the whole job under one leaf: nothing goes up
		}
		for v := 0; v < N; v++ {
			p := &pl.ports[v][h]
			var up, down []model.LinkID
			for _, u := range peers {
				other := pl.ports[u][h].nic
				if u == v || other == p.nic {
					continue
				}
				out, err := fb.Route(model.FlowKey{SrcNIC: p.nic, DstNIC: other, SrcGPU: p.g, DstGPU: model.None})
				if err != nil {
					return err
				}
				if x := upOf(out); len(x) > len(up) {
					in, err := fb.Route(model.FlowKey{SrcNIC: other, DstNIC: p.nic, SrcGPU: model.None, DstGPU: p.g})
					if err != nil {
						return err
					}
					up, down = x, downOf(in)
				}
				if len(up) >= maxUp {
					break
				}
			}
			// Up: the links until the stream meets one already forwarded.
			for _, l := range up {
				k := key(h, l, false)
				if seen[k] {
					break
				}
				seen[k] = true
				p.up = append(p.up, l)
			}
			// Down: from the leaf upwards, the links into switches that
			// do not yet receive the result.
			n := len(down)
			for n > 0 {
				k := key(h, down[n-1], true)
				if seen[k] {
					break
				}
				seen[k] = true
				n--
			}
			if n < len(down) {
				p.down = append(append([]model.LinkID(nil), down[n:]...), p.down...)
			}
		}
	}
	return nil
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
// The switches' own links carry the reduced streams (sharpTree): each
// switch forwards one stream per head upwards and takes one back, so a
// leaf's uplinks carry the buffer once each way whatever its node count,
// and bound the call when they are slower than a node's cables (leaf
// oversubscription above the nodes per leaf, or a degraded uplink).
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
	if err := e.sharpTree(pl); err != nil {
		return nil, err
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
			agg := b.add(Op{Kind: OpDelay, Latency: sharpLat, Rank: -1}, ups...) // the switches' reduction
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
