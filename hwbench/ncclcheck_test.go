package hwbench

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

// TestNCCLDataCheck runs every collective with the data check (nccl-tests
// -c 1) on the fake, in one process and across three processes on two
// hosts meeting through the TCP bootstrap: the fake NCCL computes what
// NCCL would, so every #wrong is 0. A fake whose ReduceScatter returns one
// wrong element per rank fails the probe with the count, and the text
// says FAILED as nccl-tests does.
func TestNCCLDataCheck(t *testing.T) {
	check := func(t *testing.T, rep *Report, wantWrong map[string]bool) {
		t.Helper()
		if len(rep.NCCL.Sweeps) != len(NCCLCollectives) || rep.NCCL.Check != 1 {
			t.Fatalf("sweeps %d, check %d", len(rep.NCCL.Sweeps), rep.NCCL.Check)
		}
		for _, sw := range rep.NCCL.Sweeps {
			wrong := int64(0)
			for _, row := range sw.Rows {
				for _, tm := range []Timing{row.OOP, row.IP} {
					if tm.Wrong == nil {
						t.Fatalf("%s %d: not checked", sw.Collective, row.Size)
					}
					wrong += *tm.Wrong
				}
			}
			if (wrong > 0) != wantWrong[sw.Collective] || wrong != sw.Wrong {
				t.Errorf("%s: %d wrong (sweep says %d)", sw.Collective, wrong, sw.Wrong)
			}
			if want := map[string]int{"broadcast": 0, "reduce": 0}; sw.Root != map[bool]int{true: 0, false: -1}[want[sw.Collective] == 0 && (sw.Collective == "broadcast" || sw.Collective == "reduce")] {
				t.Errorf("%s: root %d", sw.Collective, sw.Root)
			}
		}
	}
	t.Run("single process", func(t *testing.T) {
		o := fakeOptions(t.TempDir())
		o.Probes, o.Check, o.MaxBytes = []string{"nccl"}, 1, 256*model.KiB
		rep, err := Run(context.Background(), NewFake(FakeConfig{GPUs: 4}), o)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		check(t, rep, nil)
	})
	t.Run("three processes", func(t *testing.T) {
		w := NewFakeWorld()
		fakes := []*Fake{NewFake(FakeConfig{Hostname: "alpha", GPUs: 2, NICs: -1, World: w}), NewFake(FakeConfig{Hostname: "alpha", GPUs: 2, NICs: -1, World: w}), NewFake(FakeConfig{Hostname: "beta", GPUs: 2, NICs: -1, World: w})}
		reps, errs := runRanksWith(t, fakes, nil, []string{"nccl"}, func(o *Options) { o.Check = 1 })
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
		check(t, reps[0], nil)
	})
	t.Run("wrong results", func(t *testing.T) {
		o := fakeOptions(t.TempDir())
		o.Probes, o.Check, o.MaxBytes = []string{"nccl"}, 1, 4*model.KiB
		rep, err := Run(context.Background(), NewFake(FakeConfig{GPUs: 4, Corrupt: "reducescatter"}), o)
		if err == nil || !strings.Contains(err.Error(), "wrong values in the data check") {
			t.Fatalf("Run error %v, want the wrong-values failure", err)
		}
		check(t, rep, map[string]bool{"reducescatter": true})
		text, _ := os.ReadFile(o.NCCLText)
		if !strings.Contains(string(text), "# Out of bounds values : ") || !strings.Contains(string(text), " FAILED") {
			t.Errorf("nccl-tests text does not report the failure")
		}
	})
}
