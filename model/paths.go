package model

import (
	"fmt"
	"math"
	"sort"
)

// Transport is how NCCL connects two ranks (nccl-facts §3.4: the first of
// P2P, SHM, NET that can connect wins).
type Transport uint8

// Transports.
const (
	TransportP2P Transport = iota
	TransportSHM
	TransportNET
)

var transportNames = [...]string{"P2P", "SHM", "NET"}

// String returns NCCL's name of the transport.
func (t Transport) String() string {
	if int(t) < len(transportNames) {
		return transportNames[t]
	}
	return fmt.Sprintf("transport(%d)", t)
}

// GPUPath is the resolved connection between two GPUs of one node.
type GPUPath struct {
	// Type is the NCCL path type of the direct path (NVL, NVB, PIX, ... SYS).
	Type PathType
	// NCCLBW is the bandwidth NCCL's topology assigns to the path (minimum of
	// its links' NCCL bandwidths).
	NCCLBW GBps
	// Transport is what NCCL uses between the two GPUs.
	Transport Transport
	// Route is the sequence of directed links the data crosses: NVLink or
	// PCIe for P2P, through host memory for SHM, through a NIC for NET.
	Route []LinkID
	// Via is the GPU an NVB path goes through, None otherwise.
	Via ElemID
	// P2PRead is true when NCCL uses P2P read mode (NVLink pairs of SM80 GPUs).
	P2PRead bool
	// Reason explains a fallback (why not P2P), empty otherwise.
	Reason string
}

// NetPath is how a GPU reaches one NIC of its node.
type NetPath struct {
	NIC ElemID
	// Type is the path type GPU->NIC (PIX, PXB, PHB, SYS, or PXN when
	// sending through an NVLink peer).
	Type PathType
	// DirectType is the type of the GPU's own PCIe path to the NIC.
	DirectType PathType
	// NCCLBW is NCCL's bandwidth for the path.
	NCCLBW GBps
	// GDR is true when GPUDirect RDMA is used; false means data is staged in
	// host memory.
	GDR bool
	// Socket is true when NCCL uses NET/Socket (IB disabled or a TCP NIC).
	Socket bool
	// Via is the PXN peer GPU for sends, None when the GPU sends itself.
	Via ElemID
	// Send is the route GPU -> NIC (over NVLink to the PXN peer first, or
	// through host memory without GDR); Recv is NIC -> GPU.
	Send, Recv []LinkID
	// Reason explains why GDR is off, empty otherwise.
	Reason string
	// SendGDR is true when the NIC reads the data it sends straight out of
	// GPU memory (a GPUDirect RDMA read); false with GDR on means NCCL
	// stages sends through host memory while receives are written into
	// the GPU (gdrRead). SendReason says why, empty otherwise.
	SendGDR    bool
	SendReason string
}

// Resolution is the NCCL-faithful view of a cluster: path types, P2P/SHM
// decisions, NIC paths, GDR and PXN for every GPU.
type Resolution struct {
	c *Cluster
	// P2PLevel and GDRLevel are the effective levels after defaults.
	P2PLevel, GDRLevel PathType
	// NICUsable lists, per node, the NICs NCCL would use (after NCCL_IB_HCA).
	NICUsable [][]ElemID
	// Net is the network NCCL uses between nodes: "IB", "Socket" or a plugin.
	Net string

	parent     map[ElemID]ElemID
	parentLink map[ElemID]LinkID
	gpuLocal   map[ElemID]int // GPU element -> local index
	pairs      map[[2]ElemID]*GPUPath
	nets       map[[2]ElemID]*NetPath
	done       []bool // node resolved
}

// resolveNode computes the GPU pairs and NIC paths of one node. Nodes
// other than 0 are built from the same spec into equal contiguous blocks of
// elements and links, so their paths are node 0's shifted by the blocks'
// offsets (exact; TestResolveTranslation compares with a direct resolve).
func (r *Resolution) resolveNode(n int) error {
	if r.done[n] {
		return nil
	}
	if n > 0 && r.done[0] && r.sameShape(n) {
		r.translate(n)
		r.done[n] = true
		return nil
	}
	return r.resolveDirect(n)
}

func (r *Resolution) resolveDirect(n int) error {
	ne := r.c.Nodes[n]
	for _, a := range ne.GPUs {
		for _, nic := range r.NICUsable[n] {
			r.nets[[2]ElemID{a, nic}] = r.netPath(a, nic, ne.GPUs)
		}
	}
	for _, a := range ne.GPUs {
		for _, b := range ne.GPUs {
			if a == b {
				continue
			}
			p, err := r.gpuPath(n, a, b)
			if err != nil {
				return err
			}
			r.pairs[[2]ElemID{a, b}] = p
		}
	}
	r.done[n] = true
	return nil
}

// sameShape reports whether node n's blocks have node 0's sizes and usable NICs.
func (r *Resolution) sameShape(n int) bool {
	a, b := r.c.Nodes[0], r.c.Nodes[n]
	if a.NumElems != b.NumElems || a.NumLinks != b.NumLinks || len(r.NICUsable[0]) != len(r.NICUsable[n]) {
		return false
	}
	for i := range r.NICUsable[0] {
		if r.NICUsable[n][i]-b.FirstElem != r.NICUsable[0][i]-a.FirstElem {
			return false
		}
	}
	return true
}

// translate copies node 0's resolution to node n, shifting IDs.
func (r *Resolution) translate(n int) {
	a, b := r.c.Nodes[0], r.c.Nodes[n]
	de := b.FirstElem - a.FirstElem
	dl := b.FirstLink - a.FirstLink
	elem := func(e ElemID) ElemID {
		if e == None {
			return None
		}
		return e + de
	}
	route := func(rt []LinkID) []LinkID {
		out := make([]LinkID, len(rt))
		for i, l := range rt {
			out[i] = l + dl
		}
		return out
	}
	for _, g := range a.GPUs {
		for _, nic := range r.NICUsable[0] {
			p := *r.nets[[2]ElemID{g, nic}]
			p.NIC, p.Via = elem(p.NIC), elem(p.Via)
			p.Send, p.Recv = route(p.Send), route(p.Recv)
			r.nets[[2]ElemID{g + de, nic + de}] = &p
		}
		for _, h := range a.GPUs {
			if g == h {
				continue
			}
			p := *r.pairs[[2]ElemID{g, h}]
			p.Via = elem(p.Via)
			p.Route = route(p.Route)
			r.pairs[[2]ElemID{g + de, h + de}] = &p
		}
	}
}

// ensure resolves the node of element e when it has not been yet. Nodes
// are identical, so an error here would already have stopped Resolve on
// node 0; it cannot happen and is dropped.
func (r *Resolution) ensure(e ElemID) {
	if n := r.c.Topo.Elem(e).Node; n >= 0 && n < len(r.done) && !r.done[n] {
		_ = r.resolveNode(n)
	}
}

// Resolve computes the NCCL view of the cluster. It fails when the
// configuration is impossible for NCCL (for example GPUs of one node that
// can use neither P2P, SHM nor a NIC).
func (c *Cluster) Resolve() (*Resolution, error) {
	r := &Resolution{c: c, parent: map[ElemID]ElemID{}, parentLink: map[ElemID]LinkID{},
		gpuLocal: map[ElemID]int{}, pairs: map[[2]ElemID]*GPUPath{}, nets: map[[2]ElemID]*NetPath{}}
	r.P2PLevel, r.GDRLevel = r.defaultLevels()
	r.buildTree()
	for _, ne := range c.Nodes {
		for i, g := range ne.GPUs {
			r.gpuLocal[g] = i
		}
	}
	r.Net = "IB"
	for n, ne := range c.Nodes {
		var usable []ElemID
		for _, nic := range ne.NICs {
			info := c.Topo.Elem(nic).NIC
			if info.Kind.RDMA() && !c.Knobs.IBDisable && !c.Knobs.IBHCA.Allows(info.Device) {
				continue
			}
			usable = append(usable, nic)
		}
		if len(ne.NICs) > 0 && len(usable) == 0 {
			return nil, fmt.Errorf("model: node %d: NCCL_IB_HCA=%s matches none of the NICs", n, c.Knobs.Raw["NCCL_IB_HCA"])
		}
		r.NICUsable = append(r.NICUsable, usable)
	}
	if len(c.Nodes[0].NICs) > 0 {
		info := c.Topo.Elem(c.Nodes[0].NICs[0]).NIC
		switch {
		case c.Knobs.IBDisable:
			r.Net = "Socket"
		case info.Stack != "":
			r.Net = info.Stack.NCCLNet()
		}
	}
	// Every node is built from the same spec, so node 0 decides whether the
	// configuration is possible; other nodes are resolved when first used.
	r.done = make([]bool, len(c.Nodes))
	if err := r.resolveNode(0); err != nil {
		return nil, err
	}
	return r, nil
}

// Cluster returns the cluster the resolution belongs to.
func (r *Resolution) Cluster() *Cluster { return r.c }

// defaultLevels returns NCCL's P2P and GDR levels after the knobs
// (nccl-facts §3.4, §3.5): P2P default PXB since 2.23 (SYS for AMD with <= 2
// GPUs); up to 2.22 SYS except Intel/ARM which get PXB. GDR default PXB
// (P2C since 2.27, which equals PXB on machines without C2C).
func (r *Resolution) defaultLevels() (p2p, gdr PathType) {
	k, v := r.c.Knobs, r.c.Version
	vendor := CPUIntel
	if cpu := r.c.Topo.Elem(r.c.Nodes[0].CPUs[0]).CPU; cpu != nil {
		vendor = cpu.Vendor
	}
	p2p = PathPXB
	if v.AtLeast(23) {
		if vendor == CPUAMD && r.c.GPUsPerNode() <= 2 {
			p2p = PathSYS
		}
	} else if vendor != CPUIntel && vendor != CPUArm {
		p2p = PathSYS
	}
	if k.P2PLevelSet {
		p2p = k.P2PLevel
	}
	if k.P2PDisable {
		p2p = PathLOC
	}
	gdr = PathPXB
	if v.AtLeast(27) {
		gdr = PathP2C
	}
	if k.NetGDRLevelSet {
		gdr = k.NetGDRLevel
	}
	return p2p, gdr
}

// buildTree records each PCIe-tree element's parent by walking down from
// every CPU socket.
func (r *Resolution) buildTree() {
	t := r.c.Topo
	for i := range t.Elements {
		if t.Elements[i].Kind != KindCPU {
			continue
		}
		queue := []ElemID{ElemID(i)}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			for _, l := range t.Out[x] {
				lk := &t.Links[l]
				if lk.Kind != LinkCPU && lk.Kind != LinkPCIe {
					continue
				}
				y := lk.To
				if _, seen := r.parent[y]; seen || t.Elements[y].Kind == KindCPU {
					continue
				}
				if x != ElemID(i) || t.Elements[y].Kind == KindHostBridge {
					r.parent[y] = x
					r.parentLink[y] = lk.Reverse
					queue = append(queue, y)
				}
			}
		}
	}
}

// upChain returns the elements from e up to its CPU socket, inclusive, and
// the links crossed going up.
func (r *Resolution) upChain(e ElemID) ([]ElemID, []LinkID) {
	chain := []ElemID{e}
	var links []LinkID
	for {
		p, ok := r.parent[chain[len(chain)-1]]
		if !ok {
			return chain, links
		}
		links = append(links, r.parentLink[chain[len(chain)-1]])
		chain = append(chain, p)
	}
}

// PCIePath returns the PCIe route from a to b inside one node with its NCCL
// path type (PIX, PXB, PHB or SYS; NODE in nvidia-smi terms is PHB here) and
// NVIDIA's finer name (PIX, PXB, PHB, NODE, SYS) for topo -m printing.
func (r *Resolution) PCIePath(a, b ElemID) (route []LinkID, typ PathType, smiName string, err error) {
	t := r.c.Topo
	ca, la := r.upChain(a)
	cb, lb := r.upChain(b)
	topA, topB := ca[len(ca)-1], cb[len(cb)-1]
	if t.Elem(topA).Kind != KindCPU || t.Elem(topB).Kind != KindCPU {
		return nil, PathDIS, "", fmt.Errorf("model: %s or %s is not under a CPU socket: %w", t.Elem(a).Name, t.Elem(b).Name, ErrNoPath)
	}
	if topA != topB {
		smp, ok := t.LinkBetween(topA, topB)
		if !ok {
			return nil, PathDIS, "", fmt.Errorf("model: no SMP link between %s and %s: %w", t.Elem(topA).Name, t.Elem(topB).Name, ErrNoPath)
		}
		route = append(route, la...)
		route = append(route, smp)
		route = append(route, reversed(t, lb)...)
		return route, PathSYS, "SYS", nil
	}
	// Lowest common ancestor.
	pos := make(map[ElemID]int, len(ca))
	for i, e := range ca {
		pos[e] = i
	}
	j := 0
	for ; j < len(cb); j++ {
		if _, ok := pos[cb[j]]; ok {
			break
		}
	}
	i := pos[cb[j]]
	lca := ca[i]
	route = append(route, la[:i]...)
	route = append(route, reversed(t, lb[:j])...)
	switch t.Elem(lca).Kind {
	case KindPCIeSwitch:
		if i == 1 && j == 1 {
			return route, PathPIX, "PIX", nil
		}
		return route, PathPXB, "PXB", nil
	case KindHostBridge:
		return route, PathPHB, "PHB", nil
	}
	return route, PathPHB, "NODE", nil
}

// reversed returns the reverse directions of links, in reverse order.
func reversed(t *Topology, links []LinkID) []LinkID {
	out := make([]LinkID, len(links))
	for i, l := range links {
		out[len(links)-1-i] = t.Links[l].Reverse
	}
	return out
}

// hostRoute returns the route from element e up to its socket's host memory
// (write) and the route back down (read), plus the socket's CPU.
func (r *Resolution) hostRoute(e ElemID) (up, down []LinkID, cpu ElemID) {
	t := r.c.Topo
	chain, links := r.upChain(e)
	cpu = chain[len(chain)-1]
	var mem LinkID = -1
	for _, l := range t.Out[cpu] {
		if t.Links[l].Kind == LinkMem {
			mem = l
		}
	}
	up = append(append([]LinkID(nil), links...), mem)
	down = append([]LinkID{t.Links[mem].Reverse}, reversed(t, links)...)
	return up, down, cpu
}

func (r *Resolution) minNCCLBW(route []LinkID) GBps {
	bw := GBps(math.Inf(1))
	for _, l := range route {
		lk := &r.c.Topo.Links[l]
		if lk.Kind == LinkMem {
			continue
		}
		bw = min(bw, lk.NCCLBW)
	}
	if math.IsInf(float64(bw), 1) {
		return localBW
	}
	return bw
}

// nvlinkRoute returns the NVLink route from GPU a to GPU b: a direct link,
// through the node's NVSwitch, or (unless NCCL_NVB_DISABLE) through one
// intermediate GPU. ok is false when there is no NVLink path.
func (r *Resolution) nvlinkRoute(a, b ElemID, gpus []ElemID) (route []LinkID, typ PathType, via ElemID, ok bool) {
	t := r.c.Topo
	if l, found := t.LinkBetween(a, b); found && t.Links[l].Kind == LinkNVLink {
		return []LinkID{l}, PathNVL, None, true
	}
	for _, l := range t.Out[a] {
		lk := &t.Links[l]
		if lk.Kind == LinkNVLink && t.Elem(lk.To).Kind == KindNVSwitch {
			if l2, found := t.LinkBetween(lk.To, b); found {
				return []LinkID{l, l2}, PathNVL, None, true
			}
		}
	}
	if r.c.Knobs.NVBDisable {
		return nil, PathDIS, None, false
	}
	best := GBps(0)
	for _, c := range gpus {
		if c == a || c == b {
			continue
		}
		l1, ok1 := t.LinkBetween(a, c)
		l2, ok2 := t.LinkBetween(c, b)
		if !ok1 || !ok2 || t.Links[l1].Kind != LinkNVLink || t.Links[l2].Kind != LinkNVLink {
			continue
		}
		if bw := min(t.Links[l1].NCCLBW, t.Links[l2].NCCLBW); bw > best {
			best, route, via = bw, []LinkID{l1, l2}, c
		}
	}
	if route == nil {
		return nil, PathDIS, None, false
	}
	return route, PathNVB, via, true
}

func (r *Resolution) gpuPath(node int, a, b ElemID) (*GPUPath, error) {
	t := r.c.Topo
	gpus := r.c.Nodes[node].GPUs
	p := &GPUPath{Via: None}
	gm := t.Elem(a).GPU
	if route, typ, via, ok := r.nvlinkRoute(a, b, gpus); ok {
		p.Type, p.Route, p.Via, p.NCCLBW = typ, route, via, r.minNCCLBW(route)
	} else {
		route, typ, _, err := r.PCIePath(a, b)
		if err != nil {
			return nil, err
		}
		p.Type, p.Route, p.NCCLBW = typ, route, r.minNCCLBW(route)
	}
	nvl := p.Type == PathNVL || p.Type == PathNVB
	switch {
	case r.c.Knobs.P2PDisable:
		p.Reason = "NCCL_P2P_DISABLE=1"
	case p.Type > r.P2PLevel:
		p.Reason = fmt.Sprintf("path %s is farther than the P2P level %s", p.Type, r.P2PLevel)
	case !nvl && (gm.NoPCIeP2P || t.Elem(b).GPU.NoPCIeP2P):
		p.Reason = fmt.Sprintf("%s does not support P2P over PCIe", gm.Name)
	default:
		p.Transport = TransportP2P
		p.P2PRead = nvl && gm.SM == 80
		return p, nil
	}
	// P2P refused: SHM through host memory, unless disabled or a NIC is faster.
	upA, _, cpuA := r.hostRoute(a)
	_, downB, cpuB := r.hostRoute(b)
	shm := append([]LinkID(nil), upA...)
	if cpuA != cpuB {
		smp, ok := t.LinkBetween(cpuA, cpuB)
		if !ok {
			return nil, fmt.Errorf("model: %s and %s share no host path for SHM: %w", t.Elem(a).Name, t.Elem(b).Name, ErrNoPath)
		}
		shm = append(shm, t.Links[upA[len(upA)-1]].Reverse, smp)
		// Staging happens in the sender's memory; the reader crosses the SMP link.
		downB = downB[1:]
		shm = append(shm, downB...)
	} else {
		shm = append(shm, downB...)
	}
	shmBW := r.minNCCLBW(shm)
	netFaster, netRoute := r.intraNodeNet(node, a, b, shmBW)
	if !r.c.Knobs.SHMDisable && !netFaster {
		p.Transport, p.Route, p.NCCLBW = TransportSHM, shm, shmBW
		return p, nil
	}
	if netRoute == nil || r.c.Knobs.NetDisableIntra {
		return nil, fmt.Errorf("model: %s -> %s: P2P refused (%s) and SHM disabled, and no NIC can connect them", t.Elem(a).Name, t.Elem(b).Name, p.Reason)
	}
	p.Transport, p.Route = TransportNET, netRoute
	if r.c.Knobs.SHMDisable {
		p.Reason += "; NCCL_SHM_DISABLE=1"
	} else {
		p.Reason += "; a NIC path is faster than host memory"
	}
	return p, nil
}

// intraNodeNet reports whether NCCL would prefer the network inside a node
// (both GPUs reach a NIC at <= PXB with more bandwidth than shmBW,
// ncclTopoCheckNet) and returns the loopback route through the best NIC.
func (r *Resolution) intraNodeNet(node int, a, b ElemID, shmBW GBps) (bool, []LinkID) {
	var bestA, bestB *NetPath
	for _, nic := range r.NICUsable[node] {
		pa, pb := r.nets[[2]ElemID{a, nic}], r.nets[[2]ElemID{b, nic}]
		if pa == nil || pb == nil {
			continue
		}
		if bestA == nil || pa.DirectType < bestA.DirectType {
			bestA, bestB = pa, pb
		}
	}
	if bestA == nil {
		return false, nil
	}
	route := append(append([]LinkID(nil), bestA.Send...), bestB.Recv...)
	faster := bestA.DirectType <= PathPXB && bestB.DirectType <= PathPXB && min(bestA.NCCLBW, bestB.NCCLBW) > shmBW
	return faster, route
}

// netPath resolves how GPU g reaches NIC nic: the direct PCIe path, PXN
// through an NVLink peer, GDR or host staging, Socket or RDMA.
func (r *Resolution) netPath(g, nic ElemID, gpus []ElemID) *NetPath {
	t := r.c.Topo
	info := t.Elem(nic).NIC
	route, typ, _, err := r.PCIePath(g, nic)
	if err != nil {
		route, typ = nil, PathDIS
	}
	np := &NetPath{NIC: nic, Type: typ, DirectType: typ, NCCLBW: r.minNCCLBW(route), Via: None}
	np.Socket = r.c.Knobs.IBDisable || !info.Stack.GPUDirect()
	gdrCapable := func(gpu ElemID) bool { return t.Elem(gpu).GDR && t.Elem(nic).GDR && !np.Socket }
	// PXN: send through an NVLink peer that sits close to the NIC (nccl-facts §3.6).
	if !r.c.Knobs.PXNDisable && !np.Socket && typ > PathPXB {
		var bestPeer ElemID = None
		var bestRoute []LinkID
		var bestBW GBps
		for _, p := range gpus {
			if p == g {
				continue
			}
			nvr, ntyp, _, ok := r.nvlinkRoute(g, p, gpus)
			if !ok || ntyp != PathNVL {
				continue
			}
			pr, ptyp, _, err := r.PCIePath(p, nic)
			if err != nil || ptyp > PathPXB || !gdrCapable(p) || ptyp > r.GDRLevel {
				continue
			}
			if bw := r.minNCCLBW(pr); bestPeer == None || bw > bestBW {
				bestPeer, bestBW, bestRoute = p, bw, append(append([]LinkID(nil), nvr...), pr...)
			}
		}
		if bestPeer != None {
			// The peer has an NVLink peer, g, so NCCL lets its NIC read
			// its memory (gdrRead).
			np.Via, np.Type, np.GDR, np.SendGDR = bestPeer, PathPXN, true, true
			np.Send = bestRoute
			np.NCCLBW = r.minNCCLBW(bestRoute)
			np.Recv = r.recvRoute(g, nic, route, typ)
			return np
		}
	}
	switch {
	case np.Socket:
		np.Reason = "NET/Socket never uses GPUDirect RDMA"
	case !t.Elem(g).GDR && t.Elem(g).GPU != nil && t.Elem(g).GPU.NoGDR:
		np.Reason = fmt.Sprintf("%s is a GeForce part: no GPUDirect RDMA (Tesla and Quadro only)", t.Elem(g).GPU.Name)
	case !t.Elem(g).GDR:
		np.Reason = "the GPU driver has no GPUDirect RDMA (nvidia-peermem / dma-buf missing)"
	case !t.Elem(nic).GDR:
		np.Reason = fmt.Sprintf("%s does not support GPUDirect RDMA", info.Device)
	case typ > r.GDRLevel:
		np.Reason = fmt.Sprintf("GPU-NIC path %s is farther than NCCL_NET_GDR_LEVEL %s", typ, r.GDRLevel)
	default:
		np.GDR = true
	}
	if np.GDR {
		np.Send = route
		np.Recv = reversed(t, route)
		if np.SendGDR = r.gdrRead(g, gpus); !np.SendGDR {
			np.Send, _ = r.stagedRoutes(g, nic)
			np.SendReason = gdrReadReason
		}
		return np
	}
	np.Send, np.Recv = r.stagedRoutes(g, nic)
	return np
}

// gdrRead says whether NCCL lets a NIC read GPU g's memory for the data it
// sends (paths.cc ncclTopoCheckGdr, its read case): NCCL_NET_GDR_READ=1
// always, 0 never; by default, from 2.19, on Ampere and later GPUs, and
// otherwise only when g has an NVLink peer or is its node's only GPU ("to
// keep things local" when other PCI flows compete; every release up to
// 2.18 and pre-Ampere GPUs since). Without it NCCL stages sends through
// host memory and still receives with GPUDirect RDMA.
func (r *Resolution) gdrRead(g ElemID, gpus []ElemID) bool {
	switch r.c.Knobs.NetGDRRead {
	case 0:
		return false
	case 1:
		return true
	}
	if r.c.Version.AtLeast(19) && r.c.GPUModel().SM >= 80 {
		return true
	}
	if len(gpus) <= 1 {
		return true
	}
	for _, p := range gpus {
		if p == g {
			continue
		}
		if _, typ, _, ok := r.nvlinkRoute(g, p, gpus); ok && typ == PathNVL {
			return true
		}
	}
	return false
}

// gdrReadReason is SendReason when gdrRead is false.
const gdrReadReason = "NCCL lets the NIC read GPU memory for sends only with an NVLink peer (up to 2.18, and for pre-Ampere GPUs since) or NCCL_NET_GDR_READ=1: sends are staged through host memory, receives use GPUDirect RDMA"

func (r *Resolution) recvRoute(g, nic ElemID, route []LinkID, typ PathType) []LinkID {
	t := r.c.Topo
	if typ <= r.GDRLevel && t.Elem(g).GDR && t.Elem(nic).GDR {
		return reversed(t, route)
	}
	_, recv := r.stagedRoutes(g, nic)
	return recv
}

// stagedRoutes returns the routes of a NIC transfer staged in host memory
// (no GDR): the GPU writes into host memory of its socket and the NIC reads
// from there (send), and the reverse (receive).
func (r *Resolution) stagedRoutes(g, nic ElemID) (send, recv []LinkID) {
	t := r.c.Topo
	upG, downG, cpuG := r.hostRoute(g)
	chainN, linksN := r.upChain(nic)
	cpuN := chainN[len(chainN)-1]
	mem := upG[len(upG)-1]
	send = append(send, upG...)
	send = append(send, t.Links[mem].Reverse)
	if cpuG != cpuN {
		if smp, ok := t.LinkBetween(cpuG, cpuN); ok {
			send = append(send, smp)
		}
	}
	send = append(send, reversed(t, linksN)...)
	// Receive: NIC writes into host memory, the GPU reads it.
	recv = append(recv, linksN...)
	if cpuG != cpuN {
		if smp, ok := t.LinkBetween(cpuN, cpuG); ok {
			recv = append(recv, smp)
		}
	}
	recv = append(recv, mem)
	recv = append(recv, downG...)
	return send, recv
}

// GPU returns the resolved path from GPU a to GPU b of the same node, nil
// for a == b or GPUs on different nodes.
func (r *Resolution) GPU(a, b ElemID) *GPUPath {
	r.ensure(a)
	return r.pairs[[2]ElemID{a, b}]
}

// Net returns how GPU g reaches NIC nic of its node, nil if the NIC is not
// usable or on another node.
func (r *Resolution) NetTo(g, nic ElemID) *NetPath {
	r.ensure(g)
	return r.nets[[2]ElemID{g, nic}]
}

// LocalNICs returns the usable NICs of GPU g's node ordered as NCCL tries
// them for g: closest path type first, then higher bandwidth, then index.
func (r *Resolution) LocalNICs(g ElemID) []*NetPath {
	node := r.c.Topo.Elem(g).Node
	r.ensure(g)
	var out []*NetPath
	for _, nic := range r.NICUsable[node] {
		out = append(out, r.nets[[2]ElemID{g, nic}])
	}
	sort.SliceStable(out, func(i, j int) bool { return netLess(out[i], out[j]) })
	return out
}

// LocalNet returns the NIC NCCL gives GPU g's point-to-point operations,
// as ncclTopoGetLocalNet does on channel 0 (src/graph/topo.cc, NCCL 2.19
// on): among the NICs tied closest to g (its local nets), the one at g's
// device index, its low bits mirrored when their count is a power of two.
// On a DGX A100 with 8 NICs, GPUs 0 and 1 sit on one PCIe switch with NICs
// 0 and 1 and get one each; nil when g's node has no usable NIC. NCCL
// moves later channels on to the next local net where a node has more
// local nets than GPUs sharing them; the model keeps channel 0's for all
// (an assumption: the GPUs' PCIe links bind first on the presets).
func (r *Resolution) LocalNet(g ElemID) *NetPath {
	best := r.LocalNICs(g)
	if len(best) == 0 {
		return nil
	}
	nets := 1
	for nets < len(best) && best[nets].DirectType == best[0].DirectType && best[nets].NCCLBW == best[0].NCCLBW {
		nets++
	}
	net := r.LocalIndex(g)
	if nets&(nets-1) == 0 {
		mirror := 0
		for b, mb := 1, nets>>1; b < nets; b, mb = b<<1, mb>>1 {
			if net&b != 0 {
				mirror |= mb
			}
		}
		net = mirror
	}
	return best[net%nets]
}

func netLess(a, b *NetPath) bool {
	if a.DirectType != b.DirectType {
		return a.DirectType < b.DirectType
	}
	if a.NCCLBW != b.NCCLBW {
		return a.NCCLBW > b.NCCLBW
	}
	return a.NIC < b.NIC
}

// LocalIndex returns a GPU element's index within its node.
func (r *Resolution) LocalIndex(g ElemID) int { return r.gpuLocal[g] }
