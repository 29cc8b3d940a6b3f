package sim_test

import (
	"context"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// benchRing times one DES ring AllReduce of 1 GiB on nodes x dgx-h100.
func benchRing(b *testing.B, nodes int) {
	e := newEnv(b, scenarios.Overrides{Node: "dgx-h100", Nodes: nodes, Set: []string{"NCCL_ALGO=Ring"}})
	req := sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4}
	b.ReportAllocs()
	var events int64
	b.ResetTimer()
	for b.Loop() {
		p, err := e.Predict(context.Background(), req, 1<<30)
		if err != nil {
			b.Fatal(err)
		}
		events += p.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkRingAllReduce1GiB8GPUs(b *testing.B)    { benchRing(b, 1) }
func BenchmarkRingAllReduce1GiB64GPUs(b *testing.B)   { benchRing(b, 8) }
func BenchmarkRingAllReduce1GiB1024GPUs(b *testing.B) { benchRing(b, 128) }

// benchSweep runs the full nccl-tests sweep, 8 B .. 8 GiB by factor 2 (31
// sizes), AllReduce with NCCL's own algorithm choice and every size
// through the DES, on nodes x dgx-h100 (8x400G IB) on a two-tier
// leaf-spine of 16 nodes per leaf at 1:1 (the clusters of examples/scale),
// and reports engine events per second, DES ops per sweep (the schedules
// that timed the sizes) and DES runs per sweep (a size whose schedule is
// the size before's reuses that run and counts no events). workers is
// Request.Workers: 0 runs the sizes on every core, 1 one after another.
func benchSweep(b *testing.B, nodes int, set []string, workers int) {
	spec := resolve(b, scenarios.Overrides{Node: "dgx-h100", Nodes: nodes, NICs: "8x400G-ib", Set: set})
	spec.Fabric = model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: min(16, nodes), Radix: 256, Oversubscription: 1}
	e := specEnv(b, spec)
	var sizes []model.Bytes
	for s := model.Bytes(8); s <= 8<<30; s *= 2 {
		sizes = append(sizes, s)
	}
	req := sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4, Sizes: sizes, Workers: workers}
	b.ReportAllocs()
	var events, ops, runs int64
	b.ResetTimer()
	for b.Loop() {
		pts, err := e.Sweep(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range pts {
			events += p.Events
			ops += int64(p.Ops)
			if p.Events > 0 {
				runs++
			}
			if p.Engine != sim.EngineDES {
				b.Fatalf("%s timed by %s", model.FormatBytes(p.Size), p.Engine)
			}
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(ops)/float64(b.N), "ops/sweep")
	b.ReportMetric(float64(runs)/float64(b.N), "des-runs/sweep")
}

// BenchmarkSweep1024GPUs, BenchmarkSweep8192GPUs and
// BenchmarkSweep32768GPUs are the speed targets of the README (128, 1,024
// and 4,096 nodes); BenchmarkSweep128GPUs shows how time grows from 16.
// They run the sizes on every core (GOMAXPROCS, -cpu); the OneWorker
// variants run them one after another, the same points.
func BenchmarkSweep128GPUs(b *testing.B)   { benchSweep(b, 16, nil, 0) }
func BenchmarkSweep1024GPUs(b *testing.B)  { benchSweep(b, 128, nil, 0) }
func BenchmarkSweep8192GPUs(b *testing.B)  { benchSweep(b, 1024, nil, 0) }
func BenchmarkSweep32768GPUs(b *testing.B) { benchSweep(b, 4096, nil, 0) }

func BenchmarkSweep128GPUsOneWorker(b *testing.B)  { benchSweep(b, 16, nil, 1) }
func BenchmarkSweep1024GPUsOneWorker(b *testing.B) { benchSweep(b, 128, nil, 1) }
func BenchmarkSweep8192GPUsOneWorker(b *testing.B) { benchSweep(b, 1024, nil, 1) }

// BenchmarkSweep1024GPUsRing forces the ring (NCCL_ALGO=Ring).
func BenchmarkSweep1024GPUsRing(b *testing.B) { benchSweep(b, 128, []string{"NCCL_ALGO=Ring"}, 0) }

// BenchmarkEnv1024GPUs measures building the NCCL view (paths, graph
// search, tuning tables) of 128 dgx-h100 nodes.
func BenchmarkEnv1024GPUs(b *testing.B) {
	spec, _ := scenarios.Overrides{Node: "dgx-h100", Nodes: 128}.Resolve()
	b.ReportAllocs()
	for b.Loop() {
		c, err := spec.Build()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sim.NewEnv(c, sim.DefaultParams()); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRingNetwork times the network alone: Execute of the DES schedule of
// one ring AllReduce of 1 GiB on nodes x dgx-h100 (built once, outside the
// timer), and reports network flow events (a flow start and its completion
// are two) per second, flows and flow classes per op, and the makespan.
// classes false starts every flow in a class of its own.
func benchRingNetwork(b *testing.B, nodes int, classes bool) {
	e := newEnv(b, scenarios.Overrides{Node: "dgx-h100", Nodes: nodes, Set: []string{"NCCL_ALGO=Ring"}})
	s, err := e.DESSchedule(sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4}, 1<<30)
	if err != nil {
		b.Skip(err)
	}
	caps := e.Capacity()
	b.ReportAllocs()
	var st sim.NetStats
	var flows int64
	b.ResetTimer()
	for b.Loop() {
		st, err = sim.ExecuteNetStats(context.Background(), s, caps, classes)
		if err != nil {
			b.Fatal(err)
		}
		flows += st.Flows
	}
	b.ReportMetric(2*float64(flows)/b.Elapsed().Seconds(), "flow-events/s")
	b.ReportMetric(float64(st.Flows), "flows/op")
	b.ReportMetric(float64(st.Classes), "classes/op")
	b.ReportMetric(float64(st.Recomputes), "recomputes/op")
	b.ReportMetric(st.Makespan.Microseconds(), "sim-us/op")
}

func BenchmarkRingNetwork64GPUs(b *testing.B)   { benchRingNetwork(b, 8, true) }
func BenchmarkRingNetwork1024GPUs(b *testing.B) { benchRingNetwork(b, 128, true) }
func BenchmarkRingNetwork8192GPUs(b *testing.B) { benchRingNetwork(b, 1024, true) }

// BenchmarkRingNetwork64GPUsNoClasses and
// BenchmarkRingNetwork1024GPUsNoClasses start every flow in a class of its
// own: the difference is what flow classes buy.
func BenchmarkRingNetwork64GPUsNoClasses(b *testing.B)   { benchRingNetwork(b, 8, false) }
func BenchmarkRingNetwork1024GPUsNoClasses(b *testing.B) { benchRingNetwork(b, 128, false) }

// BenchmarkTreeLL128At8192GPUs times the costliest size of the 8,192-GPU
// sweep: AllReduce 8 MiB, NCCL's choice (tree LL128 on 16 channels), on
// 1,024 x dgx-h100 on the leaf-spine of benchSweep, one DES run; it
// reports the run's engine events and ops.
func BenchmarkTreeLL128At8192GPUs(b *testing.B) {
	const nodes = 1024
	spec := resolve(b, scenarios.Overrides{Node: "dgx-h100", Nodes: nodes, NICs: "8x400G-ib"})
	spec.Fabric = model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: 16, Radix: 256, Oversubscription: 1}
	e := specEnv(b, spec)
	req := sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4, Sizes: []model.Bytes{8 << 20}, Workers: 1}
	var events, ops int64
	b.ResetTimer()
	for b.Loop() {
		pts, err := e.Sweep(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if p := pts[0]; p.Engine != sim.EngineDES || p.Choice.Algo != model.AlgoTree {
			b.Fatalf("8 MiB timed by %s with %s, want the DES with tree", p.Engine, p.Choice.Algo)
		}
		events += pts[0].Events
		ops += int64(pts[0].Ops)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(ops)/float64(b.N), "ops/run")
}
