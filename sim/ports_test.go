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
	for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
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
	for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
		a := predict(t, two, model.AllReduce, eng, "nvlstree", 1<<30)
		b := predict(t, one, model.AllReduce, eng, "nvlstree", 1<<30)
		if rel := a.BusBW/b.BusBW - 1; math.Abs(rel) > 0.03 {
			t.Errorf("%s nvlstree 1 GiB on 4 x DGX H100: 16x200G %.1f GB/s, 8x400G %.1f (%+.1f%%)", eng, a.BusBW, b.BusBW, 100*rel)
		}
	}
}
