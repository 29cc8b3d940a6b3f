package sim_test

import (
	"math"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestMultiPortNICsCarryOnEveryPort: a NIC of several ports is one NCCL
// device whose connections open their QPs on every port (NET/IB's merged
// device; connect.cc stripes QP i onto device i mod devices), so the same
// 16 ports of 100G carry the same collective whether NCCL sees 8 merged
// devices of 2 ports (2.27's default) or 16 devices (NCCL_IB_MERGE_NICS=0),
// for the ring (which spreads its channels' QPs) and the tree (one route
// per channel, split over the ports).
func TestMultiPortNICsCarryOnEveryPort(t *testing.T) {
	merged := newEnv(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "16x100G-roce", NCCLVersion: "2.27"})
	apart := newEnv(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "16x100G-roce", NCCLVersion: "2.27", Set: []string{"NCCL_IB_MERGE_NICS=0"}})
	engines := []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic}
	if testing.Short() {
		engines = engines[1:] // the DES of NCCL's own choice below still runs
	}
	for _, eng := range engines {
		for _, algo := range []string{"ring", "tree"} {
			a := predict(t, merged, model.AllReduce, eng, algo, 1<<30)
			b := predict(t, apart, model.AllReduce, eng, algo, 1<<30)
			if rel := a.BusBW/b.BusBW - 1; math.Abs(rel) > 0.03 {
				t.Errorf("%s %s 1 GiB: 8 devices of 2 ports %.1f GB/s, 16 devices %.1f (%+.1f%%)", eng, algo, a.BusBW, b.BusBW, 100*rel)
			}
		}
	}
	// NCCL's own choice on the merged devices at 8 GiB: 8 channels, where
	// the tree's per-channel cap keeps the ring, at its NIC bound (16 x
	// 12.5 GB/s x 0.95 = 190).
	p := predict(t, merged, model.AllReduce, sim.EngineDES, "", 8<<30)
	if p.Choice.Algo != model.AlgoRing || p.BusBW < 0.95*190 || p.BusBW > 190*1.01 {
		t.Errorf("2x BM.GPU4.8 8 GiB: %v at %.1f GB/s, want the ring near 190", p.Choice.Algo, p.BusBW)
	}
	// NVLSTree over 16x 200G on DGX H100 (8 devices of 2 ports) moves what
	// it moves over 8x 400G.
	two := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4, NICs: "16x200G-ib", NCCLVersion: "2.27"})
	one := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4, NICs: "8x400G-ib"})
	for _, eng := range engines {
		a := predict(t, two, model.AllReduce, eng, "nvlstree", 1<<30)
		b := predict(t, one, model.AllReduce, eng, "nvlstree", 1<<30)
		if rel := a.BusBW/b.BusBW - 1; math.Abs(rel) > 0.03 {
			t.Errorf("%s nvlstree 1 GiB on 4 x DGX H100: 16x200G %.1f GB/s, 8x400G %.1f (%+.1f%%)", eng, a.BusBW, b.BusBW, 100*rel)
		}
	}
}

// TestTreeEdgesHashPerChannelAndQP: NCCL opens one connection per channel,
// each with NCCL_IB_QPS_PER_CONNECTION QPs, and an ECMP fabric hashes every
// QP on its own (fabric-facts §2.3), so a tree or NVLSTree edge between two
// nodes is many flows, not one. On 8 DGX H100 across four leaves of an ECMP
// fat-tree, NVLSTree's 8 channels per tree edge used to share the first
// channel's hash: 134 GB/s at 4 GiB against static routing's 297. Spread
// per channel and QP, more QPs lower the busiest link's load (balls into
// bins: the closed form's steady state rises with the QPs; the DES adds
// the credit back-pressure of the links that stay oversubscribed, which
// the README's fabric section describes); with static routing (destination
// mod uplinks) the route does not depend on the QP.
func TestTreeEdgesHashPerChannelAndQP(t *testing.T) {
	if testing.Short() {
		t.Skip("8 nodes x 2 routings x 2 QP counts x 2 engines")
	}
	bw := func(routing string, qps, algo string, eng sim.EngineKind) float64 {
		spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 8, Set: []string{"NCCL_IB_QPS_PER_CONNECTION=" + qps}})
		spec.Fabric = model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Routing: routing}
		return predict(t, specEnv(t, spec), model.AllReduce, eng, algo, 1<<30).BusBW
	}
	for _, algo := range []string{"nvlstree", "tree"} {
		for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
			s1, s4 := bw("static", "1", algo, eng), bw("static", "4", algo, eng)
			if math.Abs(s4/s1-1) > 1e-9 {
				t.Errorf("%s %s static routing: 1 QP %.2f GB/s, 4 QPs %.2f: the QPs should not matter", algo, eng, s1, s4)
			}
			if algo == "nvlstree" {
				if e1 := bw("ecmp", "1", algo, eng); e1 < 0.8*s1 {
					t.Errorf("%s %s ECMP with 1 QP: %.1f GB/s against static %.1f: the channels of an edge should hash apart", algo, eng, e1, s1)
				}
			}
		}
		e1, e4 := bw("ecmp", "1", algo, sim.EngineAnalytic), bw("ecmp", "4", algo, sim.EngineAnalytic)
		if e4 < e1*1.05 {
			t.Errorf("%s analytic ECMP: 1 QP %.1f GB/s, 4 QPs %.1f: more hashed flows should spread the load", algo, e1, e4)
		}
	}
}
