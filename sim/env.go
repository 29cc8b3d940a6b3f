package sim

import (
	"fmt"
	"strings"
	"sync"

	"github.com/collsim/collsim/model"
)

// Env is everything about one cluster that predictions of many calls share:
// the NCCL view (paths, graphs, tuning tables), the parameters, and the
// capacity of every link after efficiencies. Build it once with NewEnv and
// reuse it across sizes and collectives; its parameters are fixed when it is
// built (build a new Env for new parameters). An Env is not safe for
// concurrent use by its callers; Sweep and SweepEach run the sizes of one
// sweep concurrently themselves (sweep.go lists what the runs share).
type Env struct {
	Cluster *model.Cluster
	Res     *model.Resolution
	Tuner   *model.Tuner

	// params are read-only after NewEnv: caps and netLatUs derive from them.
	params Params
	// netLatUs is NetLatUs for the cluster's NIC kind (StackLatUs for a
	// stack that is not the kind's default), resolved once.
	netLatUs float64
	// runLat and runFloor are what the cluster's run mode adds to every
	// call's base latency and the least time of a call (runmode.go).
	runLat, runFloor model.Time
	// sym records whether node-periodic reduction is exact (see symmetric).
	sym bool

	// caps is the capacity in bytes/ps of every topology link followed by
	// collsim's virtual links (cross-socket device-to-device ceilings).
	caps []float64
	// xsock maps an SMP link to its virtual device-to-device ceiling link;
	// those links are the last ones, from xsockBase on (after the fabric's
	// bundles).
	xsock     map[model.LinkID]model.LinkID
	xsockBase model.LinkID
	// hostBase is the first of the per-GPU links of SHM traffic (see
	// shmLinks): GPU hostIdx[g] owns hostBase+4*hostIdx[g] on, in the
	// order of shmLink's kinds. Clusters without SHM have none.
	hostBase model.LinkID
	hostIdx  map[model.ElemID]int
	// names of virtual links, for reports.
	virtName []string
	// bundles keeps the channel bundles found per bundleKey (bundle.go),
	// for the sizes of a sweep and its parallel runs.
	bundles sync.Map
	// treeCache keeps the latest tree edges (Env.treeEdges).
	treeCache treeEdgeCache
}

// NewEnv resolves the cluster as NCCL would and prepares link capacities.
func NewEnv(c *model.Cluster, p Params) (*Env, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := c.Resolve()
	if err != nil {
		return nil, err
	}
	e := &Env{Cluster: c, Res: r, Tuner: r.Tuner(), params: p, sym: isSymmetric(c), xsock: map[model.LinkID]model.LinkID{}}
	if e.runLat, e.runFloor, err = runMode(c, p); err != nil {
		return nil, err
	}
	if k, err := model.ParseNICKind(c.Spec.Node.NICs.Kind); err == nil {
		st, serr := model.ResolveStack(c.Spec.Node.NICs.Stack, k)
		if c.Knobs.IBDisable && k.RDMA() {
			// NET/Socket over an RDMA port: TCP's network latency, not the
			// RDMA stack's.
			k, st, serr = model.NICTCP, model.StackSocket, nil
		}
		for i, kk := range model.NICKinds() {
			if kk == k {
				e.netLatUs = p.NetLatUs[i]
			}
		}
		if serr == nil && !st.Native() {
			e.netLatUs = p.StackLatUs[model.StackIndex(st)]
		}
	}
	t := c.Topo
	e.caps = make([]float64, len(t.Links))
	for i := range t.Links {
		l := &t.Links[i]
		e.caps[i] = float64(l.BW) * p.linkEff(c, l) * 1e-3
	}
	// Adaptive routes cross the fabric's bundles: virtual links right after
	// the topology's, each as wide as its members together.
	if f := c.Fabric; f != nil && len(f.Bundles()) > 0 {
		if int(f.BundleBase()) != len(t.Links) {
			return nil, fmt.Errorf("sim: the fabric's bundles start at link %d, the topology has %d links", f.BundleBase(), len(t.Links))
		}
		for _, b := range f.Bundles() {
			var sum float64
			for _, m := range b.Links {
				sum += e.caps[m]
			}
			e.caps = append(e.caps, sum)
			e.virtName = append(e.virtName, b.Name)
		}
	}
	e.xsockBase = model.LinkID(len(e.caps))
	for i := range t.Links {
		if t.Links[i].Kind == model.LinkSMP {
			e.xsock[model.LinkID(i)] = model.LinkID(len(e.caps))
			e.caps = append(e.caps, p.CrossSocketP2PGBps*1e-3)
			e.virtName = append(e.virtName, fmt.Sprintf("p2p %s->%s", t.Elem(t.Links[i].From).Name, t.Elem(t.Links[i].To).Name))
		}
	}
	e.hostBase = model.LinkID(len(e.caps))
	if usesSHM(c, r) {
		e.shmLinks()
	}
	return e, nil
}

// SHM's data path: the sending GPU's SMs store into a buffer in host memory
// and the receiving GPU's SMs load from it (NCCL src/transport/shm.cc: the
// sender's connection points at the receiver's host buffer), so every byte
// crosses the sender's PCIe link upwards and the receiver's downwards. How
// fast depends on whether a GPU moves host traffic one way or both ways at
// once: NCCL's maintainers state that on 2 GPUs Broadcast and Reduce are
// unidirectional while the other collectives are bidirectional, and that
// some components (CPUs in particular) handle bidirectional traffic badly
// (nccl#384: 2 GPUs on PCIe Gen3 x16 over SHM with one channel, Broadcast
// 10.3 and Reduce 9.6 GB/s, AllReduce 3.9). The same split holds with two
// channels on the 2x RTX 2080 Ti run (Broadcast and Reduce 11.1, AllReduce
// 4.0, AlltoAll 4.6 on 2 channels and 3.95 on 1): the rate is the GPU's, not
// the channel's. Each GPU of such a cluster gets four virtual links, its
// reads and writes of host memory when it moves traffic both ways and when
// it moves it one way, each a fraction (shm.eff.twoway, shm.eff.oneway) of
// its PCIe link in that direction; every channel and peer of the GPU shares
// them.
const (
	shmReadTwoWay = iota
	shmWriteTwoWay
	shmReadOneWay
	shmWriteOneWay
	shmKinds
)

// usesSHM reports whether some pair of GPUs of a node talks over SHM. The
// nodes of a cluster share one layout, so node 0 answers for all.
func usesSHM(c *model.Cluster, r *model.Resolution) bool {
	if c.NumNodes() == 0 {
		return false
	}
	gpus := c.Nodes[0].GPUs
	for _, a := range gpus {
		for _, b := range gpus {
			if a != b {
				if p := r.GPU(a, b); p != nil && p.Transport == model.TransportSHM {
					return true
				}
			}
		}
	}
	return false
}

// shmLinks adds the per-GPU SHM links (see shmReadTwoWay).
func (e *Env) shmLinks() {
	t, p := e.Cluster.Topo, e.params
	e.hostIdx = map[model.ElemID]int{}
	for i := range t.Links {
		l := &t.Links[i]
		if l.Kind != model.LinkPCIe || t.Elem(l.From).Kind != model.KindGPU {
			continue
		}
		if _, dup := e.hostIdx[l.From]; dup {
			continue
		}
		e.hostIdx[l.From] = len(e.hostIdx)
		up, down := e.caps[i], e.caps[l.Reverse]
		name := t.Elem(l.From).Name
		e.caps = append(e.caps, p.SHMTwoWayEff*down, p.SHMTwoWayEff*up, p.SHMOneWayEff*down, p.SHMOneWayEff*up)
		e.virtName = append(e.virtName,
			name+" host-memory reads, traffic both ways (SHM)", name+" host-memory writes, traffic both ways (SHM)",
			name+" host-memory reads, traffic one way (SHM)", name+" host-memory writes, traffic one way (SHM)")
	}
}

// shmLink is GPU g's SHM link of a kind, false when it has none.
func (e *Env) shmLink(g model.ElemID, kind int) (model.LinkID, bool) {
	k, ok := e.hostIdx[g]
	if !ok {
		return 0, false
	}
	return e.hostBase + model.LinkID(shmKinds*k+kind), true
}

// Params returns a copy of the parameters the Env was built with.
func (e *Env) Params() Params { return e.params }

// LinkName names a link ID for reports, virtual links included.
func (e *Env) LinkName(id model.LinkID) string {
	t := e.Cluster.Topo
	if int(id) < len(t.Links) {
		l := &t.Links[id]
		return t.Elem(l.From).Name + "->" + t.Elem(l.To).Name
	}
	return e.virtName[int(id)-len(t.Links)]
}

// Capacity returns link capacities in bytes/ps (virtual links included).
func (e *Env) Capacity() []float64 { return e.caps }

// routeClass is the latency class of a route: NVLink only, PCIe or host
// memory, or network.
func (e *Env) routeClass(route []model.LinkID) model.LatClass {
	t := e.Cluster.Topo
	class := model.LatNVLink
	for _, l := range route {
		if int(l) >= len(t.Links) {
			if l >= e.xsockBase {
				// A virtual cross-socket P2P ceiling (see NewEnv): the
				// data goes device to device through the CPUs, a
				// PCIe-class path.
				class = model.LatPCI
				continue
			}
			return model.LatNet // a fabric bundle
		}
		switch t.Links[l].Kind {
		case model.LinkNet:
			return model.LatNet
		case model.LinkPCIe, model.LinkMem, model.LinkSMP:
			class = model.LatPCI
		}
	}
	return class
}

// decorate adds collsim's modelled ceilings to a route: device-to-device
// traffic across a socket boundary also crosses the virtual cross-socket
// link, an SHM transfer crosses its GPUs' SHM links (shmReadTwoWay), data a
// GPU reads out of host memory from a NIC is capped per channel, and so is
// traffic over NET/Socket. It returns the route to use and the per-member
// ceiling the route implies (rate 0 = none). Both GPUs of an SHM transfer
// are taken to move traffic both ways; decorateWays says otherwise.
func (e *Env) decorate(route []model.LinkID) ([]model.LinkID, ceiling) {
	return e.decorateWays(route, false, false)
}

// decorateWays is decorate for a transfer whose sending GPU only sends
// (srcOneWay) or whose receiving GPU only receives (dstOneWay) in the call:
// the ends of a Broadcast or Reduce chain.
func (e *Env) decorateWays(route []model.LinkID, srcOneWay, dstOneWay bool) ([]model.LinkID, ceiling) {
	t := e.Cluster.Topo
	staged, hostRead, socket, netHop := false, false, false, false
	for i, l := range route {
		if int(l) >= len(t.Links) {
			continue // a fabric bundle
		}
		lk := &t.Links[l]
		switch lk.Kind {
		case model.LinkNet:
			netHop = true
			for _, x := range []model.ElemID{lk.From, lk.To} {
				if el := t.Elem(x); el.Kind == model.KindNIC && (!el.NIC.Stack.GPUDirect() || e.Cluster.Knobs.IBDisable) {
					socket = true
				}
			}
		case model.LinkMem:
			staged = true
			if t.Elem(lk.From).Kind != model.KindHostMem {
				continue
			}
			// Read out of host memory: by a GPU when the route ends at one
			// without reaching a NIC first.
			for _, m := range route[i+1:] {
				if int(m) >= len(t.Links) {
					break
				}
				to := t.Elem(t.Links[m].To).Kind
				if to == model.KindNIC {
					break
				}
				if to == model.KindGPU {
					hostRead = true
					break
				}
			}
		}
	}
	// Routes are shared between ops, so the ceilings go on a copy.
	out := route
	if !staged {
		var extra []model.LinkID
		for _, l := range route {
			if v, ok := e.xsock[l]; ok {
				extra = append(extra, v)
			}
		}
		if len(extra) > 0 {
			out = append(append(make([]model.LinkID, 0, len(route)+len(extra)), route...), extra...)
		}
	}
	var ceil ceiling
	if staged && !netHop {
		// SHM: GPU to GPU through host memory, bound by the GPUs' SHM
		// links, not per channel.
		if shm := e.shmRoute(route, srcOneWay, dstOneWay); len(shm) > 0 {
			out = append(append(make([]model.LinkID, 0, len(route)+len(shm)), route...), shm...)
		}
		hostRead = false
	}
	if hostRead {
		ceil = ceiling{rate: e.params.HostReadGBps * 1e-3, kind: ceilHostRead}
	}
	if socket {
		ceil = minCeiling(ceil, ceiling{rate: e.params.SocketGBps * 1e-3, kind: ceilSocket})
	}
	return out, ceil
}

// shmRoute returns the SHM links an SHM route crosses: the sending GPU's
// host-memory writes and the receiving GPU's reads, each for traffic one way
// or both ways.
func (e *Env) shmRoute(route []model.LinkID, srcOneWay, dstOneWay bool) []model.LinkID {
	t := e.Cluster.Topo
	if e.hostIdx == nil || len(route) == 0 || int(route[0]) >= len(t.Links) || int(route[len(route)-1]) >= len(t.Links) {
		return nil
	}
	var out []model.LinkID
	src, dst := t.Links[route[0]].From, t.Links[route[len(route)-1]].To
	wk, rk := shmWriteTwoWay, shmReadTwoWay
	if srcOneWay {
		wk = shmWriteOneWay
	}
	if dstOneWay {
		rk = shmReadOneWay
	}
	if l, ok := e.shmLink(src, wk); ok {
		out = append(out, l)
	}
	if l, ok := e.shmLink(dst, rk); ok {
		out = append(out, l)
	}
	return out
}

// ceilingKind names the per-member ceiling that bounds a transfer, so a
// report can say which one set a time without comparing rates.
type ceilingKind uint8

const (
	ceilNone         ceilingKind = iota
	ceilHostRead                 // GPU reads out of host memory from a NIC (hostread.gbps)
	ceilSocket                   // NET/Socket, one TCP stream per channel (socket.gbps)
	ceilChannel                  // one CTA's copy rate (chan.cap.*)
	ceilPeerChannels             // the p2p channels of one peer pair (p2p.chan.share)
	ceilNetChannel               // one channel's network connection (net.chan.gbps)
	ceilNVLSReduce               // the NVSwitch's in-switch reduction (nvls.reduce.*)
	ceilNVLSWarps                // an NVLS CTA's scatter or gather warps (nvls.warp.gbps.*)
)

// ceiling is a per-member rate cap in bytes/ps (0 = none) and what it is.
type ceiling struct {
	rate float64
	kind ceilingKind
}

// minCeiling is the tighter of two ceilings, where rate 0 means none; on a
// tie the first is kept.
func minCeiling(a, b ceiling) ceiling {
	switch {
	case a.rate == 0:
		return b
	case b.rate == 0:
		return a
	case b.rate < a.rate:
		return b
	}
	return a
}

// minRate is the tighter of two rate caps, where 0 means none
// (minCeiling's rule).
func minRate(a, b float64) float64 {
	return minCeiling(ceiling{rate: a}, ceiling{rate: b}).rate
}

// scaled is c with its rate times k (a per-payload ceiling on a demand
// that carries k times the payload); no ceiling stays none.
func (c ceiling) scaled(k float64) ceiling {
	c.rate *= k
	return c
}

// capLabel explains the ceiling that bounds a call, for bottleneck reports.
func (e *Env) capLabel(c ceiling, p model.Proto) string {
	switch c.kind {
	case ceilHostRead:
		return fmt.Sprintf("per-channel host-memory read ceiling (%.3g GB/s per channel: NET without GPUDirect RDMA)", e.params.HostReadGBps)
	case ceilSocket:
		return fmt.Sprintf("per-channel NET/Socket ceiling (%.3g GB/s per TCP stream)", e.params.SocketGBps)
	case ceilChannel:
		return fmt.Sprintf("per-channel copy ceiling of one CTA (%.3g GB/s %s)", c.rate*1e3*model.ProtoPayload(p), p)
	case ceilPeerChannels:
		return fmt.Sprintf("p2p channels of one peer operation (%.3g GB/s in all)", c.rate*1e3)
	case ceilNVLSReduce:
		return "the NVSwitch's in-switch reduction (nvls.reduce.*)"
	case ceilNVLSWarps:
		return "the scatter or gather warps of each NVLS CTA (nvls.warp.gbps.*)"
	case ceilNetChannel:
		return fmt.Sprintf("network connections of one peer operation (%.3g GB/s per channel, net.chan.gbps)", e.params.NetChanGBps)
	}
	return fmt.Sprintf("per-channel ceiling (%.3g GB/s)", c.rate*1e3)
}

// channelCap returns the per-channel wire-rate ceiling in bytes/ps.
func (e *Env) channelCap(p model.Proto) float64 {
	arch := model.ArchIndex(e.Cluster.GPUModel().SM)
	return e.params.ChannelCapGBps[p][arch] / model.ProtoPayload(p) * 1e-3
}

// channelCeiling is channelCap tagged as the CTA ceiling.
func (e *Env) channelCeiling(p model.Proto) ceiling {
	return ceiling{rate: e.channelCap(p), kind: ceilChannel}
}

// stepLat returns the per-step latency of a route class for a protocol.
func (e *Env) stepLat(class model.LatClass, p model.Proto) model.Time {
	us := e.params.StepLatUs[class][p]
	if class == model.LatNet {
		us += e.netLatUs
	}
	return model.Micros(us)
}

// netRoute is the route of a network hop from GPU x (sending through NIC
// index outNIC of its node) to GPU a (receiving through NIC inNIC of its
// node), across the fabric.
func (e *Env) netRoute(x model.ElemID, outNIC int, a model.ElemID, inNIC int) ([]model.LinkID, error) {
	return e.netRouteFlow(x, outNIC, a, inNIC, 0, 0)
}

// netRouteFlow is netRoute for the flow of one runtime channel and QP
// (ECMP hashes each on its own; physics_routes.go).
func (e *Env) netRouteFlow(x model.ElemID, outNIC int, a model.ElemID, inNIC int, channel, qp int) ([]model.LinkID, error) {
	r, t := e.Res, e.Cluster.Topo
	nx, na := t.Elem(x).Node, t.Elem(a).Node
	if outNIC < 0 || outNIC >= len(r.NICUsable[nx]) || inNIC < 0 || inNIC >= len(r.NICUsable[na]) {
		return nil, fmt.Errorf("sim: no NIC for the hop %s -> %s", t.Elem(x).Name, t.Elem(a).Name)
	}
	nicOut, nicIn := r.NICUsable[nx][outNIC], r.NICUsable[na][inNIC]
	send, recv := r.NetTo(x, nicOut), r.NetTo(a, nicIn)
	if send == nil || recv == nil {
		return nil, fmt.Errorf("sim: %s cannot reach its NIC", t.Elem(x).Name)
	}
	fab, err := e.Cluster.Fabric.Route(model.FlowKey{SrcNIC: nicOut, DstNIC: nicIn, SrcGPU: x, DstGPU: a, Channel: channel, QP: qp})
	if err != nil {
		return nil, err
	}
	route := make([]model.LinkID, 0, len(send.Send)+len(fab)+len(recv.Recv))
	route = append(route, send.Send...)
	route = append(route, fab...)
	route = append(route, recv.Recv...)
	return route, nil
}

// withFabricNotes prefixes note with the fabric inputs the simulation does
// not use yet (model.Fabric.Notes).
func (e *Env) withFabricNotes(note string) string {
	out := e.Cluster.Fabric.Notes()
	if note != "" {
		out = append(out, note)
	}
	return strings.Join(out, "; ")
}

// symmetric reports whether node-periodic reduction is exact: more than one
// node, every node identical (always, in collsim clusters) and a fabric
// that treats every node alike (model.Fabric.Symmetric: single switches, no
// degraded link).
func (e *Env) symmetric() bool { return e.sym }

// isSymmetric decides symmetric once, in NewEnv. NICs of several ports
// switch it off: a connection's QPs take one port each (Env.qps), and the
// reduction's hop that wraps onto node 0 carries a single route.
func isSymmetric(c *model.Cluster) bool {
	return c.NumNodes() >= 2 && c.Fabric.Symmetric() && c.Spec.Node.NICs.Ports <= 1
}

// Symmetric reports whether the DES may simulate one node of the cluster
// and have the others follow by symmetry (see isSymmetric). Request.Full
// switches the reduction off; TestSymmetryReductionExact holds the two
// equal on every fabric where this is true.
func (e *Env) Symmetric() bool { return e.sym }
