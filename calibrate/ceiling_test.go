package calibrate_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
)

// TestFitCeilingOnRequest: the per-channel ceilings are terms a fit can
// recover when --terms names them, and a fit without --terms leaves them
// alone (they are NCCL's constants, rarely determined by measurements).
// The fit starts where the ceiling binds (15 GB/s): at NCCL's 38.7 the
// measurements do not depend on it, and the fit holds what they do not
// determine.
func TestFitCeilingOnRequest(t *testing.T) {
	spec := clusterOf(t, scenarios.Overrides{Node: "hgx-h100-4gpu", Nodes: 1})
	const name, want = "chan.cap.simple.hopper", 12.0
	ds := syntheticDataset(t, spec, paramsWith(t, map[string]float64{name: want}), model.AllReduce, powersOfTwo(1<<20, 1<<30))
	start := paramsWith(t, map[string]float64{name: 15})
	fr, err := calibrate.Fit(context.Background(), ds.Series, ds.Links, start, calibrate.FitOptions{Terms: []string{"chan.cap.*"}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ft := range fr.Fitted {
		if ft.Name == name {
			found = true
			if math.Abs(ft.Value-want)/want > 0.02 {
				t.Errorf("%s = %.4g, want %.4g", name, ft.Value, want)
			}
		}
	}
	if !found {
		t.Fatalf("%s not fitted (fitted %v, held %v)", name, fr.Fitted, fr.Held)
	}
	fr, err = calibrate.Fit(context.Background(), ds.Series, ds.Links, start, calibrate.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ft := range fr.Fitted {
		if strings.HasPrefix(ft.Name, "chan.cap.") {
			t.Errorf("a fit without --terms fitted %s", ft.Name)
		}
	}
	for _, h := range fr.Held {
		if strings.HasPrefix(h.Name, "chan.cap.") {
			t.Errorf("a fit without --terms considered %s", h.Name)
		}
	}
}
