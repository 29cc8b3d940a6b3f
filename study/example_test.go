package study_test

import (
	"context"
	"fmt"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
	"github.com/collsim/collsim/study"
)

// ExampleCompare compares two NIC choices for 2 DGX A100 nodes on a large
// AllReduce: two slow RoCE NICs against eight HDR InfiniBand NICs.
func ExampleCompare() {
	var designs []study.CompareDesign
	for _, d := range []struct{ name, nics string }{{"roce", "2x100G-roce"}, {"ib", "8x200G-ib"}} {
		spec, err := scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: d.nics}.Resolve()
		if err != nil {
			fmt.Println(err)
			return
		}
		designs = append(designs, study.CompareDesign{Name: d.name, Spec: spec, Params: sim.DefaultParams()})
	}
	res, err := study.Compare(context.Background(), study.CompareOptions{
		Designs: designs,
		Request: sim.Request{Coll: model.AllReduce, Sizes: []model.Bytes{512 * model.MiB}, ElemSize: 4, Engine: sim.EngineAnalytic},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range res.Ranking() {
		fmt.Printf("%s: bound by %s\n", d.Name, d.Points[0].BottleneckClass)
	}
	// Output:
	// ib: bound by NIC
	// roce: bound by NIC
}

func ExampleParetoFrontier() {
	designs := []study.DesignPoint{
		{Name: "IB NDR 1:1", Cost: 2950, Throughput: 361},
		{Name: "IB NDR 2:1", Cost: 2700, Throughput: 300},
		{Name: "RoCE 400G 1:1", Cost: 2600, Throughput: 342},
		{Name: "Eth 200G", Cost: 2100, Throughput: 120},
	}
	for _, i := range study.ParetoFrontier(designs) {
		fmt.Println(designs[i].Name)
	}
	// Output:
	// Eth 200G
	// RoCE 400G 1:1
	// IB NDR 1:1
}

// ExampleTrainingStep models one step of a 13B transformer on 4 DGX H100
// nodes with TP 8 inside each node and ZeRO-1 data parallelism across
// them, and prints where each collective kind runs and what limits the
// step.
func ExampleTrainingStep() {
	spec, err := scenarios.Overrides{Node: "dgx-h100", Nodes: 4}.Resolve()
	if err != nil {
		fmt.Println(err)
		return
	}
	w := scenarios.Workload{Layers: 40, Hidden: 5120, Heads: 40, SeqLen: 4096, BatchPerGPU: 1, GradAccum: 4, MFU: 0.4, TP: 8, SP: true, Zero: 1}.WithDefaults()
	r, err := study.TrainingStep(context.Background(), spec, sim.DefaultParams(), &w, sim.EngineAnalytic)
	if err != nil {
		fmt.Println(err)
		return
	}
	seen := map[string]bool{}
	for _, c := range r.Comm {
		if !seen[c.Kind] {
			seen[c.Kind] = true
			fmt.Printf("%s on %s\n", c.Kind, c.Group)
		}
	}
	fmt.Println("limit:", r.Bottleneck)
	// Output:
	// TP AllGather (sequence parallel) on 8 ranks: 8 GPUs in one node
	// TP ReduceScatter (sequence parallel) on 8 ranks: 8 GPUs in one node
	// DP gradient ReduceScatter on 4 ranks: 1 GPU(s) per node on 4 nodes, 1 NIC(s) each (8 groups share a node's 8)
	// DP parameter AllGather (after the optimizer) on 4 ranks: 1 GPU(s) per node on 4 nodes, 1 NIC(s) each (8 groups share a node's 8)
	// limit: TP AllGather (sequence parallel)
}
