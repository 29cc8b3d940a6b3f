package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FabricSpec describes the network between nodes: its topology, how routes
// are chosen, where the job's nodes sit and which links are degraded. The
// zero value is one non-blocking switch. YAML key names are those of the
// cluster file's fabric: section.
type FabricSpec struct {
	// Kind is single-switch (default), fat-tree (leaf-spine is accepted as
	// fat-tree with two tiers), rail-optimized or rail-only.
	Kind string `yaml:"kind,omitempty"`
	// Tiers is 2 (leaf, spine) or 3 (leaf, spine, core); 0 means 2.
	Tiers int `yaml:"tiers,omitempty"`
	// Radix is the port count of every fabric switch; 0 means the switch
	// generation of the NIC port speed (DefaultSwitch).
	Radix int `yaml:"radix,omitempty"`
	// NodesPerLeaf is the node count under one leaf (fat-tree) or in one
	// rail group (rail-optimized, rail-only: NIC i of each node of the group
	// on rail leaf i); 0 means as many as a leaf holds.
	NodesPerLeaf int `yaml:"nodes_per_leaf,omitempty"`
	// Oversubscription is down:up port capacity at the leaves (1 =
	// non-blocking; 0 means 1); below 1 is an error.
	Oversubscription float64 `yaml:"oversubscription,omitempty"`
	// SpineOversubscription is down:up at the spines of a 3-tier fabric (the
	// second entry of the YAML list [leaf, spine]); 0 means 1.
	SpineOversubscription float64 `yaml:"spine_oversubscription,omitempty"`
	// Planes is the number of independent parallel fabrics; 0 means 1. The
	// NIC ports of a node are split evenly across them: port p of a
	// multi-port NIC is on plane p mod Planes, and single-port NIC i on plane
	// i mod Planes (Alibaba HPN dual-plane; DeepSeek-V3 multi-plane fat-tree,
	// fabric-facts §1.4).
	Planes int `yaml:"planes,omitempty"`
	// Routing is static, ecmp or adaptive; empty means the NIC kind's usual
	// one (DefaultRouting).
	Routing string `yaml:"routing,omitempty"`
	// SHARP is true when the switches can reduce in the network (InfiniBand
	// Quantum SHARP): with NCCL_COLLNET_ENABLE=1 NCCL may run CollNetDirect
	// or CollNetChain AllReduce (model/fabric_collnet.go, sim/collnet.go).
	SHARP bool `yaml:"sharp,omitempty"`
	// Placement is packed (default), scattered or explicit (then Slots).
	Placement string `yaml:"placement,omitempty"`
	// Slots lists, for explicit placement, the fabric slot of each node
	// (len == nodes, distinct, >= 0). Slot s is position s mod NodesPerLeaf
	// of leaf (or rail group) s / NodesPerLeaf.
	Slots []int `yaml:"slots,omitempty"`
	// Degraded lists links that run slower or are down.
	Degraded []DegradedLink `yaml:"degraded,omitempty"`
	// Background lists other jobs that share the fabric: their flows
	// compete with the job's in both engines (sim/physics_background.go).
	Background []BackgroundJob `yaml:"background,omitempty"`
	// SwitchLatencyNs overrides the port-to-port latency of one switch.
	SwitchLatencyNs float64 `yaml:"switch_latency_ns,omitempty"`
}

// DegradedLink is one fabric link that trained at a lower rate or is down.
// Link names a cable: "node3/nic2" (the cable of node 3's NIC 2, port 0),
// "node3/nic2/port1", "leaf1/up0" (uplink 0 of leaf 1), "spine4/up2"
// (3 tiers). Leaves, spines and cores are numbered across all planes.
type DegradedLink struct {
	Link string `yaml:"link"`
	// Gbps is the rate the link runs at (> 0, at most its nominal rate).
	Gbps float64 `yaml:"gbps,omitempty"`
	// Down removes the link: routes avoid it.
	Down bool `yaml:"down,omitempty"`
}

// BackgroundJob is another job's traffic on the fabric: one collective of
// Size over Nodes nodes, run back to back for as long as the job's call.
type BackgroundJob struct {
	Collective string `yaml:"collective"`
	Nodes      int    `yaml:"nodes"`
	Size       string `yaml:"size"`
}

// FabricKind is the shape of the fabric.
type FabricKind string

// Fabric kinds.
const (
	FabricSingleSwitch  FabricKind = "single-switch"
	FabricFatTree       FabricKind = "fat-tree"
	FabricRailOptimized FabricKind = "rail-optimized"
	FabricRailOnly      FabricKind = "rail-only"
)

// ParseFabricKind reads a fabric kind; "" is single-switch and leaf-spine
// is fat-tree (with two tiers).
func ParseFabricKind(s string) (FabricKind, error) {
	switch k := strings.ToLower(strings.TrimSpace(s)); k {
	case "", string(FabricSingleSwitch):
		return FabricSingleSwitch, nil
	case "leaf-spine", string(FabricFatTree):
		return FabricFatTree, nil
	case string(FabricRailOptimized), string(FabricRailOnly):
		return FabricKind(k), nil
	}
	return "", fmt.Errorf("unknown %q (known: single-switch, fat-tree, leaf-spine, rail-optimized, rail-only)", s)
}

// Routing is how a flow's path through the fabric is chosen.
type Routing string

// Routing modes.
const (
	// RoutingStatic is destination-based routing as an InfiniBand subnet
	// manager programs it without adaptive routing: every flow to the same
	// destination port takes the same path, the up-port chosen D-mod-K
	// style from the destination index (fabric-facts §2.4).
	RoutingStatic Routing = "static"
	// RoutingECMP hashes each flow (one flow per QP) onto one of the
	// equal-cost next hops at every switch, with a seed (fabric-facts §2.1).
	RoutingECMP Routing = "ecmp"
	// RoutingAdaptive spreads traffic ideally over all equal-cost paths:
	// routes cross aggregate links (Bundles) whose capacity is the sum of
	// their members (fabric-facts §2.5, §11 item 3).
	RoutingAdaptive Routing = "adaptive"
)

// ParseRouting reads a routing mode; "" stays "" (the NIC kind's default).
func ParseRouting(s string) (Routing, error) {
	switch r := Routing(strings.ToLower(strings.TrimSpace(s))); r {
	case "", RoutingStatic, RoutingECMP, RoutingAdaptive:
		return r, nil
	}
	return "", fmt.Errorf("unknown %q (known: static, ecmp, adaptive)", s)
}

// DefaultRouting is the routing a fabric of NIC kind k uses unless told:
// adaptive on InfiniBand (NVIDIA's bring-up guide makes ar_updn the default
// OpenSM engine with AR enabled, and NCCL_IB_ADAPTIVE_ROUTING defaults on
// for IB, fabric-facts §2.4-2.5) and on EFA (SRD sprays packets over many
// paths, §6.4); per-flow ECMP on Ethernet (RoCE, TCP; §2.1).
func DefaultRouting(k NICKind) Routing {
	if k == NICIB || k == NICEFA {
		return RoutingAdaptive
	}
	return RoutingECMP
}

// Placement is how the job's nodes are laid onto fabric slots.
type Placement string

// Placements.
const (
	// PlacementPacked fills leaves in order: node n in slot n.
	PlacementPacked Placement = "packed"
	// PlacementScattered deals nodes round-robin over the leaves, so
	// consecutive nodes sit under different leaves.
	PlacementScattered Placement = "scattered"
	// PlacementExplicit takes FabricSpec.Slots.
	PlacementExplicit Placement = "explicit"
)

// ParsePlacement reads a placement; "" is packed.
func ParsePlacement(s string) (Placement, error) {
	switch p := Placement(strings.ToLower(strings.TrimSpace(s))); p {
	case "":
		return PlacementPacked, nil
	case PlacementPacked, PlacementScattered, PlacementExplicit:
		return p, nil
	}
	return "", fmt.Errorf("unknown %q (known: packed, scattered, or a list of node slots)", s)
}

// FabricError is an error in one key of a fabric description; scenarios
// maps Key, Item and Sub back to a file position.
type FabricError struct {
	// Key is the fabric key ("radix", "degraded").
	Key string
	// Item is the list index for list keys, -1 otherwise.
	Item int
	// Sub is the key inside a list item ("link", "gbps"), or "".
	Sub string
	Msg string
}

// Error prints "degraded[1].link: msg".
func (e *FabricError) Error() string {
	k := e.Key
	if e.Item >= 0 {
		k += "[" + strconv.Itoa(e.Item) + "]"
	}
	if e.Sub != "" {
		k += "." + e.Sub
	}
	return k + ": " + e.Msg
}

func fabErr(key string, format string, a ...any) *FabricError {
	return &FabricError{Key: key, Item: -1, Msg: fmt.Sprintf(format, a...)}
}

func fabItemErr(key string, item int, sub string, format string, a ...any) *FabricError {
	return &FabricError{Key: key, Item: item, Sub: sub, Msg: fmt.Sprintf(format, a...)}
}

// maxRadix bounds a switch's port count.
const maxRadix = 1024

// Validate checks the fields of f that need no cluster: enumerations and
// ranges. Errors are *FabricError.
func (f FabricSpec) Validate() error {
	kind, err := ParseFabricKind(f.Kind)
	if err != nil {
		return fabErr("kind", "%v", err)
	}
	if f.Tiers != 0 && f.Tiers != 2 && f.Tiers != 3 {
		return fabErr("tiers", "%d is not 2 or 3", f.Tiers)
	}
	if f.Tiers == 3 && (kind == FabricSingleSwitch) {
		return fabErr("tiers", "a single switch has no tiers")
	}
	if strings.EqualFold(strings.TrimSpace(f.Kind), "leaf-spine") && f.Tiers == 3 {
		return fabErr("tiers", "leaf-spine is two tiers; use kind: fat-tree with tiers: 3")
	}
	if f.Radix != 0 && (f.Radix < 2 || f.Radix > maxRadix) {
		return fabErr("radix", "%d is outside 2..%d", f.Radix, maxRadix)
	}
	if f.NodesPerLeaf < 0 || f.NodesPerLeaf > MaxRanks {
		return fabErr("nodes_per_leaf", "%d is outside 1..%d", f.NodesPerLeaf, MaxRanks)
	}
	for _, o := range []struct {
		v    float64
		what string
	}{{f.Oversubscription, "leaf"}, {f.SpineOversubscription, "spine"}} {
		if math.IsNaN(o.v) || math.IsInf(o.v, 0) || (o.v != 0 && o.v < 1) || o.v > 64 {
			return fabErr("oversubscription", "%s %g is outside 1..64 (down:up; 1 is non-blocking, below 1 would be more uplink than downlink)", o.what, o.v)
		}
	}
	if f.SpineOversubscription != 0 && f.Tiers != 3 {
		return fabErr("oversubscription", "a [leaf, spine] list needs tiers: 3")
	}
	if f.Planes < 0 || f.Planes > 64 {
		return fabErr("planes", "%d is outside 1..64", f.Planes)
	}
	if _, err := ParseRouting(f.Routing); err != nil {
		return fabErr("routing", "%v", err)
	}
	p, err := ParsePlacement(f.Placement)
	if err != nil {
		return fabErr("placement", "%v", err)
	}
	if p == PlacementExplicit && len(f.Slots) == 0 {
		return fabErr("placement", "explicit placement needs the list of node slots")
	}
	if p != PlacementExplicit && len(f.Slots) > 0 {
		return fabErr("placement", "node slots are given but placement is %s", p)
	}
	seen := map[int]bool{}
	for i, s := range f.Slots {
		if s < 0 || s >= MaxRanks {
			return fabItemErr("placement", i, "", "slot %d is outside 0..%d", s, MaxRanks-1)
		}
		if seen[s] {
			return fabItemErr("placement", i, "", "slot %d is given twice", s)
		}
		seen[s] = true
	}
	for i, d := range f.Degraded {
		if strings.TrimSpace(d.Link) == "" {
			return fabItemErr("degraded", i, "link", "missing (e.g. node3/nic2 or leaf1/up0)")
		}
		switch {
		case d.Down && d.Gbps != 0:
			return fabItemErr("degraded", i, "gbps", "a link that is down has no rate")
		case !d.Down && (math.IsNaN(d.Gbps) || math.IsInf(d.Gbps, 0) || d.Gbps <= 0):
			return fabItemErr("degraded", i, "gbps", "%g must be a positive rate in Gb/s (or down: true)", d.Gbps)
		}
	}
	for i, b := range f.Background {
		if _, err := ParseCollective(b.Collective); err != nil {
			return fabItemErr("background", i, "collective", "%v", err)
		}
		if b.Nodes < 1 || b.Nodes > MaxRanks {
			return fabItemErr("background", i, "nodes", "%d is outside 1..%d", b.Nodes, MaxRanks)
		}
		if sz, err := ParseBytes(b.Size); err != nil || sz <= 0 {
			return fabItemErr("background", i, "size", "%q is not a positive size (e.g. 1G)", b.Size)
		}
	}
	if f.SwitchLatencyNs < 0 || f.SwitchLatencyNs > 1e6 || math.IsNaN(f.SwitchLatencyNs) {
		return fabErr("switch_latency_ns", "%g is outside 0..1e6", f.SwitchLatencyNs)
	}
	return nil
}

// SwitchModel is one row of the fabric switch catalog: the port count a
// switch generation offers at one port rate.
type SwitchModel struct {
	Name string
	// Ports is the radix at PortGbps.
	Ports int
	// PortGbps is the port rate.
	PortGbps int
	// Ethernet is true for Ethernet switches (RoCE, TCP, EFA), false for
	// InfiniBand.
	Ethernet bool
	Source   string
}

var switchCatalog = []SwitchModel{
	{"Switch-IB 2 SB7800 (EDR)", 36, 100, false, "assumption: NVIDIA Switch-IB 2 product brief, 36 x EDR 100G ports (not in fabric-facts)"},
	{"Quantum QM8700 (HDR)", 40, 200, false, "fabric-facts §1.1: QM8700 40 x 200G; DeepSeek Fire-Flyer's 800-node zones = 40²/2 (§1.4)"},
	{"Quantum-2 QM9700 (NDR)", 64, 400, false, "fabric-facts §1.1: QM9700 64 NDR 400G ports (NVIDIA datasheet); the DGX SuperPOD B200 switch counts match radix 64 (§1.2)"},
	{"Quantum-X800 Q3400 (XDR)", 144, 800, false, "assumption: NVIDIA Quantum-X800 Q3400 announced with 144 x 800G ports; fabric-facts §1.2 only says B300 SuperPOD implies a radix above 64"},
	{"51.2T Ethernet (800GbE)", 64, 800, true, "fabric-facts §1.1: 51.2 Tb/s single-chip Ethernet (Spectrum-4 class) as 64 x 800G"},
	{"51.2T Ethernet (400GbE)", 128, 400, true, "fabric-facts §1.1: 51.2 Tb/s single-chip Ethernet as 128 x 400G (Alibaba HPN uses 51.2T single-chip tier-1 switches, §1.4)"},
	{"51.2T Ethernet (200GbE)", 256, 200, true, "computed: 51.2 Tb/s / 200G = 256 ports (128 x 400G split in two; assumption that every port splits)"},
}

// DefaultSwitch returns the switch generation whose ports run at portGbps
// on a fabric of NIC kind k: for InfiniBand the Quantum generation of that
// speed (36 x EDR, 40 x HDR, 64 x NDR, 144 x XDR), for Ethernet a 51.2 Tb/s
// single-chip switch (64 x 800G, 128 x 400G, 256 x 200G). Port rates with no
// row (below 100G IB, below 200G Ethernet) take the nearest faster row as an
// assumption: the same chip with split ports at the same port count.
func DefaultSwitch(k NICKind, portGbps float64) SwitchModel {
	eth := k != NICIB
	var best *SwitchModel
	for i := range switchCatalog {
		s := &switchCatalog[i]
		if s.Ethernet != eth {
			continue
		}
		if float64(s.PortGbps) >= portGbps && (best == nil || s.PortGbps < best.PortGbps) {
			best = s
		}
	}
	if best == nil {
		for i := range switchCatalog {
			s := &switchCatalog[i]
			if s.Ethernet == eth && (best == nil || s.PortGbps > best.PortGbps) {
				best = s
			}
		}
	}
	return *best
}

// ParsePCIeGen reads a PCIe generation: "gen4", "Gen5", "4".
func ParsePCIeGen(s string) (int, error) {
	v := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "gen")
	g, err := strconv.Atoi(v)
	if err == nil {
		_, err = LookupPCIe(g)
	}
	if err != nil {
		return 0, fmt.Errorf("unknown PCIe generation %q (known: gen3, gen4, gen5, gen6)", s)
	}
	return g, nil
}
