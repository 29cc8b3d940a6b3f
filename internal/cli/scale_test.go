package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFile writes a test fixture or fails the test.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestScaleGolden pins scale's tables (analytic engine): a collective and
// a DDP training step; -update rewrites them.
func TestScaleGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		{"scale/dgx-h100_allreduce.golden", []string{"scale", "--node", "dgx-h100", "--max-nodes", "16"}},
		{"scale/dgx-a100_ddp.golden", []string{"scale", "--node", "dgx-a100", "--nics", "4x200G-ib", "--nodes-list", "2,8,32",
			"--params", "3B", "--compute-ms", "300", "--batch-per-gpu", "4"}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			checkGolden(t, tc.golden, out)
		})
	}
}

// scaleJSON runs scale with --format json and decodes the points.
func scaleJSON(t *testing.T, args ...string) (doc struct {
	ReferenceNodes int    `json:"reference_nodes"`
	Reference      string `json:"reference"`
	Points         []struct {
		Nodes      int      `json:"nodes"`
		GPUs       int      `json:"gpus"`
		ComputeMs  float64  `json:"compute_ms"`
		ExposedMs  float64  `json:"exposed_ms"`
		Bottleneck string   `json:"bottleneck"`
		Refused    string   `json:"refused"`
		BusBW      float64  `json:"busbw_gbps"`
		StepMs     float64  `json:"step_ms"`
		Efficiency *float64 `json:"efficiency"`
	} `json:"points"`
}) {
	t.Helper()
	code, out, errs := runCLI(t, append(append([]string{"scale"}, args...), "--format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestScaleWorkloadEfficiency: the efficiency is compute / step against
// one GPU's compute-only rate, so it is at most 1 and below 1 wherever a
// collective is exposed, one node of 8 GPUs included; a model that does not
// fit a count (70B FSDP on 4 GPUs: 70e9 x 16 B / 4 = 280 GB per GPU) is
// refused at that count with the numbers, not an error of the run.
func TestScaleWorkloadEfficiency(t *testing.T) {
	for _, args := range [][]string{
		{"--node", "dgx-h100", "--params", "2B", "--compute-ms", "300"},
		{"--node", "dgx-a100", "--nics", "2x100G-roce", "--params", "1.3B", "--compute-ms", "80", "--bucket", "100M"},
		{"--node", "hgx-h100-4gpu", "--params", "70B", "--compute-ms", "2000", "--strategy", "fsdp"},
		{"--node", "dgx-b200", "--nics", "4x400G-roce", "--params", "350M", "--compute-ms", "50", "--grad-bytes", "4", "--bucket", "4M"},
	} {
		doc := scaleJSON(t, append(args, "--max-nodes", "32")...)
		ok := 0
		for _, p := range doc.Points {
			if p.Refused != "" {
				if !strings.Contains(p.Refused, "does not fit") {
					t.Errorf("%v: %d nodes refused: %s", args, p.Nodes, p.Refused)
				}
				continue
			}
			ok++
			if p.Efficiency == nil || *p.Efficiency > 1 || *p.Efficiency <= 0 || math.Abs(*p.Efficiency-round(p.ComputeMs/p.StepMs, 4)) > 1e-4 {
				t.Errorf("%v: %d nodes: efficiency %v, compute %v, step %v", args, p.Nodes, deref(p.Efficiency), p.ComputeMs, p.StepMs)
			}
		}
		if ok == 0 || !strings.Contains(doc.Reference, "one GPU") {
			t.Errorf("%v: no point modelled, reference %q", args, doc.Reference)
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestScaleCollectiveReference: a collective's efficiency is taken against
// the smallest multi-node count and is not defined on one node.
func TestScaleCollectiveReference(t *testing.T) {
	doc := scaleJSON(t, "--node", "dgx-a100", "--nics", "2x100G-roce", "--nodes-list", "8,1,4", "--size", "256M")
	if doc.ReferenceNodes != 4 || len(doc.Points) != 3 || doc.Points[0].Nodes != 1 || doc.Points[0].Efficiency != nil || *doc.Points[1].Efficiency != 1 {
		t.Fatalf("doc = %+v", doc)
	}
	if e := *doc.Points[2].Efficiency; e != round(doc.Points[2].BusBW/doc.Points[1].BusBW, 4) {
		t.Errorf("efficiency %v, busbw %v / %v", e, doc.Points[2].BusBW, doc.Points[1].BusBW)
	}
}

func TestScaleBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--nodes", "4"}, "--nodes sets one node count"},
		{[]string{"--nodes-list", "1,two"}, `--nodes-list: "two" is not a node count`},
		{[]string{"--nodes-list", "2,2"}, "2 is listed twice"},
		{[]string{"--nodes-list", "2", "--max-nodes", "8"}, "not both"},
		{[]string{"--max-nodes", "0"}, "--max-nodes 0 is outside"},
		{[]string{"--overlap", "0.5"}, "--overlap: a fixed hidden fraction is no longer an input"},
		{[]string{"--params", "1B", "--compute-ms", "10", "--bucket", "0"}, "--bucket 0 is not a bucket size"},
		{[]string{"--params", "7B"}, "--params needs --compute-ms"},
		{[]string{"--params", "7B", "--compute-ms", "10", "--size", "1G"}, "--size applies to a collective"},
		{[]string{"--params", "7B", "--compute-ms", "10", "--nodes-list", "1"}, "does not fit in GPU memory: needs 112.0 GB per GPU (weights 14.0, gradients 14.0, optimizer 84.0, activations 0.0) of the A100-SXM4's 80 GB"},
		{[]string{"--params", "lots", "--compute-ms", "10"}, "--params: invalid count"},
		{[]string{"--workload", "/nonexistent/w.yaml"}, "no such file"},
		{[]string{"--size", "0"}, "--size: want a size"},
		{[]string{"--node", "dgx-a100", "--nics", "8x999G-ib"}, "--nics:"},
	}
	for _, tc := range tests {
		code, out, errs := runCLI(t, append([]string{"scale", "--node", "dgx-a100"}, tc.args...)...)
		if code != ExitBadInput || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want %q)", tc.args, code, out, errs, tc.want)
		}
	}
}

// TestScaleWorkloadFile: a workload YAML, with a flag overriding a field.
func TestScaleWorkloadFile(t *testing.T) {
	path := t.TempDir() + "/w.yaml"
	writeFile(t, path, "name: gpt\nparams: 1B\ncompute_ms: 100\n")
	a := scaleJSON(t, "--node", "dgx-a100", "--workload", path, "--nodes-list", "4")
	b := scaleJSON(t, "--node", "dgx-a100", "--workload", path, "--compute-ms", "50", "--nodes-list", "4")
	if a.Points[0].ComputeMs != 100 || b.Points[0].ComputeMs != 50 {
		t.Errorf("--compute-ms did not override the file: %v vs %v", b.Points[0].ComputeMs, a.Points[0].ComputeMs)
	}
}

// TestScaleWorkloadInputs: a parallelism that does not divide the GPUs or
// the layers and a model that does not fit are one-line errors (exit 2)
// naming what and where; a TP group larger than the NVLink domain is a
// warning on stderr and the run goes on.
func TestScaleWorkloadInputs(t *testing.T) {
	dir := t.TempDir()
	shape := "model: {layers: 32, hidden: 4096, heads: 48, seq_len: 2048}\nbatch: {micro: 1}\ncompute: {mfu: 0.4}\n"
	for _, tc := range []struct {
		name, doc, want string
		code            int
	}{
		{"tp3", shape + "parallel: {tp: 3}\n", "TP 3 x CP 1 x PP 1 = 3 does not divide the 16 GPUs (2 nodes x 8)", ExitBadInput},
		{"pp5", shape + "parallel: {pp: 5}\n", "tp5.yaml:4:16: parallel.pp: 5 stages x 1 chunk(s) do not divide the 32 layers", ExitBadInput},
		{"big", "params: 70B\ncompute_ms: 100\n", "does not fit in GPU memory: needs 1120.0 GB per GPU", ExitBadInput},
		{"tp16", shape + "parallel: {tp: 16}\n", "warning: parallel.tp 16 is larger than the NVLink domain (8 GPUs per node)", 0},
	} {
		path := filepath.Join(dir, tc.name+".yaml")
		if tc.name == "pp5" {
			path = filepath.Join(dir, "tp5.yaml")
		}
		writeFile(t, path, tc.doc)
		code, _, errs := runCLI(t, "scale", "--node", "dgx-h100", "--nodes-list", "2", "--workload", path)
		if code != tc.code || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q (want %d, %q)", tc.name, code, errs, tc.code, tc.want)
		}
	}
}

// TestScaleNoSelfReference: when the largest count is the only multi-node
// count that runs its algorithm with its bottleneck (dgx-h100, 8x NDR, 1
// GiB: NVLSTree on 2 nodes, the NIC-bound ring on 4), it would be its own
// reference; no efficiency is stated, where a list with smaller ring
// counts states one; a list of GPUs of one node speaks of GPUs, not "1
// nodes".
func TestScaleNoSelfReference(t *testing.T) {
	base := []string{"scale", "--node", "dgx-h100", "--nics", "8x400G-ib", "--size", "1G"}
	code, out, errs := collsim(t, append(append([]string{}, base...), "--nodes-list", "1,2,4")...)
	if code != ExitOK || !strings.Contains(out, "no smaller multi-node count runs like it, so") || strings.Contains(out, "Efficiency from 4 to 4") {
		t.Errorf("1,2,4: exit %d %s\n%s", code, errs, out)
	}
	code, out, errs = collsim(t, append(append([]string{}, base...), "--nodes-list", "1,2,4,8,16")...)
	if code != ExitOK || !strings.Contains(out, "Efficiency from 8 to 16 nodes") {
		t.Errorf("1,2,4,8,16: exit %d %s\n%s", code, errs, out)
	}
	code, out, errs = collsim(t, "scale", "--node", "dgx-h100", "--gpus-list", "2,4,8", "--size", "1G")
	if code != ExitOK || strings.Contains(out, "at 1 nodes") || !strings.Contains(out, "at 8 GPUs of one node") {
		t.Errorf("--gpus-list: exit %d %s\n%s", code, errs, out)
	}
}
