package sim_test

import (
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// ecmp2to1 is a 2:1 oversubscribed two-tier ECMP fat-tree, two nodes per
// leaf: ECMP collisions overload its leaf-spine ports.
func ecmp2to1(over float64) model.FabricSpec {
	return model.FabricSpec{Kind: "fat-tree", Tiers: 2, NodesPerLeaf: 2, Oversubscription: over, Routing: "ecmp"}
}

// TestDCQCNLossBoundedByWindow: without PFC an overloaded port drops and
// go-back-N resends only while DCQCN converges (dcqcn.conv.us); after it
// the senders run at their fair share without loss. So the lossy call
// takes at most the lossless (PFC) call plus the window, not the
// collapsed go-back-N goodput for the whole call (it took 11.6 ms against
// 0.6 ms at 32 MiB, 28.8 ms against 8.5 ms at 512 MiB).
func TestDCQCNLossBoundedByWindow(t *testing.T) {
	win := sim.DefaultParams().Physics.DCQCNConvUs
	for _, size := range []model.Bytes{32 << 20, 512 << 20} {
		tm := func(pfc bool) sim.Point {
			r := model.RoCEParams{PFC: pfc, ECN: true, DCQCN: true, MTU: 4096, GIDIndex: -1}
			return predict(t, roceEnv(t, 8, "8x400G-roce", r, ecmp2to1(2)), model.AllReduce, sim.EngineDES, "ring", size)
		}
		lossless, lossy := tm(true), tm(false)
		t.Logf("%s: PFC %.0f us, lossy %.0f us (%s)", model.FormatBytes(size), lossless.TimeUs, lossy.TimeUs, lossy.Note)
		if lossy.TimeUs > lossless.TimeUs+1.1*win {
			t.Errorf("%s: lossy DCQCN %.0f us, want at most PFC's %.0f us + the %.0f us window", model.FormatBytes(size), lossy.TimeUs, lossless.TimeUs, win)
		}
		if lossy.TimeUs < lossless.TimeUs {
			t.Errorf("%s: lossy go-back-N %.0f us beats PFC %.0f us", model.FormatBytes(size), lossy.TimeUs, lossless.TimeUs)
		}
	}
}

// TestDCQCNNotWorseThanPFC: on a lossless fabric DCQCN shortens PFC's
// pauses to its convergence time (Zhu et al., SIGCOMM 2015: it improves
// throughput over PFC alone); the congested port's queue, held by PFC,
// keeps it busy through the senders' cut, so a congested collective is
// never slower with DCQCN than with PFC alone.
func TestDCQCNNotWorseThanPFC(t *testing.T) {
	for _, c := range []struct {
		algo string
		over float64
		size model.Bytes
	}{{"ring", 2, 64 << 20}, {"nvlstree", 1, 256 << 20}} {
		bw := func(dcqcn bool) float64 {
			r := model.RoCEParams{PFC: true, ECN: dcqcn, DCQCN: dcqcn, MTU: 4096, GIDIndex: -1}
			return predict(t, roceEnv(t, 8, "8x400G-roce", r, ecmp2to1(c.over)), model.AllReduce, sim.EngineDES, c.algo, c.size).BusBW
		}
		pfc, dc := bw(false), bw(true)
		t.Logf("%s %s %g:1: PFC %.2f, PFC+DCQCN %.2f GB/s", c.algo, model.FormatBytes(c.size), c.over, pfc, dc)
		if dc < pfc*(1-1e-9) {
			t.Errorf("%s %s: PFC+DCQCN %.2f GB/s below PFC alone %.2f", c.algo, model.FormatBytes(c.size), dc, pfc)
		}
	}
}

// TestBackgroundNeverSpeedsUp: another job's traffic competes for the
// fabric; it can slow the call or leave it alone, never speed it up (its
// flows on the call's source cables must not hide the call's own
// overload at an ECMP collision). 4 x DGX H100, NDR, 2:1 ECMP fat-tree,
// ring 256 MiB: seed 0 ran 130.7 GB/s alone and 150.7 beside a 1 GiB
// AlltoAll.
func TestBackgroundNeverSpeedsUp(t *testing.T) {
	bw := func(seed uint64, eng sim.EngineKind, bg bool) float64 {
		spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4, NICs: "8x400G-ib"})
		spec.Fabric = ecmp2to1(2)
		if bg {
			spec.Fabric.Background = []model.BackgroundJob{{Collective: "alltoall", Nodes: 2, Size: "1G"}}
		}
		spec.Seed = seed
		return predict(t, specEnv(t, spec), model.AllReduce, eng, "ring", 256<<20).BusBW
	}
	check := func(seed uint64, eng sim.EngineKind) {
		alone, busy := bw(seed, eng, false), bw(seed, eng, true)
		t.Logf("seed %d %v: alone %.2f, with background %.2f GB/s", seed, eng, alone, busy)
		if busy > alone*(1+1e-9) {
			t.Errorf("seed %d %v: background sped the ring up from %.2f to %.2f GB/s", seed, eng, alone, busy)
		}
	}
	check(0, sim.EngineDES)
	for s := uint64(0); s < 4; s++ {
		check(s, sim.EngineAnalytic)
	}
}
