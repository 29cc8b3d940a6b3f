package calibrate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// exampleRun returns examples/all_reduce.log (2 x 4 H100, 8 ranks) as
// lines, edit applied, parsed as name, and the cluster it ran on.
func exampleRun(t *testing.T, name string, edit func([]string) []string) (*ingest.Artifact, calibrateSpec) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "all_reduce.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	if edit != nil {
		lines = edit(lines)
	}
	a, err := ingest.Parse(name, strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return a, calibrateSpec{clusterOf(t, scenarios.Overrides{Node: "hgx-h100-4gpu", Nodes: 2, NICs: "4x200G-ib"})}
}

type calibrateSpec struct{ spec model.ClusterSpec }

// both runs BuildDataset and Validate on arts.
func both(arts []*ingest.Artifact, s calibrateSpec, opt calibrate.ValidateOptions) (*calibrate.Dataset, error, *calibrate.Validation, error) {
	ds, dsErr := calibrate.BuildDataset(arts, s.spec)
	v, vErr := calibrate.Validate(context.Background(), arts, s.spec, sim.DefaultParams(), opt)
	return ds, dsErr, v, vErr
}

// TestRepeatedSizeRefused: a size repeated in one table (two runs pasted
// together) is refused by calibrate's dataset and by validate, naming both
// lines.
func TestRepeatedSizeRefused(t *testing.T) {
	a, s := exampleRun(t, "dup.log", func(l []string) []string {
		row := "         128            32     float     sum      -1    25.00    0.01    0.01      0    24.65    0.01    0.01      0"
		return append(append(append([]string(nil), l[:318]...), row), l[318:]...)
	})
	_, dsErr, _, vErr := both([]*ingest.Artifact{a}, s, calibrate.ValidateOptions{})
	for what, err := range map[string]error{"dataset": dsErr, "validate": vErr} {
		if !errors.Is(err, calibrate.ErrRepeatedSize) {
			t.Errorf("%s: err = %v, want ErrRepeatedSize", what, err)
			continue
		}
		if want := "dup.log:319: size 128 appears twice in the table at lines 318 and 319"; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q lacks %q", what, err, want)
		}
	}
}

// TestDroppedRowsNoted: rows the parser refuses (a NaN, infinite or
// garbage time) are named in calibrate's and validate's notes, like rows
// it keeps but leaves out.
func TestDroppedRowsNoted(t *testing.T) {
	a, s := exampleRun(t, "bad.log", func(l []string) []string {
		for i, v := range map[int]string{319: "nan", 320: "inf", 321: "abc", 322: "-5.0"} {
			f := strings.Fields(l[i-1])
			f[5] = v
			l[i-1] = strings.Join(f, " ")
		}
		return l
	})
	ds, dsErr, v, vErr := both([]*ingest.Artifact{a}, s, calibrate.ValidateOptions{})
	if dsErr != nil || vErr != nil {
		t.Fatal(dsErr, vErr)
	}
	for what, notes := range map[string][]string{"dataset": ds.Notes, "validate": v.Notes} {
		joined := strings.Join(notes, "\n")
		for _, want := range []string{`bad.log:319: out-of-place column time: "nan"`, `bad.log:320: out-of-place column time: "inf"`, `bad.log:321: out-of-place column time: "abc"`, "bad.log:322: out-of-place time -5 us"} {
			if !strings.Contains(joined, want) {
				t.Errorf("%s notes lack %q:\n%s", what, want, joined)
			}
		}
	}
}

// TestLogOfAnotherRunRefused: validate --log with the log of another run
// (4 ranks on 4 EFA nodes against the 8-rank H100 run) is refused as a
// mismatch; the run's own log is used.
func TestLogOfAnotherRunRefused(t *testing.T) {
	a, s := exampleRun(t, "all_reduce.log", nil)
	other := rawFile(t, "nccldebug_a100sxm40_aws-p4d_4pods-x1gpu_efa_trainingoneks.txt")
	_, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, s.spec, sim.DefaultParams(), calibrate.ValidateOptions{Log: other})
	if !errors.Is(err, calibrate.ErrMismatch) || !strings.Contains(err.Error(), "communicator has 4 ranks") || !strings.Contains(err.Error(), "has 8") {
		t.Errorf("another run's log: err = %v", err)
	}
	if _, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, s.spec, sim.DefaultParams(), calibrate.ValidateOptions{Log: a}); err != nil {
		t.Errorf("the run's own log: %v", err)
	}
}

// TestNewerNCCLVersionNoted: a measured run stating an NCCL version newer
// than any release modelled is noted with the release modelled instead.
func TestNewerNCCLVersionNoted(t *testing.T) {
	for _, ver := range []string{"9.99.1", "2.99.1"} {
		a, s := exampleRun(t, "ver.log", func(l []string) []string {
			for i := range l {
				l[i] = strings.Replace(l[i], "NCCL version 2.22.3", "NCCL version "+ver, 1)
			}
			return l
		})
		if ver[0] == '2' {
			s.spec.NCCLVersion = ver // as the command line sets it from the file
		}
		ds, dsErr, v, vErr := both([]*ingest.Artifact{a}, s, calibrate.ValidateOptions{})
		if dsErr != nil || vErr != nil {
			t.Fatal(dsErr, vErr)
		}
		newest := model.Newest().String()
		want := "the measured run states NCCL " + ver + ", newer than any release collsim models (the newest is " + newest + "): modelled as NCCL " + newest
		for what, notes := range map[string][]string{"dataset": ds.Notes, "validate": v.Notes} {
			if joined := strings.Join(notes, "\n"); !strings.Contains(joined, want) {
				t.Errorf("%s %s: notes lack %q:\n%s", ver, what, want, joined)
			}
		}
	}
	a, s := exampleRun(t, "all_reduce.log", nil)
	if n := calibrate.VersionNote([]*ingest.Artifact{a}, s.spec); n != "" {
		t.Errorf("NCCL 2.22.3: note %q", n)
	}
}
