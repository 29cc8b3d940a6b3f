package model

import (
	"fmt"
	"math"
)

// This file emulates NCCL's tuning model (src/graph/tuning.cc, enqueue.cc;
// nccl-facts §2): per (collective, algorithm, protocol) a latency in µs and an
// algorithm bandwidth in GB/s, the time lat + bytes/bw, selection of the
// fastest enabled pair, and the channel/thread count used for a size. NCCL
// uses these numbers to choose; collsim uses them to choose the same way, and
// as the analytic engine's "NCCL" estimate.

// Tuner holds NCCL's tuning tables for one cluster.
type Tuner struct {
	r      *Resolution
	Graphs *Graphs
	// NRanks, NNodes, PPN describe the communicator.
	NRanks, NNodes, PPN int
	// CommChannels is the communicator's coll channel count; RingGraphCh
	// and RingBW the ring graph after duplication (what tuning multiplies).
	CommChannels, RingGraphCh int
	RingBW                    GBps
	// NVLSChannels is the NVLS channel count.
	NVLSChannels int
	// BW and Lat are indexed [collective][algorithm][protocol]; BW 0 = disabled.
	BW  [NumCollectives][NumAlgos][NumProtos]float64
	Lat [NumCollectives][NumAlgos][NumProtos]float64
	// Enabled reports whether an (algorithm, protocol) pair is allowed at all
	// (hardware support and NCCL_ALGO / NCCL_PROTO).
	Enabled [NumCollectives][NumAlgos][NumProtos]bool
}

// Tuner builds the tuning tables (NCCL computes them once per communicator).
func (r *Resolution) Tuner() *Tuner {
	c := r.c
	t := &Tuner{r: r, Graphs: r.SearchGraphs(), NRanks: c.NumRanks(), NNodes: c.NumNodes(), PPN: c.GPUsPerNode()}
	t.CommChannels, t.RingGraphCh, t.RingBW = r.CommChannels(t.Graphs.Ring)
	t.NVLSChannels = r.NVLSChannels()
	for coll := Collective(0); coll < NumCollectives; coll++ {
		for a := Algo(0); a < NumAlgos; a++ {
			for p := Proto(0); p < NumProtos; p++ {
				t.fill(coll, a, p)
			}
		}
	}
	return t
}

func (t *Tuner) nodeIdx() int {
	switch {
	case t.NNodes <= 1:
		return 0
	case t.NNodes == 2:
		return 1
	}
	return 2
}

func (t *Tuner) cpuVendor() CPUVendor {
	if cpu := t.r.c.Topo.Elem(t.r.c.Nodes[0].CPUs[0]).CPU; cpu != nil {
		return cpu.Vendor
	}
	return CPUIntel
}

// llMaxBW is llMaxBw: by GPU arch on one node, by CPU vendor across nodes.
func (t *Tuner) llMaxBW() float64 {
	if t.NNodes <= 1 {
		g := t.gen()
		return g.llMaxBW1Node(g.archIndex())
	}
	amd := t.cpuVendor() == CPUAMD
	switch {
	case t.NNodes == 2 && amd:
		return 22.5
	case t.NNodes == 2:
		return 39.0
	case amd:
		return 19.0
	}
	return 20.4
}

// nsteps is the number of ring steps of a collective.
func (t *Tuner) nsteps(coll Collective) int {
	n := t.NRanks
	switch coll {
	case AllReduce:
		return 2 * (n - 1)
	case AllGather, ReduceScatter, AlltoAll:
		return n - 1
	}
	return n
}

// supported reports whether NCCL considers the algorithm for the collective
// on this hardware (nccl-facts §2.3, §2.5).
func (t *Tuner) supported(coll Collective, a Algo, p Proto) bool {
	c := t.r.c
	sm := c.GPUModel().SM
	switch coll {
	case Broadcast, Reduce:
		return a == AlgoRing
	case AlltoAll, SendRecv:
		return a == AlgoDirect
	case AllGather, ReduceScatter:
		switch a {
		case AlgoRing:
		case AlgoNVLS:
			if t.Graphs.NVLS == nil || p != ProtoSimple || t.NNodes > 1 {
				return false
			}
		case AlgoPAT:
			if p != ProtoSimple || t.PPN != 1 || t.NNodes < 2 || sm < 60 || !c.Version.AtLeast(23) {
				return false
			}
		default:
			return false
		}
	case AllReduce:
		switch a {
		case AlgoRing, AlgoTree:
		case AlgoCollNetDirect, AlgoCollNetChain:
			if !t.collNetSupported(coll, a, p) {
				return false
			}
		case AlgoNVLS:
			// Single-node NVLS; across nodes NVLS needs CollNet, which collsim does not model.
			if t.Graphs.NVLS == nil || p != ProtoSimple || t.NNodes > 1 || t.Graphs.NVLS.NChannels < 2 {
				return false
			}
		case AlgoNVLSTree:
			// NVLS inside nodes, trees between them; disabled on one node (nccl-facts §2.5).
			if t.Graphs.NVLS == nil || p != ProtoSimple || t.NNodes < 2 || t.Graphs.NVLS.NChannels < 2 || !c.Version.AtLeast(18) {
				return false
			}
		default:
			return false
		}
	}
	if p == ProtoLL128 && !t.ll128OK() {
		return false
	}
	return true
}

// ll128OK is NCCL's default LL128 enable rule (nccl-facts §2.5).
func (t *Tuner) ll128OK() bool {
	sm := t.r.c.GPUModel().SM
	g := t.Graphs.Ring
	if sm < 70 || g.TypeIntra > PathNVB {
		return false
	}
	if !t.r.c.Version.AtLeast(27) && sm != 70 && sm != 80 && sm != 90 {
		return false
	}
	if t.NNodes > 1 {
		limit := PathPXB
		if sm >= 90 {
			limit = PathPXN
		}
		if g.TypeInter > limit {
			return false
		}
	}
	return true
}

func (t *Tuner) fill(coll Collective, a Algo, p Proto) {
	if a == AlgoDirect {
		// AlltoAll and SendRecv are grouped point-to-point calls; NCCL has no
		// tuning row for them. Give them the ring's bandwidth and base
		// latency so Time stays meaningful.
		if (coll == AlltoAll || coll == SendRecv) && p == ProtoSimple {
			t.BW[coll][a][p] = float64(t.RingGraphCh) * float64(t.RingBW)
			t.Lat[coll][a][p] = baseLat[AlgoRing][p]
			t.Enabled[coll][a][p] = true
		}
		return
	}
	k := t.r.c.Knobs
	if !t.supported(coll, a, p) || !k.Algos[a] || !k.Protos[p] {
		return
	}
	g := t.gen()
	arch := ArchIndex(t.r.c.GPUModel().SM)
	col := g.archIndex() // the release's table column for this GPU
	ni := t.nodeIdx()
	var busBW float64
	switch a {
	case AlgoRing, AlgoTree:
		// bw = bwIntra on <= 2 nodes, bwInter beyond (tuning.cc). The ring
		// graph uses one speed for both; the tree graph's bwIntra is raised.
		bw := float64(t.RingBW)
		nch := float64(t.RingGraphCh)
		if a == AlgoTree && t.NNodes <= 2 && t.NNodes > 1 {
			bw = float64(t.Graphs.Tree.BWIntra) * float64(t.RingBW) / float64(t.Graphs.Ring.BWIntra)
		}
		busBW = nch * bw
		if c := g.busCap(col); c > 0 {
			busBW = math.Min(busBW, c)
		}
		if a == AlgoRing {
			switch p {
			case ProtoLL:
				busBW = math.Min(t.llMaxBW(), g.ringLLFactor(coll, t.NNodes)*busBW)
			case ProtoLL128:
				busBW = math.Min(g.ringLL128Factor(t.PPN)*busBW, nch*g.ringLL128PerCh(coll, col))
			}
		} else {
			if coll != AllReduce {
				return
			}
			busBW = math.Min(0.92*busBW, nch*g.treePerCh(col, ni))
			switch p {
			case ProtoLL:
				busBW = math.Min(busBW/3.8, t.llMaxBW())
			case ProtoLL128:
				busBW = math.Min(busBW*g.treeLL128Factor(t.NNodes), nch*g.treeLL128PerCh(coll, col, ni))
			}
			if arch >= ArchHopper && g.treePattern85() {
				busBW *= 0.85 // SM90+ trees use the plain TREE pattern
			}
		}
	case AlgoNVLS, AlgoNVLSTree:
		busBW = t.nvlsBusBW(coll, a, arch, ni)
	case AlgoCollNetDirect, AlgoCollNetChain:
		busBW = t.collNetBusBW(a, arch)
	case AlgoPAT:
		busBW = float64(t.RingGraphCh) * float64(t.RingBW) * 0.75
	}
	// busBw -> algBw.
	algBW := busBW
	switch a {
	case AlgoRing:
		algBW = busBW * float64(t.NRanks) / float64(t.nsteps(coll))
	case AlgoNVLS, AlgoNVLSTree:
		switch {
		case !t.r.c.Version.AtLeast(28):
			algBW = busBW * 5 / 6
		case coll == AllReduce:
			algBW = busBW * float64(t.NRanks) / float64(t.nsteps(coll))
		}
	case AlgoTree, AlgoCollNetDirect, AlgoCollNetChain:
		algBW = busBW * 0.5
	}
	if t.NRanks == 1 {
		algBW = busBW
	}
	t.BW[coll][a][p] = algBW
	t.Lat[coll][a][p] = t.latency(coll, a, p)
	t.Enabled[coll][a][p] = algBW > 0
}

// nvlsBusBW is NCCL's NVLS and NVLSTree bus bandwidth (nccl-facts §2.3).
// From 2.28: intraBw = bwIntra x eff (0.85 Hopper, 0.74 Blackwell) x
// (nCh-1)/nCh, doubled for AllReduce or x (ppn-1)/ppn for AG/RS; interBw =
// bwInter, doubled for NVLSTree on <= 2 nodes; bw = min(intraBw, interBw,
// perChMaxNVLSTreeBw for NVLSTree). Up to 2.27: NVLS AllReduce min(bwIntra,
// bwInter), NVLS AG/RS min(bwIntra (ppn-1)/ppn, 0.9 bwInter), NVLSTree
// min(bwIntra, bwInter) with bwInter halved beyond 2 nodes.
func (t *Tuner) nvlsBusBW(coll Collective, a Algo, arch, ni int) float64 {
	g := t.Graphs.NVLS
	nch := float64(g.NChannels)
	intra, inter := float64(g.BWIntra), float64(g.BWInter)
	ppnFrac := float64(t.PPN-1) / float64(t.PPN)
	if !t.r.c.Version.AtLeast(28) {
		switch {
		case a == AlgoNVLSTree:
			if t.NNodes > 2 {
				inter /= 2
			}
			return nch * math.Min(intra, inter)
		case coll == AllReduce:
			return nch * math.Min(intra, inter)
		}
		return nch * math.Min(intra*ppnFrac, 0.9*inter)
	}
	eff := nvlsEffHopper
	if arch >= 3 {
		eff = nvlsEffBlackwell
	}
	intra *= eff * (nch - 1) / nch
	if coll == AllReduce {
		intra *= 2
	} else {
		intra *= ppnFrac
	}
	bw := math.Min(intra, inter)
	if a == AlgoNVLSTree {
		if t.NNodes <= 2 {
			inter *= 2
		}
		bw = math.Min(math.Min(intra, inter), perChMaxNVLSTreeBW[arch][ni])
	}
	return nch * bw
}

// intraClass returns LatNVLink when the ring graph is all NVLink, else LatPCI.
func (t *Tuner) intraClass() LatClass {
	if t.Graphs.Ring.TypeIntra <= PathNVB {
		return LatNVLink
	}
	return LatPCI
}

// latency is NCCL's latency of an (algorithm, protocol) for the model's
// release (tunerGen): the release's base and per-hop latencies, the ring's
// network steps, and the tree's log2(nNodes) network hops each way.
func (t *Tuner) latency(coll Collective, a Algo, p Proto) float64 {
	v := t.r.c.Version
	g := t.gen()
	hw := func(c LatClass, a Algo) float64 { return HWLatUsAt(v, c, a, p) }
	intra := hw(t.intraClass(), a) * g.llIntraFactor(t.NNodes, p)
	inter := hw(LatNet, a)
	if t.PPN == 1 && t.NNodes > 1 && g.ppn1TreeNet() {
		inter = hw(LatNet, AlgoTree)
	}
	// floor is intra raised to the network overhead NCCL charges each step
	// of a multi-node ring (tuning.cc getNetOverhead: 1 µs Intel, 2 µs AMD,
	// x3 for Simple); trees do not pay it.
	floor := intra
	if t.NNodes > 1 {
		overhead := 1.0
		if t.cpuVendor() == CPUAMD {
			overhead = 2.0
		}
		if p == ProtoSimple {
			overhead *= 3
		}
		floor = math.Max(intra, overhead)
	}
	base := g.baseLat(a, p)
	nNodes := float64(t.NNodes)
	switch a {
	case AlgoRing:
		if coll == Broadcast || coll == Reduce {
			lat := intra
			if p == ProtoSimple {
				lat = hw(t.intraClass(), AlgoTree)
			}
			if t.NNodes > 1 {
				lat = hw(LatNet, AlgoRing)
				if p == ProtoSimple {
					lat = hw(LatNet, AlgoTree)
				}
			}
			return base + lat
		}
		if g.netOverhead() {
			intra = floor
		}
		nsteps := float64(t.nsteps(coll))
		interSteps := g.interSteps(coll, t.NNodes)
		return base + (nsteps-interSteps)*intra + interSteps*inter
	case AlgoTree:
		return base + 2*(float64(t.PPN-1)*intra+float64(log2i(t.NNodes))*inter)
	case AlgoNVLS:
		lat := intra
		if t.NNodes > 1 {
			lat += inter
		}
		return lat
	case AlgoNVLSTree:
		if !v.AtLeast(29) {
			inter = 14 // NVLSTree NET latency was 14 us up to 2.28
		}
		return intra + 2*math.Log2(nNodes)*inter
	case AlgoPAT:
		return 8 + math.Log2(nNodes)*inter/3.5 + 2.8*float64(t.NRanks)
	case AlgoCollNetDirect, AlgoCollNetChain:
		// floor above is the NET-step floor (3 µs Simple on Intel).
		return t.collNetLatency(a, floor)
	}
	return base
}

// Time returns NCCL's predicted time in µs for nBytes, and false when the
// pair is disabled. nBytes is NCCL's size (the total buffer for AG/RS).
func (t *Tuner) Time(coll Collective, a Algo, p Proto, nBytes Bytes) (float64, bool) {
	if !t.Enabled[coll][a][p] || t.BW[coll][a][p] <= 0 {
		return 0, false
	}
	bw := t.BW[coll][a][p]
	lat := t.Lat[coll][a][p]
	g := t.gen()
	if a == AlgoTree && coll == AllReduce {
		bw *= g.treeCorrectionAt(p, nBytes)
	}
	if a == AlgoRing && p == ProtoSimple && coll == AllReduce && t.NNodes > 1 {
		lat *= g.ringPlateau(nBytes, t.NRanks, t.CommChannels)
	}
	return lat + float64(nBytes)/(1000*bw), true
}

// Choice is NCCL's decision for one call.
type Choice struct {
	Algo  Algo
	Proto Proto
	// Channels and Threads are what the kernel runs with for this size.
	Channels, Threads int
	// NCCLTimeUs is NCCL's own predicted time.
	NCCLTimeUs float64
}

// Select picks the (algorithm, protocol) with the lowest predicted time, as
// NCCL does, optionally restricted by algo/proto (nil = any), and the
// channels and threads for the size. It fails when nothing is enabled.
func (t *Tuner) Select(coll Collective, nBytes Bytes, algo *Algo, proto *Proto) (Choice, error) {
	best := Choice{NCCLTimeUs: math.Inf(1)}
	for a := Algo(0); a < NumAlgos; a++ {
		if algo != nil && a != *algo {
			continue
		}
		for p := Proto(0); p < NumProtos; p++ {
			if proto != nil && p != *proto {
				continue
			}
			if tm, ok := t.Time(coll, a, p, nBytes); ok && tm < best.NCCLTimeUs {
				best = Choice{Algo: a, Proto: p, NCCLTimeUs: tm}
			}
		}
	}
	if math.IsInf(best.NCCLTimeUs, 1) {
		what := coll.String()
		if algo != nil {
			what += " with algorithm " + algo.String()
		}
		if proto != nil {
			what += " with protocol " + proto.String()
		}
		return best, fmt.Errorf("no enabled algorithm/protocol for %s on this cluster (check NCCL_ALGO/NCCL_PROTO and the hardware: NVLS needs an NVSwitch gen3+ on one node, LL128 needs NVLink)", what)
	}
	best.Channels, best.Threads = t.channelsFor(coll, best.Algo, best.Proto, nBytes)
	return best, nil
}

// channelsFor applies NCCL's per-size channel and thread reduction
// (enqueue.cc topoGetAlgoInfo; nccl-facts §2.6): drop channels while
// nBytes < nc*nt*threshold, then halve threads while the same holds.
func (t *Tuner) channelsFor(coll Collective, a Algo, p Proto, nBytes Bytes) (nc, nt int) {
	switch a {
	case AlgoNVLS, AlgoNVLSTree:
		return t.NVLSChannels, 640
	case AlgoDirect:
		// The channels one rank's operations occupy: each peer operation's
		// (P2POpFor), over every peer of an AlltoAll, within the p2p channels.
		per, peers := int64(nBytes), 1
		if coll == AlltoAll && t.NRanks > 1 {
			per, peers = int64(nBytes)/int64(t.NRanks), t.NRanks-1
		}
		return min(t.P2PChannels().Total, t.P2POpFor(per).Channels*peers), 512
	}
	nc = t.CommChannels
	switch p {
	case ProtoLL:
		nt = 512
	case ProtoLL128:
		nt = 640
	default:
		nt = 512
		if float64(t.RingBW)*float64(t.RingGraphCh) <= 12 {
			nt = 256
		}
	}
	if a == AlgoTree || a == AlgoPAT {
		nt = 640
	}
	thr := int64(64)
	switch p {
	case ProtoLL:
		thr = 8
		if a == AlgoRing {
			thr *= int64(t.NRanks)
		}
	case ProtoLL128:
		thr = 8
	}
	n := int64(nBytes)
	for nc > 1 && n < int64(nc*nt)*thr {
		nc--
	}
	for nt > 128 && n < int64(nc*nt)*thr {
		nt /= 2
	}
	return nc, nt
}

// log2i is NCCL's integer log2 (floor; 0 for n <= 1).
func log2i(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}
