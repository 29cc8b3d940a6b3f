package sim_test

import (
	"context"
	"math"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestPATChosenAndModelled: with one GPU per node NCCL 2.23 and later
// offer PAT for AllGather and ReduceScatter (tuning.cc), and its tuner
// takes it at mid sizes; the prediction now runs it (it failed with
// "algorithm pat is not modelled"), in both engines, and NCCL 2.22 never
// picks it.
func TestPATChosenAndModelled(t *testing.T) {
	for _, coll := range []model.Collective{model.AllGather, model.ReduceScatter} {
		var chosen bool
		e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4, GPUsPerNode: 1})
		for s := model.Bytes(64 << 10); s <= 64<<20; s *= 2 {
			a := predict(t, e, coll, sim.EngineAnalytic, "", s)
			d := predict(t, e, coll, sim.EngineDES, "", s)
			if a.Choice != d.Choice {
				t.Fatalf("%s %s: engines chose %v and %v", coll, model.FormatBytes(s), a.Choice, d.Choice)
			}
			chosen = chosen || a.Choice.Algo == model.AlgoPAT
		}
		if !chosen {
			t.Errorf("%s: NCCL's tuner never took PAT on 4 nodes of 1 GPU", coll)
		}
		old := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4, GPUsPerNode: 1, NCCLVersion: "2.22"})
		for s := model.Bytes(64 << 10); s <= 64<<20; s *= 2 {
			if p := predict(t, old, coll, sim.EngineAnalytic, "", s); p.Choice.Algo == model.AlgoPAT {
				t.Errorf("%s %s: NCCL 2.22 took PAT", coll, model.FormatBytes(s))
			}
		}
	}
}

// TestPATTraffic: a PAT call moves n-1 blocks per rank over the network,
// as a ring does, in ceil(log2 n) steps to the ranks 2^d away, each byte
// over pat.eff of the link's rate (wire bytes = payload / pat.eff): every
// node's NIC carries (n-1)/n of the buffer / pat.eff out, for n a power of
// two or not.
func TestPATTraffic(t *testing.T) {
	p := sim.DefaultParams()
	for _, n := range []int{2, 3, 5, 8} {
		for _, coll := range []model.Collective{model.AllGather, model.ReduceScatter} {
			e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: n, GPUsPerNode: 1})
			pat := model.AlgoPAT
			const S = 64 << 20
			s, err := e.DESSchedule(sim.Request{Coll: coll, Engine: sim.EngineDES, ElemSize: 4, Algo: &pat, Full: true}, S)
			if err != nil {
				t.Fatal(err)
			}
			load := s.LinkLoad(len(e.Capacity()))
			want := float64(S) * float64(n-1) / float64(n) / p.PATEff
			nic := 0
			for l, b := range load {
				if b == 0 || !isNICUplink(e.Cluster.Topo, l) {
					continue
				}
				name := e.LinkName(model.LinkID(l))
				nic++
				// nccl-tests rounds each rank's part to whole aligned
				// elements: under 1e-6 of 64 MiB.
				if math.Abs(b/want-1) > 1e-6 {
					t.Errorf("%s on %d nodes: %s carries %.10g B, want %.10g", coll, n, name, b, want)
				}
			}
			if nic != n {
				t.Errorf("%s on %d nodes: %d NIC uplinks carry traffic, want %d", coll, n, nic, n)
			}
		}
	}
}

// TestPATEngines: the DES and the closed form of PAT agree within 5% from
// 64 MiB, and at its bound the call runs at pat.eff of the NIC: busbw =
// pat.eff x the ring's NIC-bound busbw on the same nodes.
func TestPATEngines(t *testing.T) {
	pat := model.AlgoPAT
	ring := model.AlgoRing
	for _, n := range []int{2, 3, 4, 8, 16} {
		e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: n, GPUsPerNode: 1})
		for _, coll := range []model.Collective{model.AllGather, model.ReduceScatter} {
			for _, s := range []model.Bytes{64 << 20, 1 << 30} {
				var pts [2]sim.Point
				for i, eng := range []sim.EngineKind{sim.EngineAnalytic, sim.EngineDES} {
					pt, err := e.Predict(context.Background(), sim.Request{Coll: coll, Engine: eng, ElemSize: 4, Algo: &pat}, s)
					if err != nil {
						t.Fatal(err)
					}
					pts[i] = pt
				}
				if d := pts[1].TimeUs/pts[0].TimeUs - 1; math.Abs(d) > 0.05 {
					t.Errorf("%s %s on %d nodes: DES %.1f us, analytic %.1f (%+.1f%%)", coll, model.FormatBytes(s), n, pts[1].TimeUs, pts[0].TimeUs, 100*d)
				}
				if s < 1<<30 {
					continue
				}
				r, err := e.Predict(context.Background(), sim.Request{Coll: coll, Engine: sim.EngineAnalytic, ElemSize: 4, Algo: &ring}, s)
				if err != nil {
					t.Fatal(err)
				}
				if got := pts[0].BusBW / r.BusBW; math.Abs(got-sim.DefaultParams().PATEff) > 0.03 {
					t.Errorf("%s 1G on %d nodes: PAT busbw %.2f GB/s is %.3f of the ring's %.2f, want pat.eff", coll, n, pts[0].BusBW, got, r.BusBW)
				}
			}
		}
	}
}

// isNICUplink says whether link l is a NIC's cable into the fabric (links
// past the topology's are fabric bundles).
func isNICUplink(t *model.Topology, l int) bool {
	if l >= len(t.Links) {
		return false
	}
	lk := &t.Links[l]
	return lk.Kind == model.LinkNet && t.Elem(lk.From).Kind == model.KindNIC
}

// TestPATReserveLongPipeline: what PAT's builder reserves bounds what it
// builds once chunks wait for their receivers' slots (more than
// NCCL_STEPS chunks per channel), on a single switch and split over four
// QPs on an ECMP fat-tree.
func TestPATReserveLongPipeline(t *testing.T) {
	ecmp := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 8, GPUsPerNode: 1, Set: []string{"NCCL_IB_QPS_PER_CONNECTION=4"}})
	ecmp.Fabric = model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Routing: "ecmp"}
	simple := model.ProtoSimple
	for name, e := range map[string]*sim.Env{
		"single switch": newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 9, GPUsPerNode: 1}),
		"ecmp, 4 QPs":   specEnv(t, ecmp),
	} {
		for _, coll := range []model.Collective{model.AllGather, model.ReduceScatter} {
			res, built, err := e.Reserved(coll, model.AlgoPAT, 1<<30, &simple)
			if err != nil {
				t.Fatal(err)
			}
			if built[0] > res[0] || built[1] > res[1] {
				t.Errorf("%s %s: built %d ops and %d dependencies, reserved %d and %d", name, coll, built[0], built[1], res[0], res[1])
			}
		}
	}
}
