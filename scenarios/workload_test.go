package scenarios

import (
	"math"
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

// TestWorkloadCalls checks the collectives of a step against the byte
// arithmetic: 7e9 bf16 gradients are 14e9 bytes = 534 full 25 MiB buckets
// (534 x 26214400 = 13998489600) and a last one of 1510400 bytes.
func TestWorkloadCalls(t *testing.T) {
	w := Workload{Params: 7e9, ComputeMs: 300}.WithDefaults()
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	calls := w.Calls()
	if len(calls) != 2 || calls[0].Coll != model.AllReduce || calls[0].Size != 25*model.MiB || calls[0].Count != 534 ||
		calls[1].Size != 1510400 || calls[1].Count != 1 {
		t.Fatalf("ddp calls = %+v", calls)
	}
	f := w
	f.Strategy = StrategyFSDP
	calls = f.Calls()
	if len(calls) != 4 || calls[0].Coll != model.AllGather || calls[0].Count != 2*534 || calls[1].Coll != model.ReduceScatter || calls[1].Count != 534 {
		t.Fatalf("fsdp calls = %+v", calls)
	}
	// Exactly divisible: no partial bucket.
	e := Workload{Params: 25 * 1024 * 1024, GradBytes: 4, Bucket: 4 * model.MiB, ComputeMs: 1}.WithDefaults()
	if c := e.Calls(); len(c) != 1 || c[0].Count != 25 {
		t.Errorf("divisible calls = %+v", c)
	}
}

// TestWorkloadStep: step = compute + comm x (1 - overlap); throughput from
// the batch; weak-scaling efficiency ref/at.
func TestWorkloadStep(t *testing.T) {
	w := Workload{Params: 1e9, ComputeMs: 100, Overlap: 0.25, BatchPerGPU: 4, SeqLen: 1000}.WithDefaults()
	s := w.Step(40000, 16) // 40 ms of communication
	if s.CommMs != 40 || s.ExposedMs != 30 || s.StepMs != 130 {
		t.Fatalf("step = %+v", s)
	}
	if math.Abs(s.SamplesPerSec-16*4*1000/130.0) > 1e-9 || math.Abs(s.TokensPerSec-s.SamplesPerSec*1000) > 1e-6 {
		t.Errorf("throughput = %+v", s)
	}
	if v, unit := w.Throughput(s); unit != "tokens/s" || v != s.TokensPerSec {
		t.Errorf("Throughput = %v %s", v, unit)
	}
	ref := w.Step(10000, 8)
	if e := WeakScalingEfficiency(ref, s); math.Abs(e-(107.5/130)) > 1e-12 {
		t.Errorf("efficiency = %v", e)
	}
}

func TestWorkloadYAML(t *testing.T) {
	w, err := LoadWorkload("w.yaml", []byte("name: llama\nparams: 7B\nbucket: 50M\ncompute_ms: 300\noverlap: 50%\nbatch_per_gpu: 2\nstrategy: fsdp\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w.Params != 7e9 || w.Bucket != 50*model.MiB || w.Overlap != 0.5 || w.Strategy != StrategyFSDP || w.GradBytes != 2 || w.BatchPerGPU != 2 {
		t.Errorf("loaded %+v", w)
	}
	bad := []struct{ doc, want string }{
		{"params: 7B\n", "w.yaml:1:1: missing key \"compute_ms\""},
		{"compute_ms: 3\n", "missing key \"params\""},
		{"params: lots\ncompute_ms: 3\n", "w.yaml:1:9: params: invalid count"},
		{"params: 7B\ncompute_ms: 3\noverlap: 1.5\n", "w.yaml:3:10: overlap: 1.5 is outside 0..1"},
		{"params: 7B\ncompute_ms: 3\nstrategy: zero9\n", "w.yaml:3:11: strategy: unknown \"zero9\""},
		{"params: 7B\ncompute_ms: 3\ngrad_bytes: 3\n", "w.yaml:3:13: grad_bytes: 3 is not 1, 2, 4 or 8"},
		{"params: 7B\ncompute_ms: 3\nbuckets: 1M\n", "w.yaml:3:1: unknown key \"buckets\""},
		{"params: 7B\ncompute_ms: 3\nseq_len: 100\n", "seq_len needs batch_per_gpu"},
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
