package hwbench

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// TestNCCLDebugCapture checks that the nccl probe stores NCCL's INFO lines
// in the result with the transports and NVLS availability they state, in
// one process and across processes, and leaves a user's NCCL_DEBUG_FILE
// alone.
func TestNCCLDebugCapture(t *testing.T) {
	run := func(t *testing.T, cfg FakeConfig, env map[string]string) *NCCLResult {
		t.Helper()
		o := fakeOptions(t.TempDir())
		o.Probes, o.MaxBytes = []string{"nccl"}, 1024
		if env != nil {
			o.Getenv = envOf(env)
		}
		rep, err := Run(context.Background(), NewFake(cfg), o)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return rep.NCCL
	}
	t.Run("nvswitch", func(t *testing.T) {
		n := run(t, FakeConfig{GPUs: 4}, nil)
		if len(n.DebugLog) == 0 || !strings.Contains(strings.Join(n.DebugLog, "\n"), "NCCL INFO Channel 00/0 : 3[3] -> 0[0] via P2P/CUMEM/read") {
			t.Errorf("debug log %q", n.DebugLog)
		}
		if !reflect.DeepEqual(n.Transports, []string{"P2P/CUMEM/read"}) || n.NVLS != "available" {
			t.Errorf("transports %q nvls %q", n.Transports, n.NVLS)
		}
	})
	t.Run("pcie mesh", func(t *testing.T) {
		n := run(t, FakeConfig{GPUs: 2, NVLinks: -1}, nil)
		if !reflect.DeepEqual(n.Transports, []string{"SHM/direct/direct"}) || n.NVLS != "not available" {
			t.Errorf("transports %q nvls %q", n.Transports, n.NVLS)
		}
	})
	t.Run("user's debug file", func(t *testing.T) {
		n := run(t, FakeConfig{GPUs: 2}, map[string]string{"NCCL_DEBUG_FILE": "/somewhere/nccl.%h.%p"})
		if len(n.DebugLog) != 0 || !strings.Contains(strings.Join(n.Notes, " "), "NCCL_DEBUG_FILE=/somewhere/nccl.%h.%p is set") {
			t.Errorf("log %d lines, notes %q", len(n.DebugLog), n.Notes)
		}
	})
	t.Run("across processes", func(t *testing.T) {
		w := NewFakeWorld()
		fakes := []*Fake{NewFake(FakeConfig{Hostname: "alpha", GPUs: 1, World: w}), NewFake(FakeConfig{Hostname: "beta", GPUs: 1, World: w})}
		reps, errs := runRanks(t, fakes, nil, []string{"nccl"})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
		log := strings.Join(reps[0].NCCL.DebugLog, "\n")
		if !strings.Contains(log, "alpha:4242:4242 [0] NCCL INFO") || !strings.Contains(log, "beta:4242:4242 [1] NCCL INFO") {
			t.Errorf("rank 0's report lacks a rank's lines:\n%s", log)
		}
	})
	if tr, nv := summarizeDebug([]string{"x NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA", "NVLS multicast support is not available on dev 0"}); !reflect.DeepEqual(tr, []string{"NET/IB/0/GDRDMA"}) || nv != "not available" {
		t.Errorf("summarizeDebug = %q, %q", tr, nv)
	}
}
