package cli

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
	"github.com/collsim/collsim/study"
	"github.com/urfave/cli/v2"
)

func compareCommand(e *env) *cli.Command {
	flags := []cli.Flag{
		&cli.GenericFlag{Name: "design", Value: &listValue{}, Usage: "a design `NAME=ARGS`, ARGS being cluster options as on the command line: \"ib=--node dgx-h100 --nodes 16 --nics 8x400G-ib\" (repeatable)"},
		&cli.GenericFlag{Name: "cluster", Value: &listValue{}, Usage: "a design from a cluster YAML `FILE`, named after the file (repeatable)"},
		&cli.StringFlag{Name: "profile", Usage: "calibration profile `FILE` from collsim calibrate, for every design that gives none"},
	}
	flags = append(flags, predictFlags()...)
	return &cli.Command{
		Name:  "compare",
		Usage: "predict the same collective sweep on several cluster designs side by side",
		UsageText: "collsim compare --design \"ib=--node dgx-h100 --nodes 16 --nics 8x400G-ib\" --design \"roce=--node dgx-h100 --nodes 16 --nics 8x400G-roce\" [--cluster FILE ...]\n" +
			"   [-b 8 -e 8G -f 2] [--collective allreduce] [--engine des|analytic] [--profile FILE] [--format table|json|csv] [--report FILE.html|.md]",
		Flags: flags,
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return badInputf("compare takes no arguments, got %q (give designs with --design NAME=ARGS or --cluster FILE)", c.Args().First())
			}
			req, format, rpath, err := predictOptions(c, "compare")
			if err != nil {
				return err
			}
			ds, err := parseDesigns(listValues(c, "design"), listValues(c, "cluster"), c.String("profile"))
			if err != nil {
				return err
			}
			res, err := runCompare(c, ds, req)
			if err != nil {
				return err
			}
			return printResult(e, res, format, "compare", rpath, func() (*reports.Document, error) {
				res.sizes = sizeOptions(c)
				return compareReport(e, res)
			})
		},
	}
}

// design is one cluster of a compare run.
type design struct {
	name string
	// args are the cluster options as given (after splitting); from says
	// where the design came from ("--design", "--cluster FILE").
	args []string
	from string
	ctx  *cli.Context
	// CompareDesignResult is the design modelled, set by runCompare.
	*study.CompareDesignResult
	// profile is the design's --profile, judged on its cluster (nil
	// without), set by runCompare.
	profile *profileJSON
}

// designFlagSet parses a design's options: the cluster options every
// command takes.
func designFlagSet(name string) (*flag.FlagSet, error) {
	set := flag.NewFlagSet(name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range clusterFlags() {
		if err := f.Apply(set); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// parseDesigns reads --design NAME=ARGS and --cluster FILE values (designs
// first, then clusters, each in the order given) into designs with their
// own cluster options; profile is the shared --profile, used by designs
// that give none. Errors name the design.
func parseDesigns(specs, clusters []string, profile string) ([]*design, error) {
	var out []*design
	seen := map[string]bool{}
	add := func(name, from string, args []string) error {
		if seen[name] {
			return badInputf("compare: two designs are named %q: give each --design a distinct NAME (--cluster designs are named after the file)", name)
		}
		seen[name] = true
		set, err := designFlagSet(name)
		if err != nil {
			return err
		}
		if err := set.Parse(args); err != nil {
			return badInputf("compare: design %q: %w (ARGS are cluster options: --node, --nodes, --nics, --gpu, --gpus-per-node, --set, --nccl-version, --cluster, --topo, --profile)", name, err)
		}
		if set.NArg() > 0 {
			return badInputf("compare: design %q: unexpected argument %q (ARGS are cluster options such as --node dgx-h100 --nodes 16)", name, set.Arg(0))
		}
		if profile != "" && set.Lookup("profile").Value.String() == "" {
			if err := set.Set("profile", profile); err != nil {
				return err
			}
		}
		out = append(out, &design{name: name, args: args, from: from, ctx: cli.NewContext(nil, set, nil)})
		return nil
	}
	for _, s := range specs {
		name, rest, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\"'") || strings.HasPrefix(name, "-") {
			return nil, badInputf("compare: --design %q: want NAME=ARGS, e.g. --design \"ib=--node dgx-h100 --nodes 16 --nics 8x400G-ib\"", s)
		}
		args, err := splitArgs(rest)
		if err != nil {
			return nil, badInputf("compare: design %q: %w", name, err)
		}
		if err := add(name, "--design", args); err != nil {
			return nil, err
		}
	}
	for _, f := range clusters {
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		if name == "" || name == "." {
			return nil, badInputf("compare: --cluster %q: want a cluster YAML file", f)
		}
		if err := add(name, "--cluster "+f, []string{"--cluster", f}); err != nil {
			return nil, err
		}
	}
	switch {
	case len(out) < 2:
		return nil, badInputf("compare: give at least two designs (--design NAME=ARGS or --cluster FILE, repeatable), got %d", len(out))
	case len(out) > study.MaxCompareDesigns:
		return nil, badInputf("compare: %d designs is more than %d; split the comparison", len(out), study.MaxCompareDesigns)
	}
	return out, nil
}

// compareResult is a compare run ready to print.
type compareResult struct {
	*study.CompareResult
	dtype   string
	designs []*design
	// sizes is the size option as given, for the report.
	sizes string
}

// runCompare resolves every design's cluster options in order, then has
// study.Compare model them. A design whose options do not resolve is
// reported only if no design before it fails to model, so the error is
// that of the first failing design, as when each design resolved and
// modelled on its own.
func runCompare(c *cli.Context, ds []*design, req sim.Request) (*compareResult, error) {
	var opts []study.CompareDesign
	var resolveErr error
	for _, d := range ds {
		d.ctx.Context = c.Context
		spec, err := clusterSpec(d.ctx)
		var params sim.Params
		if err == nil {
			params, err = profileParams(d.ctx.String("profile"))
		}
		if err != nil {
			resolveErr = wrapKeep(fmt.Sprintf("compare: design %q", d.name), err)
			break
		}
		opts = append(opts, study.CompareDesign{Name: d.name, Spec: spec, Params: params})
	}
	if resolveErr != nil {
		if len(opts) > 0 {
			if _, err := study.Compare(c.Context, study.CompareOptions{Designs: opts, Request: req}); err != nil {
				return nil, err
			}
		}
		return nil, resolveErr
	}
	res, err := study.Compare(c.Context, study.CompareOptions{Designs: opts, Request: req})
	if err != nil {
		return nil, err
	}
	for i, d := range ds {
		d.CompareDesignResult = res.Designs[i]
		if d.profile, err = profileInfo(d.ctx.String("profile"), d.Env.Cluster); err != nil {
			return nil, wrapKeep(fmt.Sprintf("compare: design %q", d.name), err)
		}
	}
	return &compareResult{CompareResult: res, dtype: strings.ToLower(c.String("datatype")), designs: ds}, nil
}

// wrapKeep prefixes err with what, keeping its exit code.
func wrapKeep(what string, err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return &exitError{code: ee.code, err: fmt.Errorf("%s: %w", what, ee.err)}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// large returns the indices of the sizes compare judges designs on.
func (r *compareResult) large() []int { return r.Large() }

// meanLarge is a design's mean busbw over the large sizes.
func (r *compareResult) meanLarge(d *design) float64 { return r.MeanLarge(d.CompareDesignResult) }

// ranking returns the designs by mean large-size busbw, fastest first
// (ties in the given order).
func (r *compareResult) ranking() []*design {
	byRes := map[*study.CompareDesignResult]*design{}
	for _, d := range r.designs {
		byRes[d.CompareDesignResult] = d
	}
	var out []*design
	for _, rd := range r.Ranking() {
		out = append(out, byRes[rd])
	}
	return out
}

// ratio is busbw of design d at size i relative to the first design; ok
// is false when the first design's busbw is not positive.
func (r *compareResult) ratio(d *design, i int) (float64, bool) {
	return r.Ratio(d.CompareDesignResult, i)
}

// largeLabel says which sizes count as large: ">= 64M (5 sizes)".
func (r *compareResult) largeLabel() string {
	idx := r.large()
	if len(r.Request.Sizes) > 0 && r.Request.Sizes[idx[0]] < study.LargeFrom {
		return "at " + model.FormatBytes(r.Request.Sizes[idx[0]]) + ", the largest size"
	}
	if len(idx) == 1 {
		return fmt.Sprintf("at >= %s (1 size)", model.FormatBytes(study.LargeFrom))
	}
	return fmt.Sprintf("at >= %s (%d sizes)", model.FormatBytes(study.LargeFrom), len(idx))
}

// summaryLines are the conclusions: which design is faster at large
// sizes, by how much, and what limits each at the largest size.
func (r *compareResult) summaryLines() []string {
	rank := r.ranking()
	best := rank[0]
	var b strings.Builder
	if r.AllTie() {
		fmt.Fprintf(&b, "A tie %s: %s, %s GB/s mean busbw", r.largeLabel(), best.name, fmtF(r.meanLarge(best), 1))
	} else {
		fmt.Fprintf(&b, "Faster %s: %s, %s GB/s mean busbw", r.largeLabel(), best.name, fmtF(r.meanLarge(best), 1))
	}
	for _, d := range rank[1:] {
		f, isTie := r.Fraction(d.CompareDesignResult)
		tie := ""
		if isTie {
			tie = ", a tie"
		}
		fmt.Fprintf(&b, "; %s %s GB/s (%sx%s)", d.name, fmtF(r.meanLarge(d), 1), fmtF(f, 2), tie)
	}
	lines := []string{b.String() + ". Rule: " + study.TieRule() + "."}
	last := len(r.Request.Sizes) - 1
	var parts []string
	for _, d := range r.designs {
		parts = append(parts, d.name+": "+bottleneckPhrase(d.Points[last]))
	}
	lines = append(lines, fmt.Sprintf("Bottleneck at %s: %s.", model.FormatBytes(r.Request.Sizes[last]), strings.Join(parts, "; ")))
	return lines
}

// bottleneckPhrase is "NIC (node0/nic0->fabric/switch, 100% busy;
// ring/simple)", or the channel ceiling.
func bottleneckPhrase(pt sim.Point) string {
	switch {
	case pt.BottleneckClass == "":
		return "no link load"
	case pt.BottleneckClass == "channel ceiling":
		return pt.Bottleneck + " (" + pt.Choice.Algo.String() + "/" + pt.Choice.Proto.String() + ")"
	}
	return fmt.Sprintf("%s (%s, %.0f%% busy; %s/%s)", pt.BottleneckClass, pt.Bottleneck, 100*busiest(pt), pt.Choice.Algo, pt.Choice.Proto)
}

// designLine describes a design in one line for the table header.
func designLine(d *design) string {
	ci := clusterInfo(d.Env)
	line := fmt.Sprintf("%s; %d ranks; fabric %s; NCCL %s model", scenarios.Describe(d.Env.Cluster.Spec), d.Env.Cluster.NumRanks(), ci.Fabric, ci.NCCLVersion)
	// A design's profile changes its numbers: say which, and how many of
	// its terms reach the design.
	if p := d.profile; p != nil {
		line += fmt.Sprintf("; profile %s (%d of %d terms apply)", p.File, len(p.Applied), len(p.Applied)+len(p.NotApplicable))
	}
	return line
}

func (r *compareResult) writeTable(w io.Writer) error {
	fmt.Fprintf(w, "# collsim %s compare (engine %s): %s_perf, %s, %d designs\n", Version, r.Request.Engine, r.Request.Coll.TestName(), r.dtype, len(r.designs))
	for _, d := range r.designs {
		fmt.Fprintf(w, "#   %s: %s\n", d.name, designLine(d))
	}
	fmt.Fprintln(w, "#")
	widths := make([]int, len(r.designs))
	head1, head2 := fmt.Sprintf("# %10s", "size"), fmt.Sprintf("# %10s", "(B)")
	for i, d := range r.designs {
		widths[i] = max(12, len(d.name)+7)
		head1 += fmt.Sprintf("  %*s", widths[i], d.name+" busbw")
		head2 += fmt.Sprintf("  %*s", widths[i], "(GB/s)")
	}
	rw := make([]int, len(r.designs))
	for i, d := range r.designs[1:] {
		rw[i+1] = max(8, len(d.name)+len(r.designs[0].name)+1)
		head1 += fmt.Sprintf("  %*s", rw[i+1], d.name+"/"+r.designs[0].name)
	}
	fmt.Fprintln(w, head1)
	fmt.Fprintln(w, head2)
	for i, s := range r.Request.Sizes {
		line := fmt.Sprintf("%12d", s)
		for j, d := range r.designs {
			line += "  " + ncclNum(d.Points[i].BusBW, widths[j])
		}
		for j, d := range r.designs[1:] {
			v, ok := r.ratio(d, i)
			cell := fmt.Sprintf("%*s", rw[j+1], "n/a")
			if ok {
				cell = fmt.Sprintf("%*.2f", rw[j+1], v)
			}
			line += "  " + cell
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "#")
	writeComments(w, 100, r.summaryLines()...)
	return nil
}

// compareDesignJSON is one design of compare's JSON.
type compareDesignJSON struct {
	Name            string       `json:"name"`
	From            string       `json:"from"`
	Args            []string     `json:"args"`
	Cluster         clusterJSON  `json:"cluster"`
	Ranks           int          `json:"ranks"`
	Summary         string       `json:"summary"`
	Results         []resultJSON `json:"results"`
	LargeBusBW      float64      `json:"large_busbw_gbps"`
	BottleneckClass string       `json:"bottleneck_class,omitempty"`
	Bottleneck      string       `json:"bottleneck,omitempty"`
}

// compareRowJSON is one requested size with every design's busbw and its
// ratio to the first design (null when the first design's busbw is 0).
type compareRowJSON struct {
	RequestedBytes int64      `json:"requested_bytes"`
	BusBW          []float64  `json:"busbw_gbps"`
	Ratio          []*float64 `json:"ratio_to_first"`
}

func (r *compareResult) writeJSON(w io.Writer) error {
	type doc struct {
		Collective     string              `json:"collective"`
		Engine         string              `json:"engine"`
		Datatype       string              `json:"datatype"`
		Designs        []compareDesignJSON `json:"designs"`
		Rows           []compareRowJSON    `json:"rows"`
		LargeFromBytes int64               `json:"large_from_bytes"`
		Fastest        string              `json:"fastest"`
		Summary        []string            `json:"summary"`
	}
	d := doc{Collective: r.Request.Coll.String(), Engine: string(r.Request.Engine), Datatype: r.dtype,
		LargeFromBytes: int64(r.Request.Sizes[r.large()[0]]), Fastest: r.ranking()[0].name, Summary: r.summaryLines()}
	for _, ds := range r.designs {
		p := newPrediction(ds.Env, r.Request, ds.Points, r.dtype)
		dj := compareDesignJSON{Name: ds.name, From: ds.from, Args: append([]string{}, ds.args...), Cluster: clusterInfo(ds.Env),
			Ranks: ds.Env.Cluster.NumRanks(), Summary: p.summary, LargeBusBW: round(r.meanLarge(ds), 3)}
		for _, pt := range ds.Points {
			dj.Results = append(dj.Results, pointJSON(pt))
		}
		last := ds.Points[len(ds.Points)-1]
		dj.BottleneckClass, dj.Bottleneck = last.BottleneckClass, last.Bottleneck
		d.Designs = append(d.Designs, dj)
	}
	for i, s := range r.Request.Sizes {
		row := compareRowJSON{RequestedBytes: int64(s)}
		for _, ds := range r.designs {
			row.BusBW = append(row.BusBW, round(ds.Points[i].BusBW, 3))
			v, ok := r.ratio(ds, i)
			row.Ratio = append(row.Ratio, optRound(v, ok, 4))
		}
		d.Rows = append(d.Rows, row)
	}
	return writeJSONDoc(w, d)
}

func (r *compareResult) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"design", "requested_bytes", "size_bytes", "count", "time_us", "algbw_gbps", "busbw_gbps", "ratio_to_first", "algo", "proto", "channels", "bottleneck_class", "bottleneck"})
	for _, d := range r.designs {
		for i, pt := range d.Points {
			ratio := ""
			if v, ok := r.ratio(d, i); ok {
				ratio = fmtF(v, 4)
			}
			_ = cw.Write([]string{d.name, strconv.FormatInt(int64(r.Request.Sizes[i]), 10), strconv.FormatInt(int64(pt.Size), 10), strconv.FormatInt(pt.Count, 10),
				fmtF(pt.TimeUs, 3), fmtF(pt.AlgBW, 3), fmtF(pt.BusBW, 3), ratio,
				pt.Choice.Algo.String(), pt.Choice.Proto.String(), strconv.Itoa(pt.Choice.Channels), pt.BottleneckClass, pt.Bottleneck})
		}
	}
	cw.Flush()
	return cw.Error()
}
