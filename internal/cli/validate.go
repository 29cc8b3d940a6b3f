package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
	"github.com/urfave/cli/v2"
)

func validateCommand(e *env) *cli.Command {
	flags := append(clusterFlags(), measuredFlags()...)
	flags = append(flags,
		&cli.StringFlag{Name: "log", Usage: "NCCL_DEBUG=INFO log `FILE` of the same run (adds its evidence to the diagnosis)"},
		&cli.StringFlag{Name: "tolerance", Value: "10%", Usage: "largest |model/measured busbw - 1| a bandwidth-regime point may have (`PCT`: 10% or 0.1)"},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "output format: table, json or md"},
		reportFlag(),
	)
	return &cli.Command{
		Name:  "validate",
		Usage: "check a cluster's measurements against its model and say by how much and most likely why it falls short",
		UsageText: "collsim validate [--node NAME --nodes N --nics 4x200G-ib | --cluster FILE | --topo FILE] --measured FILE...\n" +
			"   [--log NCCL_DEBUG_FILE] [--profile P] [--tolerance 10%] [--format table|json|md]",
		Description: "The cluster flags describe what the cluster should be. For each measured size it prints measured and modelled\n" +
			"time and busbw, their ratio and pass/fail against the tolerance, then the median and worst error in the latency\n" +
			"regime (< 64 KiB) and the bandwidth regime (>= 64 MiB; runs that stop earlier are judged on their sizes >= 8 MiB,\n" +
			"and say so). Diagnoses name the likely cause with its evidence and the fix to try. Exit status 0 when every\n" +
			"bandwidth-regime point is within the tolerance, 1 when not, 2 on bad input (including measurements whose rank\n" +
			"count or GPU model do not match the cluster).",
		Flags: flags,
		Action: func(c *cli.Context) error {
			format := c.String("format")
			switch format {
			case "table", "json", "md":
			default:
				return badInputf("validate: --format %q: want table, json or md", format)
			}
			tol, err := parseTolerance(c.String("tolerance"))
			if err != nil {
				return badInputf("validate: --tolerance: %w", err)
			}
			engine, err := sim.ParseEngine(c.String("engine"))
			if err != nil {
				return badInputf("validate: --engine: %w", err)
			}
			files, err := measuredFiles(c, "validate")
			if err != nil {
				return err
			}
			rpath, err := reportPath(c, "validate")
			if err != nil {
				return err
			}
			envr, err := buildEnv(c)
			if err != nil {
				return err
			}
			arts, err := parseFiles(e, files, "validate")
			if err != nil {
				return err
			}
			ingest.CrossCheck(arts) // NIC facts of an ibstat file applied to the runs
			opt := calibrate.ValidateOptions{Tolerance: tol, Engine: engine, Profile: c.String("profile")}
			if f := c.String("log"); f != "" {
				a, err := e.parseInput("validate", f, 1, 1)
				if err != nil {
					return badInput(fmt.Errorf("validate: --log: %w", err))
				}
				if a.Log == nil {
					// A topology, perftest or bandwidth file holds no
					// evidence of the run's transports.
					return badInput(fmt.Errorf("validate: --log %s: a %s file with no NCCL_DEBUG=INFO lines; give the NCCL log of the measured run (NCCL_DEBUG=INFO output), or pass this file with --measured", f, kindTitle(a.Kind)))
				}
				opt.Log = a
			}
			spec := envr.Cluster.Spec
			note := useMeasuredVersion(&spec, arts)
			launchNote, err := calibrate.MeasuredLaunch(&spec, arts)
			if err != nil {
				return badInput(fmt.Errorf("validate: %w", err))
			}
			v, err := calibrate.Validate(c.Context, arts, spec, envr.Params(), opt)
			switch {
			case errors.Is(err, calibrate.ErrMismatch), errors.Is(err, calibrate.ErrNoGate):
				return badInput(fmt.Errorf("validate: %w", err))
			case err != nil:
				return fmt.Errorf("validate: %w", err)
			}
			for _, n := range []string{note, launchNote} {
				if n != "" {
					v.Notes = append(v.Notes, n)
				}
			}
			switch format {
			case "json":
				err = writeValidationJSON(e.stdout, v)
			case "md":
				err = writeValidationMD(e.stdout, v)
			default:
				err = writeValidationTable(e.stdout, v)
			}
			if err != nil {
				return err
			}
			if rpath != "" {
				vin := validateInputs{files: clusterFilesFrom(c), log: c.String("log"), engine: engine,
					version: envr.Cluster.Version.String(), versionFrom: versionSource(spec, c.String("nccl-version"))}
				if note != "" {
					vin.version, vin.versionFrom = spec.NCCLVersion, "the version the measured files state"
				}
				doc, err := validateReport(e, v, modelledCluster(envr.Cluster, spec, v), envr.Params(), arts, vin)
				if err == nil {
					err = writeReport("validate", rpath, doc)
				}
				if err != nil {
					return err
				}
			}
			if !v.Pass {
				return failed(errors.New("validate: " + failedPoints(v) + likelyCause(v)))
			}
			return nil
		},
	}
}

// parseTolerance reads "10%", "0.1" or "10" (values above 1 are percent).
func parseTolerance(s string) (float64, error) {
	t := strings.TrimSpace(s)
	percent := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil || v <= 0 || v != v {
		return 0, fmt.Errorf("want a positive fraction or percentage (10%% or 0.1), got %q", s)
	}
	if percent || v > 1 {
		v /= 100
	}
	if v > 10 {
		return 0, fmt.Errorf("%q is more than 1000%%", s)
	}
	return v, nil
}

func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', -1, 64) + "%" }

func signedPct(f float64) string { return fmt.Sprintf("%+.1f%%", f*100) }

func regimeLabel(r string) string {
	switch r {
	case calibrate.RegimeLatency:
		return "latency regime (< 64 KiB)"
	case calibrate.RegimeBandwidth:
		return "bandwidth regime (>= 64 MiB)"
	case calibrate.RegimeMid:
		return "mid regime (>= 8 MiB; the run stops below 64 MiB)"
	}
	return r
}

func verdict(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

func writeValidationTable(w io.Writer, v *calibrate.Validation) error {
	fmt.Fprintf(w, "# collsim validate: model %s\n", v.Cluster)
	fmt.Fprintf(w, "# engine %s, tolerance %s", v.Engine, pct(v.Tolerance))
	if v.Profile != "" {
		fmt.Fprintf(w, ", profile %s", v.Profile)
	}
	fmt.Fprintln(w)
	for _, s := range v.Series {
		fmt.Fprintf(w, "#\n# %s: %s, %d ranks\n", s.Series, s.Collective, s.Ranks)
		fmt.Fprintf(w, "# %10s  %10s  %10s  %8s  %8s  %6s  %7s  %-9s  %-4s  %s\n", "size", "meas (us)", "model (us)", "meas bw", "model bw", "ratio", "error", "regime", "", "model choice")
		for _, p := range s.Points {
			res := ""
			if p.Regime == s.Gate {
				res = verdict(p.Pass)
			}
			fmt.Fprintf(w, "%12d  %10.4g  %10.4g  %8.4g  %8.4g  %6.3f  %7s  %-9s  %-4s  %s/%s/%d\n", p.Size, p.MeasuredTimeUs, p.ModelTimeUs,
				p.MeasuredBusBW, p.ModelBusBW, p.Ratio, signedPct(p.Error), p.Regime, res, p.Algo, p.Proto, p.Channels)
		}
		for _, r := range s.Regimes {
			fmt.Fprintf(w, "# %s: %d points, median |error| %.1f%%, p90 %.1f%%, worst %s\n", regimeLabel(r.Regime), r.Points, r.MedianAbs*100, r.P90Abs*100, signedPct(r.Worst))
		}
		if s.Gate != "" {
			fmt.Fprintf(w, "# verdict: %s (%d of the %s points outside %s)\n", verdict(s.Pass), s.Failures, s.Gate, pct(v.Tolerance))
		}
	}
	for _, n := range v.Notes {
		fmt.Fprintf(w, "# note: %s\n", n)
	}
	fmt.Fprintf(w, "#\n# overall: %s\n", verdict(v.Pass))
	if len(v.Diagnoses) == 0 {
		fmt.Fprintln(w, "# diagnosis: nothing to report")
		return nil
	}
	fmt.Fprintln(w, "#\n# diagnosis (most likely first):")
	for i, d := range v.Diagnoses {
		fmt.Fprintf(w, "%d. [%s] %s (%s)\n", i+1, d.Severity, d.Title, d.Code)
		for _, ev := range d.Evidence {
			fmt.Fprintf(w, "   evidence: %s\n", ev)
		}
		if d.Reproduce != "" && d.Explains {
			fmt.Fprintf(w, "   reproduced by: %s (residual %.3f vs %.3f for the healthy model)\n", d.Reproduce, d.Residual, d.Baseline)
		}
		fmt.Fprintf(w, "   fix: %s\n", d.Fix)
	}
	return nil
}

func writeValidationJSON(w io.Writer, v *calibrate.Validation) error {
	if v.Diagnoses == nil {
		v.Diagnoses = []calibrate.Diagnosis{}
	}
	return writeJSONDoc(w, v)
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func writeValidationMD(w io.Writer, v *calibrate.Validation) error {
	fmt.Fprintf(w, "# collsim validate: %s\n\n", verdict(v.Pass))
	fmt.Fprintf(w, "Model: %s; engine %s; tolerance %s", mdEscape(v.Cluster), v.Engine, pct(v.Tolerance))
	if v.Profile != "" {
		fmt.Fprintf(w, "; profile `%s`", v.Profile)
	}
	fmt.Fprintln(w, ".")
	for _, s := range v.Series {
		fmt.Fprintf(w, "\n## %s (%s, %d ranks)\n\n", mdEscape(s.Series), s.Collective, s.Ranks)
		fmt.Fprintln(w, "| size | measured time (us) | model time (us) | measured busbw (GB/s) | model busbw (GB/s) | ratio | error | regime | result | model choice |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
		for _, p := range s.Points {
			res := ""
			if p.Regime == s.Gate {
				res = verdict(p.Pass)
			}
			fmt.Fprintf(w, "| %s | %.4g | %.4g | %.4g | %.4g | %.3f | %s | %s | %s | %s/%s/%d |\n", model.FormatBytes(model.Bytes(p.Size)),
				p.MeasuredTimeUs, p.ModelTimeUs, p.MeasuredBusBW, p.ModelBusBW, p.Ratio, signedPct(p.Error), p.Regime, res, p.Algo, p.Proto, p.Channels)
		}
		fmt.Fprintln(w)
		for _, r := range s.Regimes {
			fmt.Fprintf(w, "- %s: %d points, median |error| %.1f%%, p90 %.1f%%, worst %s\n", regimeLabel(r.Regime), r.Points, r.MedianAbs*100, r.P90Abs*100, signedPct(r.Worst))
		}
		if s.Gate != "" {
			fmt.Fprintf(w, "- verdict: **%s** (%d of the %s points outside %s)\n", verdict(s.Pass), s.Failures, s.Gate, pct(v.Tolerance))
		}
	}
	if len(v.Notes) > 0 {
		fmt.Fprint(w, "\n## Notes\n\n")
		for _, n := range v.Notes {
			fmt.Fprintf(w, "- %s\n", mdEscape(n))
		}
	}
	fmt.Fprint(w, "\n## Diagnosis\n\n")
	if len(v.Diagnoses) == 0 {
		fmt.Fprintln(w, "Nothing to report.")
	}
	for i, d := range v.Diagnoses {
		fmt.Fprintf(w, "%d. **%s** (`%s`, %s)\n", i+1, mdEscape(d.Title), d.Code, d.Severity)
		for _, ev := range d.Evidence {
			fmt.Fprintf(w, "   - evidence: %s\n", mdEscape(ev))
		}
		if d.Reproduce != "" && d.Explains {
			fmt.Fprintf(w, "   - reproduced by: %s (residual %.3f vs %.3f for the healthy model)\n", mdEscape(d.Reproduce), d.Residual, d.Baseline)
		}
		fmt.Fprintf(w, "   - fix: %s\n", mdEscape(d.Fix))
	}
	return nil
}

// modelledCluster is the cluster the report draws: cl, or the measured
// runs' own scale where validate inferred a larger node count from their
// rank counts (validate --node X without --nodes on a multi-node file),
// as the validation's cluster line says.
func modelledCluster(cl *model.Cluster, spec model.ClusterSpec, v *calibrate.Validation) *model.Cluster {
	n := cl.NumNodes()
	for _, s := range v.Series {
		if G := cl.GPUsPerNode(); G > 0 && s.Ranks%G == 0 {
			n = max(n, s.Ranks/G)
		}
	}
	if n == cl.NumNodes() {
		return cl
	}
	spec.Nodes = n
	if c, err := spec.Build(); err == nil {
		return c
	}
	return cl
}
