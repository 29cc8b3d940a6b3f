package sim

import (
	"fmt"

	"github.com/collsim/collsim/model"
)

// PhysicsParams are the terms of the fabric physics: in-network reduction
// (SHARP / CollNet) and the RoCE link layer, each a row of the terms table
// with its source.
type PhysicsParams struct {
	// SHARPLatUs is the latency of one in-network reduction round trip in
	// µs (up the SHARP tree and back to every node).
	SHARPLatUs float64
	// SHARPEff is the streaming-aggregation rate as a fraction of the
	// link's line rate.
	SHARPEff float64
	// DCQCNConvUs is how long DCQCN takes to bring senders to their fair
	// share after congestion starts, in µs.
	DCQCNConvUs float64
	// DCQCNCut is DCQCN's largest single rate cut (fraction of the rate).
	DCQCNCut float64
	// RoCERTTUs is the round trip a go-back-N window covers, in µs.
	RoCERTTUs float64
	// RoCERTOUs is the retransmission timeout a lost tail waits, in µs.
	RoCERTOUs float64
	// SwitchBufferMB is the buffer one congested switch port can hold, MB.
	SwitchBufferMB float64
	// HdrRoCE is the per-packet header bytes on the wire of a RoCEv2 data
	// packet.
	HdrRoCE float64
}

// physicsTerms are the term rows of PhysicsParams.
func physicsTerms() []termDef {
	sharpLat := model.CollNetNetLatUs(model.AlgoCollNetDirect)
	return []termDef{
		{"sharp.lat.us", func(p *Params) *float64 { return &p.Physics.SHARPLatUs }, sharpLat, 1, 500, "us", "latency of one SHARP in-network reduction (up the tree and back), flat in the node count",
			model.Cite("NCCL tuning.cc hwLat NET CollNetDirect Simple", fmt.Sprintf("NCCL models CollNet's network part as %g us whatever the node count (SHARPv1 measured 2.83 us for 8-byte MPI_Allreduce on 128 EDR hosts, Graham et al. COMHPC 2016; NCCL's figure includes GPU and proxy costs)", sharpLat)), false},
		{"sharp.eff", func(p *Params) *float64 { return &p.Physics.SHARPEff }, 0.95, 0.3, 1, "fraction", "SHARP streaming aggregation rate as a fraction of link line rate",
			model.Cite("Graham et al., ISC 2020 (DOI 10.1007/978-3-030-50743-5_3)", "SHARPv2 streaming aggregation: MPI_Allreduce at ~95% of network bandwidth on HDR Quantum"), false},
		{"dcqcn.conv.us", func(p *Params) *float64 { return &p.Physics.DCQCNConvUs }, 1500, 10, 100000, "us", "time DCQCN takes to converge senders to their fair share once a port congests",
			model.Assume("from the ConnectX DCQCN defaults (Zhu et al., SIGCOMM 2015 algorithm; RPG_TIME_RESET 300 us, RPG_MIN_DEC_FAC 50%): after a 50% cut fast recovery halves the gap to the target every 300-us period, ~5 periods to within 3%: 1.5 ms at 400G, inside the 0.3-3 ms range those timers allow"), false},
		{"dcqcn.cut", func(p *Params) *float64 { return &p.Physics.DCQCNCut }, 0.5, 0, 1, "fraction", "DCQCN's largest rate cut; without PFC, senders offer 1 - cut/2 of their rate on average while they converge (a lossless port loses nothing to it)",
			model.Cite("ConnectX firmware default RPG_MIN_DEC_FAC = 50 (linux mlx5_ifc.h cong_control_r_roce_ecn_rp)", "a single CNP cuts the rate by at most 50%; a linear recovery back to full rate averages half the cut"), false},
		{"roce.rtt.us", func(p *Params) *float64 { return &p.Physics.RoCERTTUs }, 5, 0.5, 200, "us", "round trip a go-back-N window covers (packets in flight per loss: line rate x RTT / MTU)",
			model.Assume("NIC to NIC through one switch and back with NIC processing, ~5 us; a 2-tier fabric adds ~5 us and a 3-tier one ~25 us of switch and cable time: calibrate it for deeper fabrics"), false},
		{"roce.rto.us", func(p *Params) *float64 { return &p.Physics.RoCERTOUs }, 4, 1, 1e7, "us", "retransmission timeout a lost tail packet waits",
			model.Cite("NVIDIA ConnectX Adaptive Retransmission (docs.nvidia.com/networking, 2025)", "firmware minimum base timeout 4 us with adaptive retransmission on (the sample default); without it NCCL's NCCL_IB_TIMEOUT=20 gives 4.096 us x 2^20 = 4.3 s per timeout (NCCL net_ib connect.cc)"), false},
		{"switch.buffer.mb", func(p *Params) *float64 { return &p.Physics.SwitchBufferMB }, 8, 0.1, 1000, "MB", "packet buffer one congested switch port can fill before back-pressure or drops",
			model.Assume("shared-buffer switch chips hold tens of MB (a 51.2T single chip ~100-160 MB across 128 ports, fabric-facts §1.1 generation) and dynamic thresholds let one congested port take a large share while few ports congest: 8 MB per congested port; calibrate it from an incast measurement"), false},
		{"hdr.roce.bytes", func(p *Params) *float64 { return &p.Physics.HdrRoCE }, 82, 40, 200, "bytes", "RoCEv2 per-packet overhead on the wire (IPv4, untagged)",
			model.Cite("linux include/rdma/ib_pack.h; IEEE 802.3", "Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 + preamble/SFD 8 + inter-frame gap 12 = 82 B (linux include/rdma/ib_pack.h header sizes): 98.04% payload at MTU 4096, 92.59% at 1024"), false},
	}
}

// roceFactor scales a RoCE NIC's achieved rate by its fabric settings,
// relative to the well-configured default (MTU 4096, lossless) that
// net.eff.roce describes:
//
//   - MTU: payload share of each packet, MTU/(MTU+hdr.roce.bytes), against
//     4096's (98.04% at 4096, 92.59% at 1024 with 82 B).
//   - Typed loss (loss_rate, random loss on every packet): go-back-N
//     goodput (1-p)/(1+pW) with W = line rate x roce.rtt.us / MTU packets,
//     selective repeat 1-p (arqEff; Mittal et al., IRN, SIGCOMM 2018).
//     Loss from congestion is physics_congestion.go's.
func (p *Params) roceFactor(n *model.NICInfo) float64 {
	r := n.RoCE
	mtu := float64(r.MTU)
	if mtu <= 0 {
		mtu = 4096
	}
	h := p.Physics.HdrRoCE
	f := (mtu / (mtu + h)) / (4096.0 / (4096 + h))
	if l := r.LossRate; l > 0 {
		f *= arqEff(l, r, float64(n.Speed.LineGBps()), p.Physics.RoCERTTUs)
	}
	return f
}

// arqEff is the goodput fraction of loss recovery at per-packet loss p on
// a line of lineGBps with round trip rttUs: selective repeat 1-p,
// go-back-N (1-p)/(1+pW) with W = line x RTT / MTU packets in flight.
func arqEff(p float64, r model.RoCEParams, lineGBps, rttUs float64) float64 {
	if p <= 0 {
		return 1
	}
	if r.Retransmit == model.SelectiveRepeat {
		return 1 - p
	}
	mtu := float64(r.MTU)
	if mtu <= 0 {
		mtu = 4096
	}
	w := lineGBps * 1e9 * rttUs * 1e-6 / mtu
	return (1 - p) / (1 + p*w)
}
