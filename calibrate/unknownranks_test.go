package calibrate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestUnknownRanksTakeTheClusters: a run with no device lines whose
// bandwidths fit several rank counts names none (ingest leaves Ranks 0);
// validate takes the cluster's count and says so, where it refused the run
// for 'having 0 ranks'.
func TestUnknownRanksTakeTheClusters(t *testing.T) {
	path := filepath.Join("testdata", "unknown-ranks_dgx-h100x8_25g-tcp_model.txt")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ingest.Parse(path, strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Runs) != 1 || a.Runs[0].Ranks != 0 {
		t.Fatalf("want one run of unknown rank count, got %d runs (ranks %v)", len(a.Runs), a.Runs[0].Ranks)
	}
	spec := clusterOf(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 8, NICs: "1x25G-tcp"})
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, spec, sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !v.Pass || !strings.Contains(strings.Join(v.Notes, "\n"), "names no rank count and its bandwidths fit several; taken as the cluster's 64 ranks") {
		t.Errorf("pass %v, notes %q", v.Pass, v.Notes)
	}
}
