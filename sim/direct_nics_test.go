package sim_test

import (
	"context"
	"math"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestP2PSpreadsTiedNICs: NCCL gives a GPU's point-to-point operations
// the NIC at its device index among the NICs tied closest to it
// (ncclTopoGetLocalNet, src/graph/topo.cc). On a DGX A100, GPUs 0 and 1
// share one PCIe complex with NICs 0 and 1, and so on: with 8 NICs every
// GPU has its own, with 4 two GPUs share one. AlltoAll then crosses all 8
// NICs; taking the first tied NIC for every GPU left NICs 1, 3, 5 and 7
// idle and gave 8 NICs the 4-NIC result (22.25 GB/s busbw at 1 GiB).
func TestP2PSpreadsTiedNICs(t *testing.T) {
	ctx := context.Background()
	busbw := map[string]float64{}
	for _, tc := range []struct {
		nics     string
		distinct int
	}{{"4x200G-ib", 4}, {"8x200G-ib", 8}} {
		e := newEnv(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: tc.nics})
		seen := map[model.ElemID]bool{}
		for _, g := range e.Cluster.Nodes[0].GPUs {
			np := e.Res.LocalNet(g)
			if np == nil {
				t.Fatalf("%s: GPU %d has no local net", tc.nics, g)
			}
			if best := e.Res.LocalNICs(g)[0]; np.DirectType != best.DirectType || np.NCCLBW != best.NCCLBW {
				t.Errorf("%s: GPU %d given a NIC farther than its closest", tc.nics, g)
			}
			seen[np.NIC] = true
		}
		if len(seen) != tc.distinct {
			t.Errorf("%s: the 8 GPUs' p2p operations use %d NICs, want %d", tc.nics, len(seen), tc.distinct)
		}
		for _, eng := range []sim.EngineKind{sim.EngineAnalytic, sim.EngineDES} {
			pts, err := e.Sweep(ctx, sim.Request{Coll: model.AlltoAll, Engine: eng, ElemSize: 4, Sizes: []model.Bytes{1 << 30}})
			if err != nil {
				t.Fatal(err)
			}
			busbw[tc.nics+" "+string(eng)] = pts[0].BusBW
		}
	}
	for _, eng := range []string{"analytic", "des"} {
		four, eight := busbw["4x200G-ib "+eng], busbw["8x200G-ib "+eng]
		if eight < 1.15*four {
			t.Errorf("%s: AlltoAll 1 GiB on 2x dgx-a100: %.2f GB/s busbw with 8 NICs against %.2f with 4: the extra NICs carry nothing", eng, eight, four)
		}
	}
	if a, d := busbw["8x200G-ib analytic"], busbw["8x200G-ib des"]; a/d > 1.001 || d/a > 1.001 {
		t.Errorf("8 NICs: analytic %.3f GB/s, DES %.3f: the engines route p2p blocks apart", a, d)
	}
	// One NIC per GPU on its own switch (DGX H100): GPU i keeps NIC i.
	e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2})
	for i, g := range e.Cluster.Nodes[0].GPUs {
		if np := e.Res.LocalNet(g); np == nil || np.NIC != e.Res.LocalNICs(g)[0].NIC {
			t.Errorf("dgx-h100 GPU %d: p2p NIC is not its own PIX NIC", i)
		}
	}
}

// TestZeroElementRowsNameEngine: sizes that nccl-tests rounds down to 0
// elements per rank (AlltoAll below ranks x element size) are rows of
// their own, and like every row they say which engine gave them.
func TestZeroElementRowsNameEngine(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2})
	for _, eng := range []sim.EngineKind{sim.EngineAnalytic, sim.EngineDES} {
		pts, err := e.Sweep(context.Background(), sim.Request{Coll: model.AlltoAll, Engine: eng, ElemSize: 4, Sizes: []model.Bytes{8, 32, 256}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts[:2] {
			if p.Size != 0 || p.TimeUs != 0 || p.Engine != eng || p.Note == "" {
				t.Errorf("%s: row of 0 elements: size %d, %g us, engine %q, note %q; want 0 B, 0 us, %s and a note", eng, p.Size, p.TimeUs, p.Engine, p.Note, eng)
			}
		}
		if p := pts[2]; p.Size != 256 || p.TimeUs <= 0 || p.Engine != eng {
			t.Errorf("%s: 256 B on 16 ranks: size %d, %g us, engine %q", eng, p.Size, p.TimeUs, p.Engine)
		}
	}
}

// TestP2PQPsSpreadOverECMP: over an ECMP fabric each channel's QPs of a
// point-to-point connection are flows of their own that the switches hash
// apart (NCCL_IB_QPS_PER_CONNECTION), as a ring's are; AlltoAll used to
// hash every block as channel 0, QP 0 and gave 25.5 GB/s busbw for any QP
// count on 8 x dgx-h100, 400G RoCE, a 2:1 ECMP fat-tree. More QPs spread
// the blocks over more uplinks, and both engines agree.
func TestP2PQPsSpreadOverECMP(t *testing.T) {
	ctx := context.Background()
	var prev float64
	for _, q := range []string{"1", "2", "8"} {
		spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 8, NICs: "8x400G-roce", Set: []string{"NCCL_IB_QPS_PER_CONNECTION=" + q}})
		spec.Fabric = model.FabricSpec{Kind: "fat-tree", Tiers: 2, NodesPerLeaf: 2, Oversubscription: 2, Routing: "ecmp"}
		e := specEnv(t, spec)
		bw := map[sim.EngineKind]float64{}
		for _, eng := range []sim.EngineKind{sim.EngineAnalytic, sim.EngineDES} {
			pts, err := e.Sweep(ctx, sim.Request{Coll: model.AlltoAll, Engine: eng, ElemSize: 4, Sizes: []model.Bytes{1 << 30}})
			if err != nil {
				t.Fatal(err)
			}
			bw[eng] = pts[0].BusBW
		}
		if a, d := bw[sim.EngineAnalytic], bw[sim.EngineDES]; math.Abs(a/d-1) > 0.01 {
			t.Errorf("%s QPs: analytic %.2f GB/s, DES %.2f", q, a, d)
		}
		if prev > 0 && bw[sim.EngineDES] < prev*1.02 {
			t.Errorf("%s QPs: %.2f GB/s, not above the fewer QPs' %.2f", q, bw[sim.EngineDES], prev)
		}
		prev = bw[sim.EngineDES]
	}
}
