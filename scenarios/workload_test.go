package scenarios

import (
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

func TestParseCount(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		bad  bool
	}{
		{"7e9", 7e9, false},
		{"7B", 7e9, false},
		{"70b", 70e9, false},
		{"1.5T", 1.5e12, false},
		{"350M", 350e6, false},
		{"12K", 12e3, false},
		{"7_000_000_000", 7e9, false},
		{"seven", 0, true},
		{"-3", 0, true},
		{"", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseCount(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("ParseCount(%q) = %v, %v", tc.in, got, err)
		}
	}
	if FormatCount(7e9) != "7B" || FormatCount(1.5e12) != "1.5T" || FormatCount(42) != "42" {
		t.Errorf("FormatCount: %s %s %s", FormatCount(7e9), FormatCount(1.5e12), FormatCount(42))
	}
}

// TestWorkloadDefaults: a transformer given by shape gets 12 L h^2 + V h
// parameters (Narayanan et al., SC'21: 12 L h^2 (1 + 13/12h + ...)); ZeRO
// 3 and fsdp are the same thing; FLOPs per token are 6 x params plus the
// attention term 12 L h s; an MoE counts top_k/experts of its experts.
func TestWorkloadDefaults(t *testing.T) {
	w := Workload{Layers: 24, Hidden: 1024, Vocab: 50257, SeqLen: 1024, BatchPerGPU: 8, MFU: 0.4}.WithDefaults()
	want := 12*24*1024*1024.0 + 50257*1024
	if w.Params != want || w.Strategy != StrategyDDP || w.TP != 1 || w.GradAccum != 1 || w.WeightBytes != 2 || w.OptimizerBytes != 12 {
		t.Fatalf("defaults %+v", w)
	}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	if f := w.FLOPsPerToken(); f != 6*want+12*24*1024*1024 {
		t.Errorf("FLOPs per token %v", f)
	}
	z := Workload{Params: 1e9, ComputeMs: 1, Zero: 3}.WithDefaults()
	if z.Strategy != StrategyFSDP {
		t.Errorf("zero 3 is %s", z.Strategy)
	}
	moe := Workload{Params: 10e9, ExpertParams: 8e9, Experts: 8, TopK: 2, ComputeMs: 1}.WithDefaults()
	if a := moe.ActiveParams(); a != 2e9+2e9 {
		t.Errorf("active params %v, want 4e9", a)
	}
}

func TestWorkloadYAML(t *testing.T) {
	w, err := LoadWorkload("w.yaml", []byte("name: llama\nparams: 7B\nbucket: 50M\ncompute_ms: 300\nbatch_per_gpu: 2\nstrategy: fsdp\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w.Params != 7e9 || w.Bucket != 50*model.MiB || w.Strategy != StrategyFSDP || w.Zero != 3 || w.GradBytes != 2 || w.BatchPerGPU != 2 {
		t.Errorf("loaded %+v", w)
	}
	doc := "model: {layers: 80, hidden: 8192, heads: 64, seq_len: 4096}\ndtype: {grads: bf16, compute: bf16}\nbatch: {micro: 1, global: 64}\n" +
		"parallel: {tp: 8, pp: 4, pp_schedule: interleaved, virtual_stages: 2, sp: true, zero: 1}\ncompute: {mfu: 0.4}\n" +
		"io: {sample_bytes: 16K, gds: true, storage_gbps: 10, checkpoint_every: 100}\ncluster: {node: dgx-h100, nodes: 4, nics: 8x400G-ib}\n"
	n, err := LoadWorkload("n.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if n.TP != 8 || n.PP != 4 || n.VirtualStages != 2 || !n.SP || n.Zero != 1 || n.GlobalBatch != 64 || n.MFU != 0.4 || !n.GDS ||
		n.Cluster == nil || n.Cluster.Nodes != 4 || n.Cluster.Node.NICs.Count != 8 || n.Params < 64e9 {
		t.Errorf("loaded %+v", n)
	}
	bad := []struct{ doc, want string }{
		{"params: 7B\n", "w.yaml:1:1: missing key \"compute_ms\""},
		{"compute_ms: 3\n", "missing key \"params\""},
		{"params: lots\ncompute_ms: 3\n", "w.yaml:1:9: params: invalid count"},
		{"params: 7B\ncompute_ms: 3\noverlap: 0.5\n", "w.yaml:3:1: overlap: a fixed hidden fraction is no longer an input"},
		{"params: 7B\ncompute_ms: 3\nbucket: 0\n", "w.yaml:3:9: bucket: \"0\" is not a bucket size"},
		{"model: {layers: 30, hidden: 512, seq_len: 64}\nbatch_per_gpu: 1\ncompute_ms: 3\nparallel: {pp: 4}\n", "w.yaml:4:16: parallel.pp: 4 stages x 1 chunk(s) do not divide the 30 layers"},
		{"params: 7B\ncompute_ms: 3\nparallel: {tp: 2}\n", "parallel.tp: needs model.hidden"},
		{"params: 7B\ncompute: {mfu: 0.4}\n", "compute.mfu: computing the step from FLOPs needs seq_len"},
		{"params: 7B\ncompute_ms: 3\nparallel: {tpp: 2}\n", "w.yaml:3:12: unknown key \"parallel.tpp\""},
		{"params: 7B\ncompute_ms: 3\ncluster: {gpu: A100}\n", "cluster: give a node preset"},
		{"params: 7B\ncompute_ms: 3\nstrategy: zero9\n", "w.yaml:3:11: strategy: unknown \"zero9\""},
		{"params: 7B\ncompute_ms: 3\ngrad_bytes: 3\n", "w.yaml:3:13: grad_bytes: 3 is not 1, 2, 4 or 8"},
		{"params: 7B\ncompute_ms: 3\nbuckets: 1M\n", "w.yaml:3:1: unknown key \"buckets\""},
		{"params: 7B\ncompute_ms: 3\nseq_len: 100\n", "seq_len needs batch_per_gpu"},
		{"params: 1B\nmodel: {seq_len: 2048}\ncompute_ms: 800\nbatch: {micro: 4, global: 512}\n", "w.yaml:4:27: batch.global: a fixed global batch spreads over the data-parallel ranks"},
		{"params: [7B]\ncompute_ms: 3\n", "w.yaml:1:9: params: want a single value"},
		{"params: 7B\nparams: 8B\ncompute_ms: 3\n", "w.yaml:2:1: duplicate key"},
	}
	for _, tc := range bad {
		_, err := LoadWorkload("w.yaml", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
}
