package sim_test

import (
	"context"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestSweepReusesIdenticalRuns: the large sizes of a pipelined call build
// the same window of full units, so a sweep runs the DES once for them and
// takes that run for the others (their Events are 0); every point must
// equal Predict of its size alone, which runs the DES itself.
func TestSweepReusesIdenticalRuns(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4})
	sizes := []model.Bytes{64 << 20, 256 << 20, 512 << 20, 1 << 30, 2 << 30}
	req := sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4, Sizes: sizes}
	pts, err := e.Sweep(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	reused := 0
	for i, p := range pts {
		alone, err := e.Predict(context.Background(), req, sizes[i])
		if err != nil {
			t.Fatal(err)
		}
		if alone.Events == 0 {
			t.Errorf("%s alone: no DES events", model.FormatBytes(sizes[i]))
		}
		if p.Events == 0 {
			reused++
			alone.Events = 0 // the only field a reused run differs in
		}
		if p.TimeUs != alone.TimeUs || p.BusBW != alone.BusBW || p.Note != alone.Note || p.Ops != alone.Ops || p.Events != alone.Events {
			t.Errorf("%s: sweep %.6f us (%d events, note %q), alone %.6f us (%d events, note %q)",
				model.FormatBytes(sizes[i]), p.TimeUs, p.Events, p.Note, alone.TimeUs, alone.Events, alone.Note)
		}
	}
	if reused == 0 {
		t.Errorf("no size reused the run before it (sizes %v)", sizes)
	}
	if pts[0].Events == 0 {
		t.Errorf("the first size reused a run")
	}
}
