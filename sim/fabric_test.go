package sim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// fabricEnv builds n DGX H100 nodes with 8 x 400G RoCE on fabric f.
func fabricEnv(t *testing.T, n int, f model.FabricSpec, env ...string) *sim.Env {
	t.Helper()
	spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: n, NICs: "8x400G-roce", Set: env})
	spec.Fabric = f
	return specEnv(t, spec)
}

func ratioWithin(t *testing.T, what string, got, lo, hi float64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s: ratio %.3f, want %.2f..%.2f", what, got, lo, hi)
	}
}

// TestOversubscriptionCapsCrossLeaf: with one node per leaf every
// node-to-node byte crosses the leaf uplinks; at 2:1 they carry half the
// NIC capacity (u = d/2, fabric-facts §1.1), so a forced ring and AlltoAll
// run at about half the non-blocking rate.
func TestOversubscriptionCapsCrossLeaf(t *testing.T) {
	one := model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 1, Routing: "adaptive"}
	two := one
	two.Oversubscription = 2
	ring := []string{"NCCL_ALGO=Ring"}
	a := predict(t, fabricEnv(t, 4, two, ring...), model.AllReduce, sim.EngineDES, "", 1<<30)
	b := predict(t, fabricEnv(t, 4, one, ring...), model.AllReduce, sim.EngineDES, "", 1<<30)
	ratioWithin(t, "ring 2:1 vs 1:1", a.BusBW/b.BusBW, 0.45, 0.56)
	if !strings.Contains(a.Bottleneck, "uplinks") {
		t.Errorf("2:1 ring bottleneck %q, want the leaf uplinks", a.Bottleneck)
	}
	a = predict(t, fabricEnv(t, 4, two), model.AlltoAll, sim.EngineDES, "", 1<<30)
	b = predict(t, fabricEnv(t, 4, one), model.AlltoAll, sim.EngineDES, "", 1<<30)
	ratioWithin(t, "alltoall 2:1 vs 1:1", a.BusBW/b.BusBW, 0.45, 0.6)
}

// TestRoutingOnScatteredRing: a ring whose every inter-node hop crosses
// leaves (scattered placement) runs at full rate with adaptive routing and
// with D-mod-K static routes (congestion-free for this shift), and loses
// most of it to ECMP collisions with one QP: 16 flows hashed over 16
// uplinks and again over 16 downlinks leave the busiest link with ~3
// flows (balls into bins, fabric-facts §2.2), and the ring waits for it.
func TestRoutingOnScatteredRing(t *testing.T) {
	f := model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Placement: "scattered"}
	bw := map[string]float64{}
	for _, rt := range []string{"adaptive", "static", "ecmp"} {
		f.Routing = rt
		bw[rt] = predict(t, fabricEnv(t, 4, f, "NCCL_ALGO=Ring"), model.AllReduce, sim.EngineAnalytic, "", 1<<30).BusBW
	}
	ratioWithin(t, "static vs adaptive", bw["static"]/bw["adaptive"], 0.98, 1.02)
	ratioWithin(t, "ecmp vs adaptive", bw["ecmp"]/bw["adaptive"], 0.15, 0.6)
}

// TestSlowPortBoundsRing: one NIC cable of one node trained at 200G
// instead of 400G bounds every ring channel that crosses it, and the ring
// waits for its slowest channel (fabric-facts §7.3), so busbw falls to
// about half.
func TestSlowPortBoundsRing(t *testing.T) {
	slow := model.FabricSpec{Degraded: []model.DegradedLink{{Link: "node2/nic3", Gbps: 200}}}
	a := predict(t, fabricEnv(t, 4, slow, "NCCL_ALGO=Ring"), model.AllReduce, sim.EngineDES, "", 1<<30)
	b := predict(t, fabricEnv(t, 4, model.FabricSpec{}, "NCCL_ALGO=Ring"), model.AllReduce, sim.EngineDES, "", 1<<30)
	ratioWithin(t, "ring with one 200G port", a.BusBW/b.BusBW, 0.45, 0.6)
	if !strings.Contains(a.Bottleneck, "node2/nic3") {
		t.Errorf("bottleneck %q, want node2/nic3", a.Bottleneck)
	}
}

// TestDeadUplinkRoutedAround: a down leaf uplink is avoided by every
// routing mode; the ring, which needs 8 of the leaf's 16 uplinks, keeps
// its rate.
func TestDeadUplinkRoutedAround(t *testing.T) {
	for _, rt := range []string{"static", "adaptive"} {
		f := model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Routing: rt}
		b := predict(t, fabricEnv(t, 4, f, "NCCL_ALGO=Ring"), model.AllReduce, sim.EngineAnalytic, "", 1<<30)
		f.Degraded = []model.DegradedLink{{Link: "leaf0/up0", Down: true}}
		a := predict(t, fabricEnv(t, 4, f, "NCCL_ALGO=Ring"), model.AllReduce, sim.EngineAnalytic, "", 1<<30)
		ratioWithin(t, rt+": ring with leaf0/up0 down", a.BusBW/b.BusBW, 0.98, 1.02)
	}
}

// TestGen4SlotCapsNIC: a 400G NIC in a PCIe Gen4 x16 slot cannot run at
// 400G: its host link (31.5 GB/s theoretical, ~25 achieved, fabric-facts
// §6.1) bounds a ring across two nodes to about half the Gen5 rate.
func TestGen4SlotCapsNIC(t *testing.T) {
	bw := map[string]float64{}
	for _, gen := range []string{"gen4", "gen5"} {
		spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "8x400G-roce", Set: []string{"NCCL_ALGO=Ring"}})
		spec.Node.NICs.PCIe = gen
		bw[gen] = predict(t, specEnv(t, spec), model.AllReduce, sim.EngineAnalytic, "", 1<<30).BusBW
	}
	ratioWithin(t, "gen4 vs gen5 slot", bw["gen4"]/bw["gen5"], 0.4, 0.7)
}

// TestRailOnlyNeedsPXN: on a rail-only fabric AlltoAll reaches other rails
// through NVLink first (PXN) and runs; with PXN disabled a GPU must send
// from its own rail to another rail, which the fabric cannot carry.
func TestRailOnlyNeedsPXN(t *testing.T) {
	f := model.FabricSpec{Kind: "rail-only"}
	if p := predict(t, fabricEnv(t, 2, f), model.AlltoAll, sim.EngineAnalytic, "", 1<<26); p.BusBW <= 0 {
		t.Errorf("rail-only alltoall with PXN: %v GB/s", p.BusBW)
	}
	e := fabricEnv(t, 2, f, "NCCL_PXN_DISABLE=1")
	d := model.AlgoDirect
	_, err := e.Predict(context.Background(), sim.Request{Coll: model.AlltoAll, Engine: sim.EngineAnalytic, ElemSize: 4, Algo: &d}, 1<<26)
	if err == nil || !strings.Contains(err.Error(), "rail-only") {
		t.Errorf("rail-only alltoall without PXN: %v", err)
	}
}

// TestNonBlockingFabricsMatchSwitch: a non-blocking fat-tree (adaptive or
// static) and a two-plane fabric carry a rail-aligned ring as one
// non-blocking switch does: the extra switch hops cost latency only, which
// is negligible at 1 GiB.
func TestNonBlockingFabricsMatchSwitch(t *testing.T) {
	ring := "NCCL_ALGO=Ring"
	base := predict(t, fabricEnv(t, 4, model.FabricSpec{}, ring), model.AllReduce, sim.EngineDES, "", 1<<30).BusBW
	for _, f := range []model.FabricSpec{
		{Kind: "fat-tree", NodesPerLeaf: 2, Routing: "adaptive"},
		{Kind: "fat-tree", NodesPerLeaf: 2, Routing: "static", Placement: "scattered"},
		{Kind: "rail-optimized", NodesPerLeaf: 2, Routing: "adaptive", Planes: 2},
	} {
		got := predict(t, fabricEnv(t, 4, f, ring), model.AllReduce, sim.EngineDES, "", 1<<30).BusBW
		ratioWithin(t, f.Kind+" "+f.Routing, got/base, 0.985, 1.005)
	}
}

// TestCrossNICRingNICBound: with NCCL's default NCCL_CROSS_NIC=2 a ring
// on DGX H100 nodes leaves each node by its last GPU's own NIC (the model
// package's TestCrossNICRing), so no PXN hop loads NVLink and the ring is
// bound by the NICs. The same ring forced onto one NIC per node
// (NCCL_CROSS_NIC=0) sends its last hop over NVLink to the GPU next to the
// NIC and is NVLink-bound. Published: 2 nodes x 8 H100, NDR400,
// NCCL_ALGO=Ring NCCL_MIN_CTAS=24 NCCL_IB_QPS_PER_CONNECTION=2, 392.7 GB/s
// busbw at 8 GiB (ingest/testdata/raw/nccltests_h100sxm_2x8_ib-ndr400-ring-ctas24-qps2_ncclTests309-aion_1.txt),
// above the 370 GB/s NVLink ceiling of the PXN ring.
func TestCrossNICRingNICBound(t *testing.T) {
	set := []string{"NCCL_ALGO=Ring", "NCCL_MIN_NCHANNELS=24", "NCCL_IB_QPS_PER_CONNECTION=2"}
	for _, eng := range []sim.EngineKind{sim.EngineAnalytic, sim.EngineDES} {
		cross := predict(t, newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, Set: set}), model.AllReduce, eng, "", 1<<30)
		same := predict(t, newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, Set: append(set, "NCCL_CROSS_NIC=0")}), model.AllReduce, eng, "", 1<<30)
		if cross.BottleneckClass != "NIC" || same.BottleneckClass != "NVLink" {
			t.Errorf("%s: bottlenecks %q (crossing) and %q (one NIC), want NIC and NVLink", eng, cross.BottleneckClass, same.BottleneckClass)
		}
		ratioWithin(t, string(eng)+" crossing/one-NIC busbw", cross.BusBW/same.BusBW, 1.02, 1.10)
		ratioWithin(t, string(eng)+" crossing ring against the published 392.7 GB/s", cross.BusBW/392.7, 0.90, 1.0)
	}
}

// TestCrossNICRingsCrossRails: on a rail-optimized fabric NIC i of every
// node of a rail group sits on rail leaf i, and only the spines join the
// rails. Rings that leave a node by another NIC than they entered by (NCCL's
// default NCCL_CROSS_NIC=2 on DGX H100 nodes) cross rails on every network
// hop, so at 2:1 they are bound by the leaves' uplinks and run at about half
// the rate of rings kept on their rails (NCCL_CROSS_NIC=0, the setting
// NCCL's documentation gives for networks with per-NIC switches and a slow
// inter-rail connection), which never leave their rail leaf here.
func TestCrossNICRingsCrossRails(t *testing.T) {
	f := model.FabricSpec{Kind: "rail-optimized", NodesPerLeaf: 2, Oversubscription: 2, Routing: "adaptive"}
	cross := predict(t, fabricEnv(t, 2, f, "NCCL_ALGO=Ring"), model.AllGather, sim.EngineDES, "", 1<<30)
	rail := predict(t, fabricEnv(t, 2, f, "NCCL_ALGO=Ring", "NCCL_CROSS_NIC=0"), model.AllGather, sim.EngineDES, "", 1<<30)
	if !strings.Contains(cross.Bottleneck, "uplinks") || strings.Contains(rail.Bottleneck, "fabric/") {
		t.Errorf("bottlenecks %q (crossing) and %q (on rails), want the leaf uplinks and no fabric link", cross.Bottleneck, rail.Bottleneck)
	}
	ratioWithin(t, "crossing/on-rail AllGather busbw at 2:1", cross.BusBW/rail.BusBW, 0.45, 0.60)
}
