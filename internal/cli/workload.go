package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
	"github.com/urfave/cli/v2"
)

// workloadFlags are the options that describe a training-step workload
// (scenarios.Workload); --workload reads them from a YAML file and the
// other options override its fields.
func workloadFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "workload", Usage: "training-step workload YAML `FILE` (docs/sweep.md); the options below override its fields"},
		&cli.StringFlag{Name: "params", Usage: "model parameters `N` (7e9, 7B): time a data-parallel training step instead of one collective"},
		&cli.IntFlag{Name: "grad-bytes", Usage: "bytes per gradient element `B` (2 bf16, 4 fp32; default 2)"},
		&cli.StringFlag{Name: "bucket", Usage: "DDP gradient bucket or FSDP unit `SIZE` (default 25M, PyTorch DDP's bucket_cap_mb=25)"},
		&cli.Float64Flag{Name: "compute-ms", Usage: "forward + backward compute time of one step on one GPU in `MS`"},
		&cli.StringFlag{Name: "overlap", Usage: "`FRACTION` of communication hidden behind compute, 0..1 or 0..100% (default 0)"},
		&cli.IntFlag{Name: "batch-per-gpu", Usage: "samples per GPU per step `N` (for samples/s)"},
		&cli.IntFlag{Name: "seq-len", Usage: "tokens per sample `N` (for tokens/s)"},
		&cli.StringFlag{Name: "strategy", Usage: "ddp (gradient AllReduce) or fsdp (parameter AllGather + gradient ReduceScatter)"},
	}
}

// workloadFrom returns the workload the options describe, or nil when
// neither --workload nor --params is given (other workload options alone
// are an error).
func workloadFrom(c *cli.Context, cmd string) (*scenarios.Workload, error) {
	var w scenarios.Workload
	file := c.String("workload")
	if file == "" && !c.IsSet("params") {
		for _, n := range []string{"grad-bytes", "bucket", "compute-ms", "overlap", "batch-per-gpu", "seq-len", "strategy"} {
			if c.IsSet(n) {
				return nil, badInputf("%s: --%s needs --params or --workload FILE", cmd, n)
			}
		}
		return nil, nil
	}
	if file != "" {
		var err error
		if w, err = scenarios.LoadWorkloadFile(file); err != nil {
			return nil, badInput(err)
		}
	}
	var err error
	if c.IsSet("params") {
		if w.Params, err = scenarios.ParseCount(c.String("params")); err != nil {
			return nil, badInputf("%s: --params: %v", cmd, err)
		}
	}
	if c.IsSet("grad-bytes") {
		w.GradBytes = c.Int("grad-bytes")
	}
	if c.IsSet("bucket") {
		if w.Bucket, err = model.ParseBytes(c.String("bucket")); err != nil {
			return nil, badInputf("%s: --bucket: %v", cmd, err)
		}
	}
	if c.IsSet("compute-ms") {
		w.ComputeMs = c.Float64("compute-ms")
	}
	if c.IsSet("overlap") {
		if w.Overlap, err = scenarios.ParseFraction(c.String("overlap")); err != nil {
			return nil, badInputf("%s: --overlap: %v", cmd, err)
		}
	}
	if c.IsSet("batch-per-gpu") {
		w.BatchPerGPU = c.Int("batch-per-gpu")
	}
	if c.IsSet("seq-len") {
		w.SeqLen = c.Int("seq-len")
	}
	if c.IsSet("strategy") {
		if w.Strategy, err = scenarios.ParseStrategy(c.String("strategy")); err != nil {
			return nil, badInputf("%s: --%v", cmd, err)
		}
	}
	if file == "" && !c.IsSet("compute-ms") {
		return nil, badInputf("%s: --params needs --compute-ms (forward + backward time of one step on one GPU)", cmd)
	}
	w = w.WithDefaults()
	if err := w.Validate(); err != nil {
		return nil, badInputf("%s: workload: %v", cmd, err)
	}
	return &w, nil
}

// callTime is one kind of a workload's collective calls on a cluster.
type callTime struct {
	Call scenarios.WorkloadCall
	// Point is the prediction of one call; TotalUs is Count × its time.
	Point   sim.Point
	TotalUs float64
}

// stepResult is a workload's training step on one cluster.
type stepResult struct {
	Step  scenarios.WorkloadStep
	Calls []callTime
}

// dominant returns the call kind that takes the most time in the step.
func (r stepResult) dominant() callTime {
	var best callTime
	for _, c := range r.Calls {
		if c.TotalUs > best.TotalUs {
			best = c
		}
	}
	return best
}

// workloadStep predicts every call of w on envr (elements of GradBytes,
// NCCL's choice of algorithm and protocol) and combines them into the
// step time.
func workloadStep(ctx context.Context, envr *sim.Env, w *scenarios.Workload, engine sim.EngineKind) (stepResult, error) {
	var r stepResult
	var comm float64
	for _, call := range w.Calls() {
		req := sim.Request{Coll: call.Coll, ElemSize: w.GradBytes, Engine: engine}
		pt, err := envr.Predict(ctx, req, call.Size)
		if err != nil {
			return r, fmt.Errorf("%s %s: %w", call.Coll, model.FormatBytes(call.Size), err)
		}
		total := pt.TimeUs * float64(call.Count)
		comm += total
		r.Calls = append(r.Calls, callTime{Call: call, Point: pt, TotalUs: total})
	}
	r.Step = w.Step(comm, envr.Cluster.NumRanks())
	return r, nil
}

// modelled is one cluster design as scale and sweep model it: its
// environment and either a collective's prediction at one size (pt) or a
// training step (step).
type modelled struct {
	env  *sim.Env
	pt   sim.Point
	step stepResult
}

// modelDesign builds spec's environment with params and models on it the
// workload w or, when w is nil, req at its first size; req.Engine times
// either.
func modelDesign(ctx context.Context, spec model.ClusterSpec, params sim.Params, req sim.Request, w *scenarios.Workload) (modelled, error) {
	envr, err := envForSpec(spec, params)
	if err != nil {
		return modelled{}, err
	}
	m := modelled{env: envr}
	if w != nil {
		m.step, err = workloadStep(ctx, envr, w, req.Engine)
	} else {
		m.pt, err = envr.Predict(ctx, req, req.Sizes[0])
	}
	return m, err
}

// efficiency is m's scaling efficiency against ref, modelled the same
// way: for a workload weak scaling (scenarios.WeakScalingEfficiency), for
// a collective busbw over ref's busbw, not defined (ok false) when ref's
// busbw is not positive.
func (m *modelled) efficiency(ref *modelled, workload bool) (eff float64, ok bool) {
	if workload {
		return scenarios.WeakScalingEfficiency(ref.step.Step, m.step.Step), true
	}
	if ref.pt.BusBW > 0 {
		return m.pt.BusBW / ref.pt.BusBW, true
	}
	return 0, false
}

// bottleneck is the prediction whose bottleneck m shows: the collective's
// or, for a workload, that of the call that takes the most time.
func (m *modelled) bottleneck(workload bool) sim.Point {
	if workload {
		return m.step.dominant().Point
	}
	return m.pt
}

// fmtMs formats milliseconds with 3 significant decimals.
func fmtMs(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
