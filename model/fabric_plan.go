package model

import (
	"math"
)

// FabricPlan is the switch-level arithmetic of a fabric: how many leaves,
// spines and cores each plane has and how many links join them. It follows
// the folded-Clos sizing rules of fabric-facts §1.1: a leaf of radix k with
// oversubscription r has d down ports and u = ceil(d/r) uplinks (d + u <= k);
// in two tiers each leaf spreads its uplinks round-robin over the spines, so
// with 1:1 and full leaves k leaves of k/2 nodes ports meet k/2 spines
// (k²/2 endpoints, 1.5k switches); in three tiers each leaf has one link to
// each of the u spines of its pod, a pod holds as many leaves as a spine has
// down ports, and spine j of every pod joins core group j (k³/4 endpoints,
// 5k²/4 switches at 1:1). These counts reproduce the published DGX SuperPOD
// tables (fabric-facts §1.2; TestSuperPODCounts).
type FabricPlan struct {
	Kind      FabricKind
	Tiers     int
	Routing   Routing
	Placement Placement
	// Switch is the switch generation; Radix its port count (the spec's
	// radix when given).
	Switch SwitchModel
	Radix  int
	Planes int
	// NICs is the NIC count per node, PortsPerNIC the ports of each.
	NICs, PortsPerNIC int
	// PortGbps is the rate of one NIC port (NIC speed / ports per NIC).
	PortGbps float64
	// PortsPerNode counts a node's NIC ports over all planes; PlanePorts
	// those in one plane (also the rails of a plane for the rail kinds).
	PortsPerNode, PlanePorts int
	// NodesPerLeaf is the node count per leaf (fat-tree) or per rail group.
	NodesPerLeaf int
	// Slot is the fabric slot of each node; NumSlots the slots the fabric has.
	Slot     []int
	NumSlots int
	// Groups is the number of leaves (fat-tree) or rail groups per plane.
	Groups int
	// Leaves is the leaf count per plane; LeafDown the down ports of a full
	// leaf; LeafUp its uplinks, each of UpGbps.
	Leaves, LeafDown, LeafUp int
	UpGbps                   float64
	// SpineSets is the number of independent spine groups per plane (1, or
	// one per rail for rail-only); SpinesPerSet the spines in each.
	SpineSets, SpinesPerSet int
	// LeavesPerSet is the leaf count a spine set joins.
	LeavesPerSet int
	// Three tiers: leaves per pod, pods per spine set, spine uplinks (each
	// SpineUpGbps) and cores per group (one group per pod spine position).
	LeavesPerPod, Pods, SpineUp int
	SpineUpGbps                 float64
	CoresPerGroup               int
}

// Spines returns the spine count of one plane.
func (p *FabricPlan) Spines() int { return p.SpineSets * p.SpinesPerSet }

// Cores returns the core count of one plane.
func (p *FabricPlan) Cores() int {
	if p.Tiers < 3 || p.Pods < 2 {
		return 0
	}
	return p.SpineSets * p.LeafUp * p.CoresPerGroup
}

// Switches returns the switch count over all planes.
func (p *FabricPlan) Switches() int { return p.Planes * (p.Leaves + p.Spines() + p.Cores()) }

// LinkCounts returns the cables over all planes: node to leaf, leaf to
// spine, spine to core.
func (p *FabricPlan) LinkCounts() (nodeLeaf, leafSpine, spineCore int) {
	nodeLeaf = len(p.Slot) * p.PortsPerNode
	leafSpine = p.Planes * p.Leaves * p.LeafUp
	if p.Cores() > 0 {
		spineCore = p.Planes * p.Spines() * p.SpineUp
	}
	return
}

// BisectionGbps returns the fabric's bisection bandwidth in Gb/s (one
// direction, all planes): half the capacity of the narrowest tier of
// uplinks when the nodes are cut into two halves along leaf (pod)
// boundaries; for a non-blocking fabric N·c/2 for N endpoints of rate c.
// Rail-only fabrics are not joined across rails: their bisection is the
// same sum over the rails' own trees. A single switch is non-blocking.
func (p *FabricPlan) BisectionGbps() float64 {
	edge := float64(len(p.Slot)*p.PortsPerNode) * p.PortGbps / 2
	if p.Kind == FabricSingleSwitch || p.LeafUp == 0 || p.LeavesPerSet < 2 {
		return edge
	}
	leaf := float64(p.Planes*p.Leaves*p.LeafUp) * p.UpGbps / 2
	b := math.Min(edge, leaf)
	if p.Cores() > 0 {
		b = math.Min(b, float64(p.Planes*p.Spines()*p.SpineUp)*p.SpineUpGbps/2)
	}
	return b
}

// planInput is what the plan needs to know about the nodes.
type planInput struct {
	nodes, nics, ports int
	kind               NICKind
	nicGbps            float64
}

// PlanFabric sizes the fabric f for nodes identical nodes of nics NICs
// (ports ports each, nicGbps per NIC) of kind k. Errors are *FabricError
// naming the key that cannot hold (radix, nodes_per_leaf, planes, ...).
func PlanFabric(f FabricSpec, nodes, nics, ports int, k NICKind, nicGbps float64) (*FabricPlan, error) {
	return planFabric(f, planInput{nodes, nics, ports, k, nicGbps})
}

func planFabric(f FabricSpec, in planInput) (*FabricPlan, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	for i, b := range f.Background {
		if b.Nodes > in.nodes {
			return nil, fabItemErr("background", i, "nodes", "%d is more than the cluster's %d nodes", b.Nodes, in.nodes)
		}
	}
	kind, _ := ParseFabricKind(f.Kind)
	routing, _ := ParseRouting(f.Routing)
	if routing == "" {
		routing = DefaultRouting(in.kind)
	}
	place, _ := ParsePlacement(f.Placement)
	p := &FabricPlan{Kind: kind, Tiers: f.Tiers, Routing: routing, Placement: place, Planes: max(f.Planes, 1)}
	if p.Tiers == 0 {
		p.Tiers = 2
	}
	if kind == FabricSingleSwitch {
		p.Tiers = 1
	}
	if in.ports < 1 {
		in.ports = 1
	}
	p.NICs, p.PortsPerNIC = in.nics, in.ports
	p.PortGbps = in.nicGbps / float64(in.ports)
	p.PortsPerNode = in.nics * in.ports
	if p.PortsPerNode == 0 {
		return nil, fabErr("kind", "the nodes have no NIC to cable")
	}
	if p.PortsPerNode%p.Planes != 0 {
		return nil, fabErr("planes", "%d NIC ports per node do not split evenly over %d planes", p.PortsPerNode, p.Planes)
	}
	p.PlanePorts = p.PortsPerNode / p.Planes
	p.Switch = DefaultSwitch(in.kind, p.PortGbps)
	p.Radix = p.Switch.Ports
	if f.Radix > 0 && f.Radix != p.Switch.Ports {
		p.Radix = f.Radix
		p.Switch = SwitchModel{Name: "switch", Ports: f.Radix, PortGbps: int(math.Ceil(p.PortGbps)), Ethernet: in.kind != NICIB, Source: "cluster file (fabric.radix)"}
	}
	k := p.Radix
	r1 := f.Oversubscription
	if r1 == 0 {
		r1 = 1
	}
	r2 := f.SpineOversubscription
	if r2 == 0 {
		r2 = 1
	}
	// Slots: nodes -> positions.
	if place == PlacementExplicit && len(f.Slots) != in.nodes {
		return nil, fabErr("placement", "%d node slots for %d nodes", len(f.Slots), in.nodes)
	}
	if kind == FabricSingleSwitch {
		if f.Radix > 0 && in.nodes*p.PlanePorts > k {
			return nil, fabErr("radix", "%d ports cannot hold %d nodes x %d NIC ports; use a fat-tree", k, in.nodes, p.PlanePorts)
		}
		p.NodesPerLeaf, p.Groups, p.Leaves, p.LeafDown = in.nodes, 1, 1, in.nodes*p.PlanePorts
		p.LeavesPerSet = 1
		return p, p.place(f, in.nodes)
	}
	// Down ports a leaf may use at ratio r1: d + ceil(d/r1) <= k.
	dmax := int(math.Floor(float64(k) * r1 / (r1 + 1)))
	for dmax > 0 && dmax+int(math.Ceil(float64(dmax)/r1)) > k {
		dmax--
	}
	perNodeOnLeaf := p.PlanePorts // fat-tree: every port of the plane on one leaf
	if kind != FabricFatTree {
		perNodeOnLeaf = 1 // rails: one port per node on each rail leaf
	}
	npl := f.NodesPerLeaf
	maxSlot := in.nodes
	for _, s := range f.Slots {
		maxSlot = max(maxSlot, s+1)
	}
	if npl == 0 {
		switch {
		case kind == FabricRailOnly && maxSlot <= k:
			npl = maxSlot // one switch per rail, no spine
		default:
			npl = min(dmax/perNodeOnLeaf, maxSlot)
		}
		if npl == 0 {
			return nil, fabErr("radix", "%d-port switches cannot hold one node's %d ports per leaf at %g:1", k, perNodeOnLeaf, r1)
		}
	}
	p.NodesPerLeaf = npl
	p.Groups = ceilDiv(maxSlot, npl)
	d := npl * perNodeOnLeaf
	p.LeafDown = d
	if kind == FabricFatTree {
		p.Leaves = p.Groups
		p.SpineSets, p.LeavesPerSet = 1, p.Leaves
	} else {
		p.Leaves = p.Groups * p.PlanePorts
		p.SpineSets, p.LeavesPerSet = 1, p.Leaves
		if kind == FabricRailOnly {
			p.SpineSets, p.LeavesPerSet = p.PlanePorts, p.Groups
		}
	}
	if p.LeavesPerSet > 1 {
		u := int(math.Ceil(float64(d)/r1 - 1e-9))
		p.LeafUp = u
		p.UpGbps = p.PortGbps * (float64(d) / r1) / float64(u)
	}
	if d+p.LeafUp > k {
		return nil, fabErr("radix", "%d-port leaves cannot hold %d down + %d up ports (%d nodes per leaf x %d ports at %g:1); lower nodes_per_leaf or raise the radix", k, d, p.LeafUp, npl, perNodeOnLeaf, r1)
	}
	if p.LeafUp > 0 {
		if err := p.spines(k, r2); err != nil {
			return nil, err
		}
	}
	return p, p.place(f, in.nodes)
}

// spines sizes the spine (and core) tiers of each spine set.
func (p *FabricPlan) spines(k int, r2 float64) error {
	L, u := p.LeavesPerSet, p.LeafUp
	if p.Tiers == 2 {
		if L > k {
			return fabErr("radix", "two tiers of %d-port switches join at most %d leaves, this fabric needs %d; use tiers: 3, a larger radix or fewer nodes", k, k, L)
		}
		for s := ceilDiv(L*u, k); s <= u; s++ {
			if L*ceilDiv(u, s) <= k {
				p.SpinesPerSet = s
				return nil
			}
		}
		return fabErr("radix", "two tiers of %d-port switches cannot join %d leaves of %d uplinks", k, L, u)
	}
	dS := int(math.Floor(float64(k) * r2 / (r2 + 1)))
	for dS > 0 && dS+int(math.Ceil(float64(dS)/r2)) > k {
		dS--
	}
	if dS == 0 {
		return fabErr("radix", "%d-port spines cannot hold a pod at %g:1", k, r2)
	}
	p.LeavesPerPod = min(L, dS)
	p.Pods = ceilDiv(L, p.LeavesPerPod)
	p.SpinesPerSet = p.Pods * u
	if p.Pods < 2 {
		return nil
	}
	uS := int(math.Ceil(float64(p.LeavesPerPod)/r2 - 1e-9))
	p.SpineUp = uS
	p.SpineUpGbps = p.UpGbps * (float64(p.LeavesPerPod) / r2) / float64(uS)
	for c := ceilDiv(p.Pods*uS, k); c <= uS; c++ {
		if p.Pods*ceilDiv(uS, c) <= k {
			p.CoresPerGroup = c
			return nil
		}
	}
	return fabErr("radix", "three tiers of %d-port switches join at most %d pods, this fabric needs %d; use a larger radix or fewer nodes", k, k, p.Pods)
}

// place assigns each node its fabric slot.
func (p *FabricPlan) place(f FabricSpec, nodes int) error {
	p.Slot = make([]int, nodes)
	switch p.Placement {
	case PlacementExplicit:
		copy(p.Slot, f.Slots)
		p.NumSlots = 0
		for _, s := range f.Slots {
			p.NumSlots = max(p.NumSlots, s+1)
		}
	case PlacementScattered:
		L := ceilDiv(nodes, p.NodesPerLeaf)
		for n := range p.Slot {
			p.Slot[n] = (n%L)*p.NodesPerLeaf + n/L
		}
		p.NumSlots = L * p.NodesPerLeaf
	default:
		for n := range p.Slot {
			p.Slot[n] = n
		}
		p.NumSlots = nodes
	}
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
