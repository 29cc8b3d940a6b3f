package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestPredictSeeds: --seed gives the same bytes for the same seed, and
// --seeds K reports per size the expected (mean time over the seeds) and
// the worst seed, whose time is at least the expected; on an ECMP fabric
// the seeds differ.
func TestPredictSeeds(t *testing.T) {
	args := []string{"predict", "--cluster", "../../examples/fabrics/roce-2to1.yaml", "--nodes", "8", "-b", "1G", "-e", "1G", "--engine", "analytic", "--set", "NCCL_ALGO=Ring"}
	_, a, _ := runCLI(t, append(args, "--seed", "7")...)
	_, b, _ := runCLI(t, append(args, "--seed", "7")...)
	if a != b {
		t.Errorf("the same seed gave different output")
	}
	code, out, errs := runCLI(t, append(args, "--seeds", "4", "--format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var d struct {
		Seeds   int `json:"seeds"`
		Results []struct {
			TimeUs float64 `json:"time_us"`
			Worst  *struct {
				Seed   uint64  `json:"seed"`
				TimeUs float64 `json:"time_us"`
			} `json:"worst"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Seeds != 4 || len(d.Results) != 1 || d.Results[0].Worst == nil {
		t.Fatalf("seeds %d, results %+v", d.Seeds, d.Results)
	}
	r := d.Results[0]
	if r.Worst.TimeUs < r.TimeUs || r.Worst.Seed > 3 {
		t.Errorf("worst %+v against expected %.1f us", *r.Worst, r.TimeUs)
	}
	if r.Worst.TimeUs == r.TimeUs {
		t.Errorf("4 ECMP seeds gave the same time %.1f us", r.TimeUs)
	}
	if code, _, _ := runCLI(t, append(args, "--seeds", "0")...); code != 2 {
		t.Errorf("--seeds 0: exit %d, want 2", code)
	}
}

// TestPredictSeedsJobs: the seeds' sweeps run --jobs at once and the output
// is the same, byte for byte, for every --jobs, on the DES of an ECMP
// fabric whose seeds differ.
func TestPredictSeedsJobs(t *testing.T) {
	args := []string{"predict", "--cluster", "../../examples/fabrics/roce-2to1.yaml", "--nodes", "8", "-b", "8M", "-e", "64M", "-f", "8",
		"--set", "NCCL_ALGO=Ring", "--seeds", "3", "--format", "json"}
	var first string
	jobsList := []string{"1", "2", "5"}
	if testing.Short() {
		jobsList = jobsList[:2]
	}
	for _, jobs := range jobsList {
		code, out, errs := runCLI(t, append(args, "--jobs", jobs)...)
		if code != 0 {
			t.Fatalf("--jobs %s: exit %d: %s", jobs, code, errs)
		}
		if first == "" {
			first = out
			if !strings.Contains(out, `"engine": "des"`) {
				t.Fatalf("--jobs %s: no DES rows:\n%s", jobs, out)
			}
			var d struct {
				Results []seedRow `json:"results"`
			}
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(d.Results, func(r seedRow) bool { return r.Worst.TimeUs > r.TimeUs }) {
				t.Fatalf("the seeds gave the same times, so their order cannot show: %+v", d.Results)
			}
			continue
		}
		if out != first {
			t.Errorf("--jobs %s gave other output than --jobs 1", jobs)
		}
	}
}

// seedRow is what TestPredictSeedsJobs reads of a --seeds row.
type seedRow struct {
	TimeUs float64 `json:"time_us"`
	Worst  struct {
		TimeUs float64 `json:"time_us"`
	} `json:"worst"`
}
