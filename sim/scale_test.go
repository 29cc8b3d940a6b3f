package sim_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// predictReq is Predict with a request the test builds.
func predictReq(t testing.TB, e *sim.Env, req sim.Request, size model.Bytes) sim.Point {
	t.Helper()
	if req.ElemSize == 0 {
		req.ElemSize = 4
	}
	p, err := e.Predict(t.Context(), req, size)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEngineNamedPerPoint: every point says which engine timed it, and it
// is the one requested, at every size (no silent change of engine).
func TestEngineNamedPerPoint(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2})
	sizes := []model.Bytes{8, 64 << 10, 4 << 20, 256 << 20}
	for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
		pts, err := e.Sweep(t.Context(), sim.Request{Coll: model.AllReduce, Engine: eng, ElemSize: 4, Sizes: sizes})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			if p.Engine != eng {
				t.Errorf("%s at %s: point says engine %q", eng, model.FormatBytes(p.Size), p.Engine)
			}
			if eng == sim.EngineDES && p.Size > 8 && p.Ops == 0 {
				t.Errorf("DES at %s built no ops", model.FormatBytes(p.Size))
			}
		}
	}
}

// TestBudgetRefusesBeforeBuilding: a DES beyond the memory budget stops
// with one line naming the budget, the estimate, the cluster size and the
// flag that raises it, before the schedule is allocated.
func TestBudgetRefusesBeforeBuilding(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 16, NICs: "8x400G-ib", Set: []string{"NCCL_ALGO=Ring"}})
	for _, tc := range []struct {
		budget sim.Budget
		flag   string
	}{
		{sim.Budget{MaxMemory: 1 << 20}, "--max-memory"},
		{sim.Budget{MaxEvents: 1000}, "--max-events"},
	} {
		_, err := e.Predict(t.Context(), sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4, Budget: tc.budget}, 1<<30)
		var be *sim.BudgetError
		if !errors.As(err, &be) {
			t.Fatalf("budget %+v: error %v, want a *sim.BudgetError", tc.budget, err)
		}
		msg := err.Error()
		for _, want := range []string{tc.flag, "128 GPUs", "16 nodes", "ring"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q does not name %q", msg, want)
			}
		}
		if strings.Contains(msg, "\n") || be.Estimate <= be.Limit {
			t.Errorf("message %q: estimate %d vs limit %d", msg, be.Estimate, be.Limit)
		}
	}
}

// TestPipelineWindowExact holds the steady-state extrapolation of long
// pipelines (Request.Window) to the simulation of every unit on the same
// input: for a periodic pipeline the two agree to the picosecond spread the
// note states, times the units left out.
func TestPipelineWindowExact(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates every pipeline unit of several calls")
	}
	cases := []struct {
		name string
		o    scenarios.Overrides
		algo string
		coll model.Collective
		size model.Bytes
	}{
		{"nvlstree 4 nodes", scenarios.Overrides{Node: "dgx-h100", Nodes: 4, NICs: "8x400G-ib"}, "nvlstree", model.AllReduce, 256 << 20},
		{"tree 4 nodes", scenarios.Overrides{Node: "dgx-a100", Nodes: 4, NICs: "8x200G-ib"}, "tree", model.AllReduce, 1 << 30},
		{"nvls 1 node", scenarios.Overrides{Node: "dgx-h100"}, "nvls", model.AllReduce, 1 << 30},
		{"ring broadcast 2 nodes", scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "8x200G-ib"}, "ring", model.Broadcast, 2 << 30},
		{"ring allreduce 1 node", scenarios.Overrides{Node: "dgx-a100"}, "ring", model.AllReduce, 8 << 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.o)
			a, err := model.ParseAlgo(tc.algo)
			if err != nil {
				t.Fatal(err)
			}
			req := sim.Request{Coll: tc.coll, Engine: sim.EngineDES, Algo: &a}
			win := predictReq(t, e, req, tc.size)
			req.Window = -1
			full := predictReq(t, e, req, tc.size)
			if !strings.Contains(win.Note, "steady-state period") {
				t.Fatalf("the window did not apply (note %q); pick a larger size", win.Note)
			}
			if full.Note != "" {
				t.Errorf("the full simulation took a shortcut: %q", full.Note)
			}
			if rel := math.Abs(win.TimeUs-full.TimeUs) / full.TimeUs; rel > 1e-6 {
				t.Errorf("window %.6f us vs every unit %.6f us (%.2g relative); %s", win.TimeUs, full.TimeUs, rel, win.Note)
			}
			if win.Ops >= full.Ops {
				t.Errorf("window built %d ops, full %d", win.Ops, full.Ops)
			}
		})
	}
}

// TestSymmetryReductionExact holds every symmetry reduction the DES uses
// (the node-periodic ring, AlltoAll from node 0's senders) to the full
// simulation of every node on the same input, and checks that the
// reduction is off where the fabric is not symmetric.
func TestSymmetryReductionExact(t *testing.T) {
	o := scenarios.Overrides{Node: "dgx-h100", Nodes: 4, NICs: "8x400G-ib"}
	e := newEnv(t, o)
	if !e.Symmetric() {
		t.Fatal("4 nodes on one switch are not symmetric")
	}
	for _, tc := range []struct {
		coll model.Collective
		algo string
		size model.Bytes
	}{
		{model.AllReduce, "ring", 64 << 20},
		{model.AllGather, "ring", 64 << 20},
		{model.AlltoAll, "", 64 << 20},
		{model.SendRecv, "", 16 << 20},
	} {
		req := sim.Request{Coll: tc.coll, Engine: sim.EngineDES}
		if tc.algo != "" {
			a, _ := model.ParseAlgo(tc.algo)
			req.Algo = &a
		}
		red := predictReq(t, e, req, tc.size)
		req.Full = true
		full := predictReq(t, e, req, tc.size)
		if rel := math.Abs(red.TimeUs-full.TimeUs) / full.TimeUs; rel > 1e-6 {
			t.Errorf("%s %s: reduced %.4f us vs every node %.4f us", tc.coll, tc.algo, red.TimeUs, full.TimeUs)
		}
		if red.Ops >= full.Ops {
			t.Errorf("%s %s: reduced %d ops, full %d: no reduction applied", tc.coll, tc.algo, red.Ops, full.Ops)
		}
	}
	spec := resolve(t, o)
	spec.Fabric = model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: 2, Oversubscription: 1}
	if specEnv(t, spec).Symmetric() {
		t.Error("a leaf-spine fabric is treated as symmetric")
	}
}
