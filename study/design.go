package study

import (
	"context"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// NewEnv builds the cluster spec describes and its simulation environment
// with params.
func NewEnv(spec model.ClusterSpec, params sim.Params) (*sim.Env, error) {
	cl, err := spec.Build()
	if err != nil {
		return nil, err
	}
	return sim.NewEnv(cl, params)
}

// Modelled is one cluster design as Scale and Sweep model it: its
// environment and either a collective's prediction at one size (Point) or
// a training step (Step).
type Modelled struct {
	Env   *sim.Env
	Point sim.Point
	Step  StepResult
}

// Model builds spec's environment with params and models on it the
// workload w or, when w is nil, req at its first size; req.Engine times
// either.
func Model(ctx context.Context, spec model.ClusterSpec, params sim.Params, req sim.Request, w *scenarios.Workload) (Modelled, error) {
	envr, err := NewEnv(spec, params)
	if err != nil {
		return Modelled{}, err
	}
	m := Modelled{Env: envr}
	if w != nil {
		m.Step, err = TrainingStep(ctx, spec, params, w, req.Engine)
	} else {
		m.Point, err = envr.Predict(ctx, req, req.Sizes[0])
	}
	return m, err
}

// Efficiency is m's scaling efficiency: for a workload against one GPU
// doing the same per-GPU work with no communication (StepResult.Efficiency;
// ref is not used), for a collective busbw over ref's busbw, not defined
// (ok false) when ref's busbw is not positive.
func (m *Modelled) Efficiency(ref *Modelled, workload bool) (eff float64, ok bool) {
	if workload {
		return m.Step.Efficiency, m.Step.StepMs > 0
	}
	if ref == nil {
		return 0, false
	}
	if ref.Point.BusBW > 0 {
		return m.Point.BusBW / ref.Point.BusBW, true
	}
	return 0, false
}

// Bottleneck is the prediction whose bottleneck m shows: the collective's
// or, for a workload, that of the collective with the most exposed time.
func (m *Modelled) Bottleneck(workload bool) sim.Point {
	if workload {
		return m.Step.Dominant().Point
	}
	return m.Point
}
