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

// ibSharpEnv builds n DGX H100 nodes with 8 x 400G InfiniBand NDR on a
// SHARP-capable non-blocking fat-tree.
func ibSharpEnv(t *testing.T, n int, env ...string) *sim.Env {
	t.Helper()
	spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: n, NICs: "8x400G-ib", Set: env})
	spec.Fabric = model.FabricSpec{Kind: "fat-tree", Routing: "adaptive", SHARP: true}
	return specEnv(t, spec)
}

// TestCollNetCoreWeave: CoreWeave's 8 x 8 H100 SHARP run through
// nccl-rdma-sharp-plugins measured AllReduce busbw 356 GB/s at 512 MiB
// and 387 GB/s at 8 GiB (coreweave/nccl-tests README; sharp-collnet §1).
// CollNetDirect on a SHARP fabric simulates within 10% of it; the NVLink
// reduce-scatter and all-gather inside the node, not the network, bound it
// (sharp-collnet §3.2).
func TestCollNetCoreWeave(t *testing.T) {
	e := ibSharpEnv(t, 8, "NCCL_COLLNET_ENABLE=1", "NCCL_ALGO=CollNetDirect")
	for _, c := range []struct {
		size model.Bytes
		want float64
	}{{512 << 20, 356}, {8 << 30, 387}} {
		p := predict(t, e, model.AllReduce, sim.EngineDES, "", c.size)
		if p.Choice.Algo != model.AlgoCollNetDirect {
			t.Fatalf("%s: ran %s, want CollNetDirect", model.FormatBytes(c.size), p.Choice.Algo)
		}
		t.Logf("%s: %.1f GB/s (%s)", model.FormatBytes(c.size), p.BusBW, p.Bottleneck)
		ratioWithin(t, "CollNet busbw vs CoreWeave at "+model.FormatBytes(c.size), p.BusBW/c.want, 0.9, 1.1)
		if p.BottleneckClass != "NVLink" {
			t.Errorf("CollNet bottleneck %s (%s), want NVLink", p.Bottleneck, p.BottleneckClass)
		}
	}
}

// TestCollNetChosenAtScale: NCCL's CollNet latency is flat in the node
// count (tuning.cc; sharp-collnet §3.1: 44 us for CollNetDirect against a
// tree's ~260 us at 128 nodes), so with NCCL_COLLNET_ENABLE=1 on a SHARP
// fabric NCCL picks it for mid-size AllReduce at scale and the call is
// faster than without; without the variable, or without sharp: true, it
// is never chosen.
func TestCollNetChosenAtScale(t *testing.T) {
	on := predict(t, ibSharpEnv(t, 64, "NCCL_COLLNET_ENABLE=1"), model.AllReduce, sim.EngineAnalytic, "", 1<<20)
	off := predict(t, ibSharpEnv(t, 64), model.AllReduce, sim.EngineAnalytic, "", 1<<20)
	if a := on.Choice.Algo; a != model.AlgoCollNetDirect && a != model.AlgoCollNetChain {
		t.Errorf("64 nodes, 1 MiB, CollNet enabled: NCCL chose %s", a)
	}
	if a := off.Choice.Algo; a == model.AlgoCollNetDirect || a == model.AlgoCollNetChain {
		t.Errorf("CollNet chosen without NCCL_COLLNET_ENABLE")
	}
	t.Logf("1 MiB on 64 nodes: %s %.1f us, %s %.1f us", on.Choice.Algo, on.TimeUs, off.Choice.Algo, off.TimeUs)
	if on.TimeUs >= off.TimeUs {
		t.Errorf("CollNet %.1f us is not faster than %s %.1f us", on.TimeUs, off.Choice.Algo, off.TimeUs)
	}
	spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 64, NICs: "8x400G-ib", Set: []string{"NCCL_COLLNET_ENABLE=1"}})
	spec.Fabric = model.FabricSpec{Kind: "fat-tree", Routing: "adaptive"}
	if p := predict(t, specEnv(t, spec), model.AllReduce, sim.EngineAnalytic, "", 1<<20); p.Choice.Algo == model.AlgoCollNetDirect || p.Choice.Algo == model.AlgoCollNetChain {
		t.Errorf("CollNet chosen on a fabric without SHARP")
	}
}
