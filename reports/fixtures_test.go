package reports

import (
	"math"
	"time"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
)

// The numbers in these fixtures are synthetic: shaped like nccl-tests
// AllReduce on one 8x H100 NVLink node (busbw saturating near 360 GB/s,
// half of it at 8 MiB; time = latency + bytes/bandwidth) so the plots look
// like real ones. They are not measurements and no test checks them
// against a model.

// synthBusBW is peak * s/(s+half): a saturating busbw curve.
func synthBusBW(size model.Bytes, peak float64, half model.Bytes) model.GBps {
	return model.GBps(peak * float64(size) / float64(size+half))
}

// sizes4x returns 8B, 32B, ..., up to max in steps of 4x.
func sizes4x(max model.Bytes) []model.Bytes {
	var out []model.Bytes
	for s := model.Bytes(8); s <= max; s *= 4 {
		out = append(out, s)
	}
	return out
}

func fixtureBusBW() BusBWPlot {
	var mdl, meas []BWPoint
	for _, s := range sizes4x(8 * model.GiB) {
		mdl = append(mdl, BWPoint{s, synthBusBW(s, 360, 8*model.MiB)})
		// "measured": 15% below the model above 64 MiB, as if one NVLink
		// were degraded.
		f := 0.97
		if s > 64*model.MiB {
			f = 0.85
		}
		meas = append(meas, BWPoint{s, synthBusBW(s, 360*f, 8*model.MiB)})
	}
	return BusBWPlot{
		Title:   "AllReduce busbw, 8x H100",
		Caption: "Model (line) against nccl-tests all_reduce_perf (points); the band is the ±10% acceptance tolerance.",
		Series: []BWSeries{
			{Name: "model", Style: StyleLine, Points: mdl},
			{Name: "measured", Style: StyleLinePoints, Points: meas},
		},
		Band: &Band{Reference: "model", Tolerance: 0.10},
	}
}

func fixtureTime() TimePlot {
	var ring, tree []TimePoint
	for _, s := range sizes4x(8 * model.GiB) {
		ring = append(ring, TimePoint{s, model.Micros(12) + model.TransferTime(s*2*7/8, 380)})
		tree = append(tree, TimePoint{s, model.Micros(7) + model.TransferTime(s*2*7/8, 300)})
	}
	return TimePlot{
		Title:  "AllReduce time by algorithm",
		Series: []TimeSeries{{Name: "ring", Points: ring}, {Name: "tree", Style: StyleDashed, Points: tree}},
	}
}

func fixtureHeatMap() HeatMapPlot {
	n := 8
	labels := make([]string, n)
	values := make([][]float64, n)
	for i := range n {
		labels[i] = "GPU" + string(rune('0'+i))
		values[i] = make([]float64, n)
		for j := range n {
			switch {
			case i == j:
				values[i][j] = 1520.4 // local copy
			case i/4 != j/4:
				values[i][j] = 389.6
			default:
				values[i][j] = 392.1
			}
		}
	}
	values[2][5] = math.NaN() // a pair that was not measured
	values[5][2] = 121.7      // a degraded link
	return HeatMapPlot{
		Title:   "P2P bandwidth (unidirectional)",
		Caption: "From p2pBandwidthLatencyTest; GPU2 to GPU5 was not measured.",
		Labels:  labels,
		Values:  values,
	}
}

func fixturePareto() ParetoPlot {
	return ParetoPlot{
		Title:           "Cost against AllReduce throughput",
		CostLabel:       "cost (kUSD)",
		ThroughputLabel: "AllReduce 1G busbw (GB/s)",
		Points: []DesignPoint{
			{"IB NDR 1:1", 2950, 361},
			{"IB NDR 2:1", 2700, 300},
			{"RoCE 400G 1:1", 2600, 342},
			{"RoCE 400G 2:1", 2300, 250},
			{"IB HDR 1:1", 2400, 198},
			{"Eth 200G", 2100, 120},
		},
		// study.ParetoFrontier of the points: the IB HDR and IB NDR 2:1
		// designs are dominated.
		Frontier: []int{5, 3, 2, 0},
	}
}

func fixtureBars() BarPlot {
	return BarPlot{
		Title:         "busbw per design",
		CategoryLabel: "design",
		ValueLabel:    "busbw (GB/s)",
		Categories:    []string{"IB NDR 1:1", "RoCE 400G 1:1", "Eth 200G"},
		Series: []BarSeries{
			{Name: "AllReduce 1G", Values: []float64{361, 342, 120}},
			{Name: "AllGather 1G", Values: []float64{355, 330, math.NaN()}},
		},
	}
}

func fixtureScaling() ScalingPlot {
	pts := func(effs ...float64) []ScalingPoint {
		var out []ScalingPoint
		for i, e := range effs {
			out = append(out, ScalingPoint{GPUs: 8 << i, Efficiency: e})
		}
		return out
	}
	return ScalingPlot{
		Title: "Scaling efficiency, AllReduce 1G",
		Series: []ScalingSeries{
			{Name: "IB NDR 1:1", Style: StyleLinePoints, Points: pts(1, 0.97, 0.95, 0.94, 0.93, 0.92, 0.91)},
			{Name: "RoCE 400G 2:1", Style: StyleLinePoints, Points: pts(1, 0.93, 0.84, 0.76, 0.69, 0.64, 0.60)},
		},
	}
}

func fixtureLinks() LinkUtilPlot {
	return LinkUtilPlot{
		Title: "Busiest links",
		Links: []LinkUtil{
			{"leaf3 -> spine1", 0.97},
			{"node5/nic2 -> leaf3", 0.91},
			{"node5/gpu2 -> node5/nvswitch0", 0.74},
			{"leaf1 -> spine0", 0.41},
		},
	}
}

// fixtureValidation is a validation-style report: verdict, findings,
// busbw with a band, time, heat map, tables, code.
func fixtureValidation() *Document {
	return &Document{
		Title:       "Validation: AllReduce on dgx-h100-a",
		Subtitle:    "nccl-tests against the collsim model",
		Date:        time.Date(2026, 3, 4, 10, 15, 0, 0, time.UTC),
		Version:     "v0.3.0",
		CommandLine: []string{"collsim", "validate", "--cluster", "dgx h100.yaml", "--report", "out.html"},
		Summary:     "FAIL: measured busbw is 15% below the model above 64 MiB. The bottleneck is NVLink between GPU5 and GPU2 (121.7 GB/s instead of 392). Reseat or replace the NVLink bridge, then re-run.\n\nSmall messages match the model within 3%.",
		Verdict:     &Verdict{Status: StatusFail, Label: "busbw 15% below model at 1G and above", Detail: "Tolerance: ±10%."},
		Inputs: []KV{
			{"cluster", "dgx-h100-a (1 node, 8x H100 SXM)"},
			{"measurements", "all_reduce_perf.log <sha256 1f2e…>"},
			{"collective", "AllReduce, float, sum"},
		},
		Assumptions: []Assumption{
			{"NVLink 4 per-link bandwidth", "25 GB/s per direction per lane", "NVIDIA H100 datasheet"},
			{"protocol efficiency (Simple)", "0.92", "calibration profile dgx-h100-a.yaml"},
		},
		Sections: []Section{
			{Title: "Bandwidth", Blocks: []Block{
				Paragraph{Text: "Bus bandwidth per message size. Points outside the band fail the check."},
				fixtureBusBW(),
				fixtureTime(),
			}},
			{Title: "Diagnosis", Blocks: []Block{
				Findings{
					{Severity: SeverityCritical, Title: "One NVLink runs at a third of its bandwidth", Evidence: "P2P GPU5 -> GPU2: 121.7 GB/s; other pairs 389-392 GB/s.", Fix: "Check nvidia-smi nvlink -s on GPU5; reseat the baseboard."},
					{Severity: SeverityWarning, Title: "GPU2 -> GPU5 not measured", Evidence: "p2pBandwidthLatencyTest printed no value for this pair."},
					{Severity: SeverityInfo, Title: "NCCL used NVLS for AllReduce", Evidence: "NCCL_DEBUG=INFO: \"NVLS multicast support is available\"."},
				},
				&Verdict{Status: StatusWarn, Label: "1 pair unmeasured"},
				fixtureHeatMap(),
			}},
			{Title: "Raw results", Blocks: []Block{
				Table{
					Caption: "Worst points",
					Columns: []string{"size", "model (GB/s)", "measured (GB/s)", "gap", "status"},
					Rows: [][]string{
						{"1G", "356.94", "303.40", "-15.0%", "fail"},
						{"8G", "359.65", "305.70", "-15.0%", "fail"},
						{"16M", "240.00", "232.80", "-3.0%"},
					},
					Notes: []string{"gap = measured/model - 1.", "Rows with <b>markup</b> & ampersands are escaped."},
				},
				Code{Caption: "all_reduce_perf (excerpt)", Text: "#       size         count      type   redop    root     time   algbw   busbw #wrong\n  1073741824     268435456     float     sum      -1   5312.9  202.10  353.67      0"},
			}},
		},
	}
}

// fixtureSweep is a procurement-style report: Pareto, bars, scaling, links.
func fixtureSweep() *Document {
	return &Document{
		Title:   "Sweep: fabric options for 1024 H100",
		Date:    time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC),
		Version: "v0.3.0",
		Summary: "IB NDR 1:1 gives the highest throughput; RoCE 400G 1:1 delivers 95% of it for 88% of the cost and is the recommended option.",
		Verdict: &Verdict{Status: StatusInfo, Label: "6 designs, 4 on the Pareto frontier"},
		Sections: []Section{
			{Title: "Cost and throughput", Blocks: []Block{fixturePareto(), fixtureBars()}},
			{Title: "Scaling", Blocks: []Block{fixtureScaling()}},
			{Title: "Bottleneck", Blocks: []Block{fixtureLinks()}},
		},
	}
}

// fixtureMinimal has no plots, no verdict and a single section.
func fixtureMinimal() *Document {
	return &Document{
		Title:    "Inspect: dgx-h100-a",
		Sections: []Section{{Title: "Topology", Blocks: []Block{Paragraph{Text: "8 GPUs, 4 NVSwitches, 8 NICs (NDR 400G)."}}}},
	}
}

// fixtureCluster builds 16 DGX H100 nodes with eight 400G InfiniBand NICs
// each under a 4:1 oversubscribed leaf-spine fabric, four nodes per leaf.
func fixtureCluster() *model.Cluster {
	spec, err := scenarios.Overrides{Node: "dgx-h100", Nodes: 16, NICs: "8x400G-ib"}.Resolve()
	if err != nil {
		panic(err)
	}
	spec.Fabric = model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: 4, Oversubscription: 4}
	c, err := spec.Build()
	if err != nil {
		panic(err)
	}
	return c
}

func fixtureTopology() TopologyPlot {
	return TopologyPlot{Title: "Topology of 16 x dgx-h100 under a 4:1 leaf-spine fabric", Cluster: fixtureCluster(),
		Bottleneck: "fabric/leaf1->fabric/spine0", Class: "fabric", Utilization: 0.991,
		Caption: "The red link is the bottleneck."}
}

// fixtureTopologyDoc is a prediction-style report with a busbw curve that
// switches algorithm and a topology picture.
func fixtureTopologyDoc() *Document {
	bw := fixtureBusBW()
	bw.Series = bw.Series[:1]
	bw.Marks = []SizeMark{{Size: 64 * model.KiB, Label: "ring/ll128"}, {Size: 64 * model.MiB, Label: "ring/simple"}}
	return &Document{
		Title:            "AllReduce on 16 x dgx-h100: prediction",
		Summary:          "Limited by the leaf-spine uplinks.",
		Assumptions:      []Assumption{{Term: "net.eff.ib: achieved fraction of ib NIC line rate", Value: "0.95", Source: "nccl-tests#290"}},
		OtherAssumptions: []Assumption{{Term: "net.eff.efa: achieved fraction of efa NIC line rate", Value: "0.88", Source: "aws_p4d_a100_2x8_efa case"}},
		Sections: []Section{
			{Title: "Bus bandwidth", Blocks: []Block{bw}},
			{Title: "Topology", Blocks: []Block{fixtureTopology()}},
		},
	}
}
