package model

import "math"

// This file emulates how NCCL spreads point-to-point operations (ncclSend /
// ncclRecv, so SendRecv and AlltoAll) over channels: the communicator's p2p
// channel count, the channels one peer may use, and the channels and chunk
// one operation of a given size uses. The per-size rule is what makes an
// 8-GPU SendRecv double its bandwidth at each size doubling from 64 MiB to
// 256 MiB (nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt, sendrecv_perf:
// 81.8, 162.5, 299.5 GB/s at almost the same time).

// p2pPerChannelNetGBps is NCCL_P2P_PER_CHANNEL_NET_BW's default: the
// network rate NCCL 2.29+ expects one p2p channel to carry when it sizes the
// channels of a network peer (src/graph/paths.cc, v2.30.7 line 918).
const p2pPerChannelNetGBps = 14

// P2PPerChannelNetGBps returns NCCL_P2P_PER_CHANNEL_NET_BW's default.
func P2PPerChannelNetGBps() float64 { return p2pPerChannelNetGBps }

// p2pLLThreshold is NCCL_P2P_LL_THRESHOLD's default (enqueue.cc, 2.14+):
// a p2p operation runs LL when its bytes fit this many per channel.
const p2pLLThreshold = 16384

// maxDevWorkP2PPerBatch is NCCL_MAX_DEV_WORK_P2P_PER_BATCH (device.h): p2p
// operations one channel's work batch holds.
const maxDevWorkP2PPerBatch = 8

// P2PChannels is the communicator's p2p channel layout.
type P2PChannels struct {
	// Total is p2pnChannels: pow2Up(min(coll channels, 64))
	// (paths.cc ncclTopoComputeP2pChannels).
	Total int
	// PerPeer is p2pnChannelsPerPeer: the most channels one operation to
	// one peer may use (the minimum over peers, rounded up to a power of 2).
	PerPeer int
}

// P2PChannels computes NCCL's p2p channel counts for the communicator
// (paths.cc ncclTopoComputeP2pChannels / ncclTopoGetNchannels, by version;
// the version table is in the p2p research notes: 2.11 one channel per
// network peer, 2.12-2.19 NCCL_NCHANNELS_PER_NET_PEER=2, 2.20-2.28 2 halved
// for many ranks, 2.29+ bandwidth based at 14 GB/s per channel).
func (t *Tuner) P2PChannels() P2PChannels {
	c := t.r.c
	v := c.Version
	total := pow2Up(max(1, min(t.CommChannels, 64)))
	perPeer := math.MaxInt
	if !v.AtLeast(29) {
		perPeer = total
	}
	// Same-node peers: 2 x (path bandwidth / per-link NVLink bandwidth) over
	// NVLink, 2 otherwise.
	node := c.Nodes[0]
	for i, a := range node.GPUs {
		for j, b := range node.GPUs {
			if i == j {
				continue
			}
			p := t.r.GPU(a, b)
			n := 2
			if p != nil && p.Transport == TransportP2P && (p.Type == PathNVL || (p.Type == PathNVB && v.AtLeast(30))) {
				if g, err := LookupNVLink(c.GPUModel().NVLinkGen); err == nil && g.NCCLGBps > 0 {
					n = 2 * max(1, int(math.Floor(float64(p.NCCLBW)/float64(g.NCCLGBps)+1e-9)))
				}
			}
			perPeer = min(perPeer, n)
		}
	}
	userNet := c.Knobs.NChannelsPerNetPeer
	if t.NNodes > 1 {
		var n int
		switch {
		case userNet > 0:
			n = userNet
		case !v.AtLeast(12):
			n = 1
		case !v.AtLeast(20):
			n = 2
		case !v.AtLeast(29):
			n = 2
			for n > 1 && 2*t.NRanks > 4*total {
				n /= 2
			}
			n = max(n, t.localNetCount())
		default:
			count, bw := t.localNetBW()
			n = max(count, int(math.Ceil(bw/p2pPerChannelNetGBps-1e-9)))
		}
		perPeer = min(perPeer, n)
	}
	if perPeer == math.MaxInt {
		perPeer = total
	}
	perPeer = pow2Up(max(1, perPeer))
	if v.AtLeast(29) {
		if t.NNodes > 1 && userNet == 0 {
			for perPeer > 1 && perPeer*ceilDiv(t.NRanks, maxDevWorkP2PPerBatch) > total {
				perPeer /= 2
			}
		}
		perPeer = min(total, perPeer)
	}
	return P2PChannels{Total: total, PerPeer: perPeer}
}

// localNetPaths returns GPU 0's closest NICs (NCCL counts local NICs per
// GPU) and the GPU's own PCIe bandwidth.
func (t *Tuner) localNetPaths() ([]*NetPath, float64) {
	c := t.r.c
	g := c.Nodes[0].GPUs[0]
	nets := t.r.LocalNICs(g)
	gpu := c.GPUModel()
	pcie := 24.0 // Gen4 x16 when the catalog has no generation
	if g, err := LookupPCIe(gpu.PCIeGen); err == nil {
		pcie = float64(g.NCCLX16GBps) * float64(max(gpu.PCIeWidth, 1)) / 16
	}
	return nets, pcie
}

// localNetCount is getLocalNetCountByBw (2.20-2.28): local NICs needed to
// cover the GPU's PCIe bandwidth.
func (t *Tuner) localNetCount() int {
	count, _ := t.localNetBW()
	return count
}

// localNetBW adds the GPU-to-NIC path bandwidth of the GPU's local NICs
// until it covers the GPU's PCIe bandwidth (topo.cc, v2.29+): how many NICs
// that took and their bandwidth.
func (t *Tuner) localNetBW() (int, float64) {
	nets, pcie := t.localNetPaths()
	var bw float64
	n := 0
	for _, np := range nets {
		if n > 0 && bw >= pcie {
			break
		}
		bw += float64(np.NCCLBW)
		n++
	}
	if n == 0 {
		return 1, p2pPerChannelNetGBps
	}
	return n, bw
}

// P2POp is how one point-to-point operation is spread.
type P2POp struct {
	// Channels is how many channels the operation uses; ChunkBytes the
	// p2p step (chunk) size; MaxChannels and MinChannels the bounds the
	// size rule works between.
	Channels, MinChannels, MaxChannels int
	ChunkBytes                         int64
	// Proto is the protocol the operation runs: LL when it is small
	// (P2PProto), Simple otherwise.
	Proto Proto
}

// P2PChunkBytes is p2pChunkSize (init.cc): 128 KiB across nodes (256 KiB on
// ARM hosts with SM100+ GPUs), 512 KiB on one node whose GPUs are all on
// NVLink (2.16+), 128 KiB otherwise; at most NCCL_BUFFSIZE/8.
func (t *Tuner) P2PChunkBytes() int64 {
	c := t.r.c
	chunk := int64(128 << 10)
	switch {
	case t.NNodes > 1:
		if c.GPUModel().SM >= 100 && t.armHost() && c.Version.AtLeast(28) {
			chunk = 256 << 10
		}
	case c.Version.AtLeast(16) && t.allNVLink():
		chunk = 512 << 10
	}
	buf := int64(4 << 20)
	if c.Knobs.BuffSize > 0 {
		buf = int64(c.Knobs.BuffSize)
	}
	return min(chunk, buf/8)
}

func (t *Tuner) armHost() bool {
	if cpu := t.r.c.Topo.Elem(t.r.c.Nodes[0].CPUs[0]).CPU; cpu != nil {
		return cpu.Vendor == CPUArm || cpu.Vendor == CPUGrace
	}
	return false
}

func (t *Tuner) allNVLink() bool {
	node := t.r.c.Nodes[0]
	for i, a := range node.GPUs {
		for j, b := range node.GPUs {
			if i != j {
				p := t.r.GPU(a, b)
				if p == nil || p.Transport != TransportP2P || (p.Type != PathNVL && p.Type != PathNVB) {
					return false
				}
			}
		}
	}
	return true
}

// P2POpFor returns the channels and chunk one send (or receive) of bytes
// uses (enqueue.cc: 2.22-2.30 lines 866-935 and 1120-1147; 2.20-2.21 and
// 2.13-2.19 calcP2pChunkSize; 2.12 group.cc getP2pChunkSize): start at
// nChannelsMin (the per-peer channels halved while nChannelsMin x nRanks
// exceeds the p2p channels), at most one channel per minPartSize, then
// double while each part exceeds maxPartSize and the doubling stays within
// the per-peer channels.
func (t *Tuner) P2POpFor(bytes int64) P2POp {
	v := t.r.c.Version
	pc := t.P2PChannels()
	step := t.P2PChunkBytes()
	maxCh := pc.PerPeer
	if v.AtLeast(13) && !v.AtLeast(20) {
		// "avoid overloading channels with 8+ operations" (2.13-2.19).
		for maxCh > 1 && maxCh*t.NRanks > 4*pc.Total {
			maxCh /= 2
		}
	}
	minCh := maxCh
	for minCh > 1 && minCh*t.NRanks > pc.Total {
		minCh /= 2
	}
	var minPart, maxPart int64
	switch {
	case !v.AtLeast(13):
		// 2.12: stepSize = NCCL_BUFFSIZE/8, parts of 1 to 4 steps.
		minPart, maxPart = 512<<10, 2<<20
	case !v.AtLeast(20):
		minPart, maxPart = step/8, step
		if t.NNodes <= 1 {
			maxPart = 32 * step
		}
	default:
		minPart, maxPart = step/8, 32*step
		if t.NNodes > 1 {
			minPart, maxPart = step/2, step
		}
	}
	op := P2POp{MinChannels: minCh, MaxChannels: maxCh, ChunkBytes: step, Proto: ProtoSimple}
	if bytes <= 0 {
		op.Channels = 1
		op.Proto = t.p2pProto(bytes, 1)
		return op
	}
	nch := int(min(int64(minCh), max(1, ceilDiv64(bytes, minPart))))
	part := max(minPart, bytes/int64(nch))
	for part > maxPart && nch <= maxCh/2 {
		nch *= 2
		part = bytes / int64(nch)
	}
	op.Channels = nch
	op.Proto = t.p2pProto(bytes, nch)
	return op
}

// p2pProto is the protocol of one send (or receive) of bytes over nch
// channels: LL when the operation fits NCCL_P2P_LL_THRESHOLD bytes per
// channel (enqueue.cc addP2pToPlan, 2.19+: bytes <= nChannels x
// threshold; 2.14-2.18 p2pTaskAppend/addP2pToPlan: each channel's part
// <= threshold), Simple otherwise and before 2.14. Every p2p connection
// has LL buffers (transport/p2p.cc and shm.cc allocate every protocol's).
func (t *Tuner) p2pProto(bytes int64, nch int) Proto {
	v := t.r.c.Version
	switch {
	case !v.AtLeast(14):
		return ProtoSimple
	case !v.AtLeast(19):
		if ceilDiv64(max(bytes, 0), int64(max(nch, 1))) <= p2pLLThreshold {
			return ProtoLL
		}
	case bytes <= int64(max(nch, 1))*p2pLLThreshold:
		return ProtoLL
	}
	return ProtoSimple
}

func ceilDiv64(a, b int64) int64 { return (a + b - 1) / b }
