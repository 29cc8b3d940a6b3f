package sim

import (
	"fmt"
	"math"

	"github.com/collsim/collsim/model"
)

// nvlsAlgo schedules NVLS AllReduce.
type nvlsAlgo struct{}

func (nvlsAlgo) name() string { return "NVLS AllReduce" }

func (nvlsAlgo) applies(a model.Algo, coll model.Collective) bool {
	return a == model.AlgoNVLS
}

func (nvlsAlgo) build(b *builder) (*prog, error) { return b.nvls() }

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
	pr := &prog{}
	eff := e.params.NVLSEff[0]
	if c.GPUModel().Arch == model.Blackwell {
		eff = e.params.NVLSEff[1]
	}
	D := float64(call.Bytes) / float64(nc)
	chunk := float64(model.NVLSChunkBytes)
	// NVLS chunks shrink for small sizes (64K/32K/16K, nccl-facts §4.1).
	for chunk > model.NVLSMinChunkBytes && D < chunk*float64(G) {
		chunk /= 2
	}
	nChunks := max(int(math.Ceil(D/chunk)), 1)
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
	lat := e.stepLat(model.LatNVLink, model.ProtoSimple)
	w := int32(nc)
	if !b.des {
		return pr, nil
	}
	// The scatter, reduce and multicast stages run in separate warps, so
	// each stage is its own sequence per GPU and chunks pipeline through them.
	sim, skipped := b.simUnits(pr.units)
	pr.skipped = skipped
	nops := int64(len(sim)) * int64(5*G+2)
	if err := b.reserve(nops, int64(len(sim))*int64(9*G)); err != nil {
		return nil, err
	}
	prevU1, prevD1 := fill(G, b.base), fill(G, b.base)
	prevU2, prevD2 := fill(G, b.base), fill(G, b.base)
	for ui, u := range sim {
		b.unit = int32(ui)
		full, part := u/eff, u/float64(G)/eff
		u1 := make([]OpID, G)
		for i := 0; i < G; i++ {
			u1[i] = b.add(Op{Kind: OpTransfer, Route: ups[i : i+1], Bytes: full, Weight: w, Rank: int32(i)}, prevU1[i])
			prevU1[i] = u1[i]
		}
		reduced := b.add(Op{Kind: OpDelay, Latency: lat, Rank: -1}, u1...)
		u2 := make([]OpID, G)
		for i := 0; i < G; i++ {
			d1 := b.add(Op{Kind: OpTransfer, Route: downs[i : i+1], Bytes: part, Weight: w, Rank: int32(i)}, reduced, prevD1[i])
			u2[i] = b.add(Op{Kind: OpTransfer, Route: ups[i : i+1], Bytes: part, Weight: w, Rank: int32(i)}, d1, prevU2[i])
			prevD1[i], prevU2[i] = d1, u2[i]
		}
		mc := b.add(Op{Kind: OpDelay, Latency: lat, Rank: -1}, u2...)
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
