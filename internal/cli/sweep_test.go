package cli

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
	var nodes, ch []string
	for i := 1; i <= 1024; i++ {
		nodes = append(nodes, strconv.Itoa(i))
	}
	for i := 1; i <= 32; i++ {
		ch = append(ch, strconv.Itoa(i))
	}
	writeFile(t, big, "base: dgx-h100\naxes:\n  gpus_per_node: [4, 8]\n  nodes: ["+strings.Join(nodes, ", ")+"]\n  env.NCCL_MIN_NCHANNELS: ["+strings.Join(ch, ", ")+"]\n  env.NCCL_MAX_NCHANNELS: ["+strings.Join(ch, ", ")+"]\nmetric: {collective: allreduce}\n")
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
		{[]string{big}, "big.yaml:2:1: axes: the grid has 2097152 designs (gpus_per_node 2 x nodes 1024 x env.NCCL_MIN_NCHANNELS 32 x env.NCCL_MAX_NCHANNELS 32); collsim sweeps at most 1048576"},
		{[]string{"testdata/sweep/fabric.yaml", "--shard", "0/4"}, "--shard \"0/4\": want I/N"},
		{[]string{"testdata/sweep/fabric.yaml", "--shard", "2/4", "--format", "csv"}, "--shard writes a JSON slice"},
		{[]string{"testdata/sweep/fabric.yaml", "--shard", "1/99"}, "99 shards for 6 designs"},
		{[]string{"testdata/sweep/fabric.yaml", "-j", "0"}, "-j 0: want at least 1"},
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

// TestSweepJobsIdentity: -j 1, 2 and 7 give the same bytes.
func TestSweepJobsIdentity(t *testing.T) {
	for _, f := range []string{"table", "json"} {
		var first string
		for _, j := range []string{"1", "2", "7"} {
			code, out, errs := runCLI(t, "sweep", "testdata/sweep/fabric.yaml", "-j", j, "--format", f)
			if code != 0 {
				t.Fatalf("-j %s: exit %d: %s", j, code, errs)
			}
			if first == "" {
				first = out
			} else if out != first {
				t.Errorf("%s: -j %s differs from -j 1", f, j)
			}
		}
	}
}

// TestSweepShardMerge: the slices of --shard I/N, joined by collsim merge
// in any order, print exactly what one run prints, in every format; a
// missing slice, a repeated one and a slice of another grid are refused.
func TestSweepShardMerge(t *testing.T) {
	dir := t.TempDir()
	for _, grid := range []string{"fabric", "train"} {
		var parts []string
		for i := 1; i <= 3; i++ {
			code, out, errs := runCLI(t, "sweep", "testdata/sweep/"+grid+".yaml", "--shard", strconv.Itoa(i)+"/3", "-j", strconv.Itoa(i))
			if code != 0 {
				t.Fatalf("%s shard %d: exit %d: %s", grid, i, code, errs)
			}
			p := filepath.Join(dir, grid+strconv.Itoa(i)+".json")
			writeFile(t, p, out)
			parts = append(parts, p)
		}
		for _, f := range []string{"table", "json", "csv"} {
			_, whole, _ := runCLI(t, "sweep", "testdata/sweep/"+grid+".yaml", "--format", f)
			code, merged, errs := runCLI(t, "merge", parts[2], parts[0], parts[1], "--format", f)
			if code != 0 || merged != whole || whole == "" {
				t.Errorf("%s %s: merge (exit %d, %s) differs from one run", grid, f, code, errs)
			}
		}
	}
	other := filepath.Join(dir, "train2.json")
	// A slice edited after it was written: a design repeated in place of
	// another, or a header field changed; both used to merge with exit 0.
	edit := func(name string, f func(doc map[string]any)) string {
		var doc map[string]any
		if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "fabric2.json"))), &doc); err != nil {
			t.Fatal(err)
		}
		f(doc)
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		writeFile(t, p, string(b))
		return p
	}
	dup := edit("dup.json", func(doc map[string]any) {
		ds := doc["designs"].([]any)
		ds[len(ds)-1] = ds[0]
	})
	eng := edit("eng.json", func(doc map[string]any) { doc["header"].(map[string]any)["name"] = "renamed" })
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(dir, "fabric1.json"), filepath.Join(dir, "fabric2.json")}, "slice(s) [3] of 3 missing"},
		{[]string{filepath.Join(dir, "fabric1.json"), filepath.Join(dir, "fabric1.json"), filepath.Join(dir, "fabric3.json")}, "given twice"},
		{[]string{filepath.Join(dir, "fabric1.json"), other, filepath.Join(dir, "fabric3.json")}, "of a different sweep"},
		{[]string{filepath.Join(dir, "fabric1.json"), dup, filepath.Join(dir, "fabric3.json")}, "the slice was edited"},
		{[]string{filepath.Join(dir, "fabric1.json"), eng, filepath.Join(dir, "fabric3.json")}, "its header differs from " + filepath.Join(dir, "fabric1.json") + "'s (name)"},
		{[]string{"testdata/sweep/fabric.yaml"}, "not a sweep slice"},
		{[]string{}, "give the slice files"},
	} {
		code, out, errs := runCLI(t, append([]string{"merge"}, tc.args...)...)
		if code != ExitBadInput || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("merge %v: exit %d, stderr %q (want %q)", tc.args, code, errs, tc.want)
		}
	}
}

// TestProgress: on a terminal the bar shows the count, the rate and the
// ETA and ends its line; off a terminal (a pipe, --quiet) it writes
// nothing; the sweep command itself, whose stderr here is a buffer, stays
// quiet.
func TestProgress(t *testing.T) {
	var buf strings.Builder
	clock := time.Unix(0, 0)
	p := newProgress(&buf, 10, true, func() time.Time { return clock })
	for i := 1; i <= 10; i++ {
		clock = clock.Add(time.Second)
		p.update(i, 10)
	}
	p.finish()
	out := buf.String()
	if !strings.Contains(out, "\r[==============================] 10/10 designs  1.0/s  ETA 0:00") || !strings.Contains(out, "5/10 designs  1.0/s  ETA 0:05") || !strings.HasSuffix(out, "\n") {
		t.Errorf("bar %q", out)
	}
	buf.Reset()
	q := newProgress(&buf, 10, false, nil)
	q.update(5, 10)
	q.finish()
	if buf.Len() != 0 {
		t.Errorf("quiet bar wrote %q", buf.String())
	}
	if isTerminal(&buf) {
		t.Error("a buffer is not a terminal")
	}
	_, _, errs := runCLI(t, "sweep", "testdata/sweep/fabric.yaml")
	if errs != "" {
		t.Errorf("piped sweep wrote to stderr: %q", errs)
	}
}

// TestSweepRankCheck: --rank-check models designs again with the DES and
// states Spearman's rho between the engines' rankings.
func TestSweepRankCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("models six designs with the DES (~3 s)")
	}
	code, out, errs := runCLI(t, "sweep", "testdata/sweep/fabric.yaml", "--rank-check", "6", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Rank struct {
			Designs int     `json:"designs"`
			Rho     float64 `json:"spearman_rho"`
		} `json:"rank_check"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Rank.Designs != 6 || doc.Rank.Rho < 0.8 || doc.Rank.Rho > 1 {
		t.Errorf("rank check %+v", doc.Rank)
	}
}
