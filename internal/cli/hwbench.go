package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/hwbench"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
	"github.com/urfave/cli/v2"
)

func hwbenchCommand(e *env) *cli.Command {
	def := hwbench.DefaultOptions()
	return &cli.Command{
		Name:  "hwbench",
		Usage: "measure this machine: topology, copy, peer-to-peer and nvbandwidth-style copy bandwidth, NCCL sweeps, GPUDirect RDMA",
		UsageText: "collsim hwbench [--probes topo,copy,p2p,nvbw,nccl,gdr] [--out hwbench.json] [--minbytes 8 --maxbytes 1G --stepfactor 2]\n" +
			"   collsim hwbench --rank R --nranks N --coordinator HOST:PORT ...   (or SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/SIZE, torchrun RANK/WORLD_SIZE)",
		Description: "Loads libcudart, libnvidia-ml, libnccl.so.2 and libibverbs.so.1 at run time (LD_LIBRARY_PATH); a probe whose\n" +
			"library is missing is skipped. The JSON report is rewritten after every probe; the nccl probe also writes\n" +
			"nccl-tests text. Progress goes to stderr. See docs/hwbench.md.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "probes", Value: strings.Join(hwbench.Probes, ","), Usage: "comma-separated `LIST` of probes to run, in order"},
			&cli.StringFlag{Name: "out", Value: def.Out, Usage: "JSON report `FILE`"},
			&cli.StringFlag{Name: "collectives", Usage: "comma-separated `LIST` of the nccl probe's collectives (default: all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv)"},
			&cli.StringFlag{Name: "nccl-text", Usage: "nccl-tests text `FILE` (default <out>.nccl-tests.txt; \"-\" for none)"},
			&cli.StringFlag{Name: "minbytes", Aliases: []string{"b"}, Value: "8", Usage: "smallest nccl sweep size (K/M/G suffixes, 1024-based)"},
			&cli.StringFlag{Name: "maxbytes", Aliases: []string{"e"}, Value: model.FormatBytes(def.MaxBytes), Usage: "largest nccl sweep size"},
			&cli.IntFlag{Name: "stepfactor", Aliases: []string{"f"}, Value: def.StepFactor, Usage: "nccl sweep size multiplier"},
			&cli.IntFlag{Name: "iters", Aliases: []string{"n"}, Value: def.Iters, Usage: "timed iterations per measurement"},
			&cli.IntFlag{Name: "warmup", Aliases: []string{"w"}, Value: def.Warmup, Usage: "untimed warm-up iterations per measurement"},
			&cli.IntFlag{Name: "check", Aliases: []string{"c"}, Value: def.Check, Usage: "1: check every nccl sweep size on data (#wrong, as nccl-tests -c 1); 0: timing only"},
			&cli.StringFlag{Name: "copybytes", Value: model.FormatBytes(def.CopyBytes), Usage: "size of one copy in the copy and p2p probes"},
			&cli.IntFlag{Name: "rank", Usage: "this process's rank in a multi-process run"},
			&cli.IntFlag{Name: "nranks", Usage: "number of processes (default: SLURM_NTASKS, OMPI_COMM_WORLD_SIZE or WORLD_SIZE, else 1)"},
			&cli.StringFlag{Name: "coordinator", Usage: "rank 0's `HOST:PORT` for a multi-process run"},
			&cli.StringFlag{Name: "validate-against", Usage: "after measuring, compare the nccl sweeps with the model of cluster YAML `FILE` and diagnose (as collsim validate)"},
			&cli.StringFlag{Name: "tolerance", Value: "10%", Usage: "with --validate-against: largest |model/measured busbw - 1| a bandwidth-regime point may have"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress lines on stderr"},
			&cli.BoolFlag{Name: "fake", Hidden: true, Usage: "measure a simulated machine (tests, demos; it holds the bytes of the NCCL data check in host memory, a few times --maxbytes per rank)"},
			reportFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return badInputf("hwbench takes no arguments, got %q", c.Args().First())
			}
			o, err := hwbenchOptions(c, def)
			if err != nil {
				return err
			}
			rpath, err := reportPath(c, "hwbench")
			if err != nil {
				return err
			}
			if err := checkOutput("hwbench", "--out", o.Out); err != nil {
				return err
			}
			if err := checkOutput("hwbench", "--nccl-text", o.NCCLText); err != nil {
				return err
			}
			if err := distinctOutputs("hwbench", [2]string{"--out", o.Out}, [2]string{"--nccl-text", o.NCCLText}, [2]string{"--report", rpath}); err != nil {
				return err
			}
			if err := notAnInput(c, "hwbench", "--out", o.Out); err != nil {
				return err
			}
			if err := notAnInput(c, "hwbench", "--nccl-text", o.NCCLText); err != nil {
				return err
			}
			// The model to validate against is read before any measurement:
			// a bad file fails at once, not after the sweeps.
			var against *hwbenchModel
			if f := c.String("validate-against"); f != "" {
				if against, err = loadHWBenchModel(f, c.String("tolerance")); err != nil {
					return err
				}
			} else if c.IsSet("tolerance") {
				return badInputf("hwbench: --tolerance needs --validate-against CLUSTER.yaml")
			}
			if !c.Bool("quiet") {
				o.Progress = e.stderr
			}
			var b hwbench.Backend
			if c.Bool("fake") {
				if o.NRanks > 1 && o.Check != 0 {
					// The simulated machines of separate processes move no
					// data between them: the check would count every
					// element wrong.
					fmt.Fprintln(e.stderr, "hwbench: --fake across processes: the simulated machines share no data, so the data check is off (-c 0)")
					o.Check = 0
				}
				b, o.BackendName = hwbench.NewFake(hwbench.FakeConfig{}), "fake"
			} else {
				nb, err := hwbench.OpenFor(o.Probes)
				if err != nil {
					return err // one line: which library was not found
				}
				b, o.BackendName = nb, "native"
			}
			rep, err := hwbench.Run(c.Context, b, o)
			if rep != nil && o.Out != "" {
				summary := make([]string, 0, len(rep.Probes))
				for _, p := range rep.Probes {
					summary = append(summary, p.Name+" "+p.Status)
				}
				if rep.Written != "" {
					fmt.Fprintf(e.stdout, "hwbench: %s (%s)\n", rep.Written, strings.Join(summary, ", "))
				} else {
					fmt.Fprintf(e.stdout, "hwbench: rank %d (%s) writes no file: rank 0 writes its --out, and the first rank of each other host <out>.rank<N>\n",
						rep.Machine.Rank, strings.Join(summary, ", "))
				}
				if rep.NCCL != nil && o.NCCLText != "" && rep.Machine.Rank == 0 {
					fmt.Fprintf(e.stdout, "hwbench: %s\n", o.NCCLText)
				}
			}
			// Close the loop: the measurements against the model.
			var v *calibrate.Validation
			if against != nil && rep != nil && rep.Machine.Rank == 0 {
				var verr error
				if v, verr = against.validate(c.Context, rep, o); verr != nil {
					if err != nil {
						fmt.Fprintf(e.stderr, "collsim: %v\n", err)
					}
					return verr
				}
				if werr := writeValidationTable(e.stdout, v); werr != nil {
					return werr
				}
			}
			// Rank 0 writes the report, also after a failed probe: it
			// shows what did run and the error.
			if rpath != "" && rep != nil && rep.Machine.Rank == 0 {
				doc, rerr := hwbenchReport(e, rep, o, v)
				if rerr == nil {
					rerr = writeReport("hwbench", rpath, doc)
				}
				if rerr != nil {
					if err != nil {
						fmt.Fprintf(e.stderr, "collsim: %v\n", err)
					}
					return rerr
				}
				fmt.Fprintf(e.stdout, "hwbench: %s\n", rpath)
			}
			var pe *hwbench.ProbeError
			if errors.As(err, &pe) {
				return failed(err)
			}
			if err == nil && v != nil && !v.Pass {
				return failed(errors.New(validationFailure(v)))
			}
			return err
		},
	}
}

// hwbenchOptions turns the flags (and the launcher's rank variables) into
// run options.
func hwbenchOptions(c *cli.Context, o hwbench.Options) (hwbench.Options, error) {
	o.Tool = "collsim hwbench " + Version
	o.Probes = nil
	for _, p := range strings.Split(c.String("probes"), ",") {
		if p = strings.TrimSpace(p); p != "" {
			o.Probes = append(o.Probes, p)
		}
	}
	o.Out = c.String("out")
	for _, name := range strings.Split(c.String("collectives"), ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		op, err := model.ParseCollective(name)
		if err != nil {
			return o, badInputf("--collectives: %v", err)
		}
		o.Collectives = append(o.Collectives, op)
	}
	switch t := c.String("nccl-text"); {
	case t == "-":
		o.NCCLText = ""
	case t != "":
		o.NCCLText = t
	case o.Out != "":
		o.NCCLText = o.Out + ".nccl-tests.txt"
	}
	var err error
	for _, f := range []struct {
		name string
		dst  *model.Bytes
	}{{"minbytes", &o.MinBytes}, {"maxbytes", &o.MaxBytes}, {"copybytes", &o.CopyBytes}} {
		if *f.dst, err = model.ParseBytes(c.String(f.name)); err != nil {
			return o, badInputf("--%s: %w", f.name, err)
		}
	}
	o.StepFactor, o.Iters, o.Warmup, o.Check = c.Int("stepfactor"), c.Int("iters"), c.Int("warmup"), c.Int("check")
	if o.Check != 0 && o.Check != 1 {
		return o, badInputf("--check must be 0 or 1, got %d", o.Check)
	}
	o.Coordinator = c.String("coordinator")
	if c.IsSet("nranks") || c.IsSet("rank") {
		o.Rank, o.NRanks = c.Int("rank"), c.Int("nranks")
		if o.NRanks == 0 {
			o.NRanks = 1
		}
	} else {
		ri, ok, err := hwbench.RanksFromEnv(os.Getenv)
		if err != nil {
			return o, badInput(err)
		}
		if ok {
			o.Rank, o.NRanks = ri.Rank, ri.NRanks
		}
	}
	// Run validates the rest; its option errors are the user's input.
	if err := hwbench.ValidateOptions(o); err != nil {
		return o, badInput(err)
	}
	return o, nil
}

// hwbenchModel is the cluster a hwbench run is compared with.
type hwbenchModel struct {
	file      string
	spec      model.ClusterSpec
	params    sim.Params
	tolerance float64
}

// loadHWBenchModel reads and builds the cluster YAML of --validate-against.
func loadHWBenchModel(file, tolerance string) (*hwbenchModel, error) {
	tol, err := parseTolerance(tolerance)
	if err != nil {
		return nil, badInputf("hwbench: --tolerance: %w", err)
	}
	spec, err := scenarios.Overrides{Cluster: file}.Resolve()
	if err != nil {
		return nil, badInput(fmt.Errorf("hwbench: --validate-against: %w", err))
	}
	cl, err := spec.Build()
	if err != nil {
		return nil, badInput(fmt.Errorf("hwbench: --validate-against %s: %w", file, err))
	}
	params := sim.DefaultParams()
	if _, err := sim.NewEnv(cl, params); err != nil {
		return nil, badInput(fmt.Errorf("hwbench: --validate-against %s: %w", file, err))
	}
	return &hwbenchModel{file: file, spec: spec, params: params, tolerance: tol}, nil
}

// validate reads the run back as validate reads a hwbench JSON file and
// compares it with the model: the same points, regimes, verdict and
// diagnoses (with the NCCL_DEBUG lines the run captured as evidence).
func (m *hwbenchModel) validate(ctx context.Context, rep *hwbench.Report, o hwbench.Options) (*calibrate.Validation, error) {
	data, err := rep.Encode()
	if err != nil {
		return nil, err
	}
	name := o.Out
	if name == "" {
		name = "hwbench.json"
	}
	a, err := ingest.ParseHWBench(name, data)
	if err != nil {
		return nil, badInput(fmt.Errorf("hwbench: --validate-against: the run holds nothing to compare: %w", err))
	}
	if len(a.Runs) == 0 {
		return nil, badInputf("hwbench: --validate-against: the run has no nccl sweep to compare (run the nccl probe)")
	}
	spec := m.spec
	note := useMeasuredVersion(&spec, []*ingest.Artifact{a})
	v, err := calibrate.Validate(ctx, []*ingest.Artifact{a}, spec, m.params, calibrate.ValidateOptions{Tolerance: m.tolerance, Engine: sim.EngineAnalytic})
	switch {
	case errors.Is(err, calibrate.ErrMismatch), errors.Is(err, calibrate.ErrNoGate):
		return nil, badInput(fmt.Errorf("hwbench: --validate-against %s: %w", m.file, err))
	case err != nil:
		return nil, fmt.Errorf("hwbench: --validate-against %s: %w", m.file, err)
	}
	if note != "" {
		v.Notes = append(v.Notes, note)
	}
	return v, nil
}

// validationFailure is the one-line error of a failed validation, as
// collsim validate words it.
func validationFailure(v *calibrate.Validation) string {
	return "hwbench: " + failedPoints(v) + " of the model" + likelyCause(v)
}

// failedPoints counts the gate points outside the tolerance, naming the
// regime that gated them: the bandwidth regime, or the sizes of at least
// 8 MiB of a run that stops before 64 MiB.
func failedPoints(v *calibrate.Validation) string {
	n := 0
	regimes := map[string]bool{}
	for _, s := range v.Series {
		n += s.Failures
		if s.Failures > 0 {
			regimes[s.Gate] = true
		}
	}
	if n == 0 {
		// The gate passed; the run fails on what its files say
		// (calibrate.DiagWrong: nccl-tests counted wrong results).
		return "the measured run is not valid"
	}
	what := "bandwidth-regime point(s)"
	switch {
	case len(regimes) > 1:
		what = "gate point(s)"
	case regimes[calibrate.RegimeMid]:
		what = "point(s) of at least 8 MiB (the measured sizes stop before 64 MiB)"
	}
	return fmt.Sprintf("%d %s outside the %s tolerance", n, what, pct(v.Tolerance))
}

// likelyCause is "; most likely cause: ..." when there is a diagnosis.
func likelyCause(v *calibrate.Validation) string {
	if len(v.Diagnoses) > 0 {
		return "; most likely cause: " + v.Diagnoses[0].Title
	}
	return ""
}
