package sim

import (
	"fmt"
	"strings"

	"github.com/collsim/collsim/model"
)

// Params are the model's free parameters: how much of each link's line rate
// bulk collective traffic achieves, per-step latencies, per-channel ceilings
// and fixed overheads. Defaults come from published measurements (each term
// cites its source); calibrate fits them to measurements and writes a
// profile. The zero value is not useful: start from DefaultParams.
type Params struct {
	// NVLinkEff is the fraction of NVLink line rate that SM-driven copies
	// achieve, by NVLink generation (index 1..5).
	NVLinkEff [6]float64
	// PCIeEff is the fraction of PCIe line rate achieved, by generation (3..6).
	PCIeEff [7]float64
	// NetEff is the fraction of NIC line rate achieved, by NIC kind in
	// model.NICKinds order (ib, roce, efa, tcp).
	NetEff [4]float64
	// SMPEff is the fraction of the inter-socket link's bandwidth available.
	SMPEff float64
	// HostMemEff is the fraction of host memory bandwidth available to staged traffic.
	HostMemEff float64
	// NVLSEff is NVLS's achieved fraction of the ring-effective NVLink rate,
	// on Hopper [0] and Blackwell [1].
	NVLSEff [2]float64
	// HostReadGBps caps each channel's traffic that a GPU reads from host
	// memory (SHM transport, NET without GPUDirect RDMA): SM loads across
	// PCIe are latency-bound.
	HostReadGBps float64
	// SocketGBps caps each channel's traffic over NET/Socket: NCCL's socket
	// transport moves a channel through one proxy thread and TCP stream.
	SocketGBps float64
	// CrossSocketP2PGBps caps device-to-device traffic (GPU-GPU P2P or
	// GPUDirect RDMA) that crosses the inter-socket link, per direction.
	CrossSocketP2PGBps float64
	// StepLatUs is the per-step latency in µs by link class (0 NVLink,
	// 1 PCIe/SHM, 2 network) and protocol.
	StepLatUs [3][model.NumProtos]float64
	// NetLatUs is extra latency per network step by NIC kind (model.NICKinds
	// order: ib, roce, efa, tcp), on top of StepLatUs' network row.
	NetLatUs [4]float64
	// BaseLatUs is the fixed latency of one collective call in µs by protocol
	// (NCCL's base latency plus the launch and bookkeeping overhead nccl-tests
	// measures).
	BaseLatUs [model.NumProtos]float64
	// NVLSLatUs is the latency of one NVLS call in µs.
	NVLSLatUs float64
	// ChannelCapGBps caps one channel's (one CTA's) copy rate by protocol and
	// architecture index (Volta, Ampere, Hopper, Blackwell).
	ChannelCapGBps [model.NumProtos][4]float64
}

// DefaultParams returns the uncalibrated model.
func DefaultParams() Params {
	p := Params{
		// 232 GB/s ring busbw over 12x25 GB/s on A100 (nccl-tests#149, #175);
		// 370 of 450 GB/s on H100 (nccl-tests#212); NCCL's effective per-link
		// 20/25 for NVLink2 and 40.1/50 for NVLink5 (topo.h).
		NVLinkEff: [6]float64{0, 0.8, 0.8, 0.775, 0.822, 0.8},
		// Achieved copy bandwidth over x16 line rate: Gen3 12.5/15.75, Gen4
		// 25/31.5 (bam#54), Gen5 55.3/63 (nvbandwidth H800 file); Gen6 assumed as Gen5.
		PCIeEff: [7]float64{0, 0, 0, 0.79, 0.79, 0.88, 0.88},
		// ib, roce: 46-48 of 50 GB/s per NDR NIC (nccl-tests#290), ~24 of 25
		// per HDR (nccl-tests#160); efa: 43.8 GB/s on 2x p4d with 4x100G EFA
		// (aws_p4d_a100_2x8_efa case); tcp: 0.96 GB/s over ~10GbE
		// (bcm_v100_2x1_tcp_socket case, link speed assumed).
		NetEff:     [4]float64{0.95, 0.95, 0.88, 0.77},
		SMPEff:     0.8,
		HostMemEff: 0.5,
		// NVLS moves chunk*(1+1/G) per GPU each way, so busbw =
		// 2(G-1)/G * rate/(1+1/G). Hopper: 480 GB/s NVLS busbw on 8 GPUs
		// (nccl-tests#212) needs rate 308.6 = 0.834 x 450*0.822.
		// Blackwell: ~830 GB/s on 8x B200 (nccl#1807) needs 533.6 = 0.741 x 900*0.8.
		NVLSEff: [2]float64{0.834, 0.741},
		// 4.0 GB/s over 2 channels with SHM on RTX 2080 Ti (autodl case);
		// ~15 GB/s over 8 channels without GDR on H100 RoCE (moc case).
		HostReadGBps: 2.0,
		// Assumption: one TCP stream per channel (NCCL_SOCKET_NTHREADS=1,
		// NCCL_NSOCKS_PERTHREAD=1 defaults) sustains ~30 Gb/s on a current
		// server core, the single-stream iperf3 order of magnitude; calibrate
		// it from a socket run on faster links.
		SocketGBps: 4,
		// 6.4 GB/s peak with GDR forced across sockets (nccl-tests#293).
		CrossSocketP2PGBps: 6.4,
		// NCCL's hwLat for Ring by class and protocol (tuning.cc, nccl-facts §2.4).
		StepLatUs: [3][model.NumProtos]float64{{0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}},
		// EFA: 175 us for an 8 B AllReduce on 2x p4d (NCCL 2.9.9 and the 2021
		// aws-ofi-nccl stack, aws_p4d_a100_2x8_efa case) where the IB model
		// gives ~27 us over a tree with two network steps: ~70 us per step.
		// Newer EFA stacks are faster; calibrate from a current run.
		NetLatUs: [4]float64{0, 0, 70, 0},
		// NCCL's ring base latency (6.6/14/8.4) plus ~7 µs of launch and
		// loop overhead: 17 µs measured for 8 B on 4x H100 where NCCL's
		// model gives 10.2 (snellius_h100_1x4 case).
		BaseLatUs: [model.NumProtos]float64{13.6, 21, 15.4},
		// NCCL's NVLS latency (25 µs, tuning.cc) plus the same overhead.
		NVLSLatUs: 32,
		ChannelCapGBps: [model.NumProtos][4]float64{
			// LL, an assumption: one CTA's LL ceiling is about NCCL's node
			// cap llMaxBw spread over a 12-channel ring graph (141/12 = 11.75
			// on Hopper, 282/12 = 23.5 on Blackwell, tuning.cc), rounded.
			// Volta and Ampere: 10, an assumption without a per-CTA
			// measurement (calibrate fits it from small-message runs).
			{10, 10, 12, 23.5},
			// perChMaxRingLL128Bw (tuning.cc).
			{20, 20, 36.7, 40},
			// perChMaxTreeBw for one node, NCCL's per-CTA ceiling (tuning.cc).
			{26.5, 24, 38.7, 70},
		},
	}
	return p
}

// Term is one named, fittable model parameter.
type Term struct {
	// Name is stable: "nvlink.eff.4", "net.eff.ib", "lat.step.net.simple".
	Name string
	// Value points into the Params it was taken from.
	Value *float64
	// Lo and Hi bound the value during fitting.
	Lo, Hi float64
	// Unit is "fraction", "us" or "GB/s".
	Unit string
	// Doc says what the term is.
	Doc string
	// Source says where the default value comes from (a measurement, a
	// published figure, NCCL's code) or that it is an assumption.
	Source string
}

// termSources cites each default of DefaultParams, by term name or by a
// prefix of it ("lat.step.net" covers every protocol).
var termSources = map[string]string{
	"nvlink.eff.2":       "NCCL's effective 20 of 25 GB/s per NVLink2 link (topo.h)",
	"nvlink.eff.3":       "232 GB/s ring busbw over 12 x 25 GB/s on 8x A100 (nccl-tests#149, #175)",
	"nvlink.eff.4":       "370 of 450 GB/s ring busbw on 8x H100 (nccl-tests#212)",
	"nvlink.eff.5":       "NCCL's effective 40.1 of 50 GB/s per NVLink5 link (topo.h)",
	"pcie.eff.3":         "12.5 of 15.75 GB/s measured x16 Gen3 copies (bam#54)",
	"pcie.eff.4":         "25 of 31.5 GB/s measured x16 Gen4 copies (bam#54)",
	"pcie.eff.5":         "55.3 of 63 GB/s x16 Gen5 copies (nvbandwidth H800 file)",
	"pcie.eff.6":         "assumed equal to Gen5 (no published measurement)",
	"net.eff.ib":         "46-48 of 50 GB/s per NDR NIC (nccl-tests#290); ~24 of 25 per HDR (nccl-tests#160)",
	"net.eff.roce":       "as InfiniBand: 46-48 of 50 GB/s per 400G NIC (nccl-tests#290)",
	"net.eff.efa":        "43.8 GB/s on 2x p4d with 4x 100G EFA (aws_p4d_a100_2x8_efa case)",
	"net.eff.tcp":        "0.96 GB/s over ~10GbE (bcm_v100_2x1_tcp_socket case; link speed assumed)",
	"smp.eff":            "assumed (no published measurement; collsim calibrate fits it)",
	"hostmem.eff":        "assumed (no published measurement; collsim calibrate fits it)",
	"hostread.gbps":      "4.0 GB/s over 2 channels with SHM on RTX 2080 Ti (autodl case); ~15 GB/s over 8 channels without GDR on H100 RoCE (moc case)",
	"socket.gbps":        "assumed: one TCP stream per channel (NCCL_SOCKET_NTHREADS=1, NCCL_NSOCKS_PERTHREAD=1) sustains ~30 Gb/s on a current server core, the single-stream iperf3 order of magnitude",
	"p2p.xsocket.gbps":   "6.4 GB/s peak with GPUDirect RDMA forced across sockets (nccl-tests#293)",
	"nvls.lat.us":        "NCCL's NVLS latency (25 us, tuning.cc) plus ~7 us of launch overhead",
	"nvls.eff.hopper":    "480 GB/s NVLS busbw on 8x H100 (nccl-tests#212); NCCL's own NVLS factor is 0.85",
	"nvls.eff.blackwell": "~830 GB/s NVLS busbw on 8x B200 (nccl#1807); NCCL's own NVLS factor is 0.74",
	"lat.net.efa":        "175 us for 8 B on 2x p4d with the 2021 aws-ofi-nccl stack, ~70 us per network step over the IB model (aws_p4d_a100_2x8_efa case)",
	"lat.net":            "0: NCCL's network hop latency (lat.step.net) covers IB, RoCE and TCP",
	"lat.base":           "NCCL's ring base latency (6.6/14/8.4 us for LL/LL128/Simple, tuning.cc) plus ~7 us of launch and loop overhead: 17 us measured for 8 B on 4x H100 (snellius_h100_1x4 case)",
	"lat.step.nvlink":    "NCCL's per-hop latency for NVLink (hwLat, tuning.cc; nccl-facts §2.4)",
	"lat.step.pcie":      "NCCL's per-hop latency for PCIe and SHM (hwLat, tuning.cc; nccl-facts §2.4)",
	"lat.step.net":       "NCCL's per-hop latency for the network (hwLat, tuning.cc; nccl-facts §2.4)",
}

// TermSource returns the citation of a term's default: the entry for its
// name or the longest dotted prefix of it.
func TermSource(name string) string {
	for n := name; ; {
		if s, ok := termSources[n]; ok {
			return s
		}
		i := strings.LastIndex(n, ".")
		if i < 0 {
			return "collsim default (see README: How predictions are made)"
		}
		n = n[:i]
	}
}

var protoKeys = [...]string{"ll", "ll128", "simple"}
var classKeys = [...]string{"nvlink", "pcie", "net"}

// Terms lists every parameter by name, in a stable order. The pointers
// refer to p, so setting *Term.Value changes p.
func (p *Params) Terms() []Term {
	var ts []Term
	for g := 2; g <= 5; g++ {
		ts = append(ts, Term{fmt.Sprintf("nvlink.eff.%d", g), &p.NVLinkEff[g], 0.3, 1, "fraction",
			fmt.Sprintf("achieved fraction of NVLink%d line rate", g), ""})
	}
	for g := 3; g <= 6; g++ {
		ts = append(ts, Term{fmt.Sprintf("pcie.eff.%d", g), &p.PCIeEff[g], 0.2, 1, "fraction",
			fmt.Sprintf("achieved fraction of PCIe Gen%d line rate", g), ""})
	}
	for i, k := range model.NICKinds {
		ts = append(ts, Term{"net.eff." + string(k), &p.NetEff[i], 0.05, 1, "fraction", "achieved fraction of " + string(k) + " NIC line rate", ""})
	}
	ts = append(ts,
		Term{"smp.eff", &p.SMPEff, 0.1, 1, "fraction", "achieved fraction of the inter-socket link", ""},
		Term{"hostmem.eff", &p.HostMemEff, 0.05, 1, "fraction", "achieved fraction of host memory bandwidth", ""},
		Term{"hostread.gbps", &p.HostReadGBps, 0.1, 50, "GB/s", "per-channel rate of GPU reads from host memory (SHM, NET without GDR)", ""},
		Term{"socket.gbps", &p.SocketGBps, 0.05, 100, "GB/s", "per-channel rate of NET/Socket (one TCP stream per channel)", ""},
		Term{"p2p.xsocket.gbps", &p.CrossSocketP2PGBps, 0.5, 100, "GB/s", "device-to-device traffic across sockets, per direction", ""},
		Term{"nvls.lat.us", &p.NVLSLatUs, 1, 200, "us", "latency of one NVLS call", ""},
	)
	ts = append(ts,
		Term{"nvls.eff.hopper", &p.NVLSEff[0], 0.2, 1.2, "fraction", "NVLS rate relative to ring-effective NVLink on Hopper", ""},
		Term{"nvls.eff.blackwell", &p.NVLSEff[1], 0.2, 1.2, "fraction", "NVLS rate relative to ring-effective NVLink on Blackwell", ""})
	for i, k := range model.NICKinds {
		ts = append(ts, Term{"lat.net." + string(k), &p.NetLatUs[i], 0, 500, "us", "extra latency per network step over " + string(k) + " NICs", ""})
	}
	for pr := 0; pr < int(model.NumProtos); pr++ {
		ts = append(ts, Term{"lat.base." + protoKeys[pr], &p.BaseLatUs[pr], 0, 500, "us", "fixed latency of one call", ""})
		for c := 0; c < 3; c++ {
			ts = append(ts, Term{"lat.step." + classKeys[c] + "." + protoKeys[pr], &p.StepLatUs[c][pr], 0, 200, "us", "latency of one pipeline step over " + classKeys[c], ""})
		}
	}
	for i := range ts {
		ts[i].Source = TermSource(ts[i].Name)
	}
	return ts
}

// Set assigns a term by name. An unknown name is an error listing the
// known ones.
func (p *Params) Set(name string, v float64) error {
	for _, t := range p.Terms() {
		if t.Name == name {
			*t.Value = v
			return nil
		}
	}
	var names []string
	for _, t := range p.Terms() {
		names = append(names, t.Name)
	}
	return fmt.Errorf("sim: unknown parameter %q (known: %s)", name, strings.Join(names, ", "))
}

// Get returns a term's value by name.
func (p *Params) Get(name string) (float64, bool) {
	for _, t := range p.Terms() {
		if t.Name == name {
			return *t.Value, true
		}
	}
	return 0, false
}

// Validate checks every term is within its bounds.
func (p *Params) Validate() error {
	for _, t := range p.Terms() {
		if v := *t.Value; v < t.Lo || v > t.Hi || v != v {
			return fmt.Errorf("sim: parameter %s = %g is outside [%g, %g]", t.Name, v, t.Lo, t.Hi)
		}
	}
	return nil
}

// linkEff returns the efficiency of a link for bulk traffic.
func (p *Params) linkEff(c *model.Cluster, l *model.Link) float64 {
	t := c.Topo
	switch l.Kind {
	case model.LinkNVLink:
		g := c.GPUModel().NVLinkGen
		if g >= 1 && g <= 5 && p.NVLinkEff[g] > 0 {
			return p.NVLinkEff[g]
		}
		return 0.8
	case model.LinkPCIe:
		gen := 4
		for _, e := range []model.ElemID{l.From, l.To} {
			if el := t.Elem(e); el.Kind == model.KindGPU {
				gen = el.GPU.PCIeGen
			} else if el.Kind == model.KindNIC {
				gen = el.NIC.Speed.PCIeGen
			}
		}
		if gen >= 3 && gen <= 6 && p.PCIeEff[gen] > 0 {
			return p.PCIeEff[gen]
		}
		return 0.8
	case model.LinkSMP:
		return p.SMPEff
	case model.LinkMem:
		return p.HostMemEff
	case model.LinkNet:
		for _, e := range []model.ElemID{l.From, l.To} {
			if el := t.Elem(e); el.Kind == model.KindNIC {
				for i, k := range model.NICKinds {
					if k == el.NIC.Kind {
						eff := p.NetEff[i]
						if k == model.NICRoCE {
							eff *= roceFactor(el.NIC)
						}
						return eff
					}
				}
			}
		}
		return 0.95
	}
	return 1
}

// RoCEv2 per-packet overhead on the wire: Ethernet header 14 + FCS 4 +
// preamble/SFD 8 + inter-frame gap 12 + IPv4 20 + UDP 8 + InfiniBand BTH 12
// + ICRC 4 bytes (IEEE 802.3; IBTA RoCEv2 Annex A17).
const roceOverhead = 82

// roceRTT is the round trip a go-back-N window must cover: NIC to NIC
// through one switch and back, ~5 us including NIC processing.
const roceRTT = 5e-6

// roceFactor scales a RoCE NIC's achieved rate by its fabric settings,
// relative to the well-configured default (MTU 4096, lossless):
//
//   - MTU: payload share of each packet, MTU/(MTU+82), against 4096's.
//   - Loss: RDMA RC retransmits go-back-N, so each lost packet costs the
//     whole window in flight (line rate x RTT / MTU packets): goodput
//     (1-p)/(1+p*W) (Mittal et al., "Revisiting Network Support for RDMA",
//     SIGCOMM 2018, show this collapse above ~1e-3 loss). Without PFC a
//     fabric that reports no loss rate is taken as lossless.
//
// ECN and the GID index do not change the rate in the flow model: ring and
// tree traffic is one-to-one per NIC, so congestion control has nothing to
// react to, and a wrong GID index breaks connection setup rather than
// bandwidth (validate names it from the logs).
func roceFactor(n *model.NICInfo) float64 {
	r := n.RoCE
	mtu := float64(r.MTU)
	if mtu <= 0 {
		mtu = 4096
	}
	f := (mtu / (mtu + roceOverhead)) / (4096.0 / (4096 + roceOverhead))
	if p := r.LossRate; p > 0 {
		window := float64(n.Speed.LineGBps()) * 1e9 * roceRTT / mtu
		f *= (1 - p) / (1 + p*window)
	}
	return f
}
