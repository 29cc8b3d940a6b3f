package model

// NCCL's constants, defined once: the tuning tables of src/graph/tuning.cc
// (ncclTunerConstantsDefaults) and the protocol buffer geometry of
// src/include/device.h and enqueue.cc, as nccl-facts §2.3, §2.4 and §4.1
// list them. The tuning emulation (tuning.go) and the simulator's defaults
// (package sim) both read them from here; nothing else copies a number.

// Arch indexes NCCL's per-architecture tuning columns.
const (
	ArchVolta = iota
	ArchAmpere
	ArchHopper
	ArchBlackwell
	NumArchs
)

// ArchIndex maps an SM version to NCCL's tuning table column (ArchVolta ..
// ArchBlackwell); Turing and Ada use the Volta and Ampere columns.
func ArchIndex(sm int) int {
	switch {
	case sm >= 100:
		return ArchBlackwell
	case sm >= 90:
		return ArchHopper
	case sm >= 80:
		return ArchAmpere
	}
	return ArchVolta
}

// LatClass is NCCL's latency class of a hop (tuning.cc hwLat rows).
type LatClass int

const (
	LatNVLink LatClass = iota // NVLINK
	LatPCI                    // PCI (and SHM)
	LatNet                    // NET
	NumLatClasses
)

// Per-arch caps in GB/s (tuning.cc ncclTunerConstantsDefaults; nccl-facts §2.3).
// The [3] columns are 1 node, 2 nodes, >= 3 nodes.
var (
	llMaxBW1Node        = [NumArchs]float64{39.0, 87.7, 141.0, 282.0}
	perChMaxRingLL128BW = [NumArchs]float64{20, 20, 36.7, 40}
	perChMaxTreeLL128BW = [NumArchs][3]float64{{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}
	perChMaxTreeBW      = [NumArchs][3]float64{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}
	perChMaxNVLSTreeBW  = [NumArchs][3]float64{{0, 0, 0}, {0, 0, 0}, {0, 57.7, 45.5}, {0, 96.0, 80.0}}
)

// LLMaxBW1Node is NCCL's single-node LL bandwidth cap llMaxBw in GB/s by
// architecture index (tuning.cc).
func LLMaxBW1Node(arch int) float64 { return llMaxBW1Node[arch] }

// PerChMaxRingLL128BW is NCCL's per-channel Ring LL128 ceiling in GB/s by
// architecture index (tuning.cc perChMaxRingLL128Bw).
func PerChMaxRingLL128BW(arch int) float64 { return perChMaxRingLL128BW[arch] }

// PerChMaxTreeBW is NCCL's per-channel Tree ceiling in GB/s by architecture
// index and node class (0: one node, 1: two, 2: three or more; tuning.cc
// perChMaxTreeBw).
func PerChMaxTreeBW(arch, nodes int) float64 { return perChMaxTreeBW[arch][nodes] }

// PerChMaxNVLSTreeBW is NCCL's per-channel NVLSTree bus bandwidth ceiling
// in GB/s by architecture index and node class (1: two nodes, 2: three or
// more; tuning.cc perChMaxNVLSTreeBws, from 2.28; 0 for one node, where
// NVLSTree is not run).
func PerChMaxNVLSTreeBW(arch, nodes int) float64 { return perChMaxNVLSTreeBW[arch][nodes] }

// NVLS efficiency factors of NCCL >= 2.28's NVLS bandwidth (tuning.cc:
// 0.85 on Hopper, 0.74 on Blackwell; nccl-facts §2.3).
const (
	nvlsEffHopper    = 0.85
	nvlsEffBlackwell = 0.74
)

// NVLSEff is NCCL's own NVLS efficiency factor for an architecture index.
func NVLSEff(arch int) float64 {
	if arch >= ArchBlackwell {
		return nvlsEffBlackwell
	}
	return nvlsEffHopper
}

// Base latencies in µs by algorithm [LL, LL128, Simple] (nccl-facts §2.4).
var baseLat = map[Algo][NumProtos]float64{
	AlgoTree: {6.8, 14.0, 8.4},
	AlgoRing: {6.6, 14.0, 8.4},
	AlgoPAT:  {8, 8, 8},
}

// BaseLatUs is NCCL's base latency of an algorithm and protocol in µs
// (tuning.cc baseLat); 0 for algorithms without one.
func BaseLatUs(a Algo, p Proto) float64 { return baseLat[a][p] }

// BaseLatUsAt is baseLat as the NCCL release v had it: Tree {4.4, 4.4, 0},
// Ring {3.6, 10.0, 8.4} up to 2.17; Tree {6.8, 14.0, 0}, Ring {6.6, 14.0,
// 8.4} from 2.18; Tree Simple 8.4 from 2.23 (tuning.cc at those tags).
func BaseLatUsAt(v Version, a Algo, p Proto) float64 {
	m := v.Minor
	if (a == AlgoTree || a == AlgoRing) && m <= 17 {
		return [2][NumProtos]float64{{4.4, 4.4, 0}, {3.6, 10.0, 8.4}}[a][p]
	}
	if a == AlgoTree && p == ProtoSimple && m <= 22 {
		return 0
	}
	return baseLat[a][p]
}

// Hardware latencies in µs by link class [NVLINK, PCI, NET], algorithm and
// protocol [LL, LL128, Simple] (nccl-facts §2.4, NCCL >= 2.29).
var hwLat = [NumLatClasses]map[Algo][NumProtos]float64{
	{AlgoTree: {.6, 1.25, 4.0}, AlgoRing: {.6, 1.9, 3.4}, AlgoNVLS: {0, 0, 25}, AlgoNVLSTree: {0, 0, 25}, AlgoPAT: {0, 0, 4.0}},
	{AlgoTree: {1.0, 1.9, 4.0}, AlgoRing: {1.0, 2.5, 5.7}, AlgoNVLS: {0, 0, 0}, AlgoNVLSTree: {0, 0, 0}, AlgoPAT: {0, 0, 4.0}},
	{AlgoTree: {5.0, 8.5, 14}, AlgoRing: {2.7, 4.0, 14.0}, AlgoNVLS: {0, 0, 18}, AlgoNVLSTree: {0, 0, 20.9}, AlgoPAT: {0, 0, 14}},
}

// HWLatUs is NCCL's per-hop hardware latency in µs by latency class,
// algorithm and protocol (tuning.cc hwLat).
func HWLatUs(c LatClass, a Algo, p Proto) float64 { return hwLat[c][a][p] }

// HWLatUsAt is hwLat as the NCCL release v had it. The rows that changed,
// read from src/graph/tuning.cc at tags v2.7.8-1, v2.8.4-1, v2.12.7-1,
// v2.14.3-1, v2.18.1-1, v2.18.3-1, v2.19.3-1 and v2.23.4-1:
//
//   - Tree Simple, NVLINK/PCI/NET: 28/28/50 in 2.7; 28/28/28 in 2.8-2.17;
//     4/6/14 in 2.18.3-2.18.6 (2.18.1 still 28/28/28; a minor version
//     stands for its later patches here); 28/28/28 again in 2.19-2.22;
//     4/4/14 from 2.23. The per-network-hop Tree latency NCCL charges thus
//     moved 50 -> 28 -> 14 -> 28 -> 14 us over the releases.
//   - Ring Simple NET: 9.6 up to 2.11, 28 in 2.12-2.13, 9.6 in 2.14-2.17,
//     14 from 2.18.
//   - NVLINK LL: Tree .52 and Ring .47 up to 2.17, .6 from 2.18; NVLINK
//     Tree LL128 1.2 in 2.7, 1.25 after.
//
// Other entries are the newest table's (HWLatUs). The tuning emulation
// (Tuner.latency) charges these rows for the modelled release.
func HWLatUsAt(v Version, c LatClass, a Algo, p Proto) float64 {
	lat := hwLat[c][a][p]
	m := v.Minor
	switch {
	case a == AlgoTree && p == ProtoSimple:
		switch {
		case m <= 7 && c == LatNet:
			lat = 50
		case m <= 17 || (m >= 19 && m <= 22):
			lat = 28
		case m == 18:
			lat = [NumLatClasses]float64{4, 6, 14}[c]
		}
	case a == AlgoRing && p == ProtoSimple && c == LatNet:
		switch {
		case m <= 11 || (m >= 14 && m <= 17):
			lat = 9.6
		case m <= 13:
			lat = 28
		}
	case c == LatNVLink && p == ProtoLL && m <= 17:
		switch a {
		case AlgoTree:
			lat = .52
		case AlgoRing:
			lat = .47
		}
	case c == LatNVLink && a == AlgoTree && p == ProtoLL128 && m <= 7:
		lat = 1.2
	}
	return lat
}

// treeCorrection is NCCL's Tree AllReduce bandwidth factor by
// log2(nBytes/64), 64 B .. 256 MiB, per protocol (tuning.cc
// treeCorrectionFactor; nccl-facts §2.2 describes its shape).
var treeCorrection = [NumProtos][23]float64{
	{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
	{1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
	{.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}

// Buffer geometry of NCCL's protocols (nccl-facts §4.1): the payload one
// step carries, and for ring AllReduce/AllGather/ReduceScatter how many
// steps make a chunk and a slice (Simple: chunk 4 steps, slice 2 steps).
const (
	StepPayloadLL     = 32 * 1024        // 64 KiB LL step, half of it payload
	StepPayloadLL128  = 614400 * 15 / 16 // LL128 step payload
	StepPayloadSimple = 512 * 1024       // 4 MiB buffer / 8 steps
	RingChunkSteps    = 4                // Simple ring chunk (NCCL_STEPS/2)
	RingSliceSteps    = 2                // Simple ring slice
	NVLSChunkBytes    = 128 * 1024       // NCCL_NVLS_CHUNKSIZE default
	NVLSMinChunkBytes = 16 * 1024        // NVLS chunks shrink to 64K/32K/16K for small sizes
)

// NVLSMaxArity is NCCL_MAX_NVLS_ARITY (include/device.h): the NVLS graph
// of one NVLink domain has min(32, GPUs) channels, one head GPU each
// (graph/search.cc caps the NVLS graph's channels at it), so a domain of
// more than 32 GPUs (GB200 NVL72) has 32 heads and the other GPUs only
// feed and receive the multicast.
const NVLSMaxArity = 32

// NVLSHeads is the number of NVLS head GPUs of an NVLink domain of g GPUs.
func NVLSHeads(g int) int { return max(min(g, NVLSMaxArity), 1) }

// NVLSCTAWarps is the warps of one NVLS or NVLSTree CTA: NCCL_MAX_NTHREADS
// (640) over the warp size (include/device.h).
const NVLSCTAWarps = 640 / 32

// NVLSWarps is how NCCL's NVLS and NVLSTree AllReduce kernels split a
// CTA's NVLSCTAWarps warps by role when the user buffers are not
// registered (device/all_reduce.h, the same from v2.19.3-1 to v2.30.7-1:
// v2.26.5-1 lines 393-397 for NVLS, 531-535 for NVLSTree). A CTA whose
// rank has a parent in the NVLSTree's inter-node tree (hasUp) gives 4
// warps to receiving from the network and multicasting, 5 to the reduce
// that feeds the network, and halves the other 11 between scatter (6) and
// gather (5); the tree's root, and single-node NVLS, give 5 to the reduce
// (7 when the communicator has at most 6 ranks) and split the rest: 8
// scatter and 7 gather of 20. The scatter warps copy a GPU's input into
// the NVLS buffers, the gather warps the multicast result out of them.
func NVLSWarps(hasUp bool, nRanks int) (scatter, gather, reduce, bcast int) {
	reduce = 5
	switch {
	case hasUp:
		bcast = 4
	case nRanks <= 6:
		reduce = 7
	}
	rest := NVLSCTAWarps - reduce - bcast
	return (rest + 1) / 2, rest / 2, reduce, bcast
}

// NVLSChunk is NCCL's NVLS AllReduce chunk for a call of nBytes over nc
// channels with nHeads heads (enqueue.cc, the same since 2.18): start from
// NCCL_NVLS_CHUNKSIZE (maxChunk; 0 means its default of 128 KiB), cut to
// 64 KiB when nBytes is under 64 x nc x nHeads x chunk, to 32 KiB under
// 8 x nc x nHeads x chunk, to 16 KiB under 2 x nc x nHeads x chunk, each
// only if the chunk is larger. A channel's loop is nHeads chunks.
func NVLSChunk(nBytes float64, nc, nHeads int, maxChunk Bytes) float64 {
	ops := float64(max(nc, 1) * max(nHeads, 1))
	chunk := float64(NVLSChunkBytes)
	if maxChunk > 0 {
		chunk = float64(maxChunk)
	}
	for _, s := range [...]struct{ mult, to float64 }{{64, 64 << 10}, {8, 32 << 10}, {2, 16 << 10}} {
		if nBytes < s.mult*ops*chunk && chunk > s.to {
			chunk = s.to
		}
	}
	return chunk
}

// NVLSTreeChunk is NCCL's NVLSTree AllReduce chunk for a call of nBytes
// over nc channels with nHeads heads per node on nNodes nodes (enqueue.cc,
// NCCL_ALGO_NVLS_TREE; the same in 2.26.2 and 2.30): start from
// NCCL_NVLS_CHUNKSIZE (maxChunk; 0 means its default of 128 KiB), capped
// at NCCL_NVLSTREE_MAX_CHUNKSIZE, whose default is 64 KiB on 4 nodes or
// more and the chunk itself on fewer (2.30: transport/nvls.cc for
// pre-Blackwell GPUs); then cut to 256/128/64/32 KiB when nBytes is under
// 32/16/4/1 x nc x nHeads x chunk, each only if the chunk is larger. A
// channel's loop is nHeads chunks, as in single-node NVLS
// (device/all_reduce.h: loopCount = nHeads x chunkCount).
func NVLSTreeChunk(nBytes float64, nc, nHeads, nNodes int, maxChunk Bytes) float64 {
	ops := float64(max(nc, 1) * max(nHeads, 1))
	chunk := float64(NVLSChunkBytes)
	if maxChunk > 0 {
		chunk = float64(maxChunk)
	}
	if nNodes >= 4 && chunk > 64<<10 {
		chunk = 64 << 10
	}
	for _, s := range [...]struct{ mult, to float64 }{{32, 256 << 10}, {16, 128 << 10}, {4, 64 << 10}, {1, 32 << 10}} {
		if nBytes < s.mult*ops*chunk && chunk > s.to {
			chunk = s.to
		}
	}
	return chunk
}

// StepPayload returns the payload of one buffer step of a protocol.
func StepPayload(p Proto) float64 {
	switch p {
	case ProtoLL:
		return StepPayloadLL
	case ProtoLL128:
		return StepPayloadLL128
	}
	return StepPayloadSimple
}

// ProtoPayload is the payload fraction of each protocol's wire format: LL
// sends 4 B of data with a 4 B flag, LL128 one flag word per 128 B line,
// Simple only data (nccl-facts §4.1).
func ProtoPayload(p Proto) float64 {
	switch p {
	case ProtoLL:
		return 0.5
	case ProtoLL128:
		return 120.0 / 128
	}
	return 1
}
