package accuracy_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/collsim/collsim/calibrate/accuracy"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
)

// TestLaunchOf: the cases that ran one process for several GPUs are read
// as single-process from their results header (thanos -g 8: "nGpus 8";
// Snellius 1x4: "nGpus 4"), the mpirun runs as process-per-gpu; without a
// header the case's text (-g N) decides, and a header and a text that
// disagree are an error.
func TestLaunchOf(t *testing.T) {
	cases, err := accuracy.LoadCases(casesFile)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]model.Launch{
		"thanos_a100sxm80_1x8_g8":      model.LaunchSingleProcess,
		"thanos_a100sxm80_1x8_mpi":     model.LaunchProcessPerGPU,
		"snellius_h100_1x4_all_reduce": model.LaunchSingleProcess,
		"snellius_h100_2x4_all_reduce": model.LaunchProcessPerGPU,
		"aws_p4d_a100_2x8_efa":         model.LaunchProcessPerGPU,
	}
	seen := 0
	for i := range cases {
		c := &cases[i]
		w, ok := want[c.ID]
		if !ok {
			continue
		}
		seen++
		_, run, err := c.Measured(filepath.Dir(casesFile))
		if err != nil {
			t.Fatal(err)
		}
		got, why, err := c.LaunchOf(run)
		if err != nil || got != w {
			t.Errorf("%s: %q (%s), %v; want %q", c.ID, got, why, err, w)
		}
		if got == model.LaunchSingleProcess && !strings.Contains(why, "nGpus") {
			t.Errorf("%s: reason %q does not name the header", c.ID, why)
		}
	}
	if seen != len(want) {
		t.Fatalf("%d of the %d cases found in %s", seen, len(want), casesFile)
	}
	text := accuracy.Case{ID: "x", Caveat: "single process -g 8 run"}
	if got, _, err := text.LaunchOf(nil); err != nil || got != model.LaunchSingleProcess {
		t.Errorf("caveat -g 8, no header: %q, %v", got, err)
	}
	one := accuracy.Case{ID: "y", Source: "same post, second run (mpirun -np 8, -g 1)"}
	if got, _, err := one.LaunchOf(nil); err != nil || got != model.LaunchProcessPerGPU {
		t.Errorf("source -g 1, no header: %q, %v", got, err)
	}
	clash := &ingest.Run{Params: map[string]string{"nGpus": "1"}}
	if _, _, err := text.LaunchOf(clash); err == nil || !strings.Contains(err.Error(), "nGpus 1, the case says -g 8") {
		t.Errorf("header nGpus 1 against -g 8: %v", err)
	}
}
