package sim

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/collsim/collsim/model"
)

// directAlgo schedules point-to-point AlltoAll and SendRecv.
type directAlgo struct{}

func (directAlgo) name() string { return "point-to-point AlltoAll and SendRecv" }

func (directAlgo) applies(a model.Algo, coll model.Collective) bool {
	return a == model.AlgoDirect
}

func (directAlgo) build(b *builder) (*prog, error) { return b.direct() }

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
	pr := &prog{}
	if n == 1 {
		return pr, nil
	}
	block := p2pBlock(call.Coll, call.Bytes, n)
	reduced := e.symmetric() && !b.full
	srcNodes := N
	if reduced {
		srcNodes = 1
	}
	// NCCL spreads each send over a number of p2p channels that grows with
	// its size (model.Tuner.P2POpFor); each channel is one CTA whose warps
	// serve a send and a receive, and over the network one connection.
	op := e.Tuner.P2POpFor(int64(block))
	pr.Note = p2pNote(op, block)
	// A small operation runs LL (P2POpFor): its links carry LL's wire bytes.
	ctaRate := e.channelCap(op.Proto) * e.params.P2PChanShare
	wire := block / model.ProtoPayload(op.Proto)
	type flow struct {
		route []model.LinkID
		cap   ceiling
		w     int32
		lat   model.Time
		rank  int32
		frac  float64 // of the block
	}
	var flows []flow
	var src int32
	addFlowFrac := func(route []model.LinkID, w int32, frac float64) {
		r, capv := e.decorate(route)
		class := e.routeClass(r)
		ch := ceiling{rate: ctaRate, kind: ceilPeerChannels}
		if class == model.LatNet {
			ch = minCeiling(ch, ceiling{rate: e.params.NetChanGBps * 1e-3, kind: ceilNetChannel})
		}
		ch = minCeiling(ch, capv)
		lat := e.stepLat(class, op.Proto) + e.p2pTail(class, op, block, ch.rate)
		ch.rate *= float64(op.Channels) * frac
		f := flow{r, ch, w, lat, src, frac}
		flows = append(flows, f)
	}
	addFlow := func(route []model.LinkID, w int32) { addFlowFrac(route, w, 1) }
	// addNet adds a block's network flows: one per route its channels'
	// QPs take (p2pPaths), each with its share of the block.
	addNet := func(paths []pathShare, total int, w int32) {
		for _, p := range paths {
			addFlowFrac(p.route, w, float64(p.n)/float64(total))
		}
	}
	if b.des {
		// One transfer per (sender, peer) simulated: refuse before building.
		peers := int64(n - 1)
		if call.Coll == model.SendRecv {
			peers = 1
		}
		if err := b.budget.check(e, call, int64(srcNodes*G)*peers, int64(srcNodes*G)*peers); err != nil {
			return nil, err
		}
	}
	var rails []int
	if N > 1 {
		var err error
		if rails, err = e.p2pRails(); err != nil {
			return nil, err
		}
	}
	for sn := 0; sn < srcNodes; sn++ {
		for sg, srcGPU := range c.Nodes[sn].GPUs {
			src = int32(sn*G + sg)
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
					addFlow(e.Res.GPU(srcGPU, c.Nodes[dn].GPUs[dg]).Route, 1)
					continue
				}
				if reduced {
					seenRemote[dg]++
					continue
				}
				paths, total, err := e.p2pNet(rails, sn*G+sg, d, op.Channels)
				if err != nil {
					return nil, err
				}
				addNet(paths, total, 1)
			}
			keys := make([]int, 0, len(seenRemote))
			for k := range seenRemote {
				keys = append(keys, k)
			}
			sort.Ints(keys)
			for _, dg := range keys {
				paths, total, err := e.p2pNet(rails, sn*G+sg, sn*G+dg, op.Channels)
				if err != nil {
					return nil, err
				}
				addNet(paths, total, seenRemote[dg])
			}
		}
	}
	pr.units = []float64{block}
	if !b.des {
		return pr, nil
	}
	if err := b.reserve(int64(len(flows)), int64(len(flows))); err != nil {
		return nil, err
	}
	for _, f := range flows {
		b.add(Op{Kind: OpTransfer, Route: f.route, Bytes: wire * f.frac, Weight: f.w, RateCap: f.cap.rate, Latency: f.lat, Rank: f.rank}, b.base)
	}
	return pr, nil
}

// p2pNet routes a point-to-point block from rank s to rank d on another
// node through the NIC NCCL gives the destination GPU (PXN: the sender
// reaches it over NVLink through the GPU at that index of its own node),
// or the sender's own with PXN disabled; rails are p2pRails'.
func (e *Env) p2pNet(rails []int, s, d, channels int) ([]pathShare, int, error) {
	c := e.Cluster
	G := c.GPUsPerNode()
	in := rails[d]
	out := in % len(e.Res.NICUsable[s/G])
	if c.Knobs.PXNDisable {
		out = rails[s]
	}
	return e.p2pPaths(c.Nodes[s/G].GPUs[s%G], out, c.Nodes[d/G].GPUs[d%G], in, channels)
}

// p2pPaths routes a point-to-point block from GPU x (NIC index out) to
// GPU a (NIC in) as its connection runs: each of its channels' QPs is a
// flow of its own that the fabric routes (ECMP hashes them apart, channels
// 0..channels-1, QPs 0..qps-1; netPaths), grouped by route. It returns the
// groups and the flows in all: a group carries n/total of the block. On a
// fabric that routes them alike there is one group, the whole block.
func (e *Env) p2pPaths(x model.ElemID, out int, a model.ElemID, in int, channels int) ([]pathShare, int, error) {
	total := max(channels, 1) * e.qps()
	if !e.routesMayDiverge() {
		// Every flow takes the one route: no need to route each (what
		// netPaths would return, without its per-flow lookups and keys).
		r, err := e.netRoute(x, out, a, in)
		return []pathShare{{route: r, n: int32(total)}}, total, err
	}
	chans := make([]int, max(channels, 1))
	for i := range chans {
		chans[i] = i
	}
	paths, err := e.netPaths(x, out, a, in, chans)
	return paths, total, err
}

// p2pRails returns, by rank, the index among its node's usable NICs of
// the NIC NCCL gives each GPU's point-to-point operations
// (model.Resolution.LocalNet): the same index on every node, so a block
// crosses the fabric on one rail. Among NICs tied closest to a GPU NCCL
// spreads the GPUs over them by device index; taking the first of them for
// every GPU left half a DGX A100's eight NICs idle in AlltoAll. A rail
// depends on the GPU alone, so a call computes them once, not per pair.
func (e *Env) p2pRails() ([]int, error) {
	c := e.Cluster
	rails := make([]int, 0, c.NumRanks())
	for v, nd := range c.Nodes {
		for _, g := range nd.GPUs {
			np := e.Res.LocalNet(g)
			if np == nil {
				return nil, fmt.Errorf("sim: %s has no usable NIC", c.Topo.Elem(g).Name)
			}
			j := slices.Index(e.Res.NICUsable[v], np.NIC)
			rails = append(rails, max(j, 0))
		}
	}
	return rails, nil
}

// p2pTail is the time the receiver of a point-to-point part still needs
// after the sender's last step: NCCL's Simple protocol posts a p2p step
// (p2pChunkSize, NCCL_P2P_NVL_CHUNKSIZE) only once it is whole, and the
// receive warps of the channel's CTA then copy it out of the FIFO into the
// user buffer (device/sendrecv.h runRecv, one chunk per directRecv; the
// send and the receive share the CTA, so the copy runs at the channel's
// p2p rate, perChan payload bytes per ps). Over NVLink this is the whole
// of the receive side's lag; a part smaller than a step lags by itself.
// Routes through host memory or a network keep their own latency terms.
// An LL operation posts a flag with every 8 bytes and has no such lag.
func (e *Env) p2pTail(class model.LatClass, op model.P2POp, block, perChan float64) model.Time {
	part := block / float64(max(op.Channels, 1))
	if class != model.LatNVLink || op.Proto != model.ProtoSimple || part <= 0 || perChan <= 0 {
		return 0
	}
	return model.Time(math.Ceil(math.Min(part, float64(op.ChunkBytes)) / perChan))
}

// p2pNote says how a point-to-point block is spread.
func p2pNote(op model.P2POp, block float64) string {
	s := fmt.Sprintf("%d p2p channels per peer operation of %s (chunk %s", op.Channels, model.FormatBytes(model.Bytes(block)), model.FormatBytes(model.Bytes(op.ChunkBytes)))
	if op.Proto != model.ProtoSimple {
		s += ", " + op.Proto.String() + ": at most NCCL_P2P_LL_THRESHOLD bytes per channel"
	}
	return s + ")"
}

// a2aCaps returns the link capacities an AlltoAll call runs with: every
// link between a GPU and its node's NVSwitch at p2p.a2a.switch.eff of the
// Env's capacity while every GPU writes to every other one through the
// switch at once (three or more GPUs per node), nil (the Env's) otherwise.
// SendRecv and ring traffic are permutations, one peer per GPU, which the
// NVLink efficiency terms describe. Both engines time the call with these
// capacities.
func (e *Env) a2aCaps(coll model.Collective) []float64 {
	c := e.Cluster
	if coll != model.AlltoAll || c.GPUsPerNode() < 3 || e.params.A2ASwitchEff >= 1 {
		return nil
	}
	t := c.Topo
	var caps []float64
	for i := range t.Links {
		l := &t.Links[i]
		if l.Kind != model.LinkNVLink || (t.Elem(l.From).Kind != model.KindNVSwitch && t.Elem(l.To).Kind != model.KindNVSwitch) {
			continue
		}
		if caps == nil {
			caps = append([]float64(nil), e.caps...)
		}
		caps[i] *= e.params.A2ASwitchEff
	}
	return caps
}
