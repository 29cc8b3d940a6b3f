package sim_test

import (
	"math"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestNVLSRackScale: NVLS AllReduce on a GB200 NVL72 rack. The published
// full-rack run (72 ranks, coreweave/nccl-tests#43) measures busbw
// 839/835 at 4 GiB and 835/847 at 8 GiB (out-of-place/in-place), algbw
// 423-429, where 8x B200 reach ~830 (nccl#1807) with algbw ~474: NVLS
// busbw stays flat while algbw falls. A model in which per-GPU traffic
// (1+1/G)S alone sets the time would raise busbw by 2(n-1)/n, 1.127x from
// 8 to 72 GPUs, and algbw with it.
func TestNVLSRackScale(t *testing.T) {
	rack := newEnv(t, scenarios.Overrides{Node: "gb200-nvl72"})
	eight := newEnv(t, scenarios.Overrides{Node: "gb200-nvl72", GPUsPerNode: 8})
	for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
		for _, tc := range []struct {
			size     model.Bytes
			measured float64 // mean of out-of-place and in-place busbw
		}{{4 << 30, (839.16 + 835.32) / 2}, {8 << 30, (834.57 + 846.82) / 2}} {
			p := predict(t, rack, model.AllReduce, eng, "", tc.size)
			if p.Choice.Algo != model.AlgoNVLS {
				t.Fatalf("%s: NCCL's choice on the rack is %s, want nvls", model.FormatBytes(tc.size), p.Choice.Algo)
			}
			if rel := p.BusBW/tc.measured - 1; math.Abs(rel) > 0.04 {
				t.Errorf("%v %s: busbw %.1f GB/s vs %.1f measured (%+.1f%%)", eng, model.FormatBytes(tc.size), p.BusBW, tc.measured, 100*rel)
			}
		}
		r := predict(t, rack, model.AllReduce, eng, "nvls", 4<<30)
		e := predict(t, eight, model.AllReduce, eng, "nvls", 4<<30)
		growth := (2 * 71.0 / 72) / (2 * 7.0 / 8)
		if got := r.BusBW / e.BusBW; got > 1+(growth-1)/2 {
			t.Errorf("%v: busbw grows %.3fx from 8 to 72 GPUs (%.1f -> %.1f), close to 2(n-1)/n's %.3fx", eng, got, e.BusBW, r.BusBW, growth)
		}
		if r.AlgBW >= e.AlgBW {
			t.Errorf("%v: algbw %.1f on 72 GPUs not below %.1f on 8", eng, r.AlgBW, e.AlgBW)
		}
		if rel := e.BusBW/830 - 1; math.Abs(rel) > 0.05 {
			t.Errorf("%v: 8 Blackwell GPUs busbw %.1f vs ~830 (nccl#1807) (%+.1f%%)", eng, e.BusBW, 100*rel)
		}
	}
}

// TestNVLSChunkRamp: 8x H100 AllReduce (double) from 32 MiB to 16 GiB
// against nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt (out-of-place time).
// NCCL uses NVLS throughout; its chunk is 32 KiB below 64 MiB, 64 KiB to
// 512 MiB and 128 KiB from 1 GiB (enqueue.cc), and the measured busbw
// steps from 444 to 470 GB/s where the chunk doubles: each channel loop
// pays one step of synchronisation in series with its transfer.
func TestNVLSChunkRamp(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-h100"})
	measured := []struct {
		size model.Bytes
		us   float64
	}{
		{32 << 20, 182.87}, {64 << 20, 313.66}, {128 << 20, 564.78}, {256 << 20, 1081.14}, {512 << 20, 2115.28},
		{1 << 30, 4000.82}, {2 << 30, 7891.00}, {4 << 30, 15668.1}, {8 << 30, 31226.8}, {16 << 30, 62340.7},
	}
	for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
		for _, m := range measured {
			req := sim.Request{Coll: model.AllReduce, Engine: eng, ElemSize: 8}
			p, err := e.Predict(t.Context(), req, m.size)
			if err != nil {
				t.Fatal(err)
			}
			if p.Choice.Algo != model.AlgoNVLS {
				t.Fatalf("%s: chose %s, want nvls", model.FormatBytes(m.size), p.Choice.Algo)
			}
			if rel := p.TimeUs/m.us - 1; math.Abs(rel) > 0.04 {
				t.Errorf("%v %s: %.1f us vs %.1f measured (%+.1f%%)", eng, model.FormatBytes(m.size), p.TimeUs, m.us, 100*rel)
			}
		}
		// The step where the chunk doubles (512 MiB -> 1 GiB) is in the
		// model too: busbw rises by more than between 256 and 512 MiB.
		bw := func(s model.Bytes) float64 {
			p, err := e.Predict(t.Context(), sim.Request{Coll: model.AllReduce, Engine: eng, ElemSize: 8}, s)
			if err != nil {
				t.Fatal(err)
			}
			return p.BusBW
		}
		if lo, mid, hi := bw(256<<20), bw(512<<20), bw(1<<30); hi-mid <= mid-lo {
			t.Errorf("%v: busbw 256M %.1f, 512M %.1f, 1G %.1f: no step where the chunk doubles", eng, lo, mid, hi)
		}
	}
}

// TestNVLSHeadsOnRack: on 72 GPUs the NVLS graph has 32 heads
// (NCCL_MAX_NVLS_ARITY): a head's ports carry its chunk's reduction and
// multicast on top of the loop, the other 40 GPUs' only the loop.
func TestNVLSHeadsOnRack(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "gb200-nvl72"})
	const S = 3 << 30
	up := e.UplinkBytes(t.Context(), model.AllReduce, "nvls", S)
	eff := sim.DefaultParams().NVLSEff[1]
	for g, b := range up {
		want := S / eff
		if g < model.NVLSMaxArity {
			want *= 1 + 1.0/model.NVLSMaxArity
		}
		if math.Abs(b-want) > 1e-6*want {
			t.Errorf("GPU%d sends %.0f B, want %.0f", g, b, want)
		}
	}
	if len(up) != 72 {
		t.Fatalf("%d GPUs", len(up))
	}
}

// TestNVLSChunkSizeKnob: NCCL_NVLS_CHUNKSIZE sets the chunk NCCL starts
// from (transport/nvls.cc): 32 KiB chunks make 4 GiB on 8x H100 pay four
// times the loops' synchronisation, 512 KiB a quarter of it; a value that
// is no size is refused.
func TestNVLSChunkSizeKnob(t *testing.T) {
	bw := func(set string) float64 {
		o := scenarios.Overrides{Node: "dgx-h100"}
		if set != "" {
			o.Set = []string{set}
		}
		return predict(t, newEnv(t, o), model.AllReduce, sim.EngineDES, "nvls", 4<<30).BusBW
	}
	def, small, large := bw(""), bw("NCCL_NVLS_CHUNKSIZE=32768"), bw("NCCL_NVLS_CHUNKSIZE=524288")
	if !(small < 0.9*def && large > def) {
		t.Errorf("4 GiB busbw: 32K chunks %.1f, default %.1f, 512K %.1f", small, def, large)
	}
	spec, err := (scenarios.Overrides{Node: "dgx-h100", Set: []string{"NCCL_NVLS_CHUNKSIZE=lots"}}).Resolve()
	if err == nil {
		_, err = spec.Build()
	}
	if err == nil {
		t.Error("NCCL_NVLS_CHUNKSIZE=lots accepted")
	}
}

// TestNVLSGatherScatter: NVLS AllGather stores each GPU's share into the
// multicast (up S/G, down S per GPU), NVLS ReduceScatter pulls every
// operand through the switch's reduction (up S, down S/G); both engines
// agree on their times.
func TestNVLSGatherScatter(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-h100"})
	const S = 256 << 20
	eff := sim.DefaultParams().NVLSEff[0]
	for _, tc := range []struct {
		coll model.Collective
		up   float64 // bytes each GPU sends, as a multiple of S
	}{{model.AllGather, 1.0 / 8}, {model.ReduceScatter, 1}} {
		for g, b := range e.UplinkBytes(t.Context(), tc.coll, "nvls", S) {
			if want := tc.up * S / eff; math.Abs(b-want) > 1e-6*want {
				t.Errorf("%s: GPU%d sends %.0f B, want %.0f", tc.coll, g, b, want)
			}
		}
		for _, size := range []model.Bytes{64 << 20, 1 << 30} {
			d := predict(t, e, tc.coll, sim.EngineDES, "nvls", size)
			a := predict(t, e, tc.coll, sim.EngineAnalytic, "nvls", size)
			if rel := math.Abs(d.TimeUs/a.TimeUs - 1); rel > 0.01 {
				t.Errorf("%s %s: DES %.1f us vs analytic %.1f", tc.coll, model.FormatBytes(size), d.TimeUs, a.TimeUs)
			}
		}
	}
}

// TestNVLSTreeNotAboveNVLS: NVLSTree runs single-node NVLS's loops inside
// every node (device/all_reduce.h: the same scatter, gather and reduce
// warps over nHeads x chunkCount) plus a network exchange, so on 2 nodes
// of 8x H100 at 8 GiB, where the switch's reduction binds, its algbw
// cannot exceed one node's NVLS algbw (274 GB/s, busbw 479.7 in
// nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt). The model once gave it
// 291 GB/s: 128 KiB units without NVLS's per-loop synchronisation.
func TestNVLSTreeNotAboveNVLS(t *testing.T) {
	one := newEnv(t, scenarios.Overrides{Node: "dgx-h100"})
	two := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "8x400G-ib"})
	for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
		n := predict(t, one, model.AllReduce, eng, "nvls", 8<<30)
		tr := predict(t, two, model.AllReduce, eng, "nvlstree", 8<<30)
		if tr.AlgBW > n.AlgBW*1.005 {
			t.Errorf("%v: NVLSTree algbw %.1f on 2 nodes above NVLS %.1f on one", eng, tr.AlgBW, n.AlgBW)
		}
	}
}

// TestNVLSTreeCopyWarps: on 2 nodes of 8x H100 every GPU runs CTAs whose
// rank has a parent in the inter-node tree, which keep 5 gather warps of
// 20 where one-node NVLS keeps 7 (device/all_reduce.h), so NVLSTree runs
// at what those warps copy: NCCL's own 2-node figure, 8 heads x 57.7 GB/s
// busbw (tuning.cc perChMaxNVLSTreeBws) = 461.6, algbw 246.2, in both
// engines at 8 GiB; one node's NVLS is still held by its switch (~480
// busbw, the xxrjun file), and without the warps' bound NVLSTree would
// reach one node's algbw (TestNVLSTreeNotAboveNVLS).
func TestNVLSTreeCopyWarps(t *testing.T) {
	one := newEnv(t, scenarios.Overrides{Node: "dgx-h100"})
	two := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "8x400G-ib"})
	p := sim.DefaultParams()
	p.NVLSWarpGBps[0] = 50
	c, err := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "8x400G-ib"}).Build()
	if err != nil {
		t.Fatal(err)
	}
	free, err := sim.NewEnv(c, p)
	if err != nil {
		t.Fatal(err)
	}
	want := 8 * model.PerChMaxNVLSTreeBW(model.ArchHopper, 1) // busbw
	for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
		tr := predict(t, two, model.AllReduce, eng, "nvlstree", 8<<30)
		if rel := tr.BusBW/want - 1; math.Abs(rel) > 0.01 {
			t.Errorf("%v: NVLSTree on 2 nodes %.1f GB/s busbw, NCCL's figure %.1f (%+.1f%%)", eng, tr.BusBW, want, 100*rel)
		}
		if !strings.Contains(tr.Bottleneck, "nvls.warp.gbps") {
			t.Errorf("%v: bottleneck %q does not name the copy warps", eng, tr.Bottleneck)
		}
		n := predict(t, one, model.AllReduce, eng, "nvls", 8<<30)
		if math.Abs(n.BusBW/481.4-1) > 0.01 || strings.Contains(n.Bottleneck, "nvls.warp.gbps") {
			t.Errorf("%v: one-node NVLS %.1f GB/s (%s), want ~481 held by the switch", eng, n.BusBW, n.Bottleneck)
		}
		f := predict(t, free, model.AllReduce, eng, "nvlstree", 8<<30)
		if f.AlgBW < 1.05*tr.AlgBW || f.AlgBW > 1.005*n.AlgBW {
			t.Errorf("%v: without the warps' bound NVLSTree %.1f GB/s algbw, want above %.1f and at most one node's %.1f", eng, f.AlgBW, 1.05*tr.AlgBW, n.AlgBW)
		}
	}
}
