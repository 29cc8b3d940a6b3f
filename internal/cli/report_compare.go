package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/study"
)

// compareReport builds the report of a compare run: which design is
// faster at large sizes and by how much, what limits each, busbw and time
// against size for every design side by side, busbw at the largest size
// as bars, the busiest links of each design and the table of numbers.
func compareReport(e *env, r *compareResult) (*reports.Document, error) {
	if len(r.designs) == 0 || len(r.Request.Sizes) == 0 {
		return nil, fmt.Errorf("compare: --report: no results to report")
	}
	coll := collectiveTitle(r.Request.Coll)
	var names []string
	for _, d := range r.designs {
		names = append(names, d.name)
	}
	title := coll + ": " + strings.Join(names, " vs ")
	if len(names) > 3 {
		title = fmt.Sprintf("%s on %d designs", coll, len(names))
	}
	doc := e.newReport(title)
	doc.Subtitle = fmt.Sprintf("collsim model of nccl-tests %s_perf on %d designs side by side (%s engine)", r.Request.Coll.TestName(), len(names), r.Request.Engine)
	rank := r.ranking()
	best := rank[0]
	label := fmt.Sprintf("faster %s: %s, %s mean busbw", r.largeLabel(), best.name, gbps(r.meanLarge(best)))
	if r.AllTie() {
		label = fmt.Sprintf("a tie %s: within %g%% (%s mean busbw)", r.largeLabel(), 100*study.TieWithin, gbps(r.meanLarge(best)))
	}
	doc.Verdict = &reports.Verdict{Status: reports.StatusInfo, Label: label}
	doc.Summary = r.reportSummary()

	for _, d := range r.designs {
		v := designLine(d)
		if d.from == "--design" {
			v += " (--design " + d.name + "=" + shellJoin(d.args) + ")"
		} else {
			v += " (" + d.from + ")"
		}
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "design " + d.name, Value: v})
	}
	last := len(r.Request.Sizes) - 1
	doc.Inputs = append(doc.Inputs,
		reports.KV{Key: "collective", Value: fmt.Sprintf("%s (nccl-tests %s_perf), %s", coll, r.Request.Coll.TestName(), r.dtype)},
		reports.KV{Key: "sizes", Value: fmt.Sprintf("%s: %d sizes from %s to %s", r.sizes, len(r.Request.Sizes), model.FormatBytes(r.Request.Sizes[0]), model.FormatBytes(r.Request.Sizes[last]))},
		reports.KV{Key: "engine", Value: string(r.Request.Engine)},
		reports.KV{Key: "large sizes", Value: "designs are ranked by their mean busbw " + r.largeLabel()},
	)
	doc.Inputs = append(doc.Inputs, forcedInputs(r.Request)...)
	var clusters []*model.Cluster
	for _, d := range r.designs {
		clusters = append(clusters, d.Env.Cluster)
	}
	doc.Assumptions, doc.OtherAssumptions = splitAssumptions(r.assumptions(), clusters, nil)

	var bwSeries []reports.BWSeries
	var tmSeries []reports.TimeSeries
	for _, d := range r.designs {
		bw, tm := curvePoints(d.Points)
		if len(bw) > 0 {
			bwSeries = append(bwSeries, reports.BWSeries{Name: d.name, Style: reports.StyleLine, Points: bw})
		}
		if len(tm) > 0 {
			tmSeries = append(tmSeries, reports.TimeSeries{Name: d.name, Style: reports.StyleLine, Points: tm})
		}
	}
	if len(bwSeries) == len(r.designs) {
		doc.Sections = append(doc.Sections, reports.Section{Title: "Bus bandwidth", Blocks: []reports.Block{
			reports.Paragraph{Text: "Predicted bus bandwidth of every design for each message size, as nccl-tests computes it. Where the lines part, the designs' networks (or nodes) differ; where they meet, something they share limits both."},
			reports.BusBWPlot{Title: coll + " busbw by design", Caption: fmt.Sprintf("collsim %s engine; one line per design.", r.Request.Engine), Series: bwSeries},
		}})
	}
	if len(tmSeries) == len(r.designs) {
		doc.Sections = append(doc.Sections, reports.Section{Title: "Time per call", Blocks: []reports.Block{
			reports.Paragraph{Text: "Predicted time of one call: the flat left part is latency, the rising right part bandwidth."},
			reports.TimePlot{Title: coll + " time by design", Series: tmSeries},
		}})
	}
	doc.Sections = append(doc.Sections, r.largestSection(), r.bottleneckSection(), reports.Section{Title: "Results", Blocks: []reports.Block{r.resultsTable()}})
	return doc, nil
}

// reportSummary is the executive summary: the ranking at large sizes, the
// bottleneck of each design and what would help the slower ones.
func (r *compareResult) reportSummary() string {
	rank := r.ranking()
	best := rank[0]
	coll := collectiveTitle(r.Request.Coll)
	alike := r.AllTie()
	var b strings.Builder
	if alike {
		var parts []string
		for _, d := range r.designs {
			parts = append(parts, d.name+" "+gbps(r.meanLarge(d)))
		}
		fmt.Fprintf(&b, "For %s %s the designs are a tie (%s; mean busbw: %s), so choose between them on cost and operations.", coll, r.largeLabel(), study.TieRule(), strings.Join(parts, ", "))
	} else {
		fmt.Fprintf(&b, "For %s %s, design %s is fastest with %s mean busbw", coll, r.largeLabel(), best.name, gbps(r.meanLarge(best)))
		for _, d := range rank[1:] {
			f := r.meanLarge(d) / r.meanLarge(best)
			tie := ""
			if _, t := r.Fraction(d.CompareDesignResult); t {
				tie = ", a tie"
			}
			fmt.Fprintf(&b, "; %s reaches %s (%s%% less%s)", d.name, gbps(r.meanLarge(d)), sig3(100*(1-f)), tie)
		}
		b.WriteString(". Rule: " + study.TieRule() + ".")
	}
	last := len(r.Request.Sizes) - 1
	fmt.Fprintf(&b, " At %s, the largest size:", model.FormatBytes(r.Request.Sizes[last]))
	for i, d := range r.designs {
		pt := d.Points[last]
		sep := ";"
		if i == len(r.designs)-1 {
			sep = "."
		}
		if pt.BottleneckClass == "" {
			fmt.Fprintf(&b, " %s shows no link load%s", d.name, sep)
			continue
		}
		fmt.Fprintf(&b, " %s is limited by %s%s", d.name, limitPhrase(pt, clusterInfo(d.Env)), sep)
	}
	if !alike {
		for _, d := range rank[1:] {
			pt := d.Points[last]
			if rec := recommendation(pt, clusterInfo(d.Env), d.Env.Res.Summarize(d.Env.Tuner.Graphs.Ring)); rec != "" {
				fmt.Fprintf(&b, " For %s: %s", d.name, rec)
			}
		}
	}
	return b.String()
}

// assumptions lists the model terms (of the first design, with any other
// design's differing NCCL version or profile noted).
func (r *compareResult) assumptions() []reports.Assumption {
	first := r.designs[0]
	version := first.Env.Cluster.Version.String()
	from := versionSource(first.Env.Cluster.Spec, first.ctx.String("nccl-version"))
	var notes []reports.Assumption
	sameParams := true
	for _, d := range r.designs[1:] {
		if d.Env.Cluster.Version != first.Env.Cluster.Version {
			version = ""
		}
		if d.Env.Params() != first.Env.Params() {
			sameParams = false
		}
	}
	if version == "" {
		for _, d := range r.designs {
			notes = append(notes, reports.Assumption{Term: "NCCL version modelled, " + d.name, Value: d.Env.Cluster.Version.String(),
				Source: versionSource(d.Env.Cluster.Spec, d.ctx.String("nccl-version"))})
		}
	}
	if !sameParams {
		for _, d := range r.designs {
			p := d.ctx.String("profile")
			if p == "" {
				p = "none: default terms"
			}
			notes = append(notes, reports.Assumption{Term: "calibration profile, " + d.name, Value: p, Source: "the terms below are those of design " + first.name})
		}
	}
	as := modelAssumptions(first.Env.Params(), version, from, r.Request.Engine, first.ctx.String("profile"), nil)
	as = append(as, reports.Assumption{Term: "large sizes", Value: ">= " + model.FormatBytes(study.LargeFrom),
		Source: "the bandwidth regime as collsim's accuracy figures score it (docs/calibrate.md); the largest size alone when no size reaches it"})
	return append(notes, as...)
}

// largestSection shows busbw at the largest size and the mean at large
// sizes for every design as bars, with the bottleneck of each.
func (r *compareResult) largestSection() reports.Section {
	last := len(r.Request.Sizes) - 1
	lastLabel := "at " + model.FormatBytes(r.Request.Sizes[last])
	bars := reports.BarPlot{Title: "busbw by design", CategoryLabel: "design", ValueLabel: "busbw (GB/s)",
		Caption: "Mean busbw " + r.largeLabel() + " and busbw " + lastLabel + ", the largest size.",
		Series:  []reports.BarSeries{{Name: "mean " + strings.TrimPrefix(r.largeLabel(), "at ")}, {Name: lastLabel}}}
	if len(r.large()) == 1 && r.large()[0] == last {
		bars.Series = bars.Series[1:]
		bars.Caption = "busbw " + lastLabel + ", the largest size."
	}
	t := reports.Table{Caption: "Each design " + lastLabel,
		Columns: []string{"design", "ranks", "busbw (GB/s)", "vs " + r.designs[0].name, "algo/proto/channels", "bottleneck", "busiest link", "busy", "transports"}}
	for _, d := range r.designs {
		pt := d.Points[last]
		bars.Categories = append(bars.Categories, d.name)
		if len(bars.Series) == 2 {
			bars.Series[0].Values = append(bars.Series[0].Values, r.meanLarge(d))
		}
		bars.Series[len(bars.Series)-1].Values = append(bars.Series[len(bars.Series)-1].Values, pt.BusBW)
		ratio := "n/a"
		if v, ok := r.ratio(d, last); ok {
			ratio = fmtF(v, 2) + "x"
		}
		busy := ""
		if len(pt.Utilisation) > 0 {
			busy = fmt.Sprintf("%.0f%%", 100*pt.Utilisation[0].Busy)
		}
		t.Rows = append(t.Rows, []string{d.name, strconv.Itoa(d.Env.Cluster.NumRanks()), fmtF(pt.BusBW, 2), ratio,
			choiceLabel(pt.Choice), pt.BottleneckClass, pt.Bottleneck, busy,
			d.Env.Res.Summarize(d.Env.Tuner.Graphs.Ring).String()})
	}
	return reports.Section{Title: "Side by side", Blocks: []reports.Block{bars, t}}
}

// bottleneckSection shows the busiest links of each design at the largest
// size.
func (r *compareResult) bottleneckSection() reports.Section {
	last := len(r.Request.Sizes) - 1
	s := reports.Section{Title: "Bottlenecks"}
	for _, d := range r.designs {
		pt := d.Points[last]
		if len(pt.Utilisation) == 0 {
			s.Blocks = append(s.Blocks, reports.Paragraph{Text: d.name + ": the model reports no link load at the largest size."})
			continue
		}
		s.Blocks = append(s.Blocks, reports.LinkUtilPlot{
			Title:   "Busiest links of " + d.name + " at " + model.FormatBytes(r.Request.Sizes[last]),
			Caption: fmt.Sprintf("Share of the call time each link is busy (%s/%s on %d channels); bottleneck: %s.", pt.Choice.Algo, pt.Choice.Proto, pt.Choice.Channels, bottleneckPhrase(pt)),
			Links:   linkUtils(pt),
		}, topologyPicture("Topology of "+d.name, "at "+model.FormatBytes(r.Request.Sizes[last]), d.Env.Cluster, &pt))
	}
	return s
}

// resultsTable is busbw per size and design with the ratio to the first.
func (r *compareResult) resultsTable() reports.Table {
	t := reports.Table{Caption: "Predicted busbw per requested size (GB/s) and the ratio to " + r.designs[0].name, Columns: []string{"size"}}
	for _, d := range r.designs {
		t.Columns = append(t.Columns, d.name+" busbw")
	}
	for _, d := range r.designs[1:] {
		t.Columns = append(t.Columns, d.name+"/"+r.designs[0].name)
	}
	for i, s := range r.Request.Sizes {
		row := []string{model.FormatBytes(s)}
		for _, d := range r.designs {
			row = append(row, fmtF(d.Points[i].BusBW, 2))
		}
		for _, d := range r.designs[1:] {
			if v, ok := r.ratio(d, i); ok {
				row = append(row, fmtF(v, 2))
			} else {
				row = append(row, "n/a")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	for _, d := range r.designs {
		t.Notes = append(t.Notes, fmt.Sprintf("%s: %s.", d.name, scenarios.Describe(d.Env.Cluster.Spec)))
	}
	return t
}

// shellJoin quotes args for a shell where needed, for display.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`|&;<>()*?[]{}~#!") {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
