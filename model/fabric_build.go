package model

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"sync"
)

// Fabric is a built fabric: the switches and cables in the Topology, the
// plan they follow and the route function over them. Routes are
// deterministic functions of the flow key and the seed. A Fabric is safe for
// concurrent use.
type Fabric struct {
	Plan *FabricPlan
	// Seed drives ECMP hashing.
	Seed uint64
	// Degraded is true when some link runs below its nominal rate or is down.
	Degraded bool
	// LinkLayer is the NIC kind every cable of the fabric carries (IB
	// credit-based links, RoCEv2 Ethernet, ...); RoCE its Ethernet settings.
	LinkLayer NICKind
	RoCE      RoCEParams

	sharp bool
	// background are the other jobs sharing the fabric (sim/physics_background.go).
	background []BackgroundJob

	t      *Topology
	sw     []fabSwitch
	swOf   map[ElemID]int32
	ports  map[ElemID][]nicPort
	nLinks int
	// Bundles are the aggregate links adaptive routes cross; bundle b has
	// LinkID BundleBase()+b.
	bundles  []Bundle
	upB      []int32 // per switch: bundle of its uplinks, -1 none
	downB    []int32 // per leaf: bundle of the links into it from spines
	podUpB   map[[2]int]int32
	podDownB map[[2]int]int32

	mu    sync.Mutex
	dists map[int32]*leafDist
}

// Bundle is a set of parallel fabric links that adaptive routing treats as
// one: its capacity is the sum of its members'.
type Bundle struct {
	Name  string
	Links []LinkID
}

type fabSwitch struct {
	elem             ElemID
	tier, plane, pod int
	up, down         []LinkID // live links towards higher / lower tiers
}

type nicPort struct {
	link  LinkID // NIC -> leaf
	leaf  int32
	plane int
	// index is the port's destination index in its plane (leaf x down
	// ports + down port), the "LID" static routing takes modulo the up-ports.
	index int
	down  bool
}

// buildFabric cables nodes into t as plan describes, applies the degraded
// links and checks that every rail still connects every node.
func buildFabric(t *Topology, f FabricSpec, p *FabricPlan, nodes []*NodeElems, swLat Time) (*Fabric, error) {
	fb := &Fabric{Plan: p, t: t, sharp: f.SHARP, background: f.Background, swOf: map[ElemID]int32{}, ports: map[ElemID][]nicPort{}, podUpB: map[[2]int]int32{}, podDownB: map[[2]int]int32{}, dists: map[int32]*leafDist{}}
	deg := map[string]int{}
	for i, d := range f.Degraded {
		name := normLinkName(d.Link)
		if err := p.checkLinkName(name, len(nodes)); err != nil {
			return nil, fabItemErr("degraded", i, "link", "%s", err)
		}
		if _, dup := deg[name]; dup {
			return nil, fabItemErr("degraded", i, "link", "%s is listed twice", d.Link)
		}
		deg[name] = i
	}
	rate := func(name string, nominal float64) (float64, bool, error) {
		i, ok := deg[name]
		if !ok {
			return nominal, false, nil
		}
		d := f.Degraded[i]
		fb.Degraded = true
		if d.Down {
			return 0, true, nil
		}
		if d.Gbps > nominal*(1+1e-9) {
			return 0, false, fabItemErr("degraded", i, "gbps", "%g is above the link's nominal %g Gb/s", d.Gbps, nominal)
		}
		return d.Gbps, false, nil
	}
	cable := NetCableLatency + swLat
	addSw := func(name string, tier, plane, pod int) (int32, error) {
		id, err := t.Add(Element{Kind: KindSwitch, Name: name, Node: -1, Index: len(fb.sw), Socket: -1})
		if err != nil {
			return -1, err
		}
		fb.swOf[id] = int32(len(fb.sw))
		fb.sw = append(fb.sw, fabSwitch{elem: id, tier: tier, plane: plane, pod: pod})
		return int32(len(fb.sw) - 1), nil
	}
	P := p.Planes
	leaves := make([]int32, P*p.Leaves)
	spines := make([]int32, P*p.Spines())
	cores := make([]int32, P*p.Cores())
	for pl := 0; pl < P; pl++ {
		for l := 0; l < p.Leaves; l++ {
			g := pl*p.Leaves + l
			name := fmt.Sprintf("fabric/leaf%d", g)
			if p.Kind == FabricSingleSwitch {
				name = "fabric/switch"
				if pl > 0 {
					name = fmt.Sprintf("fabric/switch%d", pl)
				}
			}
			pod := 0
			if p.LeavesPerPod > 0 {
				pod = p.leafInSet(l) / p.LeavesPerPod
			}
			var err error
			if leaves[g], err = addSw(name, 0, pl, pod); err != nil {
				return nil, err
			}
		}
		for s := 0; s < p.Spines(); s++ {
			g := pl*p.Spines() + s
			pod := 0
			if p.Tiers == 3 {
				pod = (s % p.SpinesPerSet) / p.LeafUp
			}
			var err error
			if spines[g], err = addSw(fmt.Sprintf("fabric/spine%d", g), 1, pl, pod); err != nil {
				return nil, err
			}
		}
		for c := 0; c < p.Cores(); c++ {
			g := pl*p.Cores() + c
			var err error
			if cores[g], err = addSw(fmt.Sprintf("fabric/core%d", g), 2, pl, -1); err != nil {
				return nil, err
			}
		}
	}
	connect := func(a, b ElemID, gbps, ncclGbps float64) (LinkID, error) {
		return t.Connect(a, b, LinkNet, GBps(gbps/8), GBps(ncclGbps/8), cable, 1)
	}
	// NIC ports to their leaves.
	for n, ne := range nodes {
		slot := p.Slot[n]
		for i, nic := range ne.NICs {
			ports := p.PortsPerNIC
			for port := 0; port < ports; port++ {
				q := i*ports + port
				pl, rail := q%P, q/P
				l := slot / p.NodesPerLeaf
				if p.Kind == FabricRailOptimized || p.Kind == FabricRailOnly {
					l = l*p.PlanePorts + rail
				}
				if p.Kind == FabricSingleSwitch {
					l = 0
				}
				// The destination index static routing uses: endpoints
				// numbered leaf by leaf, down port by down port, as a
				// subnet manager's fat-tree routing orders them.
				pos := (slot%p.NodesPerLeaf)*p.PlanePorts + rail
				if p.Kind == FabricRailOptimized || p.Kind == FabricRailOnly {
					pos = slot % p.NodesPerLeaf
				}
				if p.Kind == FabricSingleSwitch {
					pos = slot*p.PlanePorts + rail
				}
				leaf := leaves[pl*p.Leaves+l]
				name := fmt.Sprintf("node%d/nic%d/port%d", n, i, port)
				gb, down, err := rate(name, p.PortGbps)
				if err != nil {
					return nil, err
				}
				np := nicPort{leaf: leaf, plane: pl, index: l*p.LeafDown + pos, link: -1, down: down}
				if !down {
					if np.link, err = connect(nic, fb.sw[leaf].elem, gb, gb*float64(ports)); err != nil {
						return nil, err
					}
				}
				fb.ports[nic] = append(fb.ports[nic], np)
			}
		}
	}
	// Leaf uplinks: uplink j of a leaf goes to spine j mod S of its spine
	// set (two tiers) or to spine j of its pod (three tiers).
	for pl := 0; pl < P; pl++ {
		for l := 0; l < p.Leaves && p.LeafUp > 0; l++ {
			g := pl*p.Leaves + l
			set, idx := p.leafSet(l), p.leafInSet(l)
			for j := 0; j < p.LeafUp; j++ {
				s := j % p.SpinesPerSet
				if p.Tiers == 3 {
					s = (idx/p.LeavesPerPod)*p.LeafUp + j
				}
				sp := spines[pl*p.Spines()+set*p.SpinesPerSet+s]
				gb, down, err := rate(fmt.Sprintf("leaf%d/up%d", g, j), p.UpGbps)
				if err != nil {
					return nil, err
				}
				if down {
					continue
				}
				if _, err := connect(fb.sw[leaves[g]].elem, fb.sw[sp].elem, gb, gb); err != nil {
					return nil, err
				}
			}
		}
		// Spine uplinks: spine position j of every pod joins core group j;
		// its uplink m goes to core m mod CoresPerGroup of the group.
		for s := 0; s < p.Spines() && p.Cores() > 0; s++ {
			g := pl*p.Spines() + s
			set, j := s/p.SpinesPerSet, s%p.LeafUp
			for m := 0; m < p.SpineUp; m++ {
				c := (set*p.LeafUp+j)*p.CoresPerGroup + m%p.CoresPerGroup
				gb, down, err := rate(fmt.Sprintf("spine%d/up%d", g, m), p.SpineUpGbps)
				if err != nil {
					return nil, err
				}
				if down {
					continue
				}
				if _, err := connect(fb.sw[spines[g]].elem, fb.sw[cores[pl*p.Cores()+c]].elem, gb, gb); err != nil {
					return nil, err
				}
			}
		}
	}
	fb.nLinks = len(t.Links)
	fb.index()
	return fb, fb.checkConnected(nodes)
}

// leafSet returns the spine set of plane-local leaf l (its rail for rail-only).
func (p *FabricPlan) leafSet(l int) int {
	if p.Kind == FabricRailOnly {
		return l % p.PlanePorts
	}
	return 0
}

// leafInSet returns the position of plane-local leaf l within its spine set.
func (p *FabricPlan) leafInSet(l int) int {
	if p.Kind == FabricRailOnly {
		return l / p.PlanePorts
	}
	return l
}

var (
	reNICLink   = regexp.MustCompile(`^node(\d+)/nic(\d+)(?:/port(\d+))?$`)
	reUpLink    = regexp.MustCompile(`^(leaf|spine)(\d+)/up(\d+)$`)
	reFabPrefix = regexp.MustCompile(`^fabric/`)
)

// normLinkName writes a degraded link name in the form buildFabric uses.
func normLinkName(s string) string {
	s = reFabPrefix.ReplaceAllString(s, "")
	if m := reNICLink.FindStringSubmatch(s); m != nil {
		port := m[3]
		if port == "" {
			port = "0"
		}
		return "node" + trimInt(m[1]) + "/nic" + trimInt(m[2]) + "/port" + trimInt(port)
	}
	if m := reUpLink.FindStringSubmatch(s); m != nil {
		return m[1] + trimInt(m[2]) + "/up" + trimInt(m[3])
	}
	return s
}

func trimInt(s string) string {
	n, err := strconv.Atoi(s)
	if err != nil {
		return s
	}
	return strconv.Itoa(n)
}

// checkLinkName reports whether a normalised degraded link name exists.
func (p *FabricPlan) checkLinkName(name string, nodes int) error {
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if m := reNICLink.FindStringSubmatch(name); m != nil {
		n, i, port := atoi(m[1]), atoi(m[2]), atoi(m[3])
		nics, ports := p.NICs, p.PortsPerNIC
		switch {
		case n >= nodes:
			return fmt.Errorf("%s does not exist: the cluster has nodes node0..node%d", name, nodes-1)
		case i >= nics:
			return fmt.Errorf("%s does not exist: each node has NICs nic0..nic%d", name, nics-1)
		case port >= ports:
			return fmt.Errorf("%s does not exist: each NIC has ports port0..port%d", name, ports-1)
		}
		return nil
	}
	if m := reUpLink.FindStringSubmatch(name); m != nil {
		x, j := atoi(m[2]), atoi(m[3])
		if m[1] == "leaf" {
			switch {
			case p.LeafUp == 0:
				return fmt.Errorf("%s does not exist: this %s fabric has no leaf uplinks", name, p.Kind)
			case x >= p.Planes*p.Leaves:
				return fmt.Errorf("%s does not exist: the fabric has leaves leaf0..leaf%d", name, p.Planes*p.Leaves-1)
			case j >= p.LeafUp:
				return fmt.Errorf("%s does not exist: each leaf has uplinks up0..up%d", name, p.LeafUp-1)
			}
			return nil
		}
		switch {
		case p.Cores() == 0:
			return fmt.Errorf("%s does not exist: this fabric has no spine uplinks (no core tier)", name)
		case x >= p.Planes*p.Spines():
			return fmt.Errorf("%s does not exist: the fabric has spines spine0..spine%d", name, p.Planes*p.Spines()-1)
		case j >= p.SpineUp:
			return fmt.Errorf("%s does not exist: each spine has uplinks up0..up%d", name, p.SpineUp-1)
		}
		return nil
	}
	return fmt.Errorf("%q names no link (want nodeN/nicI, nodeN/nicI/portP, leafL/upJ or spineS/upJ)", name)
}

// index lists each switch's live up and down links and, for adaptive
// routing, the bundles.
func (fb *Fabric) index() {
	t := fb.t
	for i := range fb.sw {
		s := &fb.sw[i]
		for _, l := range t.Out[s.elem] {
			to, ok := fb.swOf[t.Links[l].To]
			if !ok {
				continue
			}
			if fb.sw[to].tier > s.tier {
				s.up = append(s.up, l)
			} else if fb.sw[to].tier < s.tier {
				s.down = append(s.down, l)
			}
		}
	}
	fb.upB = make([]int32, len(fb.sw))
	fb.downB = make([]int32, len(fb.sw))
	for i := range fb.sw {
		fb.upB[i], fb.downB[i] = -1, -1
	}
	if fb.Plan.Routing != RoutingAdaptive {
		return
	}
	add := func(name string, links []LinkID) int32 {
		fb.bundles = append(fb.bundles, Bundle{Name: name, Links: links})
		return int32(len(fb.bundles) - 1)
	}
	pods := map[[2]int][2][]LinkID{}
	var podKeys [][2]int
	for i := range fb.sw {
		s := &fb.sw[i]
		name := t.Elem(s.elem).Name
		switch s.tier {
		case 0:
			if len(s.up) == 0 {
				continue
			}
			fb.upB[i] = add(fmt.Sprintf("%s uplinks (%d links)", name, len(s.up)), append([]LinkID(nil), s.up...))
			in := make([]LinkID, len(s.up))
			for j, l := range s.up {
				in[j] = t.Links[l].Reverse
			}
			fb.downB[i] = add(fmt.Sprintf("links into %s (%d)", name, len(in)), in)
		case 1:
			if len(s.up) == 0 {
				continue
			}
			k := [2]int{s.plane, s.pod}
			e, ok := pods[k]
			if !ok {
				podKeys = append(podKeys, k)
			}
			for _, l := range s.up {
				e[0] = append(e[0], l)
				e[1] = append(e[1], t.Links[l].Reverse)
			}
			pods[k] = e
		}
	}
	for _, k := range podKeys {
		e := pods[k]
		fb.podUpB[k] = add(fmt.Sprintf("plane%d pod%d spine uplinks (%d links)", k[0], k[1], len(e[0])), e[0])
		fb.podDownB[k] = add(fmt.Sprintf("links into plane%d pod%d (%d)", k[0], k[1], len(e[1])), e[1])
	}
}

// SwitchTier returns the tier of a fabric switch (0 leaf, 1 spine, 2 core)
// and its plane; ok is false for elements that are not fabric switches.
func (fb *Fabric) SwitchTier(e ElemID) (tier, plane int, ok bool) {
	i, ok := fb.swOf[e]
	if !ok {
		return 0, 0, false
	}
	return fb.sw[i].tier, fb.sw[i].plane, true
}

// Bundles returns the aggregate links of adaptive routing (nil otherwise).
func (fb *Fabric) Bundles() []Bundle { return fb.bundles }

// BundleBase is the LinkID of bundle 0: routes refer to bundle b as
// BundleBase()+b, past the topology's own links.
func (fb *Fabric) BundleBase() LinkID { return LinkID(fb.nLinks) }

// Symmetric reports whether every node sees the same fabric: one switch
// per plane, no degraded link. Only then is simulating one node and
// replicating it exact.
func (fb *Fabric) Symmetric() bool {
	return fb != nil && fb.Plan.Kind == FabricSingleSwitch && !fb.Degraded
}

// leafDist holds, for one destination leaf, the hop counts of every switch
// to it going only down (down) or up then down (up); -1 unreachable.
type leafDist struct{ down, up []int32 }

func (fb *Fabric) dist(leaf int32) *leafDist {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if d, ok := fb.dists[leaf]; ok {
		return d
	}
	n := len(fb.sw)
	d := &leafDist{down: make([]int32, n), up: make([]int32, n)}
	for i := range d.down {
		d.down[i], d.up[i] = -1, -1
	}
	d.down[leaf] = 0
	t := fb.t
	for tier := 1; tier <= 2; tier++ {
		for i := range fb.sw {
			if fb.sw[i].tier != tier {
				continue
			}
			for _, l := range fb.sw[i].down {
				if v := d.down[fb.swOf[t.Links[l].To]]; v >= 0 && (d.down[i] < 0 || v+1 < d.down[i]) {
					d.down[i] = v + 1
				}
			}
		}
	}
	for tier := 2; tier >= 0; tier-- {
		for i := range fb.sw {
			if fb.sw[i].tier != tier {
				continue
			}
			d.up[i] = d.down[i]
			for _, l := range fb.sw[i].up {
				if v := d.up[fb.swOf[t.Links[l].To]]; v >= 0 && (d.up[i] < 0 || v+1 < d.up[i]) {
					d.up[i] = v + 1
				}
			}
		}
	}
	fb.dists[leaf] = d
	return d
}

// checkConnected verifies that, for every NIC index, all nodes' NICs of
// that index share a plane in which every pair of their leaves is joined by
// an up-down path: what rail-aligned NCCL traffic needs.
func (fb *Fabric) checkConnected(nodes []*NodeElems) error {
	if len(nodes) < 2 {
		return nil
	}
	for i := range nodes[0].NICs {
		ok := false
		for pl := 0; pl < fb.Plan.Planes && !ok; pl++ {
			leaves := map[int32]bool{}
			all := true
			for _, ne := range nodes {
				found := false
				for _, pt := range fb.ports[ne.NICs[i]] {
					if pt.plane == pl && !pt.down {
						leaves[pt.leaf], found = true, true
					}
				}
				if !found {
					all = false
					break
				}
			}
			if !all {
				continue
			}
			ok = true
			ls := make([]int32, 0, len(leaves))
			for l := range leaves {
				ls = append(ls, l)
			}
			sort.Slice(ls, func(a, b int) bool { return ls[a] < ls[b] })
			for _, b := range ls {
				d := fb.dist(b)
				for _, a := range ls {
					if d.up[a] < 0 {
						ok = false
					}
				}
				if !ok {
					break
				}
			}
		}
		if !ok {
			return fabErr("degraded", "the fabric no longer connects the nodes' nic%d ports: every path between some of their leaves is down", i)
		}
	}
	return nil
}

// FlowKey identifies one flow through the fabric: a QP of a connection
// between two NICs. Channel and QP separate the flows of one NIC pair (NCCL
// opens NCCL_IB_QPS_PER_CONNECTION QPs per channel and peer, fabric-facts
// §2.3), so ECMP hashes them independently.
type FlowKey struct {
	SrcNIC, DstNIC ElemID
	// SrcGPU and DstGPU are the GPUs at the ends (None if unknown).
	SrcGPU, DstGPU ElemID
	Channel, QP    int
}

// Route returns the links a flow crosses from its source NIC to its
// destination NIC: the NIC's cable, the switch-to-switch links (or, with
// adaptive routing, bundles: IDs from BundleBase()) and the destination's
// cable. The NIC port (plane) is chosen by Channel+QP (ECMP: by hash). It
// fails when no path exists: NICs on different planes, or on different
// rails of a rail-only fabric (such traffic must cross NVLink inside a node).
func (fb *Fabric) Route(k FlowKey) ([]LinkID, error) {
	t := fb.t
	sp, dp := fb.ports[k.SrcNIC], fb.ports[k.DstNIC]
	if len(sp) == 0 || len(dp) == 0 {
		return nil, fmt.Errorf("model: %s or %s is not cabled to the fabric", t.Elem(k.SrcNIC).Name, t.Elem(k.DstNIC).Name)
	}
	type pair struct{ a, b nicPort }
	var pairs []pair
	striped := -1 // the pair of ports QP k.QP is created on, when it is usable
	for i, a := range sp {
		for j, b := range dp {
			if a.plane == b.plane && !a.down && !b.down && (a.leaf == b.leaf || fb.dist(b.leaf).up[a.leaf] >= 0) {
				if i == k.QP%len(sp) && j == k.QP%len(dp) {
					striped = len(pairs)
				}
				pairs = append(pairs, pair{a, b})
			}
		}
	}
	if len(pairs) == 0 {
		why := "they share no plane with a live path"
		if fb.Plan.Kind == FabricRailOnly {
			why = "rail-only: their rails share no switch; cross-rail traffic must go through NVLink inside a node (PXN)"
		} else if fb.Plan.Planes > 1 {
			why = "they are on different planes; traffic between planes must go through a node"
		}
		return nil, fmt.Errorf("model: no fabric path from %s to %s: %s: %w", t.Elem(k.SrcNIC).Name, t.Elem(k.DstNIC).Name, why, ErrNoPath)
	}
	h := fb.hash(k)
	pick := (k.Channel + k.QP) % len(pairs)
	switch {
	case len(sp) > 1 && striped >= 0:
		// A multi-port NIC is one NCCL device of several ports (NET/IB
		// merges the ports of one adapter, NCCL_IB_MERGE_NICS): a
		// connection opens its QPs on every port, QP i on port i mod
		// ports at both ends (src/transport/net_ib/connect.cc: "the QPs
		// are created in a striped manner across the available devices",
		// nqps = QPs per device x devices), so the port follows the QP.
		pick = striped
	case fb.Plan.Routing == RoutingECMP:
		pick = int(h % uint64(len(pairs)))
	}
	pr := pairs[pick]
	route := []LinkID{pr.a.link}
	if pr.a.leaf != pr.b.leaf {
		if fb.Plan.Routing == RoutingAdaptive {
			route = append(route, fb.bundled(pr.a.leaf, pr.b.leaf)...)
		} else {
			route = append(route, fb.walk(pr.a.leaf, pr.b.leaf, pr.b.index, h)...)
		}
	}
	return append(route, t.Links[pr.b.link].Reverse), nil
}

// bundled is the adaptive route between two leaves: the source leaf's
// uplink bundle, across pods the pods' spine bundles, and the bundle into
// the destination leaf. Ideal spreading loads every member of a bundle
// equally, so a bundle is exact for a healthy fabric; with a dead link the
// bundle of a leaf loses that member, but links that no longer lead to a
// given destination stay in it, which makes adaptive routing slightly
// optimistic around failures (assumption: the switches' AR groups adapt).
func (fb *Fabric) bundled(a, b int32) []LinkID {
	base := fb.BundleBase()
	out := []LinkID{base + LinkID(fb.upB[a])}
	sa, sb := &fb.sw[a], &fb.sw[b]
	if fb.Plan.Tiers == 3 && sa.pod != sb.pod {
		if u, ok := fb.podUpB[[2]int{sa.plane, sa.pod}]; ok {
			out = append(out, base+LinkID(u))
		}
		if d, ok := fb.podDownB[[2]int{sb.plane, sb.pod}]; ok {
			out = append(out, base+LinkID(d))
		}
	}
	return append(out, base+LinkID(fb.downB[b]))
}

// walk follows a shortest up-down path from leaf a to leaf b. At every
// switch the candidates are the live links one hop closer; static routing
// takes up-port (dst / product of earlier up choices) mod n and, among
// parallel down links, the parallel rank of the mirrored up hop (D-mod-K),
// ECMP a per-hop hash of the flow.
func (fb *Fabric) walk(a, b int32, dst int, h uint64) []LinkID {
	t := fb.t
	d := fb.dist(b)
	var out []LinkID
	cur, goingDown, div := a, false, 1
	var ranks []int
	downHops := 0
	for hop := 0; cur != b; hop++ {
		var cands []LinkID
		if goingDown || d.down[cur] == d.up[cur] {
			goingDown = true
			for _, l := range fb.sw[cur].down {
				if d.down[fb.swOf[t.Links[l].To]] == d.down[cur]-1 {
					cands = append(cands, l)
				}
			}
		} else {
			for _, l := range fb.sw[cur].up {
				if d.up[fb.swOf[t.Links[l].To]] == d.up[cur]-1 {
					cands = append(cands, l)
				}
			}
		}
		n := len(cands)
		var i int
		switch {
		case fb.Plan.Routing == RoutingStatic && goingDown:
			// Down-ports: the parallel links into the next switch are
			// taken by the parallel rank chosen at the mirrored up hop,
			// so flows that met at this switch from distinct up-ports
			// leave by distinct links (D-mod-K's digits, reversed).
			i = dst % n
			if k := len(ranks) - 1 - downHops; k >= 0 && sameTarget(t, cands) {
				i = ranks[k] % n
			}
			downHops++
		case fb.Plan.Routing == RoutingStatic:
			i = (dst / div) % n
			div *= n
			ranks = append(ranks, parallelRank(t, cands, i))
		default:
			i = int(mix64(h^uint64(hop+1)*0x9e3779b97f4a7c15) % uint64(n))
		}
		out = append(out, cands[i])
		cur = fb.swOf[t.Links[cands[i]].To]
	}
	return out
}

// parallelRank returns the rank of cands[i] among the candidates that lead
// to the same switch.
func parallelRank(t *Topology, cands []LinkID, i int) int {
	r := 0
	for _, l := range cands[:i] {
		if t.Links[l].To == t.Links[cands[i]].To {
			r++
		}
	}
	return r
}

// sameTarget reports whether all candidates lead to one switch.
func sameTarget(t *Topology, cands []LinkID) bool {
	for _, l := range cands {
		if t.Links[l].To != t.Links[cands[0]].To {
			return false
		}
	}
	return true
}

// hash mixes the seed and the flow key (splitmix64 finaliser).
func (fb *Fabric) hash(k FlowKey) uint64 {
	h := mix64(fb.Seed + 0x9e3779b97f4a7c15)
	for _, v := range []int64{int64(k.SrcNIC), int64(k.DstNIC), int64(k.SrcGPU), int64(k.DstGPU), int64(k.Channel), int64(k.QP)} {
		h = mix64(h ^ uint64(v))
	}
	return h
}

func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Describe returns a one-line summary such as "fat-tree, 2 tiers of
// 64-port Quantum-2 QM9700 (NDR): 32 leaves, 16 spines, 1:1, adaptive".
func (fb *Fabric) Describe() string {
	p := fb.Plan
	if p.Kind == FabricSingleSwitch {
		if p.Planes > 1 {
			return fmt.Sprintf("one non-blocking switch per plane, %d planes", p.Planes)
		}
		return "one non-blocking switch"
	}
	s := fmt.Sprintf("%s, %d tiers of %d-port %s: %d leaves, %d spines", p.Kind, p.Tiers, p.Radix, p.Switch.Name, p.Planes*p.Leaves, p.Planes*p.Spines())
	if c := p.Cores(); c > 0 {
		s += fmt.Sprintf(", %d cores", p.Planes*c)
	}
	if p.Planes > 1 {
		s += fmt.Sprintf(" over %d planes", p.Planes)
	}
	over := 1.0
	if p.LeafUp > 0 {
		over = float64(p.LeafDown) * p.PortGbps / (float64(p.LeafUp) * p.UpGbps)
	}
	return s + fmt.Sprintf(", %.3g:1 at the leaves, %s routing, %s placement", math.Round(over*1000)/1000, p.Routing, p.Placement)
}

// Notes lists the fabric inputs that are parsed and validated but do not
// yet change the simulation, so that output can say so.
func (fb *Fabric) Notes() []string {
	if fb == nil {
		return nil
	}
	var out []string
	return out
}

// applyKnobs makes the fabric's routing what NCCL's settings allow. An
// InfiniBand fabric routes adaptively only for traffic NCCL sends
// adaptive-routing-safe (NCCL_IB_ADAPTIVE_ROUTING, on by default for IB,
// v2.30.7 net_ib/init.cc): with it off, NCCL's single write-with-immediate
// per message must arrive in order, so the subnet manager's static routes
// apply (assumption: the operator keeps such traffic on a service level
// without adaptive routing). RoCE fabrics that spray (Spectrum-X class)
// reorder in the NIC and are left as they are.
func (fb *Fabric) applyKnobs(k Knobs) {
	if fb.LinkLayer == NICIB && fb.Plan.Routing == RoutingAdaptive && !k.AdaptiveRoutingOn(NICIB) {
		fb.Plan.Routing = RoutingStatic
	}
}

// Background returns the other jobs that share the fabric.
func (fb *Fabric) Background() []BackgroundJob {
	if fb == nil {
		return nil
	}
	return fb.background
}
