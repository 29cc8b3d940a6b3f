package cli

import (
	"strconv"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
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
		&cli.IntFlag{Name: "batch-per-gpu", Usage: "samples per GPU per step `N` (for samples/s)"},
		&cli.IntFlag{Name: "seq-len", Usage: "tokens per sample `N` (for tokens/s)"},
		&cli.StringFlag{Name: "overlap", Hidden: true, Usage: "removed: DDP overlap is computed as a timeline"},
		&cli.StringFlag{Name: "strategy", Usage: "ddp (gradient AllReduce) or fsdp (parameter AllGather + gradient ReduceScatter)"},
	}
}

// workloadFrom returns the workload the options describe, or nil when
// neither --workload nor --params is given (other workload options alone
// are an error).
func workloadFrom(c *cli.Context, cmd string) (*scenarios.Workload, error) {
	var w scenarios.Workload
	if c.IsSet("overlap") {
		return nil, badInputf("%s: --overlap: a fixed hidden fraction is no longer an input; DDP overlap is computed as a timeline of buckets against backward (docs/sweep.md)", cmd)
	}
	file := c.String("workload")
	if file == "" && !c.IsSet("params") {
		for _, n := range []string{"grad-bytes", "bucket", "compute-ms", "batch-per-gpu", "seq-len", "strategy"} {
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
			return nil, badInputf("%s: --params: %w", cmd, err)
		}
	}
	if c.IsSet("grad-bytes") {
		w.GradBytes = c.Int("grad-bytes")
	}
	if c.IsSet("bucket") {
		if w.Bucket, err = model.ParseBytes(c.String("bucket")); err != nil {
			return nil, badInputf("%s: --bucket: %w", cmd, err)
		}
		if w.Bucket <= 0 {
			return nil, badInputf("%s: --bucket %s is not a bucket size (give e.g. 25M; PyTorch DDP's default is 25 MiB)", cmd, c.String("bucket"))
		}
	}
	if c.IsSet("compute-ms") {
		w.ComputeMs = c.Float64("compute-ms")
	}
	if c.IsSet("batch-per-gpu") {
		w.BatchPerGPU = c.Int("batch-per-gpu")
	}
	if c.IsSet("seq-len") {
		w.SeqLen = c.Int("seq-len")
	}
	if c.IsSet("strategy") {
		if w.Strategy, err = scenarios.ParseStrategy(c.String("strategy")); err != nil {
			return nil, badInputf("%s: --%w", cmd, err)
		}
	}
	if file == "" && !c.IsSet("compute-ms") {
		return nil, badInputf("%s: --params needs --compute-ms (forward + backward time of one step on one GPU)", cmd)
	}
	w = w.WithDefaults()
	if err := w.Validate(); err != nil {
		return nil, badInputf("%s: workload: %w", cmd, err)
	}
	return &w, nil
}

// fmtMs formats milliseconds with 3 significant decimals.
func fmtMs(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
