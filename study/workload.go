package study

import (
	"context"
	"fmt"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// CallTime is one kind of a workload's collective calls on a cluster.
type CallTime struct {
	Call scenarios.WorkloadCall
	// Point is the prediction of one call; TotalUs is Count × its time.
	Point   sim.Point
	TotalUs float64
}

// StepResult is a workload's training step on one cluster.
type StepResult struct {
	Step  scenarios.WorkloadStep
	Calls []CallTime
}

// Dominant returns the call kind that takes the most time in the step
// (the first of equals; the zero CallTime when no call takes any time).
func (r StepResult) Dominant() CallTime {
	var best CallTime
	for _, c := range r.Calls {
		if c.TotalUs > best.TotalUs {
			best = c
		}
	}
	return best
}

// WorkloadStep predicts every call of w on envr (elements of GradBytes,
// NCCL's choice of algorithm and protocol) and combines them into the
// step time.
func WorkloadStep(ctx context.Context, envr *sim.Env, w *scenarios.Workload, engine sim.EngineKind) (StepResult, error) {
	var r StepResult
	var comm float64
	for _, call := range w.Calls() {
		req := sim.Request{Coll: call.Coll, ElemSize: w.GradBytes, Engine: engine}
		pt, err := envr.Predict(ctx, req, call.Size)
		if err != nil {
			return r, fmt.Errorf("%s %s: %w", call.Coll, model.FormatBytes(call.Size), err)
		}
		total := pt.TimeUs * float64(call.Count)
		comm += total
		r.Calls = append(r.Calls, CallTime{Call: call, Point: pt, TotalUs: total})
	}
	r.Step = w.Step(comm, envr.Cluster.NumRanks())
	return r, nil
}
