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
			"   [--collective allreduce --size 1G | --params 7e9 --compute-ms 300 [--overlap 0.5 --bucket 25M --strategy ddp|fsdp] | --workload FILE]\n" +
			"   [--engine analytic|des] [--format table|json|csv] [--report FILE.html|.md]",
		Flags: flags,
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return badInputf("scale takes no arguments, got %q", c.Args().First())
			}
			if c.IsSet("nodes") {
				return badInputf("scale: --nodes sets one node count; give the counts to model with --nodes-list 1,2,4 or --max-nodes N")
			}
			nodes, err := nodesList(c)
			if err != nil {
				return err
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
			spec, err := clusterSpec(c)
			if err != nil {
				return err
			}
			params, err := profileParams(c.String("profile"))
			if err != nil {
				return err
			}
			res, err := runScale(c, spec, params, nodes, req, w)
			if err != nil {
				return err
			}
			res.files = clusterFilesFrom(c)
			return printResult(e, res, format, "scale", rpath, func() (*reports.Document, error) { return scaleReport(e, res) })
		},
	}
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
}

// runScale maps the options to study.Scale.
func runScale(c *cli.Context, spec model.ClusterSpec, params sim.Params, nodes []int, req sim.Request, w *scenarios.Workload) (*scaleResult, error) {
	res, err := study.Scale(c.Context, study.ScaleOptions{Spec: spec, Params: params, Nodes: nodes, Request: req, Workload: w})
	if err != nil {
		return nil, err
	}
	return &scaleResult{ScaleResult: res, dtype: strings.ToLower(c.String("datatype"))}, nil
}

// effDefinition states how efficiency is computed, for outputs.
func (r *scaleResult) effDefinition() string {
	if r.Workload != nil {
		return "efficiency = step time on 1 node / step time on N nodes (weak scaling: fixed batch per GPU; compute fixed, exposed communication grows)"
	}
	if r.Ref == nil {
		return "efficiency = busbw(N) / busbw(smallest multi-node count): not defined here, no count of 2 or more nodes"
	}
	return fmt.Sprintf("efficiency = busbw(N) / busbw(%d nodes), the smallest multi-node count (1 node runs on NVLink/PCIe alone and is shown for reference)", r.Ref.Nodes)
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
	ci := clusterInfo(r.Points[len(r.Points)-1].Env)
	return fmt.Sprintf("%s (%d x %s per node), NICs %s, fabric %s, NCCL %s model", ci.nodeLabel("custom node"), ci.GPUsPerNode, ci.GPU, ci.NICs, ci.Fabric, ci.NCCLVersion)
}

// summaryLines are the conclusions of the run.
func (r *scaleResult) summaryLines() []string {
	last := r.Points[len(r.Points)-1]
	if r.Workload != nil {
		ref := r.Ref.Step.Step
		st := last.Step.Step
		dom := last.Step.Dominant()
		out := []string{fmt.Sprintf("Step time %s ms on 1 node, %s ms on %d nodes (%d GPUs): weak-scaling efficiency %s%%.",
			fmtMs(ref.StepMs), fmtMs(st.StepMs), last.Nodes, last.GPUs(), fmtF(100*last.Eff, 1))}
		if st.StepMs > 0 {
			out = append(out, fmt.Sprintf("At %d nodes communication takes %s ms per step, %s ms of it exposed (%s%% of the step); most of it is %s, bound by %s.",
				last.Nodes, fmtMs(st.CommMs), fmtMs(st.ExposedMs), fmtF(100*st.ExposedMs/st.StepMs, 1), dom.Call.Role, bottleneckPhrase(dom.Point)))
		}
		return out
	}
	if r.Ref == nil {
		return []string{fmt.Sprintf("Only one node: busbw %s GB/s; scaling efficiency needs at least one count of 2 or more nodes.", fmtF(last.Point.BusBW, 1))}
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
	writeComments(w, 100, r.effDefinition())
	fmt.Fprintln(w, "#")
	if r.Workload != nil {
		_, unit := r.Workload.Throughput(r.Ref.Step.Step)
		fmt.Fprintf(w, "# %6s  %6s  %10s  %12s  %10s  %14s  %10s  %s\n", "nodes", "GPUs", "comm (ms)", "exposed (ms)", "step (ms)", unit, "efficiency", "main call: bottleneck")
		for _, p := range r.Points {
			st := p.Step.Step
			v, _ := r.Workload.Throughput(st)
			dom := p.Step.Dominant()
			fmt.Fprintf(w, "%8d  %6d  %10s  %12s  %10s  %14s  %10s  %s %s: %s\n", p.Nodes, p.GPUs(), fmtMs(st.CommMs), fmtMs(st.ExposedMs), fmtMs(st.StepMs),
				tput(v), effString(p.EffOK, p.Eff), dom.Call.Coll, model.FormatBytes(dom.Call.Size), dom.Point.BottleneckClass)
		}
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

// scalePointJSON is one node count of scale's JSON; the collective or the
// workload fields are filled.
type scalePointJSON struct {
	Nodes           int      `json:"nodes"`
	GPUs            int      `json:"gpus"`
	TimeUs          float64  `json:"time_us,omitempty"`
	AlgBW           float64  `json:"algbw_gbps,omitempty"`
	BusBW           float64  `json:"busbw_gbps,omitempty"`
	Algo            string   `json:"algo,omitempty"`
	Proto           string   `json:"proto,omitempty"`
	Channels        int      `json:"channels,omitempty"`
	CommMs          float64  `json:"comm_ms,omitempty"`
	ExposedMs       float64  `json:"exposed_ms,omitempty"`
	StepMs          float64  `json:"step_ms,omitempty"`
	Throughput      float64  `json:"throughput,omitempty"`
	ThroughputUnit  string   `json:"throughput_unit,omitempty"`
	Efficiency      *float64 `json:"efficiency"`
	BottleneckClass string   `json:"bottleneck_class,omitempty"`
	Bottleneck      string   `json:"bottleneck,omitempty"`
}

func (r *scaleResult) jsonPoints() []scalePointJSON {
	var out []scalePointJSON
	for _, p := range r.Points {
		j := scalePointJSON{Nodes: p.Nodes, GPUs: p.GPUs(), Efficiency: optRound(p.Eff, p.EffOK, 4)}
		bp := p.Bottleneck(r.Workload != nil)
		if r.Workload != nil {
			st := p.Step.Step
			j.CommMs, j.ExposedMs, j.StepMs = round(st.CommMs, 4), round(st.ExposedMs, 4), round(st.StepMs, 4)
			v, unit := r.Workload.Throughput(st)
			j.Throughput, j.ThroughputUnit = round(v, 3), unit
		} else {
			j.TimeUs, j.AlgBW, j.BusBW = round(bp.TimeUs, 3), round(bp.AlgBW, 3), round(bp.BusBW, 3)
			j.Algo, j.Proto, j.Channels = bp.Choice.Algo.String(), bp.Choice.Proto.String(), bp.Choice.Channels
		}
		j.BottleneckClass, j.Bottleneck = bp.BottleneckClass, bp.Bottleneck
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
		ReferenceNodes int              `json:"reference_nodes,omitempty"`
		Points         []scalePointJSON `json:"points"`
		Summary        []string         `json:"summary"`
	}
	d := doc{Design: r.designLabel(), Cluster: clusterInfo(r.Points[len(r.Points)-1].Env), Engine: string(r.Request.Engine), Scaled: r.what(),
		Efficiency: r.effDefinition(), Points: r.jsonPoints(), Summary: r.summaryLines()}
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
		_ = cw.Write([]string{"nodes", "gpus", "comm_ms", "exposed_ms", "step_ms", "throughput", "throughput_unit", "efficiency", "bottleneck_class", "bottleneck"})
	} else {
		_ = cw.Write([]string{"nodes", "gpus", "time_us", "algbw_gbps", "busbw_gbps", "efficiency", "algo", "proto", "channels", "bottleneck_class", "bottleneck"})
	}
	for i, j := range r.jsonPoints() {
		eff := optCell(j.Efficiency, 4)
		if r.Workload != nil {
			st := r.Points[i].Step.Step
			_ = cw.Write([]string{strconv.Itoa(j.Nodes), strconv.Itoa(j.GPUs), fmtF(st.CommMs, 4), fmtF(st.ExposedMs, 4), fmtF(st.StepMs, 4), fmtF(j.Throughput, 3), j.ThroughputUnit, eff, j.BottleneckClass, j.Bottleneck})
			continue
		}
		_ = cw.Write([]string{strconv.Itoa(j.Nodes), strconv.Itoa(j.GPUs), fmtF(j.TimeUs, 3), fmtF(j.AlgBW, 3), fmtF(j.BusBW, 3), eff, j.Algo, j.Proto, strconv.Itoa(j.Channels), j.BottleneckClass, j.Bottleneck})
	}
	cw.Flush()
	return cw.Error()
}
