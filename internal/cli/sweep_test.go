package cli

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/collsim/collsim/scenarios"
)

// TestSweepGolden pins sweep's tables (analytic engine, example prices):
// a collective grid and a workload grid; -update rewrites them.
func TestSweepGolden(t *testing.T) {
	for _, name := range []string{"fabric", "train"} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := runCLI(t, "sweep", "testdata/sweep/"+name+".yaml")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if !strings.Contains(out, scenarios.ExampleNotice) {
				t.Error("the table does not say the prices are examples")
			}
			checkGolden(t, "sweep/"+name+".golden", out)
		})
	}
}

// sweepDoc is the part of sweep's JSON the tests read.
type sweepDoc struct {
	Prices struct {
		Example bool   `json:"example"`
		Notice  string `json:"notice"`
	} `json:"prices"`
	Designs []struct {
		Index      int      `json:"index"`
		Name       string   `json:"name"`
		CostUSD    float64  `json:"cost_usd"`
		Throughput float64  `json:"throughput"`
		Efficiency *float64 `json:"efficiency"`
		Pareto     bool     `json:"pareto"`
	} `json:"designs"`
	Recommendation string `json:"recommendation"`
}

func sweepJSON(t *testing.T, args ...string) sweepDoc {
	t.Helper()
	code, out, errs := runCLI(t, append(append([]string{"sweep"}, args...), "--format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc sweepDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestSweepPareto: a design is on the frontier exactly when no other is
// at most as expensive and at least as fast and better in one; in the
// fabric grid the IB designs deliver what the cheaper RoCE ones do, so
// they are dominated and not marked.
func TestSweepPareto(t *testing.T) {
	doc := sweepJSON(t, "testdata/sweep/fabric.yaml")
	if !doc.Prices.Example || doc.Prices.Notice != scenarios.ExampleNotice {
		t.Errorf("prices %+v", doc.Prices)
	}
	for _, d := range doc.Designs {
		dominated := false
		for _, o := range doc.Designs {
			if o.CostUSD <= d.CostUSD && o.Throughput >= d.Throughput && (o.CostUSD < d.CostUSD || o.Throughput > d.Throughput) {
				dominated = true
			}
		}
		if d.Pareto == dominated {
			t.Errorf("#%d %s: pareto %v, dominated %v", d.Index, d.Name, d.Pareto, dominated)
		}
	}
	ib, roce := doc.Designs[0], doc.Designs[2] // nics=4x200G-ib / 4x200G-roce, oversubscription 1
	if ib.Throughput != roce.Throughput || ib.CostUSD <= roce.CostUSD || ib.Pareto || !roce.Pareto {
		t.Errorf("ib %+v, roce %+v", ib, roce)
	}
	if !strings.Contains(doc.Recommendation, "example prices, replace with your quotes") {
		t.Errorf("recommendation %q", doc.Recommendation)
	}
}

// TestSweepDeterministic: the same sweep twice gives the same bytes in
// every format (designs are modelled in parallel).
func TestSweepDeterministic(t *testing.T) {
	for _, f := range []string{"table", "json", "csv"} {
		_, a, _ := runCLI(t, "sweep", "testdata/sweep/train.yaml", "--format", f)
		_, b, _ := runCLI(t, "sweep", "testdata/sweep/train.yaml", "--format", f)
		if a == "" || a != b {
			t.Errorf("%s: output differs or is empty", f)
		}
	}
}

// TestSweepWorkloadEfficiency: weak-scaling efficiency is at most 1.
func TestSweepWorkloadEfficiency(t *testing.T) {
	for _, d := range sweepJSON(t, "testdata/sweep/train.yaml").Designs {
		if d.Efficiency == nil || *d.Efficiency > 1 || *d.Efficiency <= 0 {
			t.Errorf("#%d: efficiency %v", d.Index, d.Efficiency)
		}
	}
}

func TestSweepBadInput(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	var nodes []string
	for i := 1; i <= 50; i++ {
		nodes = append(nodes, strconv.Itoa(i))
	}
	writeFile(t, big, "base: dgx-h100\naxes:\n  gpus_per_node: [1, 2, 4, 8]\n  nodes: ["+strings.Join(nodes, ", ")+"]\n  nics: [1xNDR, 2xNDR, 4xNDR, 8xNDR, 1x400G-roce, 2x400G-roce, 4x400G-roce, 8x400G-roce, 8x200G-roce, 4x200G-roce, 2x200G-roce]\nmetric: {collective: allreduce}\n")
	empty := filepath.Join(dir, "empty.yaml")
	writeFile(t, empty, "base: dgx-h100\naxes: {nodes: []}\nmetric: {collective: allreduce}\n")
	dtype := filepath.Join(dir, "dtype.yaml")
	writeFile(t, dtype, "base: dgx-h100\naxes: {nodes: [2]}\nmetric: {collective: allreduce, datatype: float3}\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"testdata/sweep/gpus.yaml", "--prices", "testdata/sweep/prices_no_b200.yaml"}, `design 2 (gpu=B200): no price for GPU "B200" in testdata/sweep/prices_no_b200.yaml`},
		{[]string{"testdata/sweep/bad.yaml"}, `testdata/sweep/bad.yaml:4:21: nics: "8x999G-roce"`},
		{[]string{empty}, "empty.yaml:2:15: nodes: the list is empty, so the grid is empty"},
		{[]string{big}, "big.yaml:2:1: axes: the grid has 2200 designs (gpus_per_node 4 x nodes 50 x nics 11); collsim sweeps at most 2000"},
		{[]string{dtype}, "dtype.yaml:3:43: metric.datatype: unknown \"float3\""},
		{[]string{"/nonexistent/sweep.yaml"}, "no such file"},
		{[]string{}, "give one sweep YAML file"},
		{[]string{"testdata/sweep/fabric.yaml", "--within", "150%"}, "--within: want a fraction"},
		{[]string{"testdata/sweep/fabric.yaml", "--prices", "/nonexistent/p.yaml"}, "no such file"},
		{[]string{"testdata/sweep/fabric.yaml", "--engine", "quantum"}, "--engine: unknown"},
	}
	for _, tc := range tests {
		code, out, errs := runCLI(t, append([]string{"sweep"}, tc.args...)...)
		if code != ExitBadInput || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want %q)", tc.args, code, out, errs, tc.want)
		}
	}
}
