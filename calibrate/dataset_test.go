package calibrate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestImplausibleRowsNamed: rows the parser leaves out (a negative time, a
// busbw no interconnect reaches) are named with the parser's own reason,
// file and line, by calibrate's dataset and by validate, and the rest of
// the run is used (the 8x H100 file of xxrjun with two rows spoiled).
func TestImplausibleRowsNamed(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "ingest", "testdata", "raw", "nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	spoil := map[string]string{
		// 32 MiB: a negative out-of-place time; 64 MiB: an absurd busbw.
		"    33554432 ": "    33554432       4194304    double     sum      -1  -182.87  183.49  321.10       0   182.88  183.48  321.08       0",
		"    67108864 ": "    67108864       8388608    double     sum      -1   313.66  213.95   9e+09       0   313.52  214.05  374.58       0",
	}
	at := map[string]int{}
	for i, l := range lines {
		for prefix, repl := range spoil {
			if strings.HasPrefix(l, prefix) && at[prefix] == 0 {
				lines[i], at[prefix] = repl, i+1
			}
		}
	}
	if len(at) != 2 {
		t.Fatalf("the 32 and 64 MiB rows of the first table were not found: %v", at)
	}
	a, err := ingest.Parse("spoiled.txt", strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	spec := clusterOf(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 1})
	ds, err := calibrate.BuildDataset([]*ingest.Artifact{a}, spec)
	if err != nil {
		t.Fatal(err)
	}
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, spec, sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for what, notes := range map[string][]string{"dataset": ds.Notes, "validate": v.Notes} {
		joined := strings.Join(notes, "\n")
		for _, want := range []string{
			fmt.Sprintf("spoiled.txt:%d: out-of-place time -182.87 us is not a measurement", at["    33554432 "]),
			fmt.Sprintf("spoiled.txt:%d: out-of-place bandwidth 9e+09 GB/s", at["    67108864 "]),
		} {
			if !strings.Contains(joined, want) {
				t.Errorf("%s notes lack %q:\n%s", what, want, joined)
			}
		}
		if strings.Contains(joined, "has no out-of-place result") {
			t.Errorf("%s notes give a spoiled row a second, vaguer reason:\n%s", what, joined)
		}
	}
	for _, s := range ds.Series {
		for _, p := range s.Points {
			if p.Line == at["    33554432 "] || p.Line == at["    67108864 "] {
				t.Errorf("%s: the spoiled row at line %d is used", s.Name, p.Line)
			}
		}
	}
}

// TestNoUsableRowSaysWhy: nccl-tests results whose every row is left out
// (times of zero or less) are refused by calibrate's dataset and by
// validate with each row's reason, not with an error that takes the file
// for something other than nccl-tests results.
func TestNoUsableRowSaysWhy(t *testing.T) {
	const file = "allbad.txt"
	text := strings.Join([]string{
		"# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
		"#",
		"# Using devices",
		"#  Rank  0 Group  0 Pid 1 on h device  0 [0x18] NVIDIA H100 80GB HBM3",
		"#  Rank  1 Group  0 Pid 2 on h device  1 [0x2a] NVIDIA H100 80GB HBM3",
		"#",
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
		"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
		"     1048576        262144     float     sum      -1    -12.0    0.00    0.00      0     40.0   26.21   26.21      0",
		"     2097152        524288     float     sum      -1      0.0    0.00    0.00      0     40.0   52.43   52.43      0",
		"",
	}, "\n")
	a, err := ingest.Parse(file, strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Runs) != 1 {
		t.Fatalf("parsed %d runs, want the one table", len(a.Runs))
	}
	spec := clusterOf(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 1, GPUsPerNode: 2})
	_, dsErr := calibrate.BuildDataset([]*ingest.Artifact{a}, spec)
	_, vErr := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, spec, sim.DefaultParams(), calibrate.ValidateOptions{})
	for what, err := range map[string]error{"dataset": dsErr, "validate": vErr} {
		if err == nil {
			t.Errorf("%s: no error for a table without a usable row", what)
			continue
		}
		msg := err.Error()
		for _, want := range []string{"nothing usable in 1 file(s)", file + ":9: out-of-place time -12 us is not a measurement", file + ":10: out-of-place time 0 us"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q lacks %q", what, msg, want)
			}
		}
		for _, vague := range []string{"give nccl-tests results", "no nccl-tests results"} {
			if strings.Contains(msg, vague) {
				t.Errorf("%s: error %q takes nccl-tests results for something else", what, msg)
			}
		}
	}
}
