package study

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// spec resolves cluster options as the command line gives them.
func spec(t *testing.T, o scenarios.Overrides) model.ClusterSpec {
	t.Helper()
	s, err := o.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestForEach: the error returned is the lowest failing index, whatever
// the scheduling; a cancelled context stops it.
func TestForEach(t *testing.T) {
	for run := 0; run < 20; run++ {
		err := forEach(context.Background(), 50, func(i int) error {
			if i == 7 || i == 30 {
				return fmt.Errorf("item %d", i)
			}
			return nil
		})
		if err == nil || err.Error() != "item 7" {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := forEach(ctx, 3, func(int) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestForEachCancelsAbove: a failure cancels the indices above it that
// are running, and the error returned is the failure's, not theirs.
func TestForEachCancelsAbove(t *testing.T) {
	started := make(chan struct{})
	var err2 error
	err := ForEach(context.Background(), 3, 3, func(ctx context.Context, i int) error {
		switch i {
		case 1:
			<-started
			return fmt.Errorf("item 1")
		case 2:
			close(started)
			select {
			case <-ctx.Done():
				err2 = ctx.Err()
			case <-time.After(10 * time.Second):
				err2 = fmt.Errorf("not cancelled in 10 s")
			}
			return err2
		}
		return nil
	})
	if err == nil || err.Error() != "item 1" {
		t.Fatalf("got %v, want item 1's error", err)
	}
	if !errors.Is(err2, context.Canceled) {
		t.Errorf("item 2, running above the failure: %v, want its context cancelled", err2)
	}
}

func TestDefaultNodeCounts(t *testing.T) {
	tests := []struct {
		max  int
		want []int
	}{
		{0, nil},
		{1, []int{1}},
		{2, []int{1, 2}},
		{6, []int{1, 2, 4, 6}},
		{64, []int{1, 2, 4, 8, 16, 32, 64}},
	}
	for _, tc := range tests {
		if got := DefaultNodeCounts(tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("DefaultNodeCounts(%d) = %v, want %v", tc.max, got, tc.want)
		}
	}
}

func TestParetoFrontier(t *testing.T) {
	tests := []struct {
		name   string
		points []DesignPoint
		want   []int
	}{
		{"empty", nil, nil},
		{"one", []DesignPoint{{"a", 1, 1}}, []int{0}},
		// b costs more and delivers less: dominated.
		{"dominated", []DesignPoint{{"a", 1, 10}, {"b", 2, 5}}, []int{0}},
		// Both on the frontier, in order of cost.
		{"trade-off", []DesignPoint{{"dear", 3, 30}, {"cheap", 1, 10}}, []int{1, 0}},
		// Same cost, less throughput: dominated.
		{"same cost", []DesignPoint{{"a", 1, 10}, {"b", 1, 9}}, []int{0}},
		// Same throughput, higher cost: dominated.
		{"same throughput", []DesignPoint{{"a", 2, 10}, {"b", 1, 10}}, []int{1}},
		// Identical points do not dominate each other.
		{"duplicates", []DesignPoint{{"a", 1, 10}, {"b", 1, 10}, {"c", 2, 5}}, []int{0, 1}},
		{"NaN ignored", []DesignPoint{{"a", math.NaN(), 100}, {"b", 1, 1}}, []int{1}},
		{"Inf ignored", []DesignPoint{{"a", math.Inf(1), 100}, {"b", 1, 1}}, []int{1}},
		// reports' sweep fixture: IB HDR is beaten by RoCE 2:1 (cheaper,
		// faster), IB NDR 2:1 by RoCE 1:1.
		{"fixture", []DesignPoint{{"IB NDR 1:1", 2950, 361}, {"IB NDR 2:1", 2700, 300}, {"RoCE 400G 1:1", 2600, 342},
			{"RoCE 400G 2:1", 2300, 250}, {"IB HDR 1:1", 2400, 198}, {"Eth 200G", 2100, 120}}, []int{5, 3, 2, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParetoFrontier(tt.points)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ParetoFrontier = %v, want %v", got, tt.want)
			}
			// Cross-check against the definition, O(n^2).
			finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
			for i, p := range tt.points {
				if !finite(p.Cost) || !finite(p.Throughput) {
					continue
				}
				dominated := false
				for j, q := range tt.points {
					if i != j && q.Cost <= p.Cost && q.Throughput >= p.Throughput && (q.Cost < p.Cost || q.Throughput > p.Throughput) {
						dominated = true
					}
				}
				if dominated == slices.Contains(got, i) {
					t.Errorf("point %d (%s): dominated=%v but on frontier=%v", i, p.Name, dominated, !dominated)
				}
			}
		})
	}
}

// compareDesigns are two small designs, 2 nodes of DGX A100 with few slow
// RoCE NICs against 8 HDR IB NICs (the README's default scenario and its
// fix; internal/cli's compare golden is the same pair).
func compareDesigns(t *testing.T) []CompareDesign {
	p := sim.DefaultParams()
	return []CompareDesign{
		{Name: "roce", Spec: spec(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "2x100G-roce"}), Params: p},
		{Name: "ib", Spec: spec(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "8x200G-ib"}), Params: p},
	}
}

// sizes1Mto1G are nccl-tests -b 1M -e 1G -f 8.
var sizes1Mto1G = []model.Bytes{model.MiB, 8 * model.MiB, 64 * model.MiB, 512 * model.MiB}

func TestCompare(t *testing.T) {
	req := sim.Request{Coll: model.AllReduce, Sizes: sizes1Mto1G, ElemSize: 4, Engine: sim.EngineAnalytic}
	res, err := Compare(context.Background(), CompareOptions{Designs: compareDesigns(t), Request: req})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Designs) != 2 || res.Designs[0].Name != "roce" || len(res.Designs[1].Points) != len(sizes1Mto1G) {
		t.Fatalf("designs %+v", res.Designs)
	}
	if got := res.Large(); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("Large = %v, want the 64M and 512M sizes", got)
	}
	roce, ib := res.Designs[0], res.Designs[1]
	// The NIC-bound design is the slower one.
	if rank := res.Ranking(); rank[0] != ib || rank[1] != roce {
		t.Errorf("ranking %s, %s; want ib first", rank[0].Name, rank[1].Name)
	}
	if got := roce.Points[3].BottleneckClass; got != "NIC" {
		t.Errorf("roce bottleneck at 512M: %q, want NIC", got)
	}
	if want := (ib.Points[2].BusBW + ib.Points[3].BusBW) / 2; res.MeanLarge(ib) != want {
		t.Errorf("MeanLarge(ib) = %v, want %v", res.MeanLarge(ib), want)
	}
	for i := range sizes1Mto1G {
		v, ok := res.Ratio(ib, i)
		if !ok || v != ib.Points[i].BusBW/roce.Points[i].BusBW {
			t.Errorf("size %d: ratio %v %v", i, v, ok)
		}
	}
	if f, tie := res.Fraction(ib); f != 1 || !tie {
		t.Errorf("fastest's fraction %v, tie %v", f, tie)
	}
	if f, tie := res.Fraction(roce); f >= 1-TieWithin || tie || res.AllTie() {
		t.Errorf("roce fraction %v, tie %v: the NIC-bound design is no tie", f, tie)
	}
	// A design compared with itself ties everywhere, by the one rule.
	same, err := Compare(context.Background(), CompareOptions{Designs: []CompareDesign{compareDesigns(t)[0], compareDesigns(t)[0]}, Request: res.Request})
	if err != nil {
		t.Fatal(err)
	}
	if !same.AllTie() || !strings.Contains(TieRule(), "within 2%") {
		t.Errorf("identical designs: all tie %v; rule %q", same.AllTie(), TieRule())
	}
}

func TestCompareErrors(t *testing.T) {
	ds := compareDesigns(t)
	bad := ds[1]
	bad.Name, bad.Spec.Nodes = "bad", 0
	many := slices.Repeat(ds[:1], MaxCompareDesigns+1)
	req := sim.Request{Coll: model.AllReduce, Sizes: sizes1Mto1G[:1], Engine: sim.EngineAnalytic}
	tests := []struct {
		name    string
		designs []CompareDesign
		req     sim.Request
		want    string
	}{
		{"none", nil, req, "compare: no designs"},
		{"too many", many, req, "more than 16"},
		{"no sizes", ds, sim.Request{Engine: sim.EngineAnalytic}, "no sizes"},
		{"bad design named", []CompareDesign{ds[0], bad}, req, `compare: design "bad": `},
	}
	for _, tc := range tests {
		_, err := Compare(context.Background(), CompareOptions{Designs: tc.designs, Request: tc.req})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestScaleCollectiveReference: a collective's efficiency is taken against
// the smallest multi-node count and is not defined on one node.
func TestScaleCollectiveReference(t *testing.T) {
	o := ScaleOptions{
		Spec:    spec(t, scenarios.Overrides{Node: "dgx-a100", NICs: "2x100G-roce"}),
		Params:  sim.DefaultParams(),
		Nodes:   []int{8, 1, 4},
		Request: sim.Request{Coll: model.AllReduce, Sizes: []model.Bytes{256 * model.MiB}, ElemSize: 4, Engine: sim.EngineAnalytic},
	}
	res, err := Scale(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ref == nil || res.Ref.Nodes != 4 || len(res.Points) != 3 {
		t.Fatalf("ref %+v, %d points", res.Ref, len(res.Points))
	}
	p1, p4, p8 := res.Points[0], res.Points[1], res.Points[2]
	if p1.Nodes != 1 || p1.EffOK || !p4.EffOK || p4.Eff != 1 || p8.Nodes != 8 {
		t.Errorf("points %+v %+v %+v", p1, p4, p8)
	}
	if p8.Eff != p8.Point.BusBW/p4.Point.BusBW {
		t.Errorf("efficiency %v, busbw %v / %v", p8.Eff, p8.Point.BusBW, p4.Point.BusBW)
	}
	if p8.GPUs() != 64 {
		t.Errorf("8 nodes of DGX A100: %d GPUs", p8.GPUs())
	}
	if !slices.Equal(o.Nodes, []int{8, 1, 4}) {
		t.Errorf("Scale sorted the caller's slice: %v", o.Nodes)
	}
}

// TestScaleWorkloadEfficiency: weak scaling keeps the compute per GPU, and
// on NVLink nodes the collectives only get slower across nodes, so the
// efficiency against one GPU's compute-only rate is at most 1.
func TestScaleWorkloadEfficiency(t *testing.T) {
	tests := []struct {
		name  string
		node  scenarios.Overrides
		w     scenarios.Workload
		nodes []int
	}{
		{"h100 2B ddp", scenarios.Overrides{Node: "dgx-h100"}, scenarios.Workload{Params: 2e9, ComputeMs: 300}, []int{1, 2, 4, 8}},
		{"a100 roce overlap", scenarios.Overrides{Node: "dgx-a100", NICs: "2x100G-roce"}, scenarios.Workload{Params: 1.3e9, ComputeMs: 80, Bucket: 100 * model.MiB}, []int{2, 4}},
		{"hgx fsdp", scenarios.Overrides{Node: "hgx-h100-4gpu"}, scenarios.Workload{Params: 70e9, ComputeMs: 2000, Strategy: scenarios.StrategyFSDP}, []int{1, 16}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.w.WithDefaults()
			if err := w.Validate(); err != nil {
				t.Fatal(err)
			}
			res, err := Scale(context.Background(), ScaleOptions{Spec: spec(t, tc.node), Params: sim.DefaultParams(), Nodes: tc.nodes,
				Request: sim.Request{Engine: sim.EngineAnalytic}, Workload: &w})
			if err != nil {
				t.Fatal(err)
			}
			if res.Ref != nil || !strings.Contains(res.RefLabel, "one GPU") || len(res.Points) != len(tc.nodes) || res.Points[0].Nodes != tc.nodes[0] {
				t.Fatalf("ref %+v %q, points %d", res.Ref, res.RefLabel, len(res.Points))
			}
			for _, p := range res.Points {
				if p.Refused != "" {
					// 70B with Adam on 4 GPUs: 70e9 x 16 B / 4 = 280 GB per GPU.
					if !strings.Contains(p.Refused, "does not fit") || p.GPUs() != 4 {
						t.Errorf("%d nodes refused: %s", p.Nodes, p.Refused)
					}
					continue
				}
				if !p.EffOK || p.Eff > 1 || p.Eff <= 0 {
					t.Errorf("%d nodes: efficiency %v %v", p.Nodes, p.Eff, p.EffOK)
				}
				if p.Step.StepMs < w.ComputeMs || len(p.Step.Comm) == 0 || math.Abs(p.Eff-w.ComputeMs/p.Step.StepMs) > 1e-12 {
					t.Errorf("%d nodes: step %+v", p.Nodes, p.Step)
				}
			}
		})
	}
}

func TestScaleErrors(t *testing.T) {
	base := ScaleOptions{Spec: spec(t, scenarios.Overrides{Node: "dgx-a100"}), Params: sim.DefaultParams(),
		Request: sim.Request{Coll: model.AllReduce, Sizes: []model.Bytes{model.MiB}, Engine: sim.EngineAnalytic}}
	tests := []struct {
		name  string
		nodes []int
		req   *sim.Request
		want  string
	}{
		{"none", nil, nil, "no counts"},
		{"zero", []int{0, 2}, nil, "within 1.."},
		{"twice", []int{2, 4, 2}, nil, "listed twice"},
		{"no size", []int{1}, &sim.Request{Engine: sim.EngineAnalytic}, "no message size"},
	}
	for _, tc := range tests {
		o := base
		o.Nodes = tc.nodes
		if tc.req != nil {
			o.Request = *tc.req
		}
		if _, err := Scale(context.Background(), o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// fabricSweep is internal/cli's testdata/sweep/fabric.yaml: IB against
// RoCE NICs and the leaf uplinks on a 4-node leaf-spine fabric of DGX
// A100s.
const fabricSweep = `name: fabric
base:
  node: dgx-a100
  nodes: 4
  fabric: {kind: leaf-spine, nodes_per_leaf: 2, oversubscription: 1, routing: adaptive}
axes:
  nics: [4x200G-ib, 4x200G-roce, 2x100G-roce]
  fabric.oversubscription: [1, 4]
metric: {collective: allreduce, size: 256M}
within: 5%
`

func runFabricSweep(t *testing.T, within float64) *SweepResult {
	t.Helper()
	s, err := scenarios.LoadSweep("fabric.yaml", []byte(fabricSweep))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := scenarios.ExamplePrices()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Sweep(context.Background(), SweepOptions{Sweep: s, Prices: cat, Params: sim.DefaultParams(), Engine: sim.EngineAnalytic, Within: within})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSweepPareto: a design is on the frontier exactly when no other is
// at most as expensive and at least as fast and better in one; in the
// fabric grid the IB designs deliver what the cheaper RoCE ones do, so
// they are dominated.
func TestSweepPareto(t *testing.T) {
	res := runFabricSweep(t, 0)
	if len(res.Designs) != 6 || res.Unit != "GB/s busbw" || res.Within != 0.05 {
		t.Fatalf("%d designs, unit %q, within %v", len(res.Designs), res.Unit, res.Within)
	}
	for _, d := range res.Designs {
		dominated := false
		for _, o := range res.Designs {
			if o.Cost.TotalUSD <= d.Cost.TotalUSD && o.Throughput >= d.Throughput && (o.Cost.TotalUSD < d.Cost.TotalUSD || o.Throughput > d.Throughput) {
				dominated = true
			}
		}
		if d.Pareto == dominated {
			t.Errorf("#%d %s: pareto %v, dominated %v", d.Index, d.Name, d.Pareto, dominated)
		}
		if d.Throughput != d.BusBW {
			t.Errorf("#%d: throughput %v, busbw %v", d.Index, d.Throughput, d.BusBW)
		}
		if !d.EffOK || d.Eff <= 0 {
			t.Errorf("#%d: efficiency %v %v", d.Index, d.Eff, d.EffOK)
		}
	}
	ib, roce := res.Designs[0], res.Designs[2] // nics=4x200G-ib / 4x200G-roce, oversubscription 1
	if ib.Throughput != roce.Throughput || ib.Cost.TotalUSD <= roce.Cost.TotalUSD || ib.Pareto || !roce.Pareto {
		t.Errorf("ib %+v, roce %+v", ib, roce)
	}
	order := res.ParetoOrder()
	for i := 1; i < len(order); i++ {
		if order[i].Cost.TotalUSD < order[i-1].Cost.TotalUSD {
			t.Errorf("ParetoOrder not by cost: %v before %v", order[i-1].Cost.TotalUSD, order[i].Cost.TotalUSD)
		}
	}
	if res.VariesNodes() {
		t.Error("all designs have 4 nodes")
	}
}

// TestSweepRecommendation: Best is the fastest (the cheaper of equals),
// Pick the cheapest within the tolerance of it, Value the lowest cost per
// throughput; a wider tolerance never picks a dearer design.
func TestSweepRecommendation(t *testing.T) {
	for _, within := range []float64{0, 0.01, 0.5, 0.99} {
		res := runFabricSweep(t, within)
		for _, d := range res.Designs {
			if d.Throughput > res.Best.Throughput || d.Throughput == res.Best.Throughput && d.Cost.TotalUSD < res.Best.Cost.TotalUSD {
				t.Errorf("within %v: #%d beats Best #%d", within, d.Index, res.Best.Index)
			}
			if d.Throughput >= res.Best.Throughput*(1-res.Within) && d.Cost.TotalUSD < res.Pick.Cost.TotalUSD {
				t.Errorf("within %v: #%d is cheaper than Pick #%d and within the tolerance", within, d.Index, res.Pick.Index)
			}
			if d.CostPer() < res.Value.CostPer() {
				t.Errorf("within %v: #%d is better value than #%d", within, d.Index, res.Value.Index)
			}
		}
		if res.Pick.Throughput < res.Best.Throughput*(1-res.Within) {
			t.Errorf("within %v: Pick outside the tolerance", within)
		}
	}
	narrow, wide := runFabricSweep(t, 0.01), runFabricSweep(t, 0.99)
	if wide.Pick.Cost.TotalUSD > narrow.Pick.Cost.TotalUSD {
		t.Errorf("a wider tolerance picked a dearer design: %v > %v", wide.Pick.Cost.TotalUSD, narrow.Pick.Cost.TotalUSD)
	}
}

func TestSweepErrors(t *testing.T) {
	s, err := scenarios.LoadSweep("fabric.yaml", []byte(fabricSweep))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := scenarios.ExamplePrices()
	if err != nil {
		t.Fatal(err)
	}
	ok := SweepOptions{Sweep: s, Prices: cat, Params: sim.DefaultParams(), Engine: sim.EngineAnalytic}
	tests := []struct {
		name string
		edit func(o *SweepOptions)
		want string
	}{
		{"no sweep", func(o *SweepOptions) { o.Sweep = nil }, "a sweep and a price catalog are needed"},
		{"no prices", func(o *SweepOptions) { o.Prices = nil }, "a sweep and a price catalog are needed"},
		{"within", func(o *SweepOptions) { o.Within = 1.5 }, "not a fraction between 0 and 1"},
		{"datatype", func(o *SweepOptions) {
			bad := *o.Sweep
			bad.Metric.Datatype, bad.Metric.DatatypeAt = "float7", "fabric.yaml:9:1"
			o.Sweep = &bad
		}, `fabric.yaml:9:1: metric.datatype: unknown "float7"`},
	}
	for _, tc := range tests {
		o := ok
		tc.edit(&o)
		if _, err := Sweep(context.Background(), o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestWorkloadStep: the step's communication is the sum of every kind's
// Count x time, the exposed part of the DP buckets comes from the
// timeline (at most the total, at least the total minus the backward it
// can hide behind), and Dominant has the most exposed time.
func TestWorkloadStep(t *testing.T) {
	sp := spec(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2})
	for _, st := range []scenarios.Strategy{scenarios.StrategyDDP, scenarios.StrategyFSDP} {
		w := scenarios.Workload{Params: 2e9, ComputeMs: 300, Strategy: st}.WithDefaults()
		r, err := TrainingStep(context.Background(), sp, sim.DefaultParams(), &w, sim.EngineAnalytic)
		if err != nil {
			t.Fatal(err)
		}
		var comm, exposed float64
		dom := r.Dominant()
		for _, c := range r.Comm {
			if math.Abs(c.TotalMs-c.Point.TimeUs*float64(c.Count)/1000) > 1e-9 {
				t.Errorf("%v %s: total %v, want count %d x %v us", st, c.Kind, c.TotalMs, c.Count, c.Point.TimeUs)
			}
			if c.ExposedMs > dom.ExposedMs || c.ExposedMs > c.TotalMs+1e-9 || c.ExposedMs < 0 {
				t.Errorf("%v: %s exposed %v (dominant %s %v, total %v)", st, c.Kind, c.ExposedMs, dom.Kind, dom.ExposedMs, c.TotalMs)
			}
			comm += c.TotalMs
			exposed += c.ExposedMs
		}
		if r.Layout.DP != 16 || math.Abs(r.CommMs-comm) > 1e-9 || math.Abs(r.StepMs-(300+exposed)) > 1e-9 {
			t.Errorf("%v: step %+v, comm %v ms", st, r, comm)
		}
		if st == scenarios.StrategyDDP && exposed < comm-200-1e-9 {
			t.Errorf("ddp: exposed %v hides more than the 200 ms backward of %v ms communication", exposed, comm)
		}
	}
	if d := (StepResult{}).Dominant(); d.TotalMs != 0 || d.Count != 0 {
		t.Error("Dominant of no calls is not the zero CommKind")
	}
}

// TestSweepShardsAndWorkers: any worker count gives the same designs;
// the slices of a split, merged, give exactly the whole run (after a JSON
// round trip, as the command line stores them); a missing or repeated
// slice, or one of another sweep, is refused.
func TestSweepShardsAndWorkers(t *testing.T) {
	s, err := scenarios.LoadSweep("fabric.yaml", []byte(fabricSweep))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := scenarios.ExamplePrices()
	if err != nil {
		t.Fatal(err)
	}
	base := SweepOptions{Sweep: s, Prices: cat, Params: sim.DefaultParams(), Engine: sim.EngineAnalytic}
	run := func(o SweepOptions) *SweepResult {
		t.Helper()
		r, err := Sweep(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	enc := func(r *SweepResult) string {
		b, err := json.Marshal(struct {
			D       []*SweepDesign
			P       []bool
			B, K, V int
		}{r.Designs, paretoFlags(r), r.Best.Index, r.Pick.Index, r.Value.Index})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	whole := run(base)
	want := enc(whole)
	for _, j := range []int{1, 2, 5} {
		o := base
		o.Workers = j
		if got := enc(run(o)); got != want {
			t.Errorf("-j %d differs", j)
		}
	}
	var parts []*SweepResult
	var fps []string
	for i := 1; i <= 4; i++ {
		o := base
		o.Shard, o.Shards = i, 4
		p := run(o)
		if !p.Partial || p.Best != nil {
			t.Fatalf("slice %d: partial %v", i, p.Partial)
		}
		b, _ := json.Marshal(p.Designs)
		p.Designs = nil
		if err := json.Unmarshal(b, &p.Designs); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
		fps = append(fps, "same")
	}
	merged, err := MergeSweep(whole, []*SweepResult{parts[2], parts[0], parts[3], parts[1]}, fps)
	if err != nil {
		t.Fatal(err)
	}
	if got := enc(merged); got != want {
		t.Errorf("merged slices differ from the whole run:\n%s\n%s", got, want)
	}
	for _, tc := range []struct {
		parts []*SweepResult
		fps   []string
		want  string
	}{
		{parts[:3], fps[:3], "slice(s) [4] of 4 missing"},
		{[]*SweepResult{parts[0], parts[0], parts[1], parts[2]}, fps, "given twice"},
		{parts, []string{"same", "other", "same", "same"}, "of a different sweep"},
	} {
		if _, err := MergeSweep(whole, tc.parts, tc.fps); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("merge: error %v, want %q", err, tc.want)
		}
	}
}

func paretoFlags(r *SweepResult) []bool {
	var out []bool
	for _, d := range r.Designs {
		out = append(out, d.Pareto)
	}
	return out
}
