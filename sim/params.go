package sim

import (
	"fmt"
	"strings"
	"sync"

	"github.com/collsim/collsim/model"
)

// Params are the model's free parameters: how much of each link's line rate
// bulk collective traffic achieves, per-step latencies, per-channel ceilings
// and fixed overheads. Each default is a cited public figure or a stated
// assumption (see Terms); calibrate fits them to measurements and writes a
// profile. The zero value is not useful: start from DefaultParams.
type Params struct {
	// NVLinkEff is the fraction of NVLink line rate that SM-driven copies
	// achieve, by NVLink generation (terms for 2..5; a generation without
	// one, such as NVLink1, gets linkEff's 0.8).
	NVLinkEff [6]float64
	// PCIeEff is the fraction of PCIe line rate achieved, by generation (3..6).
	PCIeEff [7]float64
	// NetEff is the fraction of NIC line rate achieved, by NIC kind in
	// model.NICKinds() order (ib, roce, efa, tcp).
	NetEff [4]float64
	// SMPEff is the fraction of the inter-socket link's bandwidth available.
	SMPEff float64
	// HostMemEff is the fraction of host memory bandwidth available to staged traffic.
	HostMemEff float64
	// NVLSEff is NVLS's achieved fraction of the ring-effective NVLink rate,
	// on Hopper [0] and Blackwell [1].
	NVLSEff [2]float64
	// NVLSReduce is the NVSwitch's in-switch reduction rate per GPU (the
	// additions of multimem.ld_reduce, spread over the GPU's switch ports)
	// as a fraction of the ring-effective rate of those ports, on Hopper
	// [0] and Blackwell [1].
	NVLSReduce [2]float64
	// NVLSWarpGBps is the payload rate in GB/s one scatter or gather warp
	// of an NVLS or NVLSTree AllReduce CTA copies, on Hopper [0] and
	// Blackwell [1]: a CTA's scatter warps bound how fast its channel's
	// input enters the NVLS buffers, its gather warps how fast the result
	// leaves them (model.NVLSWarps says how many of each a CTA has).
	NVLSWarpGBps [2]float64
	// HostReadGBps caps each channel's traffic that a GPU reads from host
	// memory where a NIC put it (NET without GPUDirect RDMA): SM loads
	// across PCIe are latency-bound.
	HostReadGBps float64
	// SHMOneWayEff and SHMTwoWayEff are the fractions of a GPU's PCIe link
	// rate, per direction, that its SHM traffic gets when it moves that
	// traffic one way (it only sends or only receives in the call) or both
	// ways at once (see shmLinks in env.go).
	SHMOneWayEff, SHMTwoWayEff float64
	// SHMLockstepEff is the fraction of a GPU's PCIe link rate, per
	// direction, that its SHM traffic gets in the steps of a ring loop in
	// which it only sends (the first) or only receives (the last) while
	// every GPU of the ring does the same at once (see shmRingCaps).
	SHMLockstepEff float64
	// SocketGBps caps each channel's traffic over NET/Socket: NCCL's socket
	// transport moves a channel through one proxy thread and TCP stream.
	SocketGBps float64
	// CrossSocketP2PGBps caps device-to-device traffic (GPU-GPU P2P or
	// GPUDirect RDMA) that crosses the inter-socket link, per direction.
	CrossSocketP2PGBps float64
	// StepLatUs is the per-step latency in µs by latency class (NVLink,
	// PCIe/SHM, network) and protocol.
	StepLatUs [model.NumLatClasses][model.NumProtos]float64
	// TreeNetLatUs is the latency in µs of one tree hop between nodes by
	// protocol (a tree's network hop, up or down the inter-node tree) on
	// the network stacks of NCCL releases before 2.18, in place of
	// StepLatUs' network row, which is the ring's (treeHopLat).
	TreeNetLatUs [model.NumProtos]float64
	// NetLatUs is extra latency per network step by NIC kind (model.NICKinds()
	// order: ib, roce, efa, tcp), on top of StepLatUs' network row.
	NetLatUs [4]float64
	// StackEff and StackLatUs are the achieved fraction of NIC line rate
	// and the extra latency per network step of a stack that is not its NIC
	// kind's default, in model.NetStacks() order (a default stack uses
	// NetEff and NetLatUs of its kind; its entries here stay 0).
	StackEff, StackLatUs [7]float64
	// BaseLatUs is the fixed latency of one collective call in µs by protocol
	// (NCCL's base latency plus the launch and bookkeeping overhead nccl-tests
	// measures).
	BaseLatUs [model.NumProtos]float64
	// NVLSLatUs is the latency of one NVLS call in µs.
	NVLSLatUs float64
	// LaunchSingleUs is the host time in µs of one kernel launch when one
	// thread launches the kernels of a node's G GPUs one after the other
	// (model.LaunchSingleProcess): a call then takes at least G of them;
	// see runmode.go.
	LaunchSingleUs float64
	// VMLatUs is the extra latency of one call in µs on hosts that are
	// virtual machines (model.RunSpec.VM); see runmode.go.
	VMLatUs float64
	// P2PChanShare is the share of one channel's (one CTA's) Simple copy
	// rate that a point-to-point send gets.
	P2PChanShare float64
	// A2ASwitchEff is the fraction of the rate permutation traffic (ring,
	// SendRecv) gets through an NVSwitch that AlltoAll's all-to-all pattern
	// gets: every GPU writes to every other one at once.
	A2ASwitchEff float64
	// NetChanGBps caps what one channel's network connection carries.
	NetChanGBps float64
	// TreeEff is the fraction of its links' rate that tree AllReduce gets
	// where a ring would get all of it (see treeWire in tree.go).
	TreeEff float64
	// PATEff is the fraction of its links' rate PAT AllGather and
	// ReduceScatter get where a ring gets all of it (see patWire).
	PATEff float64
	// ChannelCapGBps caps one channel's (one CTA's) copy rate by protocol and
	// architecture index (Volta, Ampere, Hopper, Blackwell).
	ChannelCapGBps [model.NumProtos][model.NumArchs]float64
	// Physics are the fabric-physics terms (physics_terms.go): SHARP,
	// RoCE link layer, congestion and loss recovery.
	Physics PhysicsParams
}

// launchOverheadUs is what a call costs on top of NCCL's base latency: the
// kernel launch and loop bookkeeping nccl-tests measures. 17 µs measured for
// 8 B on 4x H100 where NCCL's own model gives 10.2 (snellius_h100_1x4 case).
const launchOverheadUs = 7

// shmOneWayEff, shmTwoWayEff and shmLockstepEff are the defaults of
// shm.eff.oneway, shm.eff.twoway and shm.eff.lockstep (their sources are in
// the term table).
const (
	shmOneWayEff   = 0.86
	shmTwoWayEff   = 0.35
	shmLockstepEff = 0.56
)

// DefaultParams returns the uncalibrated model: every term at its default
// (see Terms for each default's source).
func DefaultParams() Params {
	var p Params
	for _, d := range termTable() {
		*d.at(&p) = d.def
	}
	return p
}

// Term is one named, fittable model parameter.
type Term struct {
	// Name is stable: "nvlink.eff.4", "net.eff.ib", "lat.step.net.simple".
	Name string
	// Value points into the Params it was taken from.
	Value *float64
	// Default is the term's value in DefaultParams.
	Default float64
	// Lo and Hi bound the value during fitting.
	Lo, Hi float64
	// Unit is "fraction", "us" or "GB/s".
	Unit string
	// Doc says what the term is.
	Doc string
	// Source says where the default value comes from (a published figure,
	// NCCL's code, a measurement in the data) or why it is assumed.
	Source model.Source
	// OnRequest terms are fitted only when a --terms pattern names them:
	// NCCL's own per-channel ceilings, which few measurements determine.
	OnRequest bool
}

// termDef is one row of the term table: the field it sets, its default and
// the default's source, in one place.
type termDef struct {
	name      string
	at        func(*Params) *float64
	def       float64
	lo, hi    float64
	unit, doc string
	src       model.Source
	onRequest bool
}

var protoKeys = [...]string{"ll", "ll128", "simple"}
var classKeys = [...]string{"nvlink", "pcie", "net"}
var archKeys = [...]string{"volta", "ampere", "hopper", "blackwell"}

// termTable is built once; the rows never change.
var termTable = sync.OnceValue(buildTermTable)

func buildTermTable() []termDef {
	var ts []termDef
	add := func(d termDef) { ts = append(ts, d) }
	nvlink := [6]struct {
		def float64
		src model.Source
	}{
		2: {0.8, model.Cite("topo.h", "NCCL's effective 20 of 25 GB/s per NVLink2 link")},
		3: {0.775, model.Cite("nccl-tests#149, #175", "232 GB/s ring busbw over 12 x 25 GB/s on 8x A100")},
		4: {0.822, model.Cite("nccl-tests#212", "370 of 450 GB/s ring busbw on 8x H100")},
		5: {0.8, model.Cite("topo.h", "NCCL's effective 40.1 of 50 GB/s per NVLink5 link")},
	}
	for g := 2; g <= 5; g++ {
		add(termDef{fmt.Sprintf("nvlink.eff.%d", g), func(p *Params) *float64 { return &p.NVLinkEff[g] }, nvlink[g].def, 0.3, 1, "fraction",
			fmt.Sprintf("achieved fraction of NVLink%d line rate", g), nvlink[g].src, false})
	}
	pcie := [7]struct {
		def float64
		src model.Source
	}{
		3: {0.79, model.Cite("bam#54", "12.5 of 15.75 GB/s measured x16 Gen3 copies")},
		4: {0.79, model.Cite("bam#54", "25 of 31.5 GB/s measured x16 Gen4 copies")},
		5: {0.88, model.Cite("nvbandwidth H800 file", "55.3 of 63 GB/s x16 Gen5 copies")},
		6: {0.88, model.Assume("equal to Gen5: no published Gen6 copy measurement; the encoding overhead (FLIT mode) is of the same order")},
	}
	for g := 3; g <= 6; g++ {
		add(termDef{fmt.Sprintf("pcie.eff.%d", g), func(p *Params) *float64 { return &p.PCIeEff[g] }, pcie[g].def, 0.2, 1, "fraction",
			fmt.Sprintf("achieved fraction of PCIe Gen%d line rate", g), pcie[g].src, false})
	}
	net := [4]struct {
		def float64
		src model.Source
	}{
		{0.95, model.Cite("nccl-tests#290; nccl-tests#160", "46-48 of 50 GB/s per NDR NIC; ~24 of 25 per HDR")},
		{netEffRoCE, model.Assume(roceEffReasoning)},
		{0.88, model.Cite("aws_p4d_a100_2x8_efa case", "fitted on one run: 43.8 GB/s on 2x p4d with 4x 100G EFA (NCCL 2.9.9, the 2021 aws-ofi-nccl stack; no second public EFA run with numbers in text is in the data)")},
		{0.77, model.Cite("bcm_v100_2x1_tcp_socket case", "fitted on one run: 0.96 GB/s over ~10GbE (the link speed is assumed)")},
	}
	for i, k := range model.NICKinds() {
		add(termDef{"net.eff." + string(k), func(p *Params) *float64 { return &p.NetEff[i] }, net[i].def, 0.05, 1, "fraction",
			"achieved fraction of " + string(k) + " NIC line rate", net[i].src, false})
	}
	add(termDef{"smp.eff", func(p *Params) *float64 { return &p.SMPEff }, 0.8, 0.1, 1, "fraction", "achieved fraction of the inter-socket link",
		model.Assume("no published measurement of GPU traffic over UPI/xGMI; 0.8 as for the other point-to-point links, and calibrate fits it"), false})
	add(termDef{"hostmem.eff", func(p *Params) *float64 { return &p.HostMemEff }, 0.5, 0.05, 1, "fraction", "achieved fraction of host memory bandwidth",
		model.Assume("no published measurement; staged traffic writes and reads each byte once, so half of the memory bandwidth, and calibrate fits it"), false})
	add(termDef{"hostread.gbps", func(p *Params) *float64 { return &p.HostReadGBps }, 2.0, 0.1, 50, "GB/s", "per-channel rate of GPU reads from host memory a NIC wrote (NET without GDR)",
		model.Cite("moc case", "fitted on one run: ~15 GB/s without GDR on H100 RoCE over the 8 channels the model gives it (its log shows 2 coll channels, so the figure is a per-GPU one spread over the model's channels)"), false})
	add(termDef{"shm.eff.oneway", func(p *Params) *float64 { return &p.SHMOneWayEff }, shmOneWayEff, 0.05, 1, "fraction", "SHM rate of a GPU that only sends or only receives in the call, per direction, relative to its PCIe link",
		model.Cite("nccl#384; nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt", fmt.Sprintf("2 GPUs over SHM on PCIe Gen3 x16 (12.44 GB/s at pcie.eff.3): Broadcast 10.3 and Reduce 9.6 GB/s on 1 channel (nccl#384), 11.1 and 11.1 on 2 channels (autodl), 0.77-0.90 of the link; %.2f is their mean", shmOneWayEff)), false})
	add(termDef{"shm.eff.twoway", func(p *Params) *float64 { return &p.SHMTwoWayEff }, shmTwoWayEff, 0.05, 1, "fraction", "SHM rate of a GPU that sends and receives at once, per direction, relative to its PCIe link",
		model.Cite("nccl#384; nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt", fmt.Sprintf("2 GPUs over SHM on PCIe Gen3 x16 (12.44 GB/s at pcie.eff.3): AlltoAll, whose send and receive warps run at once in every step, 3.95 GB/s on 1 channel (1-8 MiB) and 4.6 on 2 (16 MiB-1 GiB) (autodl), 0.32-0.37 of the link; %.2f sits between; with the ring's one-way steps (shm.eff.lockstep) it gives AllReduce 3.85 GB/s against 3.9 on 1 channel (nccl#384) and 4.0 on 2 (autodl)", shmTwoWayEff)), false})
	add(termDef{"shm.eff.lockstep", func(p *Params) *float64 { return &p.SHMLockstepEff }, shmLockstepEff, 0.05, 1, "fraction", "SHM rate per direction of a GPU in the ring steps where it only sends (the loop's first) or only receives (its last) while every GPU of the ring does the same, relative to its PCIe link",
		model.Cite("nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt; nccl#384", fmt.Sprintf("ring AllGather on 2 GPUs is one send-only step then one receive-only step per loop (device/all_gather.h runRing: directCopySend, then directRecv), so it runs at half this rate: 3.23-3.39 GB/s at 64-512 MiB (autodl, 2 channels; 3.79 at 1 GiB) and AllGather and ReduceScatter 3.17 (nccl#384, 1 channel, NCCL 2.4.8) give 0.51-0.61 of the 12.44 GB/s link; %.2f sits inside and leaves AllReduce on both runs within 5%%. Below shm.eff.oneway (Broadcast, where one GPU writes while the other reads) because both GPUs move host traffic the same way at once, on the autodl box through one switch uplink and root port (PIX)", shmLockstepEff)), false})
	add(termDef{"socket.gbps", func(p *Params) *float64 { return &p.SocketGBps }, 4, 0.05, 100, "GB/s", "per-channel rate of NET/Socket (one TCP stream per channel)",
		model.Assume("one TCP stream per channel (NCCL_SOCKET_NTHREADS=1, NCCL_NSOCKS_PERTHREAD=1 defaults) sustains ~30 Gb/s on a current server core, the single-stream iperf3 order of magnitude; calibrate it from a socket run on faster links"), false})
	add(termDef{"p2p.xsocket.gbps", func(p *Params) *float64 { return &p.CrossSocketP2PGBps }, 6.4, 0.5, 100, "GB/s", "device-to-device traffic across sockets, per direction",
		model.Cite("nccl-tests#293", "6.4 GB/s peak with GPUDirect RDMA forced across sockets"), false})
	nvlsLat := model.HWLatUs(model.LatNVLink, model.AlgoNVLS, model.ProtoSimple)
	add(termDef{"nvls.lat.us", func(p *Params) *float64 { return &p.NVLSLatUs }, nvlsLat + launchOverheadUs, 1, 200, "us", "latency of one NVLS call",
		model.Cite("tuning.cc hwLat; snellius_h100_1x4 case", fmt.Sprintf("NCCL's NVLS latency (%g us) plus ~%d us of launch overhead (that of lat.base.*)", nvlsLat, launchOverheadUs)), false})
	// NVLS's loads and stores cross the GPU's NVSwitch ports like ring's
	// copies; what holds NVLS below them is the switch's reduction.
	for a, arch := range [2]string{"Hopper", "Blackwell"} {
		add(termDef{"nvls.eff." + strings.ToLower(arch), func(p *Params) *float64 { return &p.NVLSEff[a] }, 1, 0.2, 1.2, "fraction", "NVLS link rate relative to ring-effective NVLink on " + arch,
			model.Assume("multimem loads and stores are NVLink traffic like ring's copies and reach the ring-effective rate (nvlink.eff); the NVLS shortfall measured on 8x H100, 8x B200 and 72x GB200 is the in-switch reduction (nvls.reduce.*), which binds first: at 8x H100 the ports carry 1.125 x 276 = 311 GB/s of 370 ring-effective"), false})
	}
	// Per loop the switch adds G operands per element; spread over the G
	// GPUs' ports that bounds algbw x (G-1)/G, so the busbw the reduction
	// allows, 2 x reduce x port, is flat in G (as NCCL's own NVLS model
	// holds it, tuning.cc), while algbw falls towards busbw/2.
	add(termDef{"nvls.reduce.hopper", func(p *Params) *float64 { return &p.NVLSReduce[0] }, nvlsReduceHopper, 0.1, 1.2, "fraction", "NVSwitch in-switch reduction rate per GPU relative to its ring-effective NVLink rate on Hopper",
		model.Cite("nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt; nccl-tests#212", fmt.Sprintf("fitted on one run, 8x H100 AllReduce 1-16 GiB (NVLS, 128 KiB chunks: 60.8 us per 16 MiB loop of which 3.4 are the step synchronisation) needs an operand pull of 292 GB/s per GPU = %.3f x 370 x 8/7; it gives the ~480 GB/s busbw NVIDIA quotes; the Blackwell/Hopper ratio %.3f/%.3f = %.2f is that of NCCL's own NVLS factors, %.2f", nvlsReduceHopper, nvlsReduceBlackwell, nvlsReduceHopper, nvlsReduceBlackwell/nvlsReduceHopper, model.NVLSEff(model.ArchBlackwell)/model.NVLSEff(model.ArchHopper))), false})
	add(termDef{"nvls.reduce.blackwell", func(p *Params) *float64 { return &p.NVLSReduce[1] }, nvlsReduceBlackwell, 0.1, 1.2, "fraction", "NVSwitch in-switch reduction rate per GPU relative to its ring-effective NVLink rate on Blackwell",
		model.Cite("coreweave/nccl-tests#43; nccl#1807; nccl#2140", fmt.Sprintf("fitted on 72x GB200 NVL72 AllReduce 4-8 GiB, busbw 835-847 (algbw 423-429): operand pull 439 GB/s per GPU = %.3f x 720 x 72/71; the same term gives 8x B200/B300 806 GB/s, 3%% and 5%% under their 830 and 845", nvlsReduceBlackwell)), false})
	add(termDef{"nvls.warp.gbps.hopper", func(p *Params) *float64 { return &p.NVLSWarpGBps[0] }, nvlsWarpGBpsHopper(), 0.5, 50, "GB/s", "payload rate of one scatter or gather warp of an NVLS or NVLSTree AllReduce CTA on Hopper",
		model.Cite("tuning.cc perChMaxNVLSTreeBws (v2.28.3-1 .. v2.30.7-1); device/all_reduce.h (v2.19.3-1 .. v2.30.7-1)", nvlsWarpWhy()), true})
	add(termDef{"nvls.warp.gbps.blackwell", func(p *Params) *float64 { return &p.NVLSWarpGBps[1] }, nvlsWarpGBpsBlackwell(), 0.5, 50, "GB/s", "payload rate of one scatter or gather warp of an NVLS or NVLSTree AllReduce CTA on Blackwell",
		model.Assume(fmt.Sprintf("Hopper's rate (nvls.warp.gbps.hopper) times the ratio of NCCL's one-node per-CTA Simple ceilings, perChMaxTreeBw %g/%g (tuning.cc): NCCL's own 2-node NVLSTree figure on Blackwell, %g GB/s per head, equals its doubled network figure (2 x 48) and says nothing of the kernel, and no Blackwell NVLSTree run is in the data; at this rate the copy warps bind no Blackwell call the data holds (8x B200 NVLS: 24 CTAs x 7 gather warps x %.2f = %.0f GB/s algbw, above the ~460 its switch allows)",
			model.PerChMaxTreeBW(model.ArchBlackwell, 0), model.PerChMaxTreeBW(model.ArchHopper, 0), model.PerChMaxNVLSTreeBW(model.ArchBlackwell, 1), nvlsWarpGBpsBlackwell(), 24*7*nvlsWarpGBpsBlackwell())), true})
	for i, k := range model.NICKinds() {
		d := termDef{"lat.net." + string(k), func(p *Params) *float64 { return &p.NetLatUs[i] }, 0, 0, 500, "us", "extra latency per network step over " + string(k) + " NICs",
			model.Cite("tuning.cc hwLat; nccl-facts §2.4", "0: NCCL's network hop latency (lat.step.net) covers "+string(k)), false}
		if k == model.NICEFA {
			d.def = 70
			d.src = model.Cite("aws_p4d_a100_2x8_efa case", "fitted on one run: 175 us for 8 B on 2x p4d with NCCL 2.9.9 and the 2021 aws-ofi-nccl stack where the IB model gives ~27 us over a tree with two network steps: ~70 us per step (newer EFA stacks are faster; calibrate from a current run)")
		}
		add(d)
	}
	for _, d := range stackTerms() {
		add(d)
	}
	for _, d := range runModeTerms() {
		add(d)
	}
	for pr := model.Proto(0); pr < model.NumProtos; pr++ {
		base := model.BaseLatUs(model.AlgoRing, pr)
		add(termDef{"lat.base." + protoKeys[pr], func(p *Params) *float64 { return &p.BaseLatUs[pr] }, base + launchOverheadUs, 0, 500, "us", "fixed latency of one call",
			model.Cite("tuning.cc baseLat; snellius_h100_1x4 case; thanos_a100sxm80_1x8_mpi case", fmt.Sprintf("NCCL's ring base latency for %s (%g us) plus ~%d us of launch and loop overhead, fitted on one run: 17 us measured for 8 B on 4x H100 where NCCL's model gives 10.2; a second run agrees: 8x A100 under mpirun measures 22.3-26.2 us at 64 B-16 KiB, the model 22.0-24.9 with the overhead and 15.0-17.9 without", pr, base, launchOverheadUs)), false})
		for c := model.LatClass(0); c < model.NumLatClasses; c++ {
			add(termDef{"lat.step." + classKeys[c] + "." + protoKeys[pr], func(p *Params) *float64 { return &p.StepLatUs[c][pr] }, model.HWLatUs(c, model.AlgoRing, pr), 0, 200, "us", "latency of one pipeline step over " + classKeys[c],
				model.Cite("tuning.cc hwLat; nccl-facts §2.4", "NCCL's per-hop Ring latency for "+classKeys[c]+" and "+pr.String()), false})
		}
	}
	for pr := model.Proto(0); pr < model.NumProtos; pr++ {
		def := model.HWLatUs(model.LatNet, model.AlgoTree, pr)
		add(termDef{"lat.tree.net." + protoKeys[pr], func(p *Params) *float64 { return &p.TreeNetLatUs[pr] }, def, 0, 200, "us", "latency of one tree hop between nodes (NCCL before 2.18)",
			model.Cite("tuning.cc hwLat (v2.8.4-1 .. v2.30.7-1); abci_v100_2x4, abci_v100_4x4, abci_a100_2x8, abci_a100_4x8 cases", treeNetLatWhy(pr, def)), false})
	}
	add(termDef{"p2p.chan.share", func(p *Params) *float64 { return &p.P2PChanShare }, 0.55, 0.45, 0.65, "fraction", "share of one channel's Simple copy rate a point-to-point send gets",
		model.Assume("a p2p channel is one CTA whose warps are split between the send and the receive it serves (NCCL device/sendrecv.h: with one operation per channel 10 send and 9 receive warps of 20, 0.53 of the busy warps), so a send gets a little over half of the per-CTA Simple rate (chan.cap.simple); " +
			"checked on two runs: 8x H100 sendrecv on 4 channels takes 398 us more for 8 MiB more per channel from 32 to 64 MiB, 21.1 GB/s per channel against 38.7 x 0.55 = 21.3 (nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt; the difference cancels the fixed terms and the receive lag), " +
			"8x A100 sendrecv 110.8 GB/s at 128 MiB on 8 channels = 13.9 per channel, latency included, against 24.0 x 0.55 = 13.2 (li-plus/playground cuda/nccl.md)"), false})
	add(termDef{"p2p.a2a.switch.eff", func(p *Params) *float64 { return &p.A2ASwitchEff }, 0.9, 0.5, 1, "fraction", "AlltoAll's rate through an NVSwitch relative to permutation traffic (ring, SendRecv)",
		model.Cite("nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt; nccl#2169; nccl-tests#212",
			"8x H100: alltoall busbw 311-348 GB/s at 512M-16G against sendrecv 356-367 in the same run, ratio 0.87-0.95 (0.94 at 2G-16G); "+
				"4x H100 (NCCL 2.30.4): alltoall 334.9 GB/s at 500 MB against the ~370 GB/s NCCL reaches on NVLink (nccl-tests#212), ratio 0.905; 0.9 sits inside both"), false})
	add(termDef{"net.chan.gbps", func(p *Params) *float64 { return &p.NetChanGBps }, 18.3, 1, 100, "GB/s", "rate one channel's network connection carries",
		model.Cite("nccl#1272; paths.cc NCCL_P2P_PER_CHANNEL_NET_BW", fmt.Sprintf("18.3 GB/s sendrecv with 1 channel per network peer (NCCL 2.20.5, 8 nodes x 4 GH200, Slingshot) against 24.2 with 2; NCCL itself sizes p2p channels at %g GB/s each", model.P2PPerChannelNetGBps())), false})
	add(termDef{"tree.eff", func(p *Params) *float64 { return &p.TreeEff }, treeEff, 0.5, 1, "fraction", "fraction of its links' rate tree AllReduce gets where a ring gets all of it (its per-CTA ceiling is not scaled)",
		model.Cite("tuning.cc (v2.8.4-1 .. v2.26.5-1); nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt, nccltests_h100sxm_2x4_ib-ndr200x4_snellius_allgather_2.txt",
			fmt.Sprintf("NCCL's own model takes Tree AllReduce at busBw x .92 of its graph's bandwidth, capped by nChannels x perChMaxTreeBw, where a Simple ring gets its channels' full bandwidth; %.2f is that figure, not fitted. "+
				"Checked on 2x 4 H100 over 4 NDR200 (NCCL 2.22.3): tree AllReduce 156 GB/s busbw at 8 GiB, algbw 89 GB/s over the 100 GB/s of NICs, against ring AllGather's 97.6 GB/s busbw on the same NICs: the tree gets 0.91 of the ring's rate", treeEff)), false})
	add(termDef{"pat.eff", func(p *Params) *float64 { return &p.PATEff }, patEff, 0.3, 1, "fraction", "fraction of its links' rate PAT AllGather and ReduceScatter get where a ring gets all of it (its per-CTA ceiling is not scaled)",
		model.Assume(fmt.Sprintf("NCCL's own model takes PAT at busBw x .75 of its graph's bandwidth (tuning.cc, v2.23.4-1 .. v2.26.5-1), where a Simple ring gets its channels' full bandwidth; %.2f is that figure. No public PAT run (one GPU per node, AllGather or ReduceScatter, NCCL 2.23 or later) is in the data to check it; calibrate fits it from one", patEff)), false})
	// Per-channel (per-CTA) copy ceilings by protocol and architecture.
	llCap := [model.NumArchs]float64{10, 10, 12, 23.5}
	for pr := model.Proto(0); pr < model.NumProtos; pr++ {
		for a := 0; a < model.NumArchs; a++ {
			d := termDef{name: "chan.cap." + protoKeys[pr] + "." + archKeys[a], at: func(p *Params) *float64 { return &p.ChannelCapGBps[pr][a] },
				lo: 1, hi: 200, unit: "GB/s", doc: "one channel's (one CTA's) payload rate with " + pr.String() + " on " + archKeys[a], onRequest: true}
			switch pr {
			case model.ProtoLL:
				d.def = llCap[a]
				if a >= model.ArchHopper {
					d.src = model.Assume(fmt.Sprintf("one CTA's LL ceiling is about NCCL's node cap llMaxBw (%g GB/s, tuning.cc) spread over a 12-channel ring graph, rounded", model.LLMaxBW1Node(a)))
				} else {
					d.src = model.Assume("no per-CTA LL measurement on this architecture; 10 GB/s, below the Hopper figure, and calibrate fits it from small-message runs")
				}
			case model.ProtoLL128:
				d.def = model.PerChMaxRingLL128BW(a)
				d.src = model.Cite("tuning.cc perChMaxRingLL128Bw; nccl-facts §2.3", fmt.Sprintf("NCCL's per-channel Ring LL128 ceiling, %g GB/s", d.def))
			default:
				d.def = model.PerChMaxTreeBW(a, 0)
				d.src = model.Cite("tuning.cc perChMaxTreeBw; nccl-facts §2.3", fmt.Sprintf("NCCL's one-node per-channel Tree ceiling, %g GB/s", d.def))
			}
			add(d)
		}
	}
	return append(ts, physicsTerms()...)
}

// NVSwitch in-switch reduction rates (nvls.reduce.*), fitted as their
// sources say.
const (
	nvlsReduceHopper    = 0.691
	nvlsReduceBlackwell = 0.601
)

// nvlsTreeRef is the configuration NCCL's Hopper NVLSTree ceiling is read
// on: 2 nodes of 8 GPUs, one NVLS head per GPU, 16 CTAs (NVLS channels on
// SM90, transport/nvls.cc).
const nvlsTreeRefGPUs, nvlsTreeRefNodes, nvlsTreeRefCTAs = 8, 2, 16

// The NVLS graph NCCL's search finds on that configuration (2 x DGX H100,
// 8x NDR400; graph/search.cc, as model.Resolution runs it): 8 graph
// channels of 40 GB/s inside the node and 48 GB/s across it, the figures
// tuning.cc's NVLSTree bandwidth starts from (model.Tuner.nvlsBusBW).
// nvlsWarpWhy compares NCCL's per-channel ceiling with them;
// TestNVLSTreeRefGraph holds them to the search.
const nvlsTreeRefGraphCh, nvlsTreeRefBWIntra, nvlsTreeRefBWInter = 8, 40.0, 48.0

// nvlsWarpGBpsHopper is NCCL's own 2-node NVLSTree ceiling on Hopper read
// as a copy rate per warp: nHeads x perChMaxNVLSTreeBw of bus bandwidth on
// 2 x 8 GPUs, as algbw, over the gather warps of the 16 CTAs of a rank
// with a parent in the inter-node tree (model.NVLSWarps).
func nvlsWarpGBpsHopper() float64 {
	n := float64(nvlsTreeRefGPUs * nvlsTreeRefNodes)
	busbw := float64(model.NVLSHeads(nvlsTreeRefGPUs)) * model.PerChMaxNVLSTreeBW(model.ArchHopper, 1)
	_, gather, _, _ := model.NVLSWarps(true, nvlsTreeRefGPUs*nvlsTreeRefNodes)
	return busbw * n / (2 * (n - 1)) / float64(nvlsTreeRefCTAs*gather)
}

// nvlsWarpGBpsBlackwell scales Hopper's per-warp rate by NCCL's one-node
// per-CTA Simple ceilings (its source says why).
func nvlsWarpGBpsBlackwell() float64 {
	return nvlsWarpGBpsHopper() * model.PerChMaxTreeBW(model.ArchBlackwell, 0) / model.PerChMaxTreeBW(model.ArchHopper, 0)
}

// nvlsWarpWhy is nvls.warp.gbps.hopper's source: NCCL's figure, why it is
// the kernel's, and the attribution to the copy warps, which is assumed.
func nvlsWarpWhy() string {
	h := model.ArchHopper
	ch := model.PerChMaxNVLSTreeBW(h, 1)
	heads := float64(model.NVLSHeads(nvlsTreeRefGPUs))
	n := float64(nvlsTreeRefGPUs * nvlsTreeRefNodes)
	busbw := heads * ch
	algbw := busbw * n / (2 * (n - 1))
	sUp, gUp, _, _ := model.NVLSWarps(true, int(n))
	sRoot, gRoot, _, _ := model.NVLSWarps(false, int(n))
	w := nvlsWarpGBpsHopper()
	return fmt.Sprintf("NCCL's own NVLSTree ceiling on Hopper at 2 nodes, %g GB/s of busbw per NVLS head, lies below both its NVLink figure (%g x %.2f x %d/%d x 2 = %.1f) and its network figure (2 x %g = %g) for the NVLS graph its search finds on 2 x DGX H100, so it is the kernel's own: %g heads x %g = %.1f GB/s busbw, %.1f GB/s algbw on 2 x 8 GPUs. "+
		"Without registered buffers a CTA whose rank has a parent in the inter-node tree keeps %d scatter and %d gather warps of %d, where the tree's root and one-node NVLS keep %d and %d (the rest reduce and forward); "+
		"over the %d CTAs of such a rank that is %.1f / (%d x %d) = %.2f GB/s per warp. Assumption: the copy warps are what NCCL's figure measures (the root's reduce warps, which also add the child's data, are taken to keep up). "+
		"One-node NVLS on 8x H100 then allows %d x %d x %.2f = %.0f GB/s algbw, above the ~274 its switch gives, so it is unchanged",
		ch, nvlsTreeRefBWIntra, model.NVLSEff(h), nvlsTreeRefGraphCh-1, nvlsTreeRefGraphCh, nvlsTreeRefBWIntra*model.NVLSEff(h)*(nvlsTreeRefGraphCh-1)/nvlsTreeRefGraphCh*2,
		nvlsTreeRefBWInter, 2*nvlsTreeRefBWInter, heads, ch, busbw, algbw,
		sUp, gUp, model.NVLSCTAWarps, sRoot, gRoot,
		nvlsTreeRefCTAs, algbw, nvlsTreeRefCTAs, gUp, w,
		nvlsTreeRefCTAs, gRoot, w, float64(nvlsTreeRefCTAs*gRoot)*w)
}

// netEffRoCE is RoCE's default achieved fraction of NIC line rate.
const netEffRoCE = 0.95

// roceEffReasoning explains netEffRoCE; TestRoCEEffDefault checks it.
const roceEffReasoning = "equal to InfiniBand's 0.95 (46-48 of 50 GB/s per NDR NIC, nccl-tests#290): the data holds no well-configured RoCE run (the moc case has no GPUDirect RDMA), and at MTU 4096 RoCEv2's 82 B of headers leave 98.0% of the wire for payload against IB's 99.4% (fabric-facts §4), a 1.4% difference inside the spread of the IB figure"

// TermSource returns the source of a term's default as reports print it,
// or "" for a name that is not a term.
func TermSource(name string) string {
	for _, d := range termTable() {
		if d.name == name {
			return d.src.String()
		}
	}
	return ""
}

// Terms lists every parameter by name, in a stable order. The pointers
// refer to p, so setting *Term.Value changes p.
func (p *Params) Terms() []Term {
	tab := termTable()
	ts := make([]Term, len(tab))
	for i, d := range tab {
		ts[i] = Term{Name: d.name, Value: d.at(p), Default: d.def, Lo: d.lo, Hi: d.hi, Unit: d.unit, Doc: d.doc, Source: d.src, OnRequest: d.onRequest}
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
		return 0.8 // assumption: a generation without a term fares as NVLink2 (nvlink.eff.2)
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
		return 0.8 // assumption: a generation without a term (Gen1/2) near Gen3's 0.79
	case model.LinkSMP:
		return p.SMPEff
	case model.LinkMem:
		return p.HostMemEff
	case model.LinkNet:
		for _, e := range []model.ElemID{l.From, l.To} {
			if el := t.Elem(e); el.Kind == model.KindNIC {
				kind := el.NIC.Kind
				if c.Knobs.IBDisable && kind.RDMA() {
					// NET/Socket over an RDMA port: TCP's achieved
					// rate, not the RDMA stack's.
					kind = model.NICTCP
				}
				for i, k := range model.NICKinds() {
					if k == kind {
						eff := p.NetEff[i]
						if st := el.NIC.Stack; st != "" && !st.Native() && k == el.NIC.Kind {
							eff = p.StackEff[model.StackIndex(st)]
						}
						if k == model.NICRoCE {
							eff *= p.roceFactor(el.NIC)
						}
						return eff
					}
				}
			}
		}
		return 0.95 // a network link with no NIC end (not built by collsim): as net.eff.ib
	}
	return 1
}

// treeNetLatWhy is the reasoning behind a lat.tree.net default.
func treeNetLatWhy(pr model.Proto, def float64) string {
	why := fmt.Sprintf("NCCL's per-hop Tree NET latency for %s, %g us (the ring's is %g): ", pr, def, model.HWLatUs(model.LatNet, model.AlgoRing, pr))
	if pr != model.ProtoSimple {
		return why + "the same in every release from 2.8 to 2.30; 8 B AllReduce measured 13.2 us slower on 4 nodes than on 2 on ABCI V100/EDR and 8.8 us on ABCI A100/HDR (NCCL 2.8.4), two more network hops of the tree, 6.6 and 4.4 us each"
	}
	return why + "from 2.23; 2.8-2.22 charged 28 (2.18: 14) and 2.7 50, figures that fold a 256 KiB chunk's transfer into the latency (the v2.8.4-1 comment: 'the latency of a 256kB chunk'), which the simulator times itself, so the newest value stands for every release"
}
