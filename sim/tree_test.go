package sim_test

import (
	"math"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestTreeNetHopLatency: going from 2 to 4 nodes adds one level to the
// inter-node tree, two more network hops on an 8 B AllReduce's path (up
// and down). On the stacks of NCCL releases before 2.18 each costs
// lat.tree.net.ll (5.0 us, NCCL's Tree NET hwLat; the ABCI cases with NCCL
// 2.8.4 measure 4.4-6.6 us), from 2.18 the ring's lat.step.net.ll (2.7 us).
func TestTreeNetHopLatency(t *testing.T) {
	p := sim.DefaultParams()
	for _, c := range []struct {
		version string
		hop     float64
	}{
		{"2.8.4", p.TreeNetLatUs[model.ProtoLL]},
		{"2.22.3", p.StepLatUs[model.LatNet][model.ProtoLL]},
	} {
		for _, eng := range []sim.EngineKind{sim.EngineAnalytic, sim.EngineDES} {
			var us [2]float64
			for i, nodes := range []int{2, 4} {
				e := newEnv(t, scenarios.Overrides{Node: "v100-4gpu-nvlink", Nodes: nodes, NCCLVersion: c.version})
				pt := predict(t, e, model.AllReduce, eng, "tree", 8)
				if pt.Choice.Proto != model.ProtoLL {
					t.Fatalf("%s, %d nodes: protocol %s, want LL at 8 B", c.version, nodes, pt.Choice.Proto)
				}
				us[i] = pt.TimeUs
			}
			if d := us[1] - us[0]; math.Abs(d-2*c.hop) > 0.5 {
				t.Errorf("NCCL %s, %s: 4 nodes take %.2f us more than 2, want two tree hops of %g us", c.version, eng, d, c.hop)
			}
		}
	}
}
