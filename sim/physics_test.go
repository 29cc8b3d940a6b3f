package sim_test

import (
	"fmt"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// seededBusBW is the ring AllReduce busbw at 1 GiB on n DGX H100 nodes
// with 8 x 400G RoCE on fabric f with ECMP seed s.
func seededBusBW(t *testing.T, n int, f model.FabricSpec, seed uint64, eng sim.EngineKind, env ...string) float64 {
	t.Helper()
	spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: n, NICs: "8x400G-roce", Set: env})
	spec.Fabric = f
	spec.Seed = seed
	return predict(t, specEnv(t, spec), model.AllReduce, eng, "", 1<<30).BusBW
}

// TestQPsRecoverECMPLoss: on a scattered ring every inter-node hop crosses
// the leaves; ECMP hashes each QP onto an uplink and a downlink, and the
// ring waits for its busiest link. Balls into bins (ecmp-pfc-loss §1,
// exact E[max load]) says k flows on m links run at (k/m)/E[max]: 0.385
// for 8 on 8, 0.476 (Q=2), 0.568 (Q=4), 0.654 (Q=8) — more QPs per
// connection recover part of the loss, never all of it. Averaged over
// seeds the simulated ratios to adaptive routing must rise with Q and
// stay below 1.
func TestQPsRecoverECMPLoss(t *testing.T) {
	f := model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Placement: "scattered", Routing: "adaptive"}
	ad := seededBusBW(t, 4, f, 1, sim.EngineAnalytic, "NCCL_ALGO=Ring")
	f.Routing = "ecmp"
	prev, first := 0.0, 0.0
	for _, q := range []int{1, 2, 4, 8} {
		var sum float64
		const seeds = 6
		for s := uint64(1); s <= seeds; s++ {
			sum += seededBusBW(t, 4, f, s, sim.EngineAnalytic, "NCCL_ALGO=Ring", fmt.Sprintf("NCCL_IB_QPS_PER_CONNECTION=%d", q))
		}
		r := sum / seeds / ad
		t.Logf("Q=%d ecmp/adaptive %.3f", q, r)
		if r <= prev || r >= 1 {
			t.Errorf("Q=%d: ecmp/adaptive %.3f, want above Q/2's %.3f and below 1", q, r, prev)
		}
		if q == 1 {
			first = r
		}
		prev = r
	}
	// Balls into bins: 8 QPs lift 8-on-8 from 0.385 to 0.654, x1.70.
	ratioWithin(t, "Q=8 over Q=1", prev/first, 1.4, 2.2)
}
