package scenarios

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLoadSweep(t *testing.T) {
	doc := `
name: fabric
base:
  node: dgx-h100
  nodes: 4
  fabric: {kind: leaf-spine, nodes_per_leaf: 2, oversubscription: 1}
axes:
  nics: [8x400G-ib, 8x400G-roce]
  fabric.oversubscription: [1, 2, 4]
  env.NCCL_ALGO: [Ring]
metric: {collective: allgather, size: 256M}
within: 5%
`
	s, err := LoadSweep("s.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "fabric" || s.Size() != 6 || s.Within != 0.05 || s.Metric.Size != 256<<20 || s.Metric.Coll.String() != "allgather" || s.BaseFrom != "inline cluster" {
		t.Fatalf("sweep = %+v", s)
	}
	ds, err := s.Designs()
	if err != nil {
		t.Fatal(err)
	}
	// The first axis varies slowest; every design keeps the base and gets its values.
	want := []string{
		"nics=8x400G-ib fabric.oversubscription=1 env.NCCL_ALGO=Ring",
		"nics=8x400G-ib fabric.oversubscription=2 env.NCCL_ALGO=Ring",
		"nics=8x400G-ib fabric.oversubscription=4 env.NCCL_ALGO=Ring",
		"nics=8x400G-roce fabric.oversubscription=1 env.NCCL_ALGO=Ring",
	}
	for i, w := range want {
		if ds[i].Name != w || ds[i].Index != i+1 {
			t.Errorf("design %d = %q, want %q", i, ds[i].Name, w)
		}
	}
	d := ds[5]
	if d.Spec.Nodes != 4 || d.Spec.Node.NICs.Kind != "roce" || d.Spec.Fabric.Oversubscription != 4 || d.Spec.Env["NCCL_ALGO"] != "Ring" || d.Spec.Fabric.NodesPerLeaf != 2 {
		t.Errorf("design 6 spec = %+v", d.Spec)
	}
	if s.Base.Env != nil || ds[0].Spec.Node.NICs.Kind != "ib" {
		t.Error("designs share state with the base or each other")
	}
	if _, err := ds[0].Spec.Build(); err != nil {
		t.Error(err)
	}
}

func TestLoadSweepWorkloadAndFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte("node: dgx-a100\nnodes: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "w.yaml"), []byte("params: 1B\ncompute_ms: 50\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte("base: c.yaml\naxes: {nodes: [2, 4]}\nmetric: {workload: w.yaml}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSweepFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Base.Node.Name != "dgx-a100" || s.Metric.Workload == nil || s.Metric.Workload.Params != 1e9 || s.Metric.Workload.Bucket != DefaultBucket {
		t.Errorf("sweep = %+v, workload %+v", s, s.Metric.Workload)
	}
	if !strings.HasPrefix(s.Metric.Describe(), "training step: 1B params, ZeRO 0 (ddp)") {
		t.Errorf("describe = %q", s.Metric.Describe())
	}
}

// TestLoadSweepErrors: malformed sweeps are errors with file:line:col.
func TestLoadSweepErrors(t *testing.T) {
	const m = "metric: {collective: allreduce}\n"
	tests := []struct{ doc, want string }{
		{"base: dgx-h100\naxes: {}\n" + m, "s.yaml:2:7: axes: the grid is empty"},
		{"base: dgx-h100\naxes: {nics: []}\n" + m, "s.yaml:2:14: nics: the list is empty"},
		{"base: dgx-h100\naxes: {nicz: [8xNDR]}\n" + m, "s.yaml:2:8: unknown axis \"nicz\""},
		{"base: dgx-h100\naxes: {nics: [8x999G-ib]}\n" + m, "s.yaml:2:15: nics: \"8x999G-ib\""},
		{"base: dgx-h100\naxes: {nodes: [2, two]}\n" + m, "s.yaml:2:19: nodes: want a node count"},
		{"base: dgx-h100\naxes: {nodes: [2, 2]}\n" + m, "s.yaml:2:19: nodes: \"2\" is listed twice"},
		{"base: dgx-h100\naxes: {gpu: [L40S]}\n" + m, "s.yaml:2:14: gpu: gpu L40S has no NVLink"},
		{"base: dgx-h100\naxes: {fabric.oversubscription: [2]}\n" + m, "s.yaml:2:8: fabric.oversubscription needs a leaf-spine base fabric"},
		{"base: dgx-h100\naxes: {env.NCCL_ALGO: [Warp]}\n" + m, "s.yaml:2:24: env.NCCL_ALGO:"},
		{"base: dgx-h1000\naxes: {nodes: [2]}\n" + m, "s.yaml:1:7: base: unknown node template"},
		{"base: {node: dgx-h100, nodez: 2}\naxes: {nodes: [2]}\n" + m, "s.yaml:1:24: unknown key \"nodez\""},
		{"base: dgx-h100\naxes: {nodes: [2]}\nmetric: {collective: allscatter}\n", "s.yaml:3:22: metric.collective:"},
		{"base: dgx-h100\naxes: {nodes: [2]}\nmetric: {size: 1G, workload: {params: 1B, compute_ms: 1}}\n", "s.yaml:3:9: metric: give a collective"},
		{"base: dgx-h100\naxes: {nodes: [2]}\nmetric: {workload: {params: 1B}}\n", "s.yaml:3:20: missing key \"compute_ms\""},
		{"base: dgx-h100\naxes: {nodes: [2]}\n", "s.yaml:1:1: missing key \"metric\""},
		{"base: dgx-h100\naxes: {nodes: [2]}\n" + m + "within: 200%\n", "s.yaml:4:9: within:"},
		{"base: dgx-h100\naxes: {nodes: [2]}\n" + m + "extra: 1\n", "s.yaml:4:1: unknown key \"extra\""},
		{"base: dgx-h100\naxes: {nodes: [2\n", "s.yaml:"},
		{"base: dgx-h100\naxes:\n  nodes: [" + seq(1024) + "]\n  gpus_per_node: [1, 2, 3, 4, 5, 6, 7, 8]\n  env.NCCL_MIN_NCHANNELS: [" + seq(32) + "]\n  env.NCCL_ALGO: [Ring, Tree, NVLS, NVLSTree, CollnetDirect, CollnetChain, PAT]\n" + m,
			"s.yaml:2:1: axes: the grid has 1835008 designs (nodes 1024 x gpus_per_node 8 x env.NCCL_MIN_NCHANNELS 32 x env.NCCL_ALGO 7); collsim sweeps at most 1048576"},
	}
	for _, tc := range tests {
		_, err := LoadSweep("s.yaml", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n error %v\n want %q", tc.doc, err, tc.want)
		}
	}
}

// TestSweepDesignError: a combination that cannot be built names the design.
func TestSweepDesignError(t *testing.T) {
	s, err := LoadSweep("s.yaml", []byte("base: hgx-h100-4gpu\naxes:\n  gpus_per_node: [2, 4]\nmetric: {collective: allreduce}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Designs(); err != nil {
		t.Fatal(err)
	}
	_, err = LoadSweep("s.yaml", []byte("base: hgx-h100-4gpu\naxes:\n  gpus_per_node: [8]\nmetric: {collective: allreduce}\n"))
	if err == nil || !strings.Contains(err.Error(), "s.yaml:3:19: gpus_per_node: 8 is more than the 4 GPUs") {
		t.Errorf("error %v", err)
	}
}

// seq is "1, 2, ..., n".
func seq(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}

// TestSweepDesignAt: Design(i) is the i-th design of Designs, so a sweep
// can generate its grid one design at a time.
func TestSweepDesignAt(t *testing.T) {
	s, err := LoadSweep("s.yaml", []byte("base: dgx-h100\naxes:\n  nodes: [1, 2, 4]\n  nics: [8x400G-ib, 2x400G-roce]\nmetric: {collective: allreduce}\n"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Designs()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range all {
		got, err := s.Design(i)
		if err != nil || got.Name != want.Name || got.Index != want.Index || got.Spec.Nodes != want.Spec.Nodes || got.Spec.Node.NICs != want.Spec.Node.NICs {
			t.Errorf("Design(%d) = %+v, %v; want %+v", i, got.Name, err, want.Name)
		}
	}
	if _, err := s.Design(len(all)); err == nil {
		t.Error("Design past the grid is not an error")
	}
}
