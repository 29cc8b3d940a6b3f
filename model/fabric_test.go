package model

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// fabNode is a node of g H100 GPUs on one NVSwitch, GPU i and NIC i under
// PCIe switch i, with g NICs of the given speed and kind.
func fabNode(g int, speed, kind string) NodeSpec {
	var sws []BridgeSpec
	for i := 0; i < g; i++ {
		sws = append(sws, BridgeSpec{GPUs: []int{i}, NICs: []int{i}})
	}
	return NodeSpec{
		Name: "fab", GPU: "H100-SXM", GPUs: g, CPU: "intel",
		Sockets: []SocketSpec{{HostBridges: []BridgeSpec{{Switches: sws}}}},
		NVLink:  NVLinkSpec{Kind: "nvswitch"},
		NICs:    NICSpec{Count: g, Speed: speed, Kind: kind},
	}
}

func plan(t *testing.T, f FabricSpec, nodes, nics int, k NICKind, gbps float64) *FabricPlan {
	t.Helper()
	p, err := PlanFabric(f, nodes, nics, 1, k, gbps)
	if err != nil {
		t.Fatalf("%+v: %v", f, err)
	}
	return p
}

// TestSuperPODCounts: a rail-optimized fabric of 64-port NDR switches with
// 32-node rail groups reproduces the DGX SuperPOD component table
// (docs.nvidia.com DGX SuperPOD B200 RA "DGX SuperPOD Architecture" table,
// quoted in fabric-facts §1.2): leaves, spines, cores and cable counts.
func TestSuperPODCounts(t *testing.T) {
	for _, c := range []struct {
		nodes, tiers                                      int
		leaf, spine, core, nodeLeaf, leafSpine, spineCore int
	}{
		{64, 2, 16, 8, 0, 512, 512, 0},
		{128, 2, 32, 16, 0, 1024, 1024, 0},
		{256, 2, 64, 32, 0, 2048, 2048, 0},
		{512, 3, 128, 128, 64, 4096, 4096, 4096},
		{1024, 3, 256, 256, 128, 8192, 8192, 8192},
		{2048, 3, 512, 512, 256, 16384, 16384, 16384},
	} {
		p := plan(t, FabricSpec{Kind: "rail-optimized", Tiers: c.tiers, NodesPerLeaf: 32}, c.nodes, 8, NICIB, 400)
		nl, ls, sc := p.LinkCounts()
		if p.Radix != 64 || p.Leaves != c.leaf || p.Spines() != c.spine || p.Cores() != c.core || nl != c.nodeLeaf || ls != c.leafSpine || sc != c.spineCore {
			t.Errorf("%d nodes: radix %d, %d leaves, %d spines, %d cores, cables %d/%d/%d; want %+v", c.nodes, p.Radix, p.Leaves, p.Spines(), p.Cores(), nl, ls, sc, c)
		}
	}
}

// TestFoldedClosFormulas: full non-blocking trees of radix k hold k²/2
// endpoints with 1.5k switches in two tiers and k³/4 with 5k²/4 switches in
// three (fabric-facts §1.1); one endpoint more is a radix error.
func TestFoldedClosFormulas(t *testing.T) {
	for _, k := range []int{16, 64} {
		p := plan(t, FabricSpec{Kind: "fat-tree", Radix: k}, k*k/2, 1, NICIB, 400)
		if p.Switches() != 3*k/2 || p.NodesPerLeaf != k/2 {
			t.Errorf("k=%d two tiers: %d switches, %d per leaf; want %d, %d", k, p.Switches(), p.NodesPerLeaf, 3*k/2, k/2)
		}
		if got, want := p.BisectionGbps(), float64(k*k/2)*400/2; got != want {
			t.Errorf("k=%d: bisection %g Gb/s, want N·c/2 = %g", k, got, want)
		}
		_, err := PlanFabric(FabricSpec{Kind: "fat-tree", Radix: k}, k*k/2+1, 1, 1, NICIB, 400)
		var fe *FabricError
		if !errors.As(err, &fe) || fe.Key != "radix" {
			t.Errorf("k=%d: %d endpoints in two tiers: want a radix error, got %v", k, k*k/2+1, err)
		}
	}
	k := 16
	p := plan(t, FabricSpec{Kind: "fat-tree", Tiers: 3, Radix: k}, k*k*k/4, 1, NICIB, 400)
	if p.Switches() != 5*k*k/4 || p.Cores() != k*k/4 {
		t.Errorf("k=%d three tiers: %d switches (%d cores), want %d (%d)", k, p.Switches(), p.Cores(), 5*k*k/4, k*k/4)
	}
	if got, want := p.BisectionGbps(), float64(k*k*k/4)*400/2; got != want {
		t.Errorf("three tiers: bisection %g, want %g", got, want)
	}
}

// TestOversubscriptionArithmetic: r:1 at the leaf means u = ceil(d/r)
// uplinks carrying d/r ports' worth, so the bisection is N·c/(2r).
func TestOversubscriptionArithmetic(t *testing.T) {
	for _, c := range []struct {
		r  float64
		up int
	}{{1, 32}, {2, 16}, {3, 11}, {4, 8}} {
		p := plan(t, FabricSpec{Kind: "fat-tree", NodesPerLeaf: 4, Oversubscription: c.r}, 32, 8, NICRoCE, 400)
		if p.LeafDown != 32 || p.LeafUp != c.up {
			t.Errorf("%g:1: %d down %d up, want 32 down %d up", c.r, p.LeafDown, p.LeafUp, c.up)
		}
		if got := float64(p.LeafUp) * p.UpGbps; math.Abs(got-32*400/c.r) > 1e-6 {
			t.Errorf("%g:1: uplink capacity %g Gb/s, want %g", c.r, got, 32*400/c.r)
		}
		if got, want := p.BisectionGbps(), 32*8*400/(2*c.r); math.Abs(got-want) > 1e-6 {
			t.Errorf("%g:1: bisection %g, want %g", c.r, got, want)
		}
	}
	p := plan(t, FabricSpec{Kind: "fat-tree", Tiers: 3, Radix: 16, Oversubscription: 1, SpineOversubscription: 3}, 1024, 1, NICIB, 400)
	if p.SpineUp == 0 || math.Abs(float64(p.SpineUp)*p.SpineUpGbps-float64(p.LeavesPerPod)*p.UpGbps/3) > 1e-6 {
		t.Errorf("3:1 spines: %d uplinks of %g Gb/s for %d leaves per pod", p.SpineUp, p.SpineUpGbps, p.LeavesPerPod)
	}
}

// TestDefaultRadix: the default switch follows the NIC generation.
func TestDefaultRadix(t *testing.T) {
	for _, c := range []struct {
		k     NICKind
		gbps  float64
		ports int
	}{{NICIB, 400, 64}, {NICIB, 200, 40}, {NICIB, 100, 36}, {NICIB, 800, 144}, {NICRoCE, 400, 128}, {NICRoCE, 800, 64}, {NICRoCE, 200, 256}} {
		if s := DefaultSwitch(c.k, c.gbps); s.Ports != c.ports || s.Source == "" {
			t.Errorf("%s %gG: %d ports (%q), want %d", c.k, c.gbps, s.Ports, s.Source, c.ports)
		}
	}
}

func TestFabricSpecErrors(t *testing.T) {
	for _, c := range []struct {
		f     FabricSpec
		nodes int
		key   string
		msg   string
	}{
		{FabricSpec{Kind: "torus"}, 4, "kind", "unknown"},
		{FabricSpec{Kind: "fat-tree", Routing: "spray"}, 4, "routing", "unknown \"spray\""},
		{FabricSpec{Kind: "fat-tree", Oversubscription: 0.5}, 4, "oversubscription", "below 1"},
		{FabricSpec{Kind: "fat-tree", Radix: 16, NodesPerLeaf: 4}, 8, "radix", "cannot hold 32 down + 32 up"},
		{FabricSpec{Kind: "fat-tree", Radix: 8}, 4, "radix", "cannot hold one node's 8 ports"},
		{FabricSpec{Kind: "fat-tree", Radix: 16}, 200, "radix", "two tiers of 16-port switches join at most 16 leaves"},
		{FabricSpec{Kind: "single-switch", Radix: 16}, 4, "radix", "cannot hold 4 nodes x 8"},
		{FabricSpec{Kind: "fat-tree", Planes: 3}, 4, "planes", "do not split evenly"},
		{FabricSpec{Kind: "fat-tree", Tiers: 4}, 4, "tiers", "not 2 or 3"},
		{FabricSpec{Kind: "fat-tree", Placement: "random"}, 4, "placement", "unknown"},
		{FabricSpec{Kind: "fat-tree", Placement: "explicit", Slots: []int{0, 1}}, 4, "placement", "2 node slots for 4 nodes"},
		{FabricSpec{Kind: "fat-tree", Degraded: []DegradedLink{{Link: "leaf1/up0", Gbps: math.NaN()}}}, 4, "degraded", "positive rate"},
		{FabricSpec{Kind: "fat-tree", Background: []BackgroundJob{{Collective: "alltoall", Nodes: 2, Size: "huge"}}}, 4, "background", "not a positive size"},
		{FabricSpec{Kind: "fat-tree", Background: []BackgroundJob{{Collective: "alltoall", Nodes: 9, Size: "1G"}}}, 4, "background", "more than the cluster's 4 nodes"},
		{FabricSpec{Kind: "fat-tree", Background: []BackgroundJob{{Collective: "gather", Nodes: 2, Size: "1G"}}}, 4, "background", "unknown collective"},
	} {
		_, err := PlanFabric(c.f, c.nodes, 8, 1, NICRoCE, 400)
		var fe *FabricError
		if !errors.As(err, &fe) || fe.Key != c.key || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: got %v, want a %s error with %q", c.f, err, c.key, c.msg)
		}
	}
}

func buildFab(t *testing.T, spec ClusterSpec) *Cluster {
	t.Helper()
	c, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDegradedLinks(t *testing.T) {
	base := ClusterSpec{Node: fabNode(2, "400G", "roce"), Nodes: 4}
	// A name that does not exist.
	s := base
	s.Fabric = FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Degraded: []DegradedLink{{Link: "leaf9/up0", Down: true}}}
	if _, err := s.Build(); err == nil || !strings.Contains(err.Error(), "degraded[0].link: leaf9/up0 does not exist") {
		t.Errorf("missing leaf: %v", err)
	}
	s.Fabric.Degraded = []DegradedLink{{Link: "node7/nic0", Gbps: 100}}
	if _, err := s.Build(); err == nil || !strings.Contains(err.Error(), "node7/nic0/port0 does not exist") {
		t.Errorf("missing node: %v", err)
	}
	// A slow NIC port keeps its cable at the degraded rate.
	s.Fabric.Degraded = []DegradedLink{{Link: "node3/nic1", Gbps: 200}}
	c := buildFab(t, s)
	l := c.Topo.Out[c.Nodes[3].NICs[1]]
	found := false
	for _, id := range l {
		if c.Topo.Links[id].Kind == LinkNet {
			found = true
			if c.Topo.Links[id].BW != 25 {
				t.Errorf("node3/nic1 at 200G: %g GB/s, want 25", c.Topo.Links[id].BW)
			}
		}
	}
	if !found || c.Fabric.Symmetric() {
		t.Errorf("degraded fabric: cable found %v, symmetric %v", found, c.Fabric.Symmetric())
	}
	// Above the nominal rate.
	s.Fabric.Degraded = []DegradedLink{{Link: "node3/nic1", Gbps: 800}}
	if _, err := s.Build(); err == nil || !strings.Contains(err.Error(), "degraded[0].gbps: 800 is above") {
		t.Errorf("faster than nominal: %v", err)
	}
	// Every uplink of leaf 0 down: its nodes are cut off.
	var all []DegradedLink
	for j := 0; j < 4; j++ {
		all = append(all, DegradedLink{Link: "leaf0/up" + string(rune('0'+j)), Down: true})
	}
	s.Fabric.Degraded = all
	if _, err := s.Build(); err == nil || !strings.Contains(err.Error(), "no longer connects") {
		t.Errorf("leaf0 cut off: %v", err)
	}
}

// routeFab builds nodes single-NIC nodes, 8 per leaf, on two leaves joined
// by 8 uplinks each (1:1), so cross-leaf flows choose among 8 links.
func routeFab(t *testing.T, routing string, deg []DegradedLink) *Cluster {
	return buildFab(t, ClusterSpec{Node: fabNode(1, "400G", "roce"), Nodes: 16,
		Fabric: FabricSpec{Kind: "fat-tree", Radix: 16, NodesPerLeaf: 8, Routing: routing, Degraded: deg}})
}

// shiftLoads routes the shift permutation node i -> node 8+i with qps QPs
// each and returns the flow count on each of leaf 0's uplinks.
func shiftLoads(t *testing.T, c *Cluster, qps int) map[LinkID]int {
	t.Helper()
	loads := map[LinkID]int{}
	for i := 0; i < 8; i++ {
		for q := 0; q < qps; q++ {
			r, err := c.Fabric.Route(FlowKey{SrcNIC: c.Nodes[i].NICs[0], DstNIC: c.Nodes[8+i].NICs[0], SrcGPU: c.Nodes[i].GPUs[0], DstGPU: c.Nodes[8+i].GPUs[0], QP: q})
			if err != nil {
				t.Fatal(err)
			}
			if len(r) != 4 {
				t.Fatalf("cross-leaf route of %d links, want cable, up, down, cable", len(r))
			}
			loads[r[1]]++
		}
	}
	return loads
}

func maxLoad(m map[LinkID]int) int {
	x := 0
	for _, v := range m {
		x = max(x, v)
	}
	return x
}

// TestStaticRoutingDModK: destination-based routing sends the shift
// permutation over distinct uplinks (D-mod-K is congestion-free for
// shifts, fabric-facts §2.4), is the same for every seed, and more QPs do
// not spread it (all QPs to one destination share its path).
func TestStaticRoutingDModK(t *testing.T) {
	c := routeFab(t, "static", nil)
	a := shiftLoads(t, c, 1)
	c.Fabric.Seed = 99
	b := shiftLoads(t, c, 4)
	if len(a) != 8 || maxLoad(a) != 1 {
		t.Errorf("static shift: %d uplinks used, max load %d; want 8, 1", len(a), maxLoad(a))
	}
	if len(b) != 8 || maxLoad(b) != 4 {
		t.Errorf("static with 4 QPs: %d uplinks, max %d; want 8 uplinks with 4 flows each", len(b), maxLoad(b))
	}
}

// TestECMPBallsIntoBins: ECMP collisions follow the balls-into-bins
// statistics: the mean over seeds of the busiest uplink's flow count for 8
// flows on 8 links is 2.60, for 32 flows (4 QPs) 7.05 (fabric-facts §2.2
// Monte Carlo table), so the collective's efficiency k/m/E[max] rises from
// 0.39 to 0.57 with QP scaling.
func TestECMPBallsIntoBins(t *testing.T) {
	c := routeFab(t, "ecmp", nil)
	seeds := 3000
	if testing.Short() {
		seeds = 1500
	}
	for _, q := range []struct {
		qps  int
		want float64
	}{{1, 2.60}, {4, 7.05}} {
		sum := 0
		for s := 0; s < seeds; s++ {
			c.Fabric.Seed = uint64(s)
			sum += maxLoad(shiftLoads(t, c, q.qps))
		}
		mean := float64(sum) / float64(seeds)
		if math.Abs(mean-q.want) > 0.08 {
			t.Errorf("%d QPs: E[max load] %.3f over %d seeds, want %.2f", q.qps, mean, seeds, q.want)
		}
	}
	// Same seed, same routes.
	c.Fabric.Seed = 7
	a := shiftLoads(t, c, 1)
	b := shiftLoads(t, c, 1)
	for l, v := range a {
		if b[l] != v {
			t.Fatal("ECMP routes differ for one seed")
		}
	}
}

// TestAdaptiveBundles: adaptive routes cross the leaf's uplink bundle,
// whose members are all 8 uplinks.
func TestAdaptiveBundles(t *testing.T) {
	c := routeFab(t, "adaptive", nil)
	loads := shiftLoads(t, c, 1)
	if len(loads) != 1 {
		t.Fatalf("adaptive: %d distinct first hops, want one bundle", len(loads))
	}
	for l := range loads {
		b := int(l - c.Fabric.BundleBase())
		if b < 0 || b >= len(c.Fabric.Bundles()) || len(c.Fabric.Bundles()[b].Links) != 8 {
			t.Errorf("first hop %d is not an 8-link bundle", l)
		}
	}
}

// TestDeadUplinkAvoided: with leaf0/up3 down no route uses it, every
// destination is still reached, and ECMP spreads over the other 7.
func TestDeadUplinkAvoided(t *testing.T) {
	for _, rt := range []string{"static", "ecmp", "adaptive"} {
		c := routeFab(t, rt, []DegradedLink{{Link: "leaf0/up3", Down: true}})
		used := map[LinkID]bool{}
		for s := 0; s < 50; s++ {
			c.Fabric.Seed = uint64(s)
			for l := range shiftLoads(t, c, 2) {
				used[l] = true
			}
		}
		if rt == "adaptive" {
			for l := range used {
				if n := len(c.Fabric.Bundles()[l-c.Fabric.BundleBase()].Links); n != 7 {
					t.Errorf("adaptive: bundle of %d links, want 7", n)
				}
			}
			continue
		}
		want := 7
		if rt == "static" {
			want = 7 // 8 destinations mod 7 live uplinks
		}
		if len(used) != want {
			t.Errorf("%s: %d uplinks used, want %d", rt, len(used), want)
		}
	}
}

// TestRailsAndPlanes: rail-optimized fabrics join rails through spines;
// rail-only fabrics do not (cross-rail traffic needs NVLink); with two
// planes a single-port NIC reaches only NICs of its plane, and a dual-port
// NIC has a cable on each plane.
func TestRailsAndPlanes(t *testing.T) {
	node := fabNode(2, "400G", "roce")
	c := buildFab(t, ClusterSpec{Node: node, Nodes: 4, Fabric: FabricSpec{Kind: "rail-optimized", NodesPerLeaf: 2}})
	if r, err := c.Fabric.Route(FlowKey{SrcNIC: c.Nodes[0].NICs[0], DstNIC: c.Nodes[1].NICs[1]}); err != nil || len(r) != 4 {
		t.Errorf("rail-optimized cross-rail: %v %v", r, err)
	}
	if r, err := c.Fabric.Route(FlowKey{SrcNIC: c.Nodes[0].NICs[0], DstNIC: c.Nodes[1].NICs[0]}); err != nil || len(r) != 2 {
		t.Errorf("rail-optimized same rail, same group: %v %v (want one leaf)", r, err)
	}
	c = buildFab(t, ClusterSpec{Node: node, Nodes: 4, Fabric: FabricSpec{Kind: "rail-only"}})
	if c.Fabric.Plan.Spines() != 0 || c.Fabric.Plan.Leaves != 2 {
		t.Errorf("rail-only on 4 nodes: %d leaves %d spines, want one switch per rail", c.Fabric.Plan.Leaves, c.Fabric.Plan.Spines())
	}
	_, err := c.Fabric.Route(FlowKey{SrcNIC: c.Nodes[0].NICs[0], DstNIC: c.Nodes[1].NICs[1]})
	if !errors.Is(err, ErrNoPath) || !strings.Contains(err.Error(), "rail-only") {
		t.Errorf("rail-only cross-rail: %v", err)
	}
	c = buildFab(t, ClusterSpec{Node: node, Nodes: 4, Fabric: FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Planes: 2}})
	if _, err := c.Fabric.Route(FlowKey{SrcNIC: c.Nodes[0].NICs[0], DstNIC: c.Nodes[3].NICs[1]}); !errors.Is(err, ErrNoPath) {
		t.Errorf("two planes, nic0 -> nic1: %v", err)
	}
	if c.Fabric.Plan.Leaves != 2 || c.Fabric.Plan.Switches() != 2*(2+c.Fabric.Plan.Spines()) {
		t.Errorf("two planes: %d leaves per plane, %d switches", c.Fabric.Plan.Leaves, c.Fabric.Plan.Switches())
	}
	dual := node
	dual.NICs.Ports = 2
	c = buildFab(t, ClusterSpec{Node: dual, Nodes: 4, Fabric: FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Planes: 2}})
	// A connection opens a QP on each port (NCCL stripes QP i onto port
	// i mod ports, net_ib/connect.cc): its QPs 0 and 1 leave by the two
	// ports, and QP 0 of every channel by port 0.
	r0, err0 := c.Fabric.Route(FlowKey{SrcNIC: c.Nodes[0].NICs[0], DstNIC: c.Nodes[3].NICs[0], Channel: 0, QP: 0})
	r1, err1 := c.Fabric.Route(FlowKey{SrcNIC: c.Nodes[0].NICs[0], DstNIC: c.Nodes[3].NICs[0], Channel: 0, QP: 1})
	if err0 != nil || err1 != nil || r0[0] == r1[0] {
		t.Errorf("dual-port NIC over two planes: QPs 0 and 1 leave by %v and %v (%v %v)", r0, r1, err0, err1)
	}
	if r, err := c.Fabric.Route(FlowKey{SrcNIC: c.Nodes[0].NICs[0], DstNIC: c.Nodes[3].NICs[0], Channel: 1, QP: 0}); err != nil || r[0] != r0[0] {
		t.Errorf("dual-port NIC: QP 0 of channel 1 leaves by %v, QP 0 of channel 0 by %v (%v)", r, r0, err)
	}
	if bw := c.Topo.Links[r0[0]].BW; bw != 25 {
		t.Errorf("a 400G NIC's port of two: %g GB/s, want 25", bw)
	}
}

// TestPlacement: scattered placement puts consecutive nodes under
// different leaves; explicit slots are honoured.
func TestPlacement(t *testing.T) {
	node := fabNode(1, "400G", "roce")
	leafOf := func(c *Cluster, n int) string {
		for _, l := range c.Topo.Out[c.Nodes[n].NICs[0]] {
			if c.Topo.Links[l].Kind == LinkNet {
				return c.Topo.Elem(c.Topo.Links[l].To).Name
			}
		}
		return ""
	}
	c := buildFab(t, ClusterSpec{Node: node, Nodes: 8, Fabric: FabricSpec{Kind: "fat-tree", NodesPerLeaf: 4, Placement: "scattered"}})
	if leafOf(c, 0) == leafOf(c, 1) || leafOf(c, 0) != leafOf(c, 2) {
		t.Errorf("scattered: nodes 0,1,2 under %s %s %s", leafOf(c, 0), leafOf(c, 1), leafOf(c, 2))
	}
	c = buildFab(t, ClusterSpec{Node: node, Nodes: 2, Fabric: FabricSpec{Kind: "fat-tree", NodesPerLeaf: 4, Placement: "explicit", Slots: []int{1, 9}}})
	if leafOf(c, 0) != "fabric/leaf0" || leafOf(c, 1) != "fabric/leaf2" || c.Fabric.Plan.Leaves != 3 {
		t.Errorf("explicit slots 1, 9: %s %s, %d leaves", leafOf(c, 0), leafOf(c, 1), c.Fabric.Plan.Leaves)
	}
}

// TestGen4SlotCapsNIC: a 400G NIC in a PCIe Gen4 x16 slot is held to the
// slot's 31.5 GB/s (fabric-facts §6.1), below its 50 GB/s line rate.
func TestGen4SlotCapsNIC(t *testing.T) {
	node := fabNode(1, "400G", "roce")
	node.NICs.PCIe = "gen4"
	c := buildFab(t, ClusterSpec{Node: node, Nodes: 2})
	nic := c.Topo.Elem(c.Nodes[0].NICs[0])
	if nic.NIC.PCIeGen != 4 || nic.NIC.HostCapGBps() != 31.5 {
		t.Errorf("gen4 slot: gen %d, cap %g GB/s, want 4, 31.5", nic.NIC.PCIeGen, nic.NIC.HostCapGBps())
	}
	for _, l := range c.Topo.Out[nic.ID] {
		if c.Topo.Links[l].Kind == LinkPCIe && c.Topo.Links[l].BW != 31.5 {
			t.Errorf("NIC PCIe link %g GB/s, want 31.5", c.Topo.Links[l].BW)
		}
	}
	node.NICs.PCIe = "gen9"
	if _, err := (ClusterSpec{Node: node, Nodes: 2}).Build(); err == nil || !strings.Contains(err.Error(), "nics.pcie") {
		t.Errorf("gen9: %v", err)
	}
}

func TestRoCEValidate(t *testing.T) {
	r := DefaultRoCE()
	r.LossRate = math.NaN()
	if err := r.Validate(); err == nil {
		t.Error("NaN loss rate accepted")
	}
	r = DefaultRoCE()
	r.Retransmit = "go-back-2"
	if err := r.Validate(); err == nil {
		t.Error("unknown retransmit accepted")
	}
	r = DefaultRoCE()
	r.ECN = false
	if err := r.Validate(); err == nil {
		t.Error("DCQCN without ECN accepted")
	}
}

// TestThreeTierRoutes: between pods a route climbs leaf -> spine -> core
// and descends core -> spine -> leaf; adaptive routes cross the leaf, pod
// and destination bundles; a down spine uplink is avoided.
func TestThreeTierRoutes(t *testing.T) {
	node := fabNode(1, "400G", "ib")
	for _, rt := range []string{"static", "ecmp", "adaptive"} {
		// Radix 8: 4 nodes per leaf, 4 leaves per pod, 32 nodes = 2 pods.
		c := buildFab(t, ClusterSpec{Node: node, Nodes: 32, Fabric: FabricSpec{Kind: "fat-tree", Tiers: 3, Radix: 8, Routing: rt,
			Degraded: []DegradedLink{{Link: "spine0/up0", Down: true}}}})
		p := c.Fabric.Plan
		if p.Pods != 2 || p.Leaves != 8 || p.Spines() != 8 || p.Cores() != 4 {
			t.Fatalf("radix-8 3-tier on 32 nodes: %d pods %d leaves %d spines %d cores", p.Pods, p.Leaves, p.Spines(), p.Cores())
		}
		// Spine uplinks: 4 parallel links from spine0 to core0 (one core per
		// group at radix 8), one of them down.
		sp0, _ := c.Topo.ByName("fabric/spine0")
		core0, _ := c.Topo.ByName("fabric/core0")
		n := 0
		for _, l := range c.Topo.Out[sp0] {
			if c.Topo.Links[l].To == core0 {
				n++
			}
		}
		if n != 3 {
			t.Errorf("%s: %d links spine0 -> core0, want 3 of 4 with spine0/up0 down", rt, n)
		}
		for s := 0; s < 20; s++ {
			c.Fabric.Seed = uint64(s)
			r, err := c.Fabric.Route(FlowKey{SrcNIC: c.Nodes[0].NICs[0], DstNIC: c.Nodes[31].NICs[0], QP: s})
			if err != nil || len(r) != 6 {
				t.Fatalf("%s: inter-pod route %v %v, want 6 hops", rt, r, err)
			}
			if rt == "adaptive" {
				for _, l := range r[1:5] {
					if l < c.Fabric.BundleBase() {
						t.Errorf("adaptive hop %d is not a bundle", l)
					}
				}
				continue
			}
			tiers := []string{"nic", "leaf", "spine", "core", "spine", "leaf", "nic"}
			for i, l := range r {
				if name := c.Topo.Elem(c.Topo.Links[l].To).Name; !strings.Contains(name, tiers[i+1]) {
					t.Errorf("%s hop %d ends at %s, want a %s", rt, i, name, tiers[i+1])
				}
			}
		}
	}
}

// TestFabricLinkLayer: the fabric records its link layer and RoCE settings
// and the tier of each switch, for the physics that depends on them.
func TestFabricLinkLayer(t *testing.T) {
	node := fabNode(1, "400G", "roce")
	roce := DefaultRoCE()
	roce.PFC = false
	node.NICs.RoCE = &roce
	c := buildFab(t, ClusterSpec{Node: node, Nodes: 8, Fabric: FabricSpec{Kind: "fat-tree", NodesPerLeaf: 4}})
	if c.Fabric.LinkLayer != NICRoCE || c.Fabric.RoCE.PFC || c.Fabric.Plan.Routing != RoutingECMP {
		t.Errorf("link layer %s, PFC %v, routing %s; want roce, false, ecmp", c.Fabric.LinkLayer, c.Fabric.RoCE.PFC, c.Fabric.Plan.Routing)
	}
	sp, _ := c.Topo.ByName("fabric/spine0")
	if tier, _, ok := c.Fabric.SwitchTier(sp); !ok || tier != 1 {
		t.Errorf("spine0 tier %d %v", tier, ok)
	}
	if _, _, ok := c.Fabric.SwitchTier(c.Nodes[0].NICs[0]); ok {
		t.Error("a NIC reported as a switch")
	}
}

// TestStaticShiftOnParallelLinks: with parallel leaf-spine links (radix 16,
// 8 uplinks per leaf over 4 spines) a scattered rail-aligned ring (node n ->
// n+1 on every rail) loads no link with two flows under static routing: the
// up-port is the destination mod 8 and the down link mirrors the up link's
// parallel rank (D-mod-K is congestion-free for shifts, fabric-facts §2.4).
func TestStaticShiftOnParallelLinks(t *testing.T) {
	c := buildFab(t, ClusterSpec{Node: fabNode(2, "400G", "ib"), Nodes: 32,
		Fabric: FabricSpec{Kind: "rail-optimized", Radix: 16, Routing: "static", Placement: "scattered"}})
	if p := c.Fabric.Plan; p.Leaves != 8 || p.Spines() != 4 || p.LeafUp != 8 {
		t.Fatalf("%d leaves, %d spines, %d uplinks", p.Leaves, p.Spines(), p.LeafUp)
	}
	load := map[LinkID]int{}
	for n := 0; n < 32; n++ {
		for nic := 0; nic < 2; nic++ {
			r, err := c.Fabric.Route(FlowKey{SrcNIC: c.Nodes[n].NICs[nic], DstNIC: c.Nodes[(n+1)%32].NICs[nic]})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range r {
				load[l]++
			}
		}
	}
	if m := maxLoad(load); m != 1 {
		t.Errorf("static shift: busiest link carries %d flows, want 1", m)
	}
}
