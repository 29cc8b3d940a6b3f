package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPredictTrace: --trace writes a trace-event JSON file of the size
// asked for, and every JSON row names its engine.
func TestPredictTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	code, out, errs := collsim(t, "predict", "--node", "dgx-h100", "--nodes", "2", "-b", "1M", "-e", "4M", "--format", "json", "--trace", path, "--trace-size", "2M")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
		OtherData   map[string]any   `json:"otherData"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.TraceEvents) == 0 {
		t.Fatalf("trace is not trace-event JSON (%v, %d events)", err, len(doc.TraceEvents))
	}
	if got := doc.OtherData["size_bytes"]; got != float64(2<<20) {
		t.Errorf("trace of size %v, want 2M", got)
	}
	var res struct {
		Results []struct {
			Engine string `json:"engine"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Results) != 3 {
		t.Fatalf("json output: %v (%d rows)", err, len(res.Results))
	}
	for i, r := range res.Results {
		if r.Engine != "des" {
			t.Errorf("row %d engine %q, want des", i, r.Engine)
		}
	}
}

// TestPredictTraceBadInput: a trace size not in the sweep, an unwritable
// path and a budget the call exceeds stop with exit 2 and one line, and
// leave no file.
func TestPredictTraceBadInput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.json")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"size not in sweep", []string{"--trace", path, "--trace-size", "3M"}, []string{"--trace-size 3M is not a size of the sweep", "2M"}},
		{"missing directory", []string{"--trace", filepath.Join(dir, "no", "t.json")}, []string{"does not exist"}},
		{"analytic", []string{"--trace", path, "--engine", "analytic"}, []string{"--engine des"}},
		{"memory budget", []string{"--max-memory", "64K"}, []string{"--max-memory", "16 GPUs", "2 nodes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"predict", "--node", "dgx-h100", "--nodes", "2", "-b", "1M", "-e", "4M"}, tc.args...)
			code, out, errs := collsim(t, args...)
			if code != ExitBadInput {
				t.Fatalf("exit %d, want %d (stderr %q)", code, ExitBadInput, errs)
			}
			if strings.Count(strings.TrimSpace(errs), "\n") != 0 || out != "" {
				t.Errorf("want one line on stderr and nothing on stdout; got %q / %q", errs, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q does not say %q", errs, w)
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left files behind: %v", ents)
			}
		})
	}
}

// TestScaleClusterEveryRowDES: predict on the 128-node leaf-spine example
// cluster times every row with the DES (with -short one size; the whole
// 8 B..8 GiB sweep otherwise).
func TestScaleClusterEveryRowDES(t *testing.T) {
	args := []string{"predict", "--cluster", "../../examples/scale/dgx-h100-128.yaml", "--format", "json"}
	want := 31
	if testing.Short() {
		args = append(args, "-b", "1M", "-e", "1M")
		want = 1
	}
	code, out, errs := collsim(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Ranks   int `json:"ranks"`
		Results []struct {
			Size   int64  `json:"size_bytes"`
			Engine string `json:"engine"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Results) != want || res.Ranks != 1024 {
		t.Fatalf("json: %v, %d rows on %d ranks", err, len(res.Results), res.Ranks)
	}
	for _, r := range res.Results {
		if r.Engine != "des" {
			t.Errorf("%d B: engine %q", r.Size, r.Engine)
		}
	}
}
