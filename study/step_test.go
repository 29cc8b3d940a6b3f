package study

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

func step(t *testing.T, o scenarios.Overrides, w scenarios.Workload) StepResult {
	t.Helper()
	w = w.WithDefaults()
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	r, err := TrainingStep(context.Background(), spec(t, o), sim.DefaultParams(), &w, sim.EngineAnalytic)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMemoryRefusal: 7B with mixed-precision Adam under DDP needs
// 7e9 x (2 + 2 + 12) = 112 GB per GPU (ZeRO paper, 16 bytes per
// parameter), more than an A100's 80 GB; ZeRO 3 over 16 GPUs needs 7 GB.
func TestMemoryRefusal(t *testing.T) {
	w := scenarios.Workload{Params: 7e9, ComputeMs: 100}.WithDefaults()
	_, err := TrainingStep(context.Background(), spec(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2}), sim.DefaultParams(), &w, sim.EngineAnalytic)
	if !errors.Is(err, ErrDoesNotFit) || !strings.Contains(err.Error(), "needs 112.0 GB per GPU (weights 14.0, gradients 14.0, optimizer 84.0, activations 0.0) of the A100-SXM4's 80 GB") {
		t.Fatalf("error %v", err)
	}
	z := step(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2}, scenarios.Workload{Params: 7e9, ComputeMs: 100, Zero: 3})
	if math.Abs(z.Memory.NeededGB-7) > 1e-9 {
		t.Errorf("ZeRO 3 memory %v, want 7", z.Memory.NeededGB)
	}
}

// TestComputeFromFLOPs: compute = 6 x params x tokens / GPUs / (peak x
// MFU) with the A100's 312 TFLOPS bf16 (datasheet), and MFU achieved =
// MFU x compute / step.
func TestComputeFromFLOPs(t *testing.T) {
	r := step(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 1}, scenarios.Workload{Params: 1e9, SeqLen: 1000, BatchPerGPU: 4, MFU: 0.5})
	want := 1000 * 6 * 1e9 * 4000 / (312e12 * 0.5)
	if math.Abs(r.ComputeMs-want) > 1e-9 {
		t.Fatalf("compute %v ms, want %v", r.ComputeMs, want)
	}
	if math.Abs(r.MFU-0.5*r.ComputeMs/r.StepMs) > 1e-12 || r.Tokens != 8*4000 {
		t.Errorf("MFU %v, tokens %v", r.MFU, r.Tokens)
	}
}

// TestPlacement: TP 8 on DGX H100 runs inside the node, DP across nodes
// with one NIC per group (8 groups share 8 NICs); PP's bubble is
// (p-1)/v micro-batch times (Narayanan et al. 2021); a TP larger than the
// node is a warning, a TP that does not divide the GPUs a layout error.
func TestPlacement(t *testing.T) {
	w := scenarios.Workload{Layers: 32, Hidden: 4096, Heads: 32, SeqLen: 4096, BatchPerGPU: 1, GradAccum: 8, MFU: 0.4, TP: 8, PP: 2,
		PPSchedule: scenarios.ScheduleInterleaved, VirtualStages: 2, Zero: 1}
	r := step(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4}, w)
	if r.Layout.DP != 2 || r.Layout.TP != 8 || r.Layout.PP != 2 || len(r.Layout.Warnings) != 0 {
		t.Fatalf("layout %+v", r.Layout)
	}
	kinds := map[string]CommKind{}
	for _, c := range r.Comm {
		kinds[strings.SplitN(c.Kind, " ", 2)[0]] = c
	}
	if g := kinds["TP"].Group; g != "8 ranks: 8 GPUs in one node" {
		t.Errorf("TP group %q", g)
	}
	if g := kinds["DP"].Group; g != "2 ranks: 1 GPU(s) per node on 2 nodes, 1 NIC(s) each (8 groups share a node's 8)" {
		t.Errorf("DP group %q", g)
	}
	if c := kinds["TP"]; c.Count != 4*16*8 || c.ExposedMs != c.TotalMs {
		t.Errorf("TP calls %d (want 4 x 16 layers x 8 micro-batches), exposed %v of %v", c.Count, c.ExposedMs, c.TotalMs)
	}
	if math.Abs(r.BubbleMs-r.ComputeMs/8*1/2) > 1e-9 {
		t.Errorf("bubble %v, want (p-1)/v x compute/m = %v", r.BubbleMs, r.ComputeMs/16)
	}
	w.TP, w.PP, w.VirtualStages, w.PPSchedule = 16, 1, 1, scenarios.Schedule1F1B
	wide := step(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4}, w)
	if len(wide.Layout.Warnings) != 1 || !strings.Contains(wide.Layout.Warnings[0], "larger than the NVLink domain") {
		t.Errorf("warnings %v", wide.Layout.Warnings)
	}
	w.TP, w.Heads = 3, 0
	ww := w.WithDefaults()
	_, err := TrainingStep(context.Background(), spec(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4}), sim.DefaultParams(), &ww, sim.EngineAnalytic)
	var le *LayoutError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "does not divide the 32 GPUs") {
		t.Errorf("error %v", err)
	}
}

// TestBucketTimeline: four 10 ms buckets over a 20 ms backward become
// ready at 5, 10, 15, 20 ms and run one at a time: they end at 15, 25,
// 35, 45 ms, so 25 ms is exposed.
func TestBucketTimeline(t *testing.T) {
	k := &CommKind{Count: 4, TotalMs: 40}
	exposeBuckets([]*CommKind{k}, []model.Bytes{100}, []int64{4}, 400, 20)
	if k.ExposedMs != 25 {
		t.Errorf("exposed %v, want 25", k.ExposedMs)
	}
	k = &CommKind{Count: 4, TotalMs: 4}
	exposeBuckets([]*CommKind{k}, []model.Bytes{100}, []int64{4}, 400, 20)
	if k.ExposedMs != 1 {
		t.Errorf("fast buckets: exposed %v, want the last bucket's 1 ms", k.ExposedMs)
	}
}

// TestStorage: GPUDirect Storage reads at min(storage, PCIe); a bounce
// buffer crosses PCIe twice, so when PCIe is the limit its input takes
// twice as long. 8 A100 at PCIe Gen4 x16 (~32 GB/s line each) are 256
// GB/s per node direct, 128 through the host.
func TestStorage(t *testing.T) {
	w := scenarios.Workload{Params: 1e8, ComputeMs: 1, BatchPerGPU: 64, SampleBytes: 100 * model.MiB, StorageGBps: 1000}
	gds := w
	gds.GDS = true
	a := step(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 1}, gds)
	b := step(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 1}, w)
	if math.Abs(b.IO.InputMs/a.IO.InputMs-2) > 1e-9 || b.Bottleneck != "storage I/O" || !strings.Contains(b.IO.Path, "bounce buffer") {
		t.Errorf("gds %+v, bounce %+v (%s)", a.IO, b.IO, b.Bottleneck)
	}
	w.StorageGBps = 5
	c := step(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 1}, w)
	gds.StorageGBps = 5
	d := step(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 1}, gds)
	if c.IO.InputMs != d.IO.InputMs || !strings.Contains(c.IO.Path, "limited by storage") {
		t.Errorf("storage-bound: bounce %+v, gds %+v", c.IO, d.IO)
	}
}

// TestSpearman: rank correlation of known series: a monotone map ranks
// alike (1), a reversal -1; ties take their mean rank (x = 1,2,2,3 has
// ranks 1, 2.5, 2.5, 4).
func TestSpearman(t *testing.T) {
	if r := Spearman([]float64{1, 2, 3, 4}, []float64{10, 20, 35, 1000}); math.Abs(r-1) > 1e-12 {
		t.Errorf("monotone: %v", r)
	}
	if r := Spearman([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}); math.Abs(r+1) > 1e-12 {
		t.Errorf("reversed: %v", r)
	}
	if got := ranks([]float64{1, 2, 2, 3}); got[1] != 2.5 || got[2] != 2.5 || got[3] != 4 {
		t.Errorf("ranks %v", got)
	}
}

// TestComputeFasterThanPeakWarned: a measured compute_ms that would need
// more FLOPs per second than the GPU's datasheet peak (1B parameters, 8 x
// 4096 tokens per GPU in 10 ms on an H100: about 20x its peak) is said,
// where it printed an MFU of 850% without a word; a plausible one is not.
func TestComputeFasterThanPeakWarned(t *testing.T) {
	o := scenarios.Overrides{Node: "dgx-h100", Nodes: 1}
	warned := func(r StepResult) bool {
		for _, w := range r.Layout.Warnings {
			if strings.Contains(w, "of the H100-SXM's peak") {
				return true
			}
		}
		return false
	}
	if r := step(t, o, scenarios.Workload{Params: 1e9, ComputeMs: 10, BatchPerGPU: 8, SeqLen: 4096}); !warned(r) || r.MFU <= 1 {
		t.Errorf("10 ms: MFU %.2f, warnings %q", r.MFU, r.Layout.Warnings)
	}
	if r := step(t, o, scenarios.Workload{Params: 1e9, ComputeMs: 1000, BatchPerGPU: 8, SeqLen: 4096}); warned(r) {
		t.Errorf("1000 ms (MFU %.2f) warned: %q", r.MFU, r.Layout.Warnings)
	}
}
