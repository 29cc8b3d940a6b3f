package scenarios

import (
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

// TestRunKey: the cluster file's run mapping sets the launch mode and the
// VM flag; bad values are errors at their file:line:column.
func TestRunKey(t *testing.T) {
	spec, err := Load("c.yaml", []byte("node: dgx-a100\nrun: {launch: Single-Process, vm: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Run != (model.RunSpec{Launch: "single-process", VM: true}) {
		t.Errorf("run = %+v", spec.Run)
	}
	if _, err := spec.Build(); err != nil {
		t.Fatal(err)
	}
	spec, err = Load("c.yaml", []byte("node: dgx-a100\n"))
	if err != nil || spec.Run != (model.RunSpec{}) {
		t.Errorf("no run key: %+v, %v", spec.Run, err)
	}
	for _, c := range []struct{ doc, want string }{
		{"node: dgx-a100\nrun:\n  launch: per-rack\n", `c.yaml:3:11: run.launch: unknown launch mode "per-rack" (known: process-per-gpu, single-process)`},
		{"node: dgx-a100\nrun: {vm: maybe}\n", `c.yaml:2:11: vm: want true or false, got text "maybe"`},
		{"node: dgx-a100\nrun: single-process\n", "c.yaml:2:6: run: want a mapping (launch, vm), got"},
		{"node: dgx-a100\nrun: {threads: 8}\n", `c.yaml:2:7: unknown key "threads" (known: launch, vm, thread_gpus)`},
	} {
		_, err := Load("c.yaml", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.doc, err, c.want)
		}
	}
}

// TestRunOverrides: --launch and --vm replace the file's run mode; an
// unknown --launch is an error naming it.
func TestRunOverrides(t *testing.T) {
	yes, no := true, false
	s, err := Overrides{Node: "dgx-a100", Launch: "single-process", VM: &yes}.Resolve()
	if err != nil || s.Run != (model.RunSpec{Launch: "single-process", VM: true}) {
		t.Errorf("--launch single-process --vm: %+v, %v", s.Run, err)
	}
	s, err = Overrides{Node: "dgx-a100", VM: &no}.Resolve()
	if err != nil || s.Run != (model.RunSpec{}) {
		t.Errorf("--vm=false: %+v, %v", s.Run, err)
	}
	if _, err := (Overrides{Node: "dgx-a100", Launch: "mpi"}).Resolve(); err == nil || !strings.Contains(err.Error(), `--launch: unknown launch mode "mpi"`) {
		t.Errorf("--launch mpi: %v", err)
	}
}

// TestSweepRunAxes: run.launch and run.vm are sweep axes; a bad value is
// an error at its place.
func TestSweepRunAxes(t *testing.T) {
	s, err := LoadSweep("s.yaml", []byte("base: dgx-a100\naxes:\n  run.launch: [process-per-gpu, single-process]\n  run.vm: [false, true]\nmetric: {collective: allreduce, size: 8}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.Designs()
	if err != nil {
		t.Fatal(err)
	}
	want := []model.RunSpec{{Launch: "process-per-gpu"}, {Launch: "process-per-gpu", VM: true}, {Launch: "single-process"}, {Launch: "single-process", VM: true}}
	if len(ds) != len(want) {
		t.Fatalf("%d designs, want %d", len(ds), len(want))
	}
	for i, d := range ds {
		if d.Spec.Run != want[i] {
			t.Errorf("design %d (%s): run %+v, want %+v", i, d.Name, d.Spec.Run, want[i])
		}
	}
	for _, c := range []struct{ doc, want string }{
		{"base: dgx-a100\naxes:\n  run.launch: [threads]\nmetric: {collective: allreduce}\n", `unknown launch mode "threads"`},
		{"base: dgx-a100\naxes:\n  run.vm: [perhaps]\nmetric: {collective: allreduce}\n", `want true or false, got "perhaps"`},
	} {
		if _, err := LoadSweep("s.yaml", []byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "s.yaml:3:") {
			t.Errorf("%q: %v, want s.yaml:3: ... %q", c.doc, err, c.want)
		}
	}
}
