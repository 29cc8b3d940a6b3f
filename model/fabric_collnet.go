package model

import "math"

// This file is NCCL's CollNet (SHARP in-network reduction) in the tuning
// model: when NCCL considers CollNetDirect and CollNetChain, their bus
// bandwidth and their latency (NCCL v2.30.7 src/graph/tuning.cc,
// src/enqueue.cc, src/init.cc).

// CollNet hardware latencies in µs, Simple protocol (NCCL tuning.cc hwLat
// NVLINK and NET rows): CollNetDirect 3.7 / 31,
// CollNetChain 2.8 / 30. LL and LL128 are not used by CollNet.
var collNetLat = map[Algo][2]float64{
	AlgoCollNetDirect: {3.7, 31},
	AlgoCollNetChain:  {2.8, 30},
}

// CollNetNetLatUs is NCCL's NET hardware latency of a CollNet algorithm
// (tuning.cc hwLat, Simple): the in-network reduction's round trip as
// NCCL models it, flat in the node count.
func CollNetNetLatUs(a Algo) float64 { return collNetLat[a][1] }

// collNetNodeThreshold is NCCL_COLLNET_NODE_THRESHOLD's default: fewer
// nodes disable CollNet (NCCL init.cc).
const collNetNodeThreshold = 2

// collNetMaxLocalRanks is NCCL_MAX_DIRECT_ARITY+1: CollNet is considered
// only with at most 8 GPUs per node (enqueue.cc, tuning.cc).
const collNetMaxLocalRanks = 8

// SHARP reports whether the fabric's switches reduce in the network.
func (fb *Fabric) SHARP() bool { return fb != nil && fb.sharp }

// CollNetAble reports whether NCCL would run CollNet algorithm a on the
// cluster, and why not: NCCL_COLLNET_ENABLE=1 (a SHARP plugin), switches
// that reduce (fabric sharp: true, InfiniBand), at least 2 nodes, at most 8
// GPUs per node, and for CollNetDirect an NVSwitch in the node
// (NCCL init.cc, enqueue.cc, tuning.cc).
func (c *Cluster) CollNetAble(a Algo) (bool, string) {
	switch {
	case !c.Knobs.CollNetEnable:
		return false, "NCCL_COLLNET_ENABLE is not 1"
	case !c.Fabric.SHARP():
		return false, "the fabric's switches do not reduce (fabric sharp: false)"
	case c.Fabric.LinkLayer != NICIB:
		return false, "SHARP runs on InfiniBand Quantum switches only"
	case c.ibBelowHDR():
		// Switch-IB 2 (EDR) has SHARPv1: low-latency aggregation of small
		// messages, no streaming aggregation for an AllReduce's buffers,
		// which SHARPv2 added with Quantum (HDR) (fabric-facts §5.1,
		// NVIDIA SHARP documentation).
		return false, "EDR switches (Switch-IB 2) have SHARPv1 only, no streaming aggregation; SHARP's CollNet needs Quantum (HDR) or later"
	case c.NumNodes() < collNetNodeThreshold:
		return false, "fewer nodes than NCCL_COLLNET_NODE_THRESHOLD (2)"
	case c.GPUsPerNode() > collNetMaxLocalRanks:
		return false, "more than 8 GPUs per node (NCCL_MAX_DIRECT_ARITY+1)"
	case a == AlgoCollNetDirect && c.Nodes[0].NVSwitch == None:
		return false, "CollNetDirect needs an NVSwitch in the node"
	}
	return true, ""
}

// collNetSupported is the CollNet part of Tuner.supported: AllReduce with
// the Simple protocol (LL and LL128 bus bandwidth is 0, tuning.cc).
func (t *Tuner) collNetSupported(coll Collective, a Algo, p Proto) bool {
	ok, _ := t.r.c.CollNetAble(a)
	return ok && coll == AllReduce && p == ProtoSimple
}

// collNetBusBW is NCCL's CollNet bus bandwidth: channels x bwIntra (CollNet
// uses the intra-node bandwidth even across nodes); CollNetDirect divides
// by the GPU:NIC factor r - (r-1)/2 with r = ppn / channels and takes 0.85
// of it on SM90+ (NCCL tuning.cc). collsim has no CollNet
// graph search: the tree graph's channels and bwIntra stand in
// (assumption: NCCL's CollNet graphs are searched with the same NVLink
// speeds as the tree graph).
func (t *Tuner) collNetBusBW(a Algo, arch int) float64 {
	g := t.Graphs.Tree
	nch := float64(t.RingGraphCh)
	bus := nch * float64(g.BWIntra) * float64(t.RingBW) / float64(t.Graphs.Ring.BWIntra)
	if a == AlgoCollNetDirect {
		r := float64(t.PPN) / nch
		bus /= r - (r-1)/2
		if arch >= 2 {
			bus *= 0.85
		}
	}
	return bus
}

// collNetLatency is NCCL's CollNet latency, independent of the node count
// (NCCL tuning.cc): CollNetDirect 2(min(1, ppn-1) intra +
// (ppn-1) 0.4) + inter, CollNetChain 2(ppn-1) intra + inter, base 0.
func (t *Tuner) collNetLatency(a Algo, intraFloor float64) float64 {
	l := collNetLat[a]
	intra := math.Max(l[0], intraFloor)
	ppn := float64(t.PPN)
	if a == AlgoCollNetDirect {
		return 2*(math.Min(1, ppn-1)*intra+(ppn-1)*0.4) + l[1]
	}
	return 2*(ppn-1)*intra + l[1]
}

// ibBelowHDR reports whether the cluster's InfiniBand NICs run below HDR
// (EDR, 100 Gb/s), so that its switches are taken as Switch-IB 2
// (assumption: the fabric's switches are of the NICs' generation).
func (c *Cluster) ibBelowHDR() bool {
	for _, nic := range c.Nodes[0].NICs { // every node has the same NICs
		if e := c.Topo.Elem(nic); e.NIC != nil && e.NIC.Kind == NICIB && e.NIC.Speed.Gbps < 200 {
			return true
		}
	}
	return false
}
