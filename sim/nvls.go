package sim

import (
	"fmt"

	"github.com/collsim/collsim/model"
)

// nvlsAlgo schedules NVLS AllReduce, AllGather and ReduceScatter.
type nvlsAlgo struct{}

func (nvlsAlgo) name() string { return "NVLS AllReduce, AllGather and ReduceScatter" }

func (nvlsAlgo) applies(a model.Algo, coll model.Collective) bool {
	return a == model.AlgoNVLS
}

func (nvlsAlgo) build(b *builder) (*prog, error) { return b.nvls() }

// nvls builds single-node NVLS AllReduce (device/all_reduce.h, NVLS
// oneNode), and AllGather and ReduceScatter with the same loops and their
// own traffic (nvlsPortBytes; AllGather has no reduction): a channel works in loops of nHeads chunks (NCCL's chunk rule,
// model.NVLSChunk). In each loop every head GPU's reduce warps pull its
// chunk out of every GPU through the NVSwitch (multimem.ld_reduce) and
// store the sum to every GPU (multimem.st); the other GPUs only feed and
// receive. Per loop of u bytes a head moves u(1+1/nHeads) each way over
// its NVLink ports, any other GPU u (nccl-facts §4.4). The switch adds the
// G operands of every element, so the operand pull is bounded by its
// reduction rate (nvlsReduceCap). The same warps issue the pull and the
// store and then synchronise with the scatter and gather warps of every
// GPU before the next loop: that per-loop synchronisation (one NVLink step
// latency) is paid in series with the pull, where the multicast delivery
// of a loop overlaps the pull of the next. AllReduce's CTA also copies
// each loop in with its scatter warps and out with its gather warps
// (nvlsWarpCaps), which bound the pull and the delivery; on one 8-GPU
// node neither binds before the switch does.
func (b *builder) nvls() (*prog, error) {
	e, call := b.e, b.call
	c := e.Cluster
	G := c.GPUsPerNode()
	if c.NumNodes() != 1 || c.Nodes[0].NVSwitch == model.None {
		return nil, fmt.Errorf("sim: NVLS is modelled on one NVSwitch node only")
	}
	nc := max(call.Choice.Channels, 1)
	ups, downs, err := e.nvlsLinks(0)
	if err != nil {
		return nil, err
	}
	heads := model.NVLSHeads(G)
	pr := &prog{units: e.nvlsUnits(call, nc, G)}
	eff := e.nvlsEff()
	lat := e.stepLat(model.LatNVLink, model.ProtoSimple)
	w := int32(nc)
	if !b.des {
		return pr, nil
	}
	sim, skipped := b.simUnits(pr.units)
	pr.skipped = skipped
	nops := int64(len(sim)) * int64(2*G+1)
	if err := b.reserve(nops, int64(len(sim))*int64(4*G)); err != nil {
		return nil, err
	}
	var rcap, gcap float64
	if call.Coll != model.AllGather {
		rcap = e.nvlsReduceCap(nc, G)
	}
	if call.Coll == model.AllReduce {
		// The CTA's copy warps (nvlsWarpCaps): the scatter feeds the
		// pull, the gather empties what the multicast delivers.
		var scap float64
		scap, gcap = e.nvlsWarpCaps(false)
		rcap = minRate(rcap, scap)
	}
	gate := b.base
	prevD := fill(G, b.base)
	for ui, u := range sim {
		b.unit = int32(ui)
		up := make([]OpID, G)
		for i := 0; i < G; i++ {
			bytes, _ := nvlsPortBytes(call.Coll, u, i, heads, G)
			bytes /= eff
			// The cap holds the operand pull (u of the bytes) to the
			// switch's reduction rate.
			up[i] = b.add(Op{Kind: OpTransfer, Route: ups[i : i+1], Bytes: bytes, Weight: w, RateCap: rcap * bytes / u, Rank: int32(i)}, gate)
		}
		gate = b.add(Op{Kind: OpDelay, Latency: lat, Rank: -1}, up...)
		for i := 0; i < G; i++ {
			_, bytes := nvlsPortBytes(call.Coll, u, i, heads, G)
			prevD[i] = b.add(Op{Kind: OpTransfer, Route: downs[i : i+1], Bytes: bytes / eff, Weight: w, RateCap: gcap * bytes / eff / u, Rank: int32(i)}, gate, prevD[i])
		}
	}
	return pr, nil
}

// nvlsUnits are the per-channel loops of an NVLS AllReduce call: nHeads
// chunks of NCCL's chunk size (NCCL_NVLS_CHUNKSIZE and the shrinking
// rule) each, the last one what remains.
func (e *Env) nvlsUnits(call Call, nc, G int) []float64 {
	heads := model.NVLSHeads(G)
	chunk := model.NVLSChunk(float64(call.Bytes), nc, heads, e.Cluster.Knobs.NVLSChunkSize)
	return chunked(float64(call.Bytes)/float64(nc), chunk*float64(heads))
}

// nvlsTreeUnits are the per-channel loops of an NVLSTree AllReduce call:
// nHeads chunks of NVLSTree's chunk (model.NVLSTreeChunk) each, the last
// one what remains.
func (e *Env) nvlsTreeUnits(call Call, nc, G int) []float64 {
	heads := model.NVLSHeads(G)
	chunk := model.NVLSTreeChunk(float64(call.Bytes), nc, heads, e.Cluster.NumNodes(), e.Cluster.Knobs.NVLSChunkSize)
	return chunked(float64(call.Bytes)/float64(nc), chunk*float64(heads))
}

// nvlsPortBytes is the payload GPU i moves up and down its NVSwitch ports
// for a loop of u bytes. AllReduce: the whole loop each way, plus the
// chunk it reduces and multicasts when it is one of the heads (GPUs
// 0..heads-1, the NVLS graph's channels). ReduceScatter: its operands of
// the whole loop up (multimem.ld_reduce), its reduced share down.
// AllGather: its share up (multimem.st), the whole loop down.
func nvlsPortBytes(coll model.Collective, u float64, i, heads, G int) (up, down float64) {
	share := u / float64(G)
	switch coll {
	case model.ReduceScatter:
		return u, share
	case model.AllGather:
		return share, u
	}
	if i < heads {
		return u * (1 + 1/float64(heads)), u * (1 + 1/float64(heads))
	}
	return u, u
}

// nvlsReduceCap is the per-channel rate (payload bytes/ps) at which one
// GPU's operands can be pulled through the switch's reduction: the switch
// adds G operands per element, G-1 additions, spread evenly over the ports
// of the G GPUs, so a GPU's ports sustain an operand rate of
// reduce x G/(G-1), where reduce is the in-switch reduction rate per GPU
// (nvls.reduce.*, a fraction of the ring-effective rate of the GPU's
// NVSwitch ports); the channels share it.
func (e *Env) nvlsReduceCap(nc, G int) float64 {
	ups, _, err := e.nvlsLinks(0)
	if err != nil || G < 2 {
		return 0
	}
	port := e.caps[ups[0]]
	return e.nvlsReduce() * port * float64(G) / float64(G-1) / float64(max(nc, 1))
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

// nvlsWarpCaps returns the per-channel payload rates (bytes/ps) at which
// one AllReduce CTA's scatter warps feed the NVLS buffers and its gather
// warps empty them: nvls.warp.gbps.* per warp, times the warps NCCL gives
// each role (model.NVLSWarps); hasUp for an NVLSTree rank with a parent in
// the inter-node tree, false for the tree's root and for one-node NVLS.
func (e *Env) nvlsWarpCaps(hasUp bool) (scatter, gather float64) {
	s, g, _, _ := model.NVLSWarps(hasUp, e.Cluster.NumRanks())
	w := e.params.NVLSWarpGBps[0]
	if e.Cluster.GPUModel().Arch == model.Blackwell {
		w = e.params.NVLSWarpGBps[1]
	}
	return float64(s) * w * 1e-3, float64(g) * w * 1e-3
}

// nvlsTreeWarpCaps returns nvlsWarpCaps for NVLSTree on node v: the
// tighter of its CTAs' roles over the trees that have channels (a node is
// the root of at most one tree).
func (e *Env) nvlsTreeWarpCaps(trees [2][]int, half [2]int32, v int) (scatter, gather float64) {
	for tr := 0; tr < 2; tr++ {
		if half[tr] == 0 {
			continue
		}
		s, g := e.nvlsWarpCaps(trees[tr][v] >= 0)
		scatter, gather = minRate(scatter, s), minRate(gather, g)
	}
	return scatter, gather
}

// nvlsReduce returns the in-switch reduction rate term for the cluster's
// GPU.
func (e *Env) nvlsReduce() float64 {
	if e.Cluster.GPUModel().Arch == model.Blackwell {
		return e.params.NVLSReduce[1]
	}
	return e.params.NVLSReduce[0]
}
