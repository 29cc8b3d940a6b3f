package model

// NCCL's tuning model changed between releases in its constants and in a
// few of its formulas. tunerGen holds what the model's NCCL release has,
// read from src/graph/tuning.cc at the tags v2.8.4-1, v2.9.9-1, v2.10.3-1,
// v2.12.7-1, v2.14.3-1, v2.15.1-1, v2.17.1-1, v2.18.1-1, v2.18.3-1,
// v2.21.5-1, v2.22.3-1, v2.23.4-1, v2.25.1-1 and v2.28.3-1 (a minor
// release stands for its last patch; 2.18 is 2.18.3). The choice of
// algorithm and protocol, and so every multi-node prediction, follows from
// these: a release that charges a tree 28 µs per Simple hop runs rings
// where a newer one runs trees.
type tunerGen struct {
	v Version
	// sm is the communicator's compute capability (all GPUs alike).
	sm int
}

func (t *Tuner) gen() tunerGen { return tunerGen{t.r.c.Version, t.r.c.GPUModel().SM} }

// archIndex is the column of the per-arch tables: up to 2.14 only SM 8.0
// exactly took the Ampere column and everything else the Volta one
// (compCap80); Hopper has its column from 2.15, Blackwell from 2.25.
func (g tunerGen) archIndex() int {
	m := g.v.Minor
	switch {
	case m <= 14:
		if g.sm == 80 {
			return ArchAmpere
		}
		return ArchVolta
	case m <= 24 && g.sm >= 100:
		return ArchHopper
	}
	return ArchIndex(g.sm)
}

// baseLat is the release's base latency (BaseLatUsAt).
func (g tunerGen) baseLat(a Algo, p Proto) float64 { return BaseLatUsAt(g.v, a, p) }

// llIntraFactor multiplies the LL intra-node hop latency on more than one
// node up to 2.17 ("if (nNodes > 1 && p == LL) intraLat *= 1.8"); from
// 2.18 rings floor it at the network overhead instead (netOverhead).
func (g tunerGen) llIntraFactor(nNodes int, p Proto) float64 {
	if nNodes > 1 && p == ProtoLL && g.v.Minor <= 17 {
		return 1.8
	}
	return 1
}

// netOverhead reports whether a multi-node ring's intra-node steps are
// floored at NCCL's network overhead (1 µs Intel, 2 µs AMD, x3 for
// Simple), from 2.18.
func (g tunerGen) netOverhead() bool { return g.v.Minor >= 18 }

// interSteps is nInterSteps, the ring steps that cross the network:
// AllReduce 2(nNodes-1) up to 2.11 and from 2.23, 2 nNodes in 2.12-2.22;
// AllGather/ReduceScatter nNodes-1.
func (g tunerGen) interSteps(coll Collective, nNodes int) float64 {
	n := float64(nNodes)
	if nNodes <= 1 {
		return 0
	}
	if coll != AllReduce {
		return n - 1
	}
	if m := g.v.Minor; m >= 12 && m <= 22 {
		return 2 * n
	}
	return 2 * (n - 1)
}

// ppn1TreeNet reports whether, with one GPU per node, every algorithm
// charges the Tree's network latency (from 2.23).
func (g tunerGen) ppn1TreeNet() bool { return g.v.Minor >= 23 }

// busCap is the communicator-wide bus bandwidth cap applied before the
// refinements: 235 GB/s on Ampere up to 2.17, 370 on Hopper in 2.17;
// 0 when there is none.
func (g tunerGen) busCap(arch int) float64 {
	m := g.v.Minor
	switch {
	case m <= 17 && arch == ArchAmpere:
		return 235
	case m == 17 && arch == ArchHopper:
		return 370
	}
	return 0
}

// ringLLFactor is the Ring LL bus bandwidth factor: 1/4 (1/3 for a
// single-node AllGather, ReduceScatter or Broadcast) up to 2.20, 1/2 from
// 2.21.
func (g tunerGen) ringLLFactor(coll Collective, nNodes int) float64 {
	if g.v.Minor >= 21 {
		return 0.5
	}
	if nNodes > 1 || coll == AllReduce || coll == Reduce {
		return 1.0 / 4
	}
	return 1.0 / 3
}

// ringLL128Factor is the Ring LL128 bus bandwidth factor: 0.92, and 0.7
// with fewer than 2 GPUs per node up to 2.22.
func (g tunerGen) ringLL128Factor(ppn int) float64 {
	if ppn < 2 && g.v.Minor <= 22 {
		return 0.7
	}
	return 0.92
}

// ll128PerChPre is ll128MaxBwPerCh up to 2.9, by collective (Broadcast,
// Reduce, AllGather, ReduceScatter, AllReduce).
var ll128PerChPre = map[Collective]float64{Broadcast: 18.8, Reduce: 12.0, AllGather: 18.3, ReduceScatter: 15.2, AllReduce: 16.9}

// ll128PerCh is the per-channel LL128 ceiling shared by ring and tree up
// to 2.18.1: by collective up to 2.9, 20 GB/s in 2.10-2.16, by arch
// {20, 20, 36.7} in 2.17-2.18.1 (the tree's own table comes with 2.18.3).
func (g tunerGen) ll128PerCh(coll Collective, arch int) (float64, bool) {
	switch m := g.v.Minor; {
	case m <= 9:
		return ll128PerChPre[coll], true
	case m <= 16:
		return 20, true
	case m <= 17:
		return [NumArchs]float64{20, 20, 36.7, 36.7}[arch], true
	}
	return 0, false
}

// ringLL128PerCh is the Ring LL128 per-channel ceiling (Blackwell: 2 x
// 36.7 in 2.25-2.28, 34.5 in 2.29, 40 from 2.30).
func (g tunerGen) ringLL128PerCh(coll Collective, arch int) float64 {
	if v, ok := g.ll128PerCh(coll, arch); ok {
		return v
	}
	if arch == ArchBlackwell {
		switch g.v.Minor {
		case 25, 26, 27, 28:
			return 2 * 36.7
		case 29:
			return 34.5
		}
	}
	return perChMaxRingLL128BW[arch]
}

// treeLL128PerCh is the Tree LL128 per-channel ceiling by node class.
func (g tunerGen) treeLL128PerCh(coll Collective, arch, ni int) float64 {
	if v, ok := g.ll128PerCh(coll, arch); ok {
		return v
	}
	if arch == ArchBlackwell && g.v.Minor <= 27 {
		return 2 * [3]float64{36.7, 36.7, 29.0}[ni] // 2.25-2.27
	}
	return perChMaxTreeLL128BW[arch][ni]
}

// treeLL128Factor is the multi-node Tree LL128 factor: 0.915 up to 2.9,
// 120/128 after (7/9 on one node throughout).
func (g tunerGen) treeLL128Factor(nNodes int) float64 {
	switch {
	case nNodes == 1:
		return 7.0 / 9
	case g.v.Minor <= 9:
		return 0.915
	}
	return ProtoPayload(ProtoLL128)
}

// treePerCh is perChMaxTreeBw: Ampere {24.0, 22.5, 16.0} up to 2.9 and
// {24.0, 23.6, 17.8} from 2.10; Hopper {24.0, 23.6, 17.8} in 2.15-2.16,
// {38.7, 41.4, 33.0} in 2.17-2.18.1, {38.7, 41.4, 36.0} from 2.18.3;
// Blackwell twice Hopper's in 2.25-2.27, its own row from 2.28.
func (g tunerGen) treePerCh(arch, ni int) float64 {
	m := g.v.Minor
	switch {
	case arch == ArchAmpere && m <= 9:
		return [3]float64{24.0, 22.5, 16.0}[ni]
	case arch == ArchHopper && m <= 16:
		return [3]float64{24.0, 23.6, 17.8}[ni]
	case arch == ArchHopper && m == 17:
		return [3]float64{38.7, 41.4, 33.0}[ni]
	case arch == ArchBlackwell && m <= 27:
		return 2 * perChMaxTreeBW[ArchHopper][ni]
	}
	return perChMaxTreeBW[arch][ni]
}

// treePattern85 reports whether a tree built with the plain TREE pattern
// pays NCCL's 0.85 (from 2.18.3).
func (g tunerGen) treePattern85() bool { return g.v.Minor >= 18 }

// treeCorrectionAt is treeCorrectionFactor for log2(nBytes/64) = idx, and
// 1 outside the table (idx >= 23: 512 MiB and up; below 64 B from 2.22).
// Up to 2.9 the LL128 row was {.., .6, .5, .6, .6, .7, .7, .8, .9, .9,
// .92, .92} from index 12.
func (g tunerGen) treeCorrectionAt(p Proto, nBytes Bytes) float64 {
	idx := 0
	if nBytes >= 64 {
		for n := uint64(nBytes) >> 6; n > 1; n >>= 1 {
			idx++
		}
	} else if g.v.Minor >= 22 {
		return 1
	}
	if idx >= len(treeCorrection[p]) {
		return 1
	}
	if p == ProtoLL128 && g.v.Minor <= 9 {
		return treeCorrectionLL128Pre[idx]
	}
	return treeCorrection[p][idx]
}

var treeCorrectionLL128Pre = [23]float64{1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, .92, .92}

// ringPlateau is the Ring Simple AllReduce latency factor on more than one
// node (the "plateau effect of ring"): up to 2.17 from nBytes >= nRanks/16
// x 64 KiB, x1.9 (2.17: x1.5 on SM90); from 2.18 from nBytes/(nChannels
// nRanks) >= 64, x1.9 below SM80 and x1.4 from it. 1 when it does not apply.
func (g tunerGen) ringPlateau(nBytes Bytes, nRanks, nChannels int) float64 {
	m := g.v.Minor
	if m <= 17 {
		if float64(nBytes) < float64(nRanks)/16*65536 {
			return 1
		}
		if m == 17 && g.sm >= 90 {
			return 1.5
		}
		return 1.9
	}
	if float64(nBytes)/float64(nChannels*nRanks) < 64 {
		return 1
	}
	if g.sm < 80 {
		return 1.9
	}
	return 1.4
}

// llMaxBW1Node is the single-node llMaxBw: by the arch index, with Hopper
// at Ampere's 87.7 until 2.20.
func (g tunerGen) llMaxBW1Node(arch int) float64 {
	if arch == ArchHopper && g.v.Minor <= 20 {
		return llMaxBW1Node[ArchAmpere]
	}
	return llMaxBW1Node[arch]
}
