package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/study"
)

// scaleReport builds the report of a scale run: the efficiency at the
// largest count with its definition, the bottleneck there and what would
// help, the efficiency curve, busbw (or the step time split into compute
// and exposed communication) per GPU count, and the table of numbers.
func scaleReport(e *env, r *scaleResult) (*reports.Document, error) {
	if len(r.Points) == 0 {
		return nil, fmt.Errorf("scale: --report: no results to report")
	}
	last := r.lastModelled()
	ci := clusterInfo(last.Env)
	node := ci.nodeLabel(ci.GPU + " node")
	what := collectiveTitle(r.Request.Coll) + " " + model.FormatBytes(r.Request.Sizes[0])
	if r.Workload != nil {
		what = "a training step"
		if r.Workload.Name != "" {
			what += " (" + r.Workload.Name + ")"
		}
	}
	doc := e.newReport(fmt.Sprintf("Scaling of %s on %s", what, node))
	doc.Subtitle = fmt.Sprintf("collsim model from %d to %s (%s engine)", r.Points[0].Nodes, count(last.Nodes, "node"), r.Request.Engine)
	if r.Points[0].Nodes == last.Nodes {
		doc.Subtitle = fmt.Sprintf("collsim model at %s (%s engine)", count(last.Nodes, "node"), r.Request.Engine)
	}
	if r.ByGPUs {
		doc.Subtitle = fmt.Sprintf("collsim model from %d to %d GPUs of one node (%s engine)", r.Points[0].GPUs(), last.GPUs(), r.Request.Engine)
	}
	label := "efficiency not defined (one node)"
	switch {
	case r.Workload == nil && r.Ref != nil && r.Ref.Nodes == last.Nodes && !r.ByGPUs:
		label = fmt.Sprintf("efficiency not defined (no smaller multi-node count runs like %d nodes)", last.Nodes)
	case last.EffOK:
		label = fmt.Sprintf("scaling efficiency %s%% at %s (%d GPUs)", fmtF(100*last.Eff, 1), count(last.Nodes, "node"), last.GPUs())
		if r.ByGPUs {
			label = fmt.Sprintf("scaling efficiency %s%% at %d GPUs of one node", fmtF(100*last.Eff, 1), last.GPUs())
		}
	}
	doc.Verdict = &reports.Verdict{Status: reports.StatusInfo, Label: label}
	summary := strings.Join(r.summaryLines(), " ")
	bp := last.Bottleneck(r.Workload != nil)
	switch {
	case r.Workload != nil && last.Nodes > 1 && bp.BottleneckClass != "channel ceiling" && busiest(bp) < 0.5:
		summary += fmt.Sprintf(" The calls are latency-bound (the busiest link is %.0f%% busy): larger buckets (--bucket) would help more than faster links.", 100*busiest(bp))
	case bp.Bottleneck != "" && last.Nodes > 1:
		if rec := recommendation(bp, ci, last.Env.Res.Summarize(last.Env.Tuner.Graphs.Ring)); rec != "" {
			summary += " " + rec
		}
	}
	doc.Summary = summary + " " + capitalize(r.effDefinition()) + "."

	doc.Inputs = clusterInputs(last.Env.Cluster, r.files)
	var counts []string
	for _, p := range r.Points {
		if r.ByGPUs {
			counts = append(counts, strconv.Itoa(p.GPUs()))
		} else {
			counts = append(counts, strconv.Itoa(p.Nodes))
		}
	}
	for i := range doc.Inputs {
		if doc.Inputs[i].Key == "nodes" {
			doc.Inputs[i].Value = strings.Join(counts, ", ")
			if r.ByGPUs {
				doc.Inputs[i].Key, doc.Inputs[i].Value = "GPUs of one node", strings.Join(counts, ", ")
			}
		}
		if doc.Inputs[i].Key == "cluster" {
			doc.Inputs[i].Value = r.designLabel()
		}
	}
	doc.Inputs = append(doc.Inputs,
		reports.KV{Key: "scaled", Value: r.what()},
		reports.KV{Key: "engine", Value: string(r.Request.Engine)},
	)
	doc.Assumptions, doc.OtherAssumptions = splitAssumptions(modelAssumptions(r.Params, last.Env.Cluster.Version.String(), versionSource(r.Spec, r.files.NCCLVersion), r.Request.Engine, r.files.Profile, nil), []*model.Cluster{last.Env.Cluster}, nil)
	doc.Assumptions = append(doc.Assumptions, reports.Assumption{Term: "scaling efficiency", Value: strings.TrimPrefix(strings.SplitN(r.effDefinition(), " (", 2)[0], "efficiency = "), Source: r.effSource()})
	if r.Workload != nil {
		doc.Assumptions = append(doc.Assumptions, termAssumptions(append(r.Workload.Terms(), study.StepTerms()...))...)
	}

	var eff []reports.ScalingPoint
	for _, p := range r.Points {
		if p.EffOK {
			eff = append(eff, reports.ScalingPoint{GPUs: p.GPUs(), Efficiency: p.Eff})
		}
	}
	if len(eff) > 0 {
		doc.Sections = append(doc.Sections, reports.Section{Title: "Scaling efficiency", Blocks: []reports.Block{
			reports.ScalingPlot{Title: "Scaling efficiency of " + what, Caption: capitalize(r.effDefinition()) + ".",
				Series: []reports.ScalingSeries{{Name: node + " " + ci.NICs, Style: reports.StyleLinePoints, Points: eff}}},
		}})
	}
	doc.Sections = append(doc.Sections, r.barsSection(), reports.Section{Title: "Results", Blocks: []reports.Block{r.resultsTable()}})
	doc.Sections = append(doc.Sections, reports.Section{Title: "Topology", Blocks: []reports.Block{
		topologyPicture(fmt.Sprintf("Topology at %s (%d GPUs)", count(last.Nodes, "node"), last.GPUs()), "", last.Env.Cluster, &bp)}})
	if r.Workload != nil {
		doc.Sections = append(doc.Sections, r.callsSection(last))
	}
	return doc, nil
}

// effSource explains the efficiency definition.
func (r *scaleResult) effSource() string {
	if r.Workload != nil {
		return "the reference is " + r.RefLabel + ": efficiency = compute time / step time, so it is 1 when no communication, bubble or I/O is exposed"
	}
	return "a collective on one node runs on NVLink/PCIe and across nodes on the network, so efficiency is taken against the smallest multi-node count; nccl-tests busbw is independent of the rank count for an ideal network"
}

// barsSection shows busbw per GPU count, or the step time split into
// compute and exposed communication.
func (r *scaleResult) barsSection() reports.Section {
	var cats []string
	for _, p := range r.Points {
		cats = append(cats, fmt.Sprintf("%d GPUs", p.GPUs()))
	}
	if r.Workload != nil {
		compute := reports.BarSeries{Name: "compute"}
		exposed := reports.BarSeries{Name: "exposed (communication, bubble, I/O)"}
		for _, p := range r.Points {
			if p.Refused != "" {
				// No step at this count: N/A in the plot and its data, not 0 ms.
				compute.Values = append(compute.Values, math.NaN())
				exposed.Values = append(exposed.Values, math.NaN())
				continue
			}
			compute.Values = append(compute.Values, p.Step.ComputeMs)
			exposed.Values = append(exposed.Values, p.Step.StepMs-p.Step.ComputeMs)
		}
		text := "Each step is the compute time plus what is not hidden behind it; with the batch per GPU fixed the compute stays the same, so the exposed time is what scaling costs."
		if r.Workload.GlobalBatch > 0 {
			text = "Each step is the compute time plus what is not hidden behind it; with the global batch fixed each GPU computes fewer micro-batches per step as GPUs are added, so the compute falls and the exposed time is a growing share of the step."
		}
		return reports.Section{Title: "Step time", Blocks: []reports.Block{
			reports.Paragraph{Text: text},
			reports.BarPlot{Title: "Step time by GPU count", CategoryLabel: "GPUs", ValueLabel: "time per step (ms)", Categories: cats, Series: []reports.BarSeries{compute, exposed}, Stacked: true,
				Caption: "Exposed: communication on the critical path (data-parallel buckets from the overlap timeline), the pipeline bubble and I/O; a refused count shows no bar."},
		}}
	}
	bus := reports.BarSeries{Name: "busbw"}
	for _, p := range r.Points {
		if p.Refused != "" {
			bus.Values = append(bus.Values, math.NaN())
			continue
		}
		bus.Values = append(bus.Values, p.Point.BusBW)
	}
	return reports.Section{Title: "Bus bandwidth", Blocks: []reports.Block{
		reports.BarPlot{Title: collectiveTitle(r.Request.Coll) + " " + model.FormatBytes(r.Request.Sizes[0]) + " busbw by GPU count", CategoryLabel: "GPUs", ValueLabel: "busbw (GB/s)",
			Categories: cats, Series: []reports.BarSeries{bus}, Caption: "Predicted busbw as nccl-tests computes it, per GPU count."},
	}}
}

// resultsTable has one row per node count.
func (r *scaleResult) resultsTable() reports.Table {
	if r.Workload != nil {
		unit := study.ThroughputUnit(r.Workload)
		t := reports.Table{Caption: "Training step per count", Columns: []string{"nodes", "GPUs", "communication (ms)", "exposed (ms)", "step (ms)", unit, "efficiency", "limit", "why"}}
		for _, p := range r.Points {
			if p.Refused != "" {
				t.Rows = append(t.Rows, []string{strconv.Itoa(p.Nodes), strconv.Itoa(p.GPUs()), "-", "-", "-", "-", "-", "refused", p.Refused})
				continue
			}
			st := p.Step
			v, _ := st.Throughput(r.Workload)
			t.Rows = append(t.Rows, []string{strconv.Itoa(p.Nodes), strconv.Itoa(p.GPUs()), fmtMs(st.CommMs), fmtMs(st.ExposedMs), fmtMs(st.StepMs), tput(v), effString(p.EffOK, p.Eff),
				st.Bottleneck, st.Breaks})
		}
		t.Notes = append(t.Notes, "Reference: "+r.RefLabel+".")
		return t
	}
	t := reports.Table{Caption: "Predicted " + r.what() + " per node count", Columns: []string{"nodes", "GPUs", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "efficiency", "algo/proto/channels", "bottleneck"}}
	for _, p := range r.Points {
		pt := p.Point
		t.Rows = append(t.Rows, []string{strconv.Itoa(p.Nodes), strconv.Itoa(p.GPUs()), fmtF(pt.TimeUs, 2), fmtF(pt.AlgBW, 2), fmtF(pt.BusBW, 2), effString(p.EffOK, p.Eff),
			choiceLabel(pt.Choice), bottleneckPhrase(pt)})
	}
	if r.Ref != nil {
		t.Notes = append(t.Notes, fmt.Sprintf("Reference: %d nodes, busbw %s GB/s.", r.Ref.Nodes, fmtF(r.Ref.Point.BusBW, 2)))
	}
	return t
}

// callsSection lists the workload's calls at the largest node count.
func (r *scaleResult) callsSection(last *study.ScalePoint) reports.Section {
	t := reports.Table{Caption: fmt.Sprintf("The collectives of one step at %s", count(last.Nodes, "node")),
		Columns: []string{"call", "collective", "size", "calls per step", "time per call (us)", "total (ms)", "busbw (GB/s)", "algo/proto/channels", "bottleneck"}}
	for _, c := range last.Step.Comm {
		t.Rows = append(t.Rows, []string{c.Kind + " (" + c.Group + ")", collectiveTitle(c.Coll), model.FormatBytes(c.Size), strconv.FormatInt(c.Count, 10),
			fmtF(c.Point.TimeUs, 2), fmtMs(c.TotalMs), fmtF(c.Point.BusBW, 2),
			choiceLabel(c.Point.Choice), bottleneckPhrase(c.Point)})
	}
	return reports.Section{Title: "Collective calls", Blocks: []reports.Block{
		reports.Paragraph{Text: r.Workload.Describe() + "."},
		t,
	}}
}

// capitalize upper-cases the first letter of s.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
