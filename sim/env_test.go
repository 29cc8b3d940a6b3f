package sim_test

import (
	"context"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestEnvParamsFixed: an Env keeps the parameters it was built with; a
// change to the caller's copy, or to the copy Params returns, changes
// neither the Env nor its predictions (a new Env is built for new
// parameters).
func TestEnvParamsFixed(t *testing.T) {
	spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2})
	c, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	p := sim.DefaultParams()
	e, err := sim.NewEnv(c, p)
	if err != nil {
		t.Fatal(err)
	}
	req := sim.Request{Coll: model.AllReduce, Sizes: []model.Bytes{1 << 30}, Engine: sim.EngineAnalytic}
	before, err := e.Sweep(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	p.NetEff[0] = 0.1
	q := e.Params()
	q.NetEff[0] = 0.1
	if got := e.Params().NetEff[0]; got != 0.95 {
		t.Errorf("net.eff.ib in the Env = %g after changing copies, want 0.95", got)
	}
	after, err := e.Sweep(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if before[0].TimeUs != after[0].TimeUs {
		t.Errorf("prediction moved from %g to %g us", before[0].TimeUs, after[0].TimeUs)
	}
	e2, err := sim.NewEnv(c, p)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := e2.Sweep(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !(slow[0].TimeUs > 2*before[0].TimeUs) {
		t.Errorf("a new Env with net.eff.ib 0.1: %g us, was %g", slow[0].TimeUs, before[0].TimeUs)
	}
}
