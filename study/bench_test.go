package study

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// benchGrid is the capacity benchmark's grid: IB against RoCE x NIC
// counts x speeds (40 NIC choices) x 5 oversubscriptions x nodes, up to
// 128 nodes of 8 GPUs (1,024 GPUs), timed on a TP 8 + DP (ZeRO-1)
// training step of a 13B model: 40 x 5 x len(nodes) designs.
func benchGrid(tb testing.TB, nodes int) *scenarios.Sweep {
	tb.Helper()
	var nics, ns []string
	for _, k := range []string{"ib", "roce"} {
		for _, c := range []int{1, 2, 4, 8} {
			for _, s := range []string{"100G", "200G", "400G", "800G", "NDR200"} {
				if k == "roce" && s == "NDR200" {
					s = "25G"
				}
				nics = append(nics, fmt.Sprintf("%dx%s-%s", c, s, k))
			}
		}
	}
	for i := 0; i < nodes; i++ {
		ns = append(ns, fmt.Sprint(2+i*126/max(nodes-1, 1)))
	}
	doc := "name: bench\nbase:\n  node: dgx-h100\n  nodes: 8\n  fabric: {kind: leaf-spine, nodes_per_leaf: 8, oversubscription: 1}\naxes:\n" +
		"  nics: [" + strings.Join(nics, ", ") + "]\n  fabric.oversubscription: [1, 1.5, 2, 3, 4]\n  nodes: [" + strings.Join(ns, ", ") + "]\n" +
		"metric:\n  workload:\n    model: {layers: 40, hidden: 5120, heads: 40, vocab: 32000, seq_len: 4096}\n" +
		"    batch: {micro: 1, accumulation: 4}\n    parallel: {tp: 8, sp: true, zero: 1}\n    compute: {mfu: 0.4}\n"
	s, err := scenarios.LoadSweep("bench.yaml", []byte(doc))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// BenchmarkSweep10k is the 10,000-design analytic sweep (40 NIC choices x
// 5 oversubscriptions x 50 node counts up to 1,024 GPUs, TP+DP workload).
func BenchmarkSweep10k(b *testing.B) {
	s := benchGrid(b, 50)
	cat, err := scenarios.ExamplePrices()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		res, err := Sweep(context.Background(), SweepOptions{Sweep: s, Prices: cat, Params: sim.DefaultParams(), Engine: sim.EngineAnalytic})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Designs) != 10000 {
			b.Fatalf("%d designs", len(res.Designs))
		}
	}
}

// BenchmarkStep1024DES is one training step of a 1,024-GPU cluster (128
// DGX H100, 8x NDR) with TP 8, PP 4 (1F1B) and DP 32, every collective
// on the discrete-event engine.
func BenchmarkStep1024DES(b *testing.B) {
	p, err := scenarios.LookupPreset("dgx-h100")
	if err != nil {
		b.Fatal(err)
	}
	sp := model.ClusterSpec{Name: p.Name, Node: p.Node, Nodes: 128}
	w := scenarios.Workload{Layers: 48, Hidden: 8192, Heads: 64, SeqLen: 4096, BatchPerGPU: 1, GradAccum: 8, MFU: 0.4, TP: 8, PP: 4, Zero: 1}.WithDefaults()
	if err := w.Validate(); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		r, err := TrainingStep(context.Background(), sp, sim.DefaultParams(), &w, sim.EngineDES)
		if err != nil {
			b.Fatal(err)
		}
		if r.Layout.DP != 32 {
			b.Fatalf("layout %+v", r.Layout)
		}
	}
}
