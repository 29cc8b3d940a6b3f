package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
	"github.com/urfave/cli/v2"
)

// measuredFlags are the options of commands that read measurement files.
func measuredFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "measured", Aliases: []string{"m"}, Usage: "measurement `FILE` (nccl-tests output, bandwidth matrices, perftest, hwbench JSON; repeatable; files may also follow the flags)"},
		&cli.StringFlag{Name: "engine", Value: "analytic", Usage: "engine that times the model: analytic (closed form) or des (discrete-event)"},
	}
}

// measuredFiles returns the --measured files followed by the positional
// ones (Main moves flags that follow file names in front of them).
func measuredFiles(c *cli.Context, cmd string) ([]string, error) {
	files := append(append([]string(nil), c.StringSlice("measured")...), c.Args().Slice()...)
	if len(files) == 0 {
		return nil, badInputf("%s: give at least one measurement file (--measured FILE)", cmd)
	}
	return files, nil
}

// parseFiles parses measurement files; a file that cannot be read or
// recognised is bad input.
func parseFiles(e *env, files []string, cmd string) ([]*ingest.Artifact, error) {
	var arts []*ingest.Artifact
	for i, f := range files {
		a, err := e.parseInput(cmd, f, i+1, len(files))
		if err != nil {
			return nil, badInput(fmt.Errorf("%s: %w", cmd, err))
		}
		arts = append(arts, a)
	}
	return arts, nil
}

// measuredVersion returns the NCCL version the measured files state (the
// first run or log that names one), empty when none does.
func measuredVersion(arts []*ingest.Artifact) string {
	for _, a := range arts {
		for _, r := range a.Runs {
			if r.NCCLVersion != "" {
				return r.NCCLVersion
			}
		}
		if a.Log != nil && a.Log.Version != "" {
			return a.Log.Version
		}
	}
	return ""
}

// useMeasuredVersion models the NCCL release the measurements ran with
// when neither --nccl-version nor the cluster file chose one, and says so.
func useMeasuredVersion(spec *model.ClusterSpec, arts []*ingest.Artifact) string {
	if spec.NCCLVersion != "" {
		return ""
	}
	v := measuredVersion(arts)
	if v == "" {
		return ""
	}
	pv, err := model.ParseVersion(v)
	if err != nil {
		return ""
	}
	if nw := model.Newest(); pv.Major == nw.Major && pv.Minor > nw.Minor {
		// Newer than any release modelled: the newest is modelled, as
		// calibrate.VersionNote says in the notes, not this one.
		return ""
	}
	spec.NCCLVersion = v
	return fmt.Sprintf("modelling NCCL %s, the version the measured files state (override with --nccl-version)", v)
}

func calibrateCommand(e *env) *cli.Command {
	flags := append(clusterFlags(), measuredFlags()...)
	flags = append(flags,
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the calibration profile to `FILE` (YAML; predict, validate, compare and sweep take it with --profile)"},
		&cli.StringFlag{Name: "terms", Usage: "fit only these terms: comma-separated `NAMES` or prefixes ending in * (lat.*,net.eff.ib)"},
		&cli.IntFlag{Name: "max-evals", Value: 3000, Usage: "give up after `N` model evaluations (the fit then fails and writes nothing)"},
		&cli.BoolFlag{Name: "list-terms", Usage: "list the model's fittable terms with bounds and defaults, and exit"},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "report format: table or json (--list-terms: also markdown)"},
		reportFlag(),
	)
	return &cli.Command{
		Name:  "calibrate",
		Usage: "fit the model's free parameters to measurements of a cluster and write a calibration profile",
		UsageText: "collsim calibrate [--node NAME --nodes N --nics 4x200G-ib | --cluster FILE | --topo FILE] --measured FILE... -o profile.yaml\n" +
			"   [--terms a,b*] [--max-evals N] [--format table|json]",
		Description: "Fits bandwidth efficiencies per link class (NVLink, PCIe, host memory, NIC), per-step latencies per link class\n" +
			"and protocol, and the other terms of the model (collsim calibrate --list-terms) to the measured files: least\n" +
			"squares on log(time) with a robust (Cauchy) loss, in the bounds of each term. Terms the data cannot determine\n" +
			"are held at their defaults and listed. The measurements must come from the cluster the flags describe (rank\n" +
			"count and GPU model are checked). Exit status 1 when the fit does not converge (no profile is written), 2 on\n" +
			"bad input.",
		Flags: flags,
		Action: func(c *cli.Context) error {
			if c.Bool("list-terms") {
				return listTerms(e.stdout, c.String("format"))
			}
			format := c.String("format")
			if format != "table" && format != "json" {
				return badInputf("calibrate: --format %q: want table or json", format)
			}
			files, err := measuredFiles(c, "calibrate")
			if err != nil {
				return err
			}
			rpath, err := reportPath(c, "calibrate")
			if err != nil {
				return err
			}
			if err := checkOutput("calibrate", "-o", c.String("output")); err != nil {
				return err
			}
			if err := notAnInput(c, "calibrate", "-o", c.String("output")); err != nil {
				return err
			}
			if err := distinctOutputs("calibrate", [2]string{"-o", c.String("output")}, [2]string{"--report", rpath}); err != nil {
				return err
			}
			engine, err := sim.ParseEngine(c.String("engine"))
			if err != nil {
				return badInputf("calibrate: --engine: %w", err)
			}
			var terms []string
			for _, t := range strings.Split(c.String("terms"), ",") {
				if t = strings.TrimSpace(t); t != "" {
					terms = append(terms, t)
				}
			}
			if c.Int("max-evals") < 1 {
				return badInputf("calibrate: --max-evals must be at least 1, got %d", c.Int("max-evals"))
			}
			spec, err := clusterSpec(c)
			if err != nil {
				return err
			}
			base := sim.DefaultParams()
			if f := c.String("profile"); f != "" {
				prof, err := calibrate.LoadProfile(f)
				if err != nil {
					return badInput(err)
				}
				if base, err = prof.Apply(base); err != nil {
					return badInput(fmt.Errorf("%s: %w", f, err))
				}
			}
			arts, err := parseFiles(e, files, "calibrate")
			if err != nil {
				return err
			}
			note := useMeasuredVersion(&spec, arts)
			launchNote, err := calibrate.MeasuredLaunch(&spec, arts)
			if err != nil {
				return badInput(err)
			}
			ds, err := calibrate.BuildDataset(arts, spec)
			if err != nil {
				if len(files) == 1 && !strings.Contains(err.Error(), files[0]) {
					// Name the one file the problem is in.
					err = fmt.Errorf("%s: %w", files[0], err)
				}
				return badInput(err)
			}
			for _, n := range []string{note, launchNote} {
				if n != "" {
					ds.Notes = append(ds.Notes, n)
				}
			}
			// What the files show by themselves that a fit would take in
			// as the cluster's terms (GPUDirect RDMA off, sockets, SHM).
			var warned []ingest.Finding
			for _, a := range arts {
				for _, f := range a.Findings {
					if f.Severity == ingest.SevWarning || f.Severity == ingest.SevError {
						f.Message = filepath.Base(a.File) + ": " + f.Message
						warned = append(warned, f)
						ds.Notes = append(ds.Notes, fmt.Sprintf("%s %s: %s; a fit takes this state in as the cluster's terms (collsim validate tells whether it is a fault)", f.Severity, f.Code, f.Message))
					}
				}
			}
			fr, err := calibrate.Fit(c.Context, ds.Series, ds.Links, base, calibrate.FitOptions{Terms: terms, Engine: engine, MaxEvals: c.Int("max-evals")})
			switch {
			case errors.Is(err, calibrate.ErrNotConverged):
				return failed(fmt.Errorf("calibrate: %w; no profile written", err))
			case err != nil && strings.Contains(err.Error(), "--terms"):
				return badInput(err)
			case err != nil:
				return err
			}
			// The cluster as the fit modelled it: at the measured runs'
			// node counts, inferred from their rank counts.
			cl, err := calibrate.LargestScale(spec, ds.Series).Build()
			if err != nil {
				return badInput(err)
			}
			desc, err := calibrate.DescribeScales(spec, ds.Series)
			if err != nil {
				return badInput(err)
			}
			prof := fr.Profile(desc, ds.Sources)
			prof.CollsimVersion = Version
			out := c.String("output")
			if out != "" {
				if err := prof.Save(out); err != nil {
					return err
				}
			}
			if format == "json" {
				err = writeFitJSON(e.stdout, fr, ds, prof, out)
			} else {
				err = writeFitTable(e.stdout, fr, ds, prof, out)
			}
			if err != nil || rpath == "" {
				return err
			}
			cin := calibrateInputs{files: clusterFilesFrom(c), terms: c.String("terms"), output: out, maxEvals: c.Int("max-evals"),
				version: cl.Version.String(), versionFrom: versionSource(spec, c.String("nccl-version")), findings: warned}
			if note != "" {
				cin.versionFrom = "the version the measured files state"
			}
			doc, err := calibrateReport(c.Context, e, fr, ds, prof, base, cl, cin)
			if err != nil {
				return err
			}
			return writeReport("calibrate", rpath, doc)
		},
	}
}

func fmtStdErr(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.3g", v)
}

func writeFitTable(w io.Writer, fr *calibrate.FitResult, ds *calibrate.Dataset, prof *calibrate.Profile, out string) error {
	fmt.Fprintf(w, "# collsim calibrate: %s\n", prof.Cluster)
	for _, s := range ds.Sources {
		if reportedOnly(fr, ds, s) {
			fmt.Fprintf(w, "#   read %s (%s): %d points, reported, not fitted\n", s.File, s.Kind, s.Points)
			continue
		}
		fmt.Fprintf(w, "#   fitted on %s (%s): %d points", s.File, s.Kind, s.Points)
		if s.Collective != "" {
			fmt.Fprintf(w, ", %s, %d ranks", s.Collective, s.Ranks)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "#")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TERM\tDEFAULT\tFITTED\t± 1σ\tCHANGE\tUNIT\tNOTE")
	for _, t := range fr.Fitted {
		note := ""
		if t.AtBound != "" {
			note = "at its " + t.AtBound + " bound"
		}
		fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t%s\t%s\t%s\t%s\n", t.Name, t.Default, t.Value, fmtStdErr(t.StdErr), t.ChangeText(), t.Unit, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(fr.Fitted) == 0 {
		fmt.Fprintln(w, "(no term could be fitted)")
	}
	if len(fr.Held) > 0 {
		fmt.Fprintln(w, "#\n# held at their values (the measurements do not determine them):")
		for _, h := range fr.Held {
			fmt.Fprintf(w, "#   %-24s %-10.4g %s\n", h.Name, h.Value, h.Reason)
		}
	}
	fmt.Fprintf(w, "#\n# fit: %d points, %d evaluations, %d iterations, %s (engine %s)\n", fr.Points, fr.Evaluations, fr.Iterations, fr.Status, fr.Engine)
	fmt.Fprintf(w, "# rms log(model/measured time): %.4f -> %.4f; median |busbw error|: %.1f%% -> %.1f%%\n",
		fr.RMSLogBefore, fr.RMSLogAfter, fr.MedianAbsBefore*100, fr.MedianAbsAfter*100)
	fmt.Fprintf(w, "# objective: %s\n", fr.Objective)
	for _, n := range append(append([]string(nil), ds.Notes...), fr.Notes...) {
		fmt.Fprintf(w, "# note: %s\n", n)
	}
	if out != "" {
		fmt.Fprintf(w, "# wrote %s\n", out)
	} else {
		fmt.Fprintln(w, "# no profile written (give -o FILE)")
	}
	return nil
}

func writeFitJSON(w io.Writer, fr *calibrate.FitResult, ds *calibrate.Dataset, prof *calibrate.Profile, out string) error {
	type term struct {
		Name    string   `json:"name"`
		Default float64  `json:"default"`
		Value   float64  `json:"value"`
		StdErr  *float64 `json:"stderr"`
		// Change is the relative move from the default; null for a term
		// whose default is 0, where only the value says how far it moved.
		Change  *float64 `json:"change"`
		Unit    string   `json:"unit"`
		AtBound string   `json:"at_bound,omitempty"`
	}
	doc := struct {
		Cluster      string                `json:"cluster"`
		FittedOn     []calibrate.FitSource `json:"fitted_on"`
		Terms        []term                `json:"terms"`
		Held         []calibrate.HeldParam `json:"held"`
		Points       int                   `json:"points"`
		Evaluations  int                   `json:"evaluations"`
		Iterations   int                   `json:"iterations"`
		Status       string                `json:"status"`
		Engine       string                `json:"engine"`
		Objective    string                `json:"objective"`
		RMSLogBefore float64               `json:"rms_log_before"`
		RMSLogAfter  float64               `json:"rms_log_after"`
		MedianBefore float64               `json:"median_abs_error_before"`
		MedianAfter  float64               `json:"median_abs_error_after"`
		Notes        []string              `json:"notes,omitempty"`
		Profile      string                `json:"profile,omitempty"`
	}{Cluster: prof.Cluster, FittedOn: ds.Sources, Terms: []term{}, Held: prof.Held, Points: fr.Points, Evaluations: fr.Evaluations,
		Iterations: fr.Iterations, Status: fr.Status, Engine: string(fr.Engine), Objective: fr.Objective, RMSLogBefore: round(fr.RMSLogBefore, 5),
		RMSLogAfter: round(fr.RMSLogAfter, 5), MedianBefore: round(fr.MedianAbsBefore, 5), MedianAfter: round(fr.MedianAbsAfter, 5),
		Notes: append(append([]string(nil), ds.Notes...), fr.Notes...), Profile: out}
	if doc.Held == nil {
		doc.Held = []calibrate.HeldParam{}
	}
	for _, t := range fr.Fitted {
		x := term{Name: t.Name, Default: t.Default, Value: t.Value, Unit: t.Unit, AtBound: t.AtBound}
		if t.Default != 0 {
			c := round(t.Change(), 5)
			x.Change = &c
		}
		if !math.IsNaN(t.StdErr) && !math.IsInf(t.StdErr, 0) {
			se := t.StdErr
			x.StdErr = &se
		}
		doc.Terms = append(doc.Terms, x)
	}
	return writeJSONDoc(w, doc)
}

// reportedOnly says whether every point of a source is a link observation
// the fit read but did not use (FitResult.ReportedOnly).
func reportedOnly(fr *calibrate.FitResult, ds *calibrate.Dataset, s calibrate.FitSource) bool {
	if s.Collective != "" || len(fr.ReportedOnly) == 0 {
		return false
	}
	prefix := filepath.Base(s.File) + ": "
	n := 0
	for _, l := range ds.Links {
		if strings.HasPrefix(l.Source, prefix) {
			if !slices.Contains(fr.ReportedOnly, l.Source) {
				return false
			}
			n++
		}
	}
	return n > 0
}
