package cli

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
	"github.com/collsim/collsim/study"
	"github.com/urfave/cli/v2"
)

func scaleCommand(e *env) *cli.Command {
	flags := clusterFlags()
	flags = append(flags,
		&cli.StringFlag{Name: "nodes-list", Usage: "node counts `N1,N2,...` to model (default: 1, 2, 4, ... up to --max-nodes)"},
		&cli.IntFlag{Name: "max-nodes", Value: 64, Usage: "largest node count `N` of the default list"},
		&cli.StringFlag{Name: "gpus-list", Usage: "GPU counts `G1,G2,...` of one node to model (a workload on a one-node cluster: default 1, 2, 4, ... up to the node's GPUs)"},
		collectiveFlag(),
		&cli.StringFlag{Name: "size", Value: "1G", Usage: "message `SIZE` of the collective (K/M/G, 1024-based)"},
		datatypeFlag(),
		algoFlag(),
		protoFlag(),
		engineFlag(sim.EngineAnalytic),
		formatFlag(),
		reportFlag(),
	)
	flags = append(flags, workloadFlags()...)
	return &cli.Command{
		Name:  "scale",
		Usage: "model one design at growing node counts: a collective's busbw or a training step's time, with the scaling efficiency",
		UsageText: "collsim scale [--node NAME --nics 8x400G-ib | --cluster FILE] [--nodes-list 1,2,4,...,N | --max-nodes 64]\n" +
			"   [--collective allreduce --size 1G | --params 7e9 --compute-ms 300 [--bucket 25M --strategy ddp|fsdp] | --workload FILE]\n" +
			"   [--engine analytic|des] [--format table|json|csv] [--report FILE.html|.md]",
		Flags: flags,
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return badInputf("scale takes no arguments, got %q", c.Args().First())
			}
			if c.IsSet("nodes") {
				return badInputf("scale: --nodes sets one node count; give the counts to model with --nodes-list 1,2,4 or --max-nodes N")
			}
			w, err := workloadFrom(c, "scale")
			if err != nil {
				return err
			}
			if w != nil {
				for _, n := range []string{"collective", "size", "datatype", "algo", "proto"} {
					if c.IsSet(n) {
						return badInputf("scale: --%s applies to a collective; a workload (--params or --workload) times its own calls", n)
					}
				}
			}
			req, err := requestBase(c)
			if err != nil {
				return err
			}
			size, err := model.ParseBytes(c.String("size"))
			if err != nil || size <= 0 || size > maxSize {
				return badInputf("--size: want a size 1..1T such as 1G, got %q", c.String("size"))
			}
			req.Sizes = []model.Bytes{size}
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			rpath, err := reportPath(c, "scale")
			if err != nil {
				return err
			}
			var spec model.ClusterSpec
			if w != nil && w.Cluster != nil && !clusterFlagSet(c) {
				spec = *w.Cluster
			} else if spec, err = clusterSpec(c); err != nil {
				return err
			}
			nodes, gpus, err := scaleCounts(c, spec, w)
			if err != nil {
				return err
			}
			params, err := profileParams(c.String("profile"))
			if err != nil {
				return err
			}
			res, err := runScale(c, spec, params, nodes, gpus, req, w)
			if err != nil {
				return err
			}
			for _, warn := range res.warnings() {
				fmt.Fprintln(e.stderr, "collsim: scale: "+warn)
			}
			res.files = clusterFilesFrom(c)
			if res.profile, err = profileInfo(c.String("profile"), res.lastModelled().Env.Cluster); err != nil {
				return err
			}
			return printResult(e, res, format, "scale", rpath, func() (*reports.Document, error) { return scaleReport(e, res) })
		},
	}
}

// clusterFlagSet reports whether any option that builds a cluster is given.
func clusterFlagSet(c *cli.Context) bool {
	for _, n := range []string{"cluster", "node", "topo", "gpu", "nics", "set", "nccl-version", "gpus-per-node"} {
		if c.IsSet(n) {
			return true
		}
	}
	return false
}

// scaleCounts chooses what scale varies: the GPUs of one node (--gpus-list,
// or a workload whose own cluster is one node) or the node count
// (--nodes-list, --max-nodes, or up to a workload cluster's nodes).
func scaleCounts(c *cli.Context, spec model.ClusterSpec, w *scenarios.Workload) (nodes, gpus []int, err error) {
	fromWorkload := w != nil && w.Cluster != nil && !clusterFlagSet(c) && !c.IsSet("nodes-list") && !c.IsSet("max-nodes")
	if s := c.String("gpus-list"); s != "" || (fromWorkload && spec.Nodes == 1) {
		if c.IsSet("nodes-list") || c.IsSet("max-nodes") {
			return nil, nil, badInputf("scale: give --gpus-list (GPUs of one node) or --nodes-list/--max-nodes, not both")
		}
		gpn := spec.Node.GPUs
		if s == "" {
			return nil, study.DefaultNodeCounts(gpn), nil
		}
		out, err := countList("--gpus-list", s, gpn)
		return nil, out, err
	}
	if fromWorkload {
		return study.DefaultNodeCounts(spec.Nodes), nil, nil
	}
	nodes, err = nodesList(c)
	return nodes, nil, err
}

// countList reads a comma-separated list of distinct counts 1..hi.
func countList(flag, s string, hi int) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > hi {
			return nil, badInputf("scale: %s: %q is not a count 1..%d", flag, strings.TrimSpace(f), hi)
		}
		if seen[n] {
			return nil, badInputf("scale: %s: %d is listed twice", flag, n)
		}
		seen[n] = true
		out = append(out, n)
	}
	if len(out) > study.MaxScalePoints {
		return nil, badInputf("scale: %s has %d counts, more than %d", flag, len(out), study.MaxScalePoints)
	}
	sort.Ints(out)
	return out, nil
}

// nodesList reads --nodes-list, or makes the powers of two up to
// --max-nodes (and --max-nodes itself when it is not one).
func nodesList(c *cli.Context) ([]int, error) {
	if s := c.String("nodes-list"); s != "" {
		if c.IsSet("max-nodes") {
			return nil, badInputf("scale: give --nodes-list or --max-nodes, not both")
		}
		var out []int
		seen := map[int]bool{}
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > model.MaxRanks {
				return nil, badInputf("scale: --nodes-list: %q is not a node count 1..%d", strings.TrimSpace(f), model.MaxRanks)
			}
			if seen[n] {
				return nil, badInputf("scale: --nodes-list: %d is listed twice", n)
			}
			seen[n] = true
			out = append(out, n)
		}
		if len(out) > study.MaxScalePoints {
			return nil, badInputf("scale: --nodes-list has %d counts, more than %d", len(out), study.MaxScalePoints)
		}
		sort.Ints(out)
		return out, nil
	}
	m := c.Int("max-nodes")
	if m < 1 || m > model.MaxRanks {
		return nil, badInputf("scale: --max-nodes %d is outside 1..%d", m, model.MaxRanks)
	}
	return study.DefaultNodeCounts(m), nil
}

// scaleResult is a scale run ready to print.
type scaleResult struct {
	*study.ScaleResult
	dtype string
	files clusterFiles
	// profile is the --profile the parameters came from (its terms judged
	// on the largest cluster modelled), nil without.
	profile *profileJSON
}

// runScale maps the options to study.Scale.
func runScale(c *cli.Context, spec model.ClusterSpec, params sim.Params, nodes, gpus []int, req sim.Request, w *scenarios.Workload) (*scaleResult, error) {
	res, err := study.Scale(c.Context, study.ScaleOptions{Spec: spec, Params: params, Nodes: nodes, GPUs: gpus, Request: req, Workload: w})
	if err != nil {
		if w != nil {
			return nil, badInput(err)
		}
		return nil, err
	}
	return &scaleResult{ScaleResult: res, dtype: strings.ToLower(c.String("datatype"))}, nil
}

// lastModelled is the largest count that was modelled (a workload's
// refused counts have no environment).
func (r *scaleResult) lastModelled() *study.ScalePoint {
	for i := len(r.Points) - 1; i >= 0; i-- {
		if r.Points[i].Refused == "" {
			return r.Points[i]
		}
	}
	return r.Points[len(r.Points)-1]
}

// warnings are the layout warnings of the modelled points, each once.
func (r *scaleResult) warnings() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range r.Points {
		for _, w := range p.Step.Layout.Warnings {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	return out
}

// effDefinition states how efficiency is computed, for outputs.
func (r *scaleResult) effDefinition() string {
	if r.Workload != nil {
		return "efficiency = compute time / step time: the rate per GPU against the reference, " + r.RefLabel
	}
	if r.Ref == nil {
		return "efficiency = busbw(N) / busbw(reference): not defined here, no multi-node count runs the largest count's algorithm with its bottleneck"
	}
	return "efficiency = busbw(N) / busbw(reference); reference: " + r.RefLabel + " (1 node runs on NVLink/PCIe alone and is shown for reference)"
}

// what says what is scaled: "AllReduce 1G (float)" or the workload.
func (r *scaleResult) what() string {
	if r.Workload != nil {
		return "training step: " + r.Workload.Describe()
	}
	s := fmt.Sprintf("%s %s (%s_perf, %s)", collectiveTitle(r.Request.Coll), model.FormatBytes(r.Request.Sizes[0]), r.Request.Coll.TestName(), r.dtype)
	if r.Request.Algo != nil {
		s += ", algo " + r.Request.Algo.String()
	}
	if r.Request.Proto != nil {
		s += ", proto " + r.Request.Proto.String()
	}
	return s
}

// designLabel describes the design without its node count.
func (r *scaleResult) designLabel() string {
	ci := clusterInfo(r.lastModelled().Env)
	return fmt.Sprintf("%s (%d x %s per node), NICs %s, fabric %s, NCCL %s model", ci.nodeLabel("custom node"), ci.GPUsPerNode, ci.GPU, ci.NICs, ci.Fabric, ci.NCCLVersion)
}

// summaryLines are the conclusions of the run.
func (r *scaleResult) summaryLines() []string {
	last := r.lastModelled()
	if r.Workload != nil {
		st := last.Step
		out := []string{fmt.Sprintf("At %d GPUs (%d node(s)): step %s ms = compute %s + exposed communication %s + bubble %s + I/O %s; efficiency %s%% against %s.",
			last.GPUs(), last.Nodes, fmtMs(st.StepMs), fmtMs(st.ComputeMs), fmtMs(st.ExposedMs), fmtMs(st.BubbleMs), fmtMs(st.IOMs), fmtF(100*last.Eff, 1), r.RefLabel)}
		out = append(out, "Limit: "+st.Breaks+".")
		out = append(out, "Advice (rule of thumb): "+st.Advice()+".")
		for _, p := range r.Points {
			if p.Refused != "" {
				out = append(out, fmt.Sprintf("%d GPUs refused: %s.", p.GPUs(), p.Refused))
			}
		}
		return out
	}
	if r.Ref == nil && r.ByGPUs {
		return []string{fmt.Sprintf("Busbw %s GB/s at %d GPUs of one node; nccl-tests busbw is comparable across GPU counts, but no scaling efficiency is stated within one node.", fmtF(last.Point.BusBW, 1), last.GPUs()),
			fmt.Sprintf("Bottleneck at %d GPUs: %s.", last.GPUs(), bottleneckPhrase(last.Point))}
	}
	if r.Ref == nil {
		return []string{fmt.Sprintf("Busbw %s GB/s at %d nodes; scaling efficiency needs a multi-node count that runs the same algorithm as the largest.", fmtF(last.Point.BusBW, 1), last.Nodes)}
	}
	if r.Ref.Nodes == last.Nodes && !r.ByGPUs {
		// The largest count is its own reference: 100% would compare it
		// with itself.
		return []string{fmt.Sprintf("Busbw %s GB/s at %d nodes (%s/%s bound by %s); no smaller multi-node count runs like it, so no scaling efficiency is stated.",
			fmtF(last.Point.BusBW, 1), last.Nodes, last.Point.Choice.Algo, last.Point.Choice.Proto, last.Point.BottleneckClass),
			fmt.Sprintf("Bottleneck at %d nodes: %s.", last.Nodes, bottleneckPhrase(last.Point))}
	}
	out := []string{fmt.Sprintf("Efficiency from %d to %d nodes: %s%% (busbw %s -> %s GB/s).", r.Ref.Nodes, last.Nodes, fmtF(100*last.Eff, 1), fmtF(r.Ref.Point.BusBW, 1), fmtF(last.Point.BusBW, 1))}
	if first := r.Points[0]; first.Nodes == 1 {
		out = append(out, fmt.Sprintf("One node alone reaches %s GB/s (%s).", fmtF(first.Point.BusBW, 1), bottleneckPhrase(first.Point)))
	}
	return append(out, fmt.Sprintf("Bottleneck at %d nodes: %s.", last.Nodes, bottleneckPhrase(last.Point)))
}

func (r *scaleResult) writeTable(w io.Writer) error {
	fmt.Fprintf(w, "# collsim %s scale (engine %s): %s\n", Version, r.Request.Engine, r.what())
	fmt.Fprintf(w, "# Design: %s\n", r.designLabel())
	if r.profile != nil {
		writeComments(w, 100, r.profile.line())
	}
	writeComments(w, 100, r.effDefinition())
	fmt.Fprintln(w, "#")
	if r.Workload != nil {
		unit := study.ThroughputUnit(r.Workload)
		fmt.Fprintf(w, "# %6s  %6s  %10s  %10s  %12s  %10s  %8s  %14s  %6s  %10s  %s\n", "nodes", "GPUs", "compute", "comm (ms)", "exposed (ms)", "step (ms)", "comm/cmp", unit, "MFU", "efficiency", "limit")
		for _, p := range r.Points {
			if p.Refused != "" {
				fmt.Fprintf(w, "%8d  %6d  refused: %s\n", p.Nodes, p.GPUs(), p.Refused)
				continue
			}
			st := p.Step
			v, _ := st.Throughput(r.Workload)
			fmt.Fprintf(w, "%8d  %6d  %10s  %10s  %12s  %10s  %8s  %14s  %6s  %10s  %s\n", p.Nodes, p.GPUs(), fmtMs(st.ComputeMs), fmtMs(st.CommMs), fmtMs(st.ExposedMs), fmtMs(st.StepMs),
				fmtF(st.CommToCompute, 3), tput(v), mfuCell(st.MFU), effString(p.EffOK, p.Eff), st.Bottleneck)
		}
		last := r.lastModelled()
		fmt.Fprintln(w, "#")
		fmt.Fprintf(w, "# Collectives of one step at %d GPUs:\n", last.GPUs())
		for _, c := range last.Step.Comm {
			fmt.Fprintf(w, "#   %-44s %s %s x %d on %s: %s ms, %s ms exposed (%s)\n", c.Kind, c.Coll, model.FormatBytes(c.Size), c.Count, c.Group, fmtMs(c.TotalMs), fmtMs(c.ExposedMs), bottleneckPhrase(c.Point))
		}
		fmt.Fprintf(w, "# Memory at %d GPUs: %s.\n", last.GPUs(), last.Step.Memory)
	} else {
		fmt.Fprintf(w, "# %6s  %6s  %10s  %8s  %8s  %10s  %-8s  %-6s  %8s  %s\n", "nodes", "GPUs", "time (us)", "algbw", "busbw", "efficiency", "algo", "proto", "channels", "bottleneck")
		fmt.Fprintf(w, "# %6s  %6s  %10s  %8s  %8s\n", "", "", "", "(GB/s)", "(GB/s)")
		for _, p := range r.Points {
			pt := p.Point
			fmt.Fprintf(w, "%8d  %6d  %s  %s  %s  %10s  %-8s  %-6s  %8d  %s\n", p.Nodes, p.GPUs(), ncclNum(pt.TimeUs, 10), ncclNum(pt.AlgBW, 8), ncclNum(pt.BusBW, 8),
				effString(p.EffOK, p.Eff), pt.Choice.Algo, pt.Choice.Proto, pt.Choice.Channels, pt.BottleneckClass)
		}
	}
	fmt.Fprintln(w, "#")
	writeComments(w, 100, r.summaryLines()...)
	return nil
}

// scalePointJSON is one count of scale's JSON; the collective or the
// workload fields are filled.
type scalePointJSON struct {
	Nodes           int                `json:"nodes"`
	GPUs            int                `json:"gpus"`
	TimeUs          float64            `json:"time_us,omitempty"`
	AlgBW           float64            `json:"algbw_gbps,omitempty"`
	BusBW           float64            `json:"busbw_gbps,omitempty"`
	Algo            string             `json:"algo,omitempty"`
	Proto           string             `json:"proto,omitempty"`
	Channels        int                `json:"channels,omitempty"`
	ComputeMs       float64            `json:"compute_ms,omitempty"`
	BubbleMs        float64            `json:"bubble_ms,omitempty"`
	IOMs            float64            `json:"io_ms,omitempty"`
	CommMs          float64            `json:"comm_ms,omitempty"`
	ExposedMs       float64            `json:"exposed_ms,omitempty"`
	ExposedByKind   map[string]float64 `json:"exposed_ms_by_kind,omitempty"`
	StepMs          float64            `json:"step_ms,omitempty"`
	CommToCompute   float64            `json:"comm_compute_ratio,omitempty"`
	Throughput      float64            `json:"throughput,omitempty"`
	ThroughputUnit  string             `json:"throughput_unit,omitempty"`
	TokensPerSec    float64            `json:"tokens_per_s,omitempty"`
	MFU             float64            `json:"mfu,omitempty"`
	MemoryGB        float64            `json:"memory_gb,omitempty"`
	Efficiency      *float64           `json:"efficiency"`
	BottleneckClass string             `json:"bottleneck_class,omitempty"`
	Bottleneck      string             `json:"bottleneck,omitempty"`
	Breaks          string             `json:"breaks,omitempty"`
	Advice          string             `json:"advice,omitempty"`
	Refused         string             `json:"refused,omitempty"`
}

func (r *scaleResult) jsonPoints() []scalePointJSON {
	var out []scalePointJSON
	for _, p := range r.Points {
		j := scalePointJSON{Nodes: p.Nodes, GPUs: p.GPUs(), Efficiency: optRound(p.Eff, p.EffOK, 4), Refused: p.Refused}
		if p.Refused != "" {
			out = append(out, j)
			continue
		}
		if r.Workload != nil {
			st := p.Step
			j.ComputeMs, j.BubbleMs, j.IOMs = round(st.ComputeMs, 4), round(st.BubbleMs, 4), round(st.IOMs, 4)
			j.CommMs, j.ExposedMs, j.StepMs = round(st.CommMs, 4), round(st.ExposedMs, 4), round(st.StepMs, 4)
			j.ExposedByKind = map[string]float64{}
			for k, v := range st.ExposedBy() {
				j.ExposedByKind[k] = round(v, 4)
			}
			j.CommToCompute, j.MFU, j.MemoryGB = round(st.CommToCompute, 4), round(st.MFU, 4), round(st.Memory.NeededGB, 3)
			v, unit := st.Throughput(r.Workload)
			j.Throughput, j.ThroughputUnit, j.TokensPerSec = round(v, 3), unit, round(st.TokensPerSec, 3)
			j.Bottleneck, j.Breaks, j.Advice = st.Bottleneck, st.Breaks, st.Advice()
			j.BottleneckClass = st.Dominant().Point.BottleneckClass
		} else {
			bp := p.Point
			j.TimeUs, j.AlgBW, j.BusBW = round(bp.TimeUs, 3), round(bp.AlgBW, 3), round(bp.BusBW, 3)
			j.Algo, j.Proto, j.Channels = bp.Choice.Algo.String(), bp.Choice.Proto.String(), bp.Choice.Channels
			j.BottleneckClass, j.Bottleneck = bp.BottleneckClass, bp.Bottleneck
		}
		out = append(out, j)
	}
	return out
}

func (r *scaleResult) writeJSON(w io.Writer) error {
	type doc struct {
		Design         string           `json:"design"`
		Cluster        clusterJSON      `json:"cluster"`
		Engine         string           `json:"engine"`
		Scaled         string           `json:"scaled"`
		Collective     string           `json:"collective,omitempty"`
		SizeBytes      int64            `json:"size_bytes,omitempty"`
		Workload       string           `json:"workload,omitempty"`
		Efficiency     string           `json:"efficiency_definition"`
		Reference      string           `json:"reference"`
		ReferenceNodes int              `json:"reference_nodes,omitempty"`
		Warnings       []string         `json:"warnings,omitempty"`
		Points         []scalePointJSON `json:"points"`
		Summary        []string         `json:"summary"`
		Profile        *profileJSON     `json:"profile,omitempty"`
	}
	d := doc{Design: r.designLabel(), Cluster: clusterInfo(r.lastModelled().Env), Engine: string(r.Request.Engine), Scaled: r.what(),
		Efficiency: r.effDefinition(), Reference: r.RefLabel, Warnings: r.warnings(), Points: r.jsonPoints(), Summary: r.summaryLines(), Profile: r.profile}
	if r.Workload != nil {
		d.Workload = r.Workload.Describe()
	} else {
		d.Collective, d.SizeBytes = r.Request.Coll.String(), int64(r.Request.Sizes[0])
	}
	if r.Ref != nil {
		d.ReferenceNodes = r.Ref.Nodes
	}
	return writeJSONDoc(w, d)
}

func (r *scaleResult) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if r.Workload != nil {
		_ = cw.Write([]string{"nodes", "gpus", "compute_ms", "comm_ms", "exposed_ms", "bubble_ms", "io_ms", "step_ms", "comm_compute_ratio", "throughput", "throughput_unit", "mfu", "efficiency", "bottleneck", "refused"})
	} else {
		_ = cw.Write([]string{"nodes", "gpus", "time_us", "algbw_gbps", "busbw_gbps", "efficiency", "algo", "proto", "channels", "bottleneck_class", "bottleneck"})
	}
	for i, j := range r.jsonPoints() {
		eff := optCell(j.Efficiency, 4)
		if r.Workload != nil {
			st := r.Points[i].Step
			if j.Refused != "" {
				_ = cw.Write([]string{strconv.Itoa(j.Nodes), strconv.Itoa(j.GPUs), "", "", "", "", "", "", "", "", "", "", eff, "", j.Refused})
				continue
			}
			_ = cw.Write([]string{strconv.Itoa(j.Nodes), strconv.Itoa(j.GPUs), fmtF(st.ComputeMs, 4), fmtF(st.CommMs, 4), fmtF(st.ExposedMs, 4), fmtF(st.BubbleMs, 4), fmtF(st.IOMs, 4), fmtF(st.StepMs, 4),
				fmtF(st.CommToCompute, 4), fmtF(j.Throughput, 3), j.ThroughputUnit, fmtF(st.MFU, 4), eff, j.Bottleneck, ""})
			continue
		}
		_ = cw.Write([]string{strconv.Itoa(j.Nodes), strconv.Itoa(j.GPUs), fmtF(j.TimeUs, 3), fmtF(j.AlgBW, 3), fmtF(j.BusBW, 3), eff, j.Algo, j.Proto, strconv.Itoa(j.Channels), j.BottleneckClass, j.Bottleneck})
	}
	cw.Flush()
	return cw.Error()
}

// mfuCell prints an MFU, "-" where it is not known (a measured compute
// time without tokens).
func mfuCell(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmtF(100*v, 1) + "%"
}
