package sim

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/collsim/collsim/model"
)

// This file is the congestion physics of a call on a fabric: where the
// offered load exceeds a switch port's capacity, what the link layer does
// about it, and what that costs the flows. It runs once per call between
// building the program and timing it, and gives both engines the same
// per-call link capacities and op latencies, so the DES simulates every
// effect (flows share the reduced capacities max-min fairly) and the
// analytic engine uses the same numbers.
//
// Offered load. Senders inject at the rate their own NIC cable allows, so
// a switch egress port (a switch-to-switch link, a bundle, or a switch's
// cable into a NIC) whose bytes take longer at its capacity than the
// busiest source cable needs for its own bytes is offered D = t_port /
// t_source > 1 times what it can carry: incast, oversubscription or an
// ECMP collision.
//
// Buffers. NCCL's connections are windowed (8 steps of 512 KiB in flight,
// receiver-driven), so an overloaded port can queue at most the excess of
// the windows of the flows into it; the share of that queue beyond the
// port's buffer (switch.buffer.mb) is what the mechanisms below act on.
//
// Lossless links (InfiniBand credits; RoCE with PFC): the port's queue
// fills and back-pressure stops the links that feed it (PFC pauses the
// whole priority; IB withholds credits on the virtual lane): each upstream
// link is paused (1 - 1/D) of the time, for every flow on it, including
// victim flows that never cross the congested port (head-of-line blocking;
// Mittal et al., IRN, SIGCOMM 2018; Zhu et al., DCQCN, SIGCOMM 2015). The
// flow-level approximation: the upstream links' capacity is divided by D
// for the part of the call congestion control has not yet converged
// (below), one hop of propagation.
//
// ECN with DCQCN: senders cut their rate on congestion notifications and
// converge to their fair share in dcqcn.conv.us; only during convergence
// do the pauses (or, lossy, the drops) happen. On a lossless fabric the
// port's queue, held by PFC, keeps it busy through the cut, so its own
// flows get what PFC alone gives them and only the pauses shrink. Without
// DCQCN the overload lasts the whole call.
//
// Lossy RoCE (no PFC): while the overload lasts the port drops what it
// cannot queue, p = (1 - 1/D') of the bytes offered beyond its buffer,
// where D' = D(1 - dcqcn.cut/2) with DCQCN (cut and linear recovery lower
// what the senders offer) and D without. Go-back-N resends the window in
// flight per loss (goodput g = (1-p)/(1+pW), W = line rate x roce.rtt.us /
// MTU packets), selective repeat only the lost packet (1-p) (textbook
// ARQ; IRN). The port carries g of its rate for the window and its full
// rate after it (the senders converged, no loss): busy t at full rate, it
// takes t + window(1-g), or t/g when all of it fits in the window. A lost
// tail waits roce.rto.us: each op that crosses the port pays p x RTO times
// the window's share of the port's time. Other jobs' flows add to a
// port's offered load but never lower what the call's own flows offer.

// congestion is what the physics pass decided for one call.
type congestion struct {
	// caps are the link capacities for this call (nil: the Env's).
	caps []float64
	// extraLat is added to every transfer op that crosses link l.
	extraLat map[model.LinkID]model.Time
	// notes explain the mechanisms at work, worst first.
	notes []string
}

// hotPort is one congested switch egress port.
type hotPort struct {
	link model.LinkID
	d    float64
	// over is the share of the overload the port's buffer cannot absorb.
	over float64
}

// ncclWindow is what one NCCL connection keeps in flight: NCCL_STEPS (8)
// buffer slots of one Simple step each, 4 MiB (NCCL's receiver-driven
// flow control: a sender writes only into slots the receiver freed,
// nccl-facts §4.1).
const ncclWindow = 8 * model.StepPayloadSimple

// netLinkRole classifies a link for the congestion model: 1 a NIC's cable
// into the fabric (a source), 2 a switch egress port (a fabric link, a
// bundle, or a switch's cable into a NIC), 0 anything else.
func (e *Env) netLinkRole(l model.LinkID) int {
	t := e.Cluster.Topo
	if int(l) >= len(t.Links) {
		if f := e.Cluster.Fabric; f != nil && int(l) < int(f.BundleBase())+len(f.Bundles()) {
			return 2
		}
		return 0
	}
	lk := &t.Links[l]
	if lk.Kind != model.LinkNet {
		return 0
	}
	if t.Elem(lk.From).Kind == model.KindNIC {
		return 1
	}
	return 2
}

// linkLayer is the fabric's link layer and RoCE settings.
func (e *Env) linkLayer() (model.NICKind, model.RoCEParams, bool) {
	f := e.Cluster.Fabric
	if f == nil || e.Cluster.Knobs.IBDisable {
		return "", model.RoCEParams{}, false
	}
	if f.LinkLayer != model.NICIB && f.LinkLayer != model.NICRoCE {
		return "", model.RoCEParams{}, false
	}
	return f.LinkLayer, f.RoCE, true
}

// physics runs the congestion model on a program whose uncongested
// analytic time is t0.
func (e *Env) physics(pr *form, t0 model.Time) *congestion {
	kind, roce, ok := e.linkLayer()
	if !ok || t0 <= 0 || len(pr.demands) == 0 {
		return nil
	}
	loads := make([]float64, len(e.caps))
	for _, fc := range pr.demands {
		w := float64(max(fc.weight, 1))
		for _, l := range fc.route {
			loads[l] += fc.bytes * w
		}
	}
	var tSrc float64
	for l, ld := range loads {
		if ld > 0 && e.caps[l] > 0 && e.netLinkRole(model.LinkID(l)) == 1 {
			tSrc = math.Max(tSrc, ld/e.caps[l])
		}
	}
	if tSrc <= 0 {
		return nil
	}
	// Upstream links of each port: the link before it on every route.
	up := map[model.LinkID]map[model.LinkID]bool{}
	for _, fc := range pr.demands {
		for i := 1; i < len(fc.route); i++ {
			l := fc.route[i]
			if up[l] == nil {
				up[l] = map[model.LinkID]bool{}
			}
			if p := fc.route[i-1]; e.netLinkRole(p) != 0 {
				up[l][p] = true
			}
		}
	}
	// A flow is offered to a port at the rate it gets before reaching it:
	// its equal share of the busiest link on its way there (its source
	// cable, shared with the NIC's other flows, or an earlier port). A port
	// whose flows are offered more than it carries, D = sum of offered
	// rates / capacity > 1, queues; flows that only meet their fair share
	// do not (two children sending to a tree parent each at half their
	// cable's rate are no incast).
	// A background job's flows (other tenants) compete for the ports they
	// cross, but they do not lower what the call's own flows offer: the
	// call's flows are offered at their share among the call's own flows
	// (so adding competing load can only add to a port's offered load and
	// queue, never hide the call's own overload), and a background flow at
	// its share among all flows, held to its job's duty cycle.
	nOwn, bgCap := ownDemands(pr)
	members := make([]float64, len(e.caps))
	membersAll := make([]float64, len(e.caps))
	for i, fc := range pr.demands {
		if fc.bytes <= 0 {
			continue
		}
		for _, l := range fc.route {
			if i < nOwn {
				members[l] += float64(max(fc.weight, 1))
			}
			membersAll[l] += float64(max(fc.weight, 1))
		}
	}
	// In NCCL's pipelined collectives a receiver clocks the connections
	// into it (receiver-driven flow control: a sender writes only into
	// buffer slots the receiver freed), so the port into a NIC does not
	// hold a standing queue; incast at a NIC is modelled for point-to-point
	// traffic (AlltoAll, SendRecv). Ports inside the fabric, where flows of
	// unrelated senders and receivers meet, are modelled for every call.
	clocked := pr.kind != "direct" && pr.kind != ""
	offered := map[model.LinkID]float64{}
	inflight := map[model.LinkID]float64{}
	for i, fc := range pr.demands {
		if fc.bytes <= 0 {
			continue
		}
		w := float64(max(fc.weight, 1))
		rate, mem := math.Inf(1), members
		if i >= nOwn {
			rate, mem = bgCap[i-nOwn], membersAll
		}
		started := false
		for _, l := range fc.route {
			role := e.netLinkRole(l)
			if role == 2 && started && (!clocked || !e.intoNIC(l)) {
				offered[l] += w * rate
				inflight[l] += w * math.Min(fc.bytes, ncclWindow)
			}
			if role != 0 && e.caps[l] > 0 && mem[l] > 0 {
				rate = math.Min(rate, e.caps[l]/mem[l])
				started = true
			}
		}
	}
	var hot []hotPort
	for l, off := range offered {
		if e.caps[l] <= 0 {
			continue
		}
		d := off / e.caps[l]
		if d <= 1+1e-6 {
			continue
		}
		// The queue the overload can build is the excess of the flows'
		// windows; the port's buffer absorbs it up to switch.buffer.mb.
		q := inflight[l] * (1 - 1/d)
		if o := 1 - e.portBuffer(l)/q; o > 0 {
			hot = append(hot, hotPort{l, d, o})
		}
	}
	if len(hot) == 0 {
		return nil
	}
	sort.Slice(hot, func(i, j int) bool {
		if hot[i].d != hot[j].d {
			return hot[i].d > hot[j].d
		}
		return hot[i].link < hot[j].link
	})
	ph := e.params.Physics
	lossless := kind == model.NICIB || roce.PFC
	dcqcn := kind == model.NICRoCE && roce.ECN && roce.DCQCN
	// win is how long the overload lasts once it starts (ps): DCQCN's
	// convergence, or the whole call without it.
	win := math.Inf(1)
	frac := 1.0
	if dcqcn {
		win = ph.DCQCNConvUs * 1e6
		frac = math.Min(1, win/float64(t0))
	}
	cg := &congestion{caps: append([]float64(nil), e.caps...), extraLat: map[model.LinkID]model.Time{}}
	// added is the most time any congested link adds to its own busy time,
	// for the note's share of the call.
	var added float64
	for _, h := range hot {
		name := e.LinkName(h.link)
		if lossless {
			// DCQCN's cut (dcqcn.cut) lowers what the senders offer while
			// they converge, but the port stays busy: its queue, beyond
			// its buffer and held upstream by PFC, drains through the cut.
			// Its own flows get what PFC alone gives them; what DCQCN
			// changes is how long the links that feed it stay paused.
			var paused []string
			ups := make([]model.LinkID, 0, len(up[h.link]))
			for p := range up[h.link] {
				ups = append(ups, p)
			}
			sort.Slice(ups, func(i, j int) bool { return ups[i] < ups[j] })
			for _, p := range ups {
				// Paused (1 - 1/D) of the overload time.
				f := 1 / (1 + (h.d-1)*frac*h.over)
				cg.caps[p] = math.Min(cg.caps[p], e.caps[p]*f)
				if e.caps[p] > 0 {
					added = math.Max(added, loads[p]/e.caps[p]*(1/f-1))
				}
				paused = append(paused, e.LinkName(p))
			}
			mech := "PFC pauses"
			if kind == model.NICIB {
				mech = "credit back-pressure stalls"
			}
			cg.notes = append(cg.notes, fmt.Sprintf("%s offered %.2fx its capacity: %s %d upstream link(s) (%s), head-of-line blocking every flow on them", name, h.d, mech, len(paused), strings.Join(firstN(paused, 3), ", ")))
			continue
		}
		// Lossy RoCE: while the overload lasts the port drops what it
		// cannot queue and the senders resend it; once DCQCN has converged
		// they run at their fair share without loss. While converging,
		// DCQCN's cut and linear recovery (on average half the cut) lower
		// what the senders offer to D' = D(1 - dcqcn.cut/2), never below
		// the port's capacity (the port stays busy).
		dw := h.d
		if dcqcn {
			dw = math.Max(1, h.d*(1-ph.DCQCNCut/2))
		}
		p := (1 - 1/dw) * h.over
		g := e.arqEff(p, roce)
		// The port's busy time: tp at full rate; the window's goodput g
		// carries g*win of it, the rest runs at the converged rate.
		tp := loads[h.link] / e.caps[h.link]
		f, share := windowed(g, tp, win)
		cg.caps[h.link] *= f
		added = math.Max(added, tp*(1/f-1))
		cg.extraLat[h.link] = model.Time(p * share * ph.RoCERTOUs * 1e6)
		cg.notes = append(cg.notes, fmt.Sprintf("%s offered %.2fx its capacity without PFC: drops %.2g of its packets while the overload lasts, %s recovery keeps %.3g of its rate then (%.3g over the call)", name, h.d, p, retransmitName(roce), g, f))
	}
	if dcqcn {
		cg.notes = append(cg.notes, fmt.Sprintf("DCQCN converges in %.0f us (%.0f%% of the call)", ph.DCQCNConvUs, 100*math.Min(1, win/(float64(t0)+added))))
	}
	return cg
}

// windowed is the rate factor of a link busy for t (ps) at full rate that
// runs at fraction g of its rate for the first win ps and at full rate
// after: t/(t + win(1-g)) when the work outlasts the window, g when it all
// fits in it. share is the part of the link's time inside the window.
func windowed(g, t, win float64) (f, share float64) {
	if g >= 1 || t <= 0 {
		return 1, math.Min(1, win/math.Max(t, 1))
	}
	if t <= g*win {
		return g, 1
	}
	T := t + win*(1-g)
	return t / T, win / T
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("%d more", len(s)-n))
	}
	return s
}

func retransmitName(r model.RoCEParams) string {
	if r.Retransmit == model.SelectiveRepeat {
		return "selective-repeat"
	}
	return "go-back-N"
}

// arqEff is arqEff for the cluster's NIC line rate and roce.rtt.us.
func (e *Env) arqEff(p float64, r model.RoCEParams) float64 {
	line := 50.0 // GB/s, a 400G port when the cluster has no NIC
	if n := e.Cluster.Nodes[0].NICs; len(n) > 0 {
		line = float64(e.Cluster.Topo.Elem(n[0]).NIC.Speed.LineGBps())
	}
	return arqEff(p, r, line, e.params.Physics.RoCERTTUs)
}

// apply gives a DES schedule the call's extra latencies.
func (cg *congestion) apply(s *Schedule) {
	if cg == nil || s == nil || len(cg.extraLat) == 0 {
		return
	}
	for i := range s.Len() {
		if s.shape(i).kind != OpTransfer {
			continue
		}
		var extra model.Time
		for _, l := range s.opRoute(i) {
			extra = max(extra, cg.extraLat[l])
		}
		s.addLatency(i, extra)
	}
}

// notesOf is the congestion's notes (none without congestion).
func (cg *congestion) notesOf() []string {
	if cg == nil {
		return nil
	}
	return cg.notes
}

// maxExtraLat is the largest extra latency any link carries.
func (cg *congestion) maxExtraLat() model.Time {
	var m model.Time
	if cg == nil {
		return 0
	}
	for _, v := range cg.extraLat {
		m = max(m, v)
	}
	return m
}

// capsOf is the link capacities a program is timed with.
func (e *Env) capsOf(pr *form) []float64 {
	if pr.caps != nil {
		return pr.caps
	}
	return e.caps
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// intoNIC reports whether l is a switch's cable into a NIC.
func (e *Env) intoNIC(l model.LinkID) bool {
	t := e.Cluster.Topo
	return int(l) < len(t.Links) && t.Elem(t.Links[l].To).Kind == model.KindNIC
}

// portBuffer is the buffer in bytes behind a congested port: a bundle has
// one per member link.
func (e *Env) portBuffer(l model.LinkID) float64 {
	b := e.params.Physics.SwitchBufferMB * 1e6
	if f := e.Cluster.Fabric; f != nil && int(l) >= int(f.BundleBase()) {
		if i := int(l) - int(f.BundleBase()); i < len(f.Bundles()) {
			b *= float64(max(len(f.Bundles()[i].Links), 1))
		}
	}
	return b
}

// fabricMechanism names what loads a fabric link that bounds a call: how
// many flows the routing put on it ("carries 3 ECMP flows"), or for an
// adaptive bundle how many member links spread them. It returns "" for
// links that are not in the fabric.
func (e *Env) fabricMechanism(pr *form, l model.LinkID) string {
	f := e.Cluster.Fabric
	if f == nil || e.netLinkRole(l) != 2 {
		return ""
	}
	var n int32
	for _, fc := range pr.demands {
		for _, x := range fc.route {
			if x == l {
				n += max(fc.weight, 1)
				break
			}
		}
	}
	switch {
	case int(l) >= int(f.BundleBase()):
		return fmt.Sprintf("carries %d flows spread adaptively over %d links", n, len(f.Bundles()[int(l)-int(f.BundleBase())].Links))
	case f.Plan.Routing == model.RoutingECMP:
		return fmt.Sprintf("carries %d ECMP flows", n)
	case f.Plan.Routing == model.RoutingStatic:
		return fmt.Sprintf("carries %d statically routed flows", n)
	}
	return fmt.Sprintf("carries %d flows", n)
}
