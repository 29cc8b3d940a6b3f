package sim

import (
	"github.com/collsim/collsim/model"
)

// stackTerm is the achieved rate and per-step latency of one network stack
// that is not its NIC kind's default, with their sources.
type stackTerm struct {
	stack          model.NetStack
	eff, latUs     float64
	effSrc, latSrc model.Source
}

// stackDefaults are the non-default stacks' terms. A default stack
// (ib-verbs, roce, efa-ofi, socket) is described by its NIC kind's
// net.eff.* and lat.net.* terms.
func stackDefaults() []stackTerm {
	return []stackTerm{
		{stack: model.StackGIB, eff: netEffRoCE, latUs: 0,
			effSrc: model.Assume("gIB is an NET/IB build for GCP's RoCE fabric (ConnectX-7, GPUDirect RDMA), so RoCE's achieved fraction (net.eff.roce); no public run with numbers in text to fit it to"),
			latSrc: model.Assume("0 extra: the plugin drives the same verbs as NCCL's NET/IB, whose hop latency lat.step.net carries; no public small-message figure")},
		{stack: model.StackTCPXO, eff: tcpxoEff, latUs: tcpxoLatUs,
			effSrc: model.Assume(tcpxoEffReasoning),
			latSrc: model.Assume(tcpxoLatReasoning)},
		{stack: model.StackTCPX, eff: tcpxoEff, latUs: tcpxoLatUs,
			effSrc: model.Assume("as GPUDirect-TCPXO (stack.tcpxo.eff): TCPX is its predecessor with the same device-memory TCP data path and no public run with numbers to fit; calibrate from an A3 High run"),
			latSrc: model.Assume("as GPUDirect-TCPXO (stack.tcpxo.lat.us), for want of a public TCPX small-message figure; TCPX handles the TCP stack on host cores as TCPXO's offload does not, so this is likely a lower bound")},
	}
}

func stackTerms() []termDef {
	var ts []termDef
	for _, st := range stackDefaults() {
		i := model.StackIndex(st.stack)
		name := string(st.stack)
		ts = append(ts,
			termDef{"stack." + name + ".eff", func(p *Params) *float64 { return &p.StackEff[i] }, st.eff, 0.05, 1, "fraction",
				"achieved fraction of NIC line rate with the " + name + " network stack", st.effSrc, false},
			termDef{"stack." + name + ".lat.us", func(p *Params) *float64 { return &p.StackLatUs[i] }, st.latUs, 0, 500, "us",
				"extra latency per network step with the " + name + " network stack", st.latSrc, false})
	}
	return ts
}

// GPUDirect-TCPXO's defaults rest on one public run: 2 nodes x 8 H100
// (GCP A3 Mega, 8 x 200G), nccl-tests all_reduce, published in
// lessizzmore/create-a3mega-ztan-fork ztan-NCCL-test-result (commit
// 02dd8f45): 338.8 GB/s busbw at 8 GiB, 123 us at 8 B.
const (
	tcpxoEff          = 0.9
	tcpxoLatUs        = 48
	tcpxoEffReasoning = "fitted on one run only (A3 Mega 2x8 H100, 8x 200G: 338.8 GB/s all_reduce busbw at 8 GiB, lessizzmore/create-a3mega-ztan-fork ztan-NCCL-test-result): 0.9 of line rate predicts 336 GB/s there; device-memory TCP pays TCP/IP headers (~3% at MTU 8896) and a receive-side copy-free header split, so below RDMA's 0.95 is the expected direction; calibrate from another run"
	tcpxoLatReasoning = "fitted on one run only (same A3 Mega file: 123 us at 8 B where the RDMA model gives ~27 us over a two-step tree): (123-27)/2 = 48 us extra per network step, TCP and the offload engine's per-message cost; calibrate from another run"
)
