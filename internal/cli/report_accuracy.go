package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/calibrate/accuracy"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/sim"
)

// accuracyReport builds the report of an accuracy run: the targets and the
// aggregate errors in the summary; the median |error| of every case as
// bars, uncalibrated and calibrated, in the bandwidth and the latency
// regime, with the table behind them; the summary over cases; the targets;
// the degraded cases' diagnoses; and busbw against size for every case
// (measured, uncalibrated and calibrated model).
func accuracyReport(e *env, rep *accuracy.Report, only []string) (*reports.Document, error) {
	if rep == nil {
		return nil, fmt.Errorf("accuracy: --report: no results to report")
	}
	doc := e.newReport(fmt.Sprintf("Model accuracy on %d published runs", len(rep.Cases)))
	doc.Subtitle = "collsim's predictions, uncalibrated and calibrated, against measurements of real clusters"
	doc.Summary, doc.Verdict = accuracySummary(rep)
	doc.Inputs = []reports.KV{
		{Key: "cases file", Value: rep.CasesFile},
		{Key: "cases", Value: strconv.Itoa(len(rep.Cases))},
		{Key: "engine", Value: rep.Engine},
	}
	if len(only) > 0 {
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "only cases starting with", Value: strings.Join(only, ", ")})
	}
	doc.Assumptions = append([]reports.Assumption{
		{Term: "error", Value: "model busbw / measured busbw - 1", Source: "measured busbw recomputed from the measured time; |error| statistics per regime"},
		{Term: "regimes", Value: "latency < 64 KiB; bandwidth >= 64 MiB; mid >= 8 MiB", Source: "mid only for runs that stop below 64 MiB"},
		{Term: "calibrated predictions", Value: "never fitted on the points they are scored on", Source: "fitted on the other cases of the same hardware class, or on the case's other sizes (two folds of alternating sizes)"},
		{Term: "degraded cases", Value: "predicted with their misconfiguration", Source: "and validated against the healthy cluster, whose diagnosis must name the cause"},
		{Term: "NCCL version", Value: "per case", Source: "the version each case's files state (cases file)"},
	}, modelAssumptions(sim.DefaultParams(), "", "", sim.EngineKind(rep.Engine), "", nil)...)

	doc.Sections = append(doc.Sections, caseErrorsSection(rep))
	st := reports.Table{Caption: "Over all cases", Columns: []string{"regime", "cases", "median of case medians, uncal.", "median of case medians, cal.", "pooled median, uncal.", "pooled median, cal.", "pooled p90, uncal.", "pooled p90, cal."}}
	for _, s := range rep.Summary {
		st.Rows = append(st.Rows, []string{s.Regime, strconv.Itoa(s.Cases), pct1(s.UncalCaseMedian), pct1(s.CalCaseMedian),
			pct1(s.UncalPooled.MedianAbs), pct1(s.CalPooled.MedianAbs), pct1(s.UncalPooled.P90Abs), pct1(s.CalPooled.P90Abs)})
	}
	tt := reports.Table{Caption: "Targets", Columns: []string{"target", "at most", "got", "cases", "result"}}
	for _, t := range rep.Targets {
		res, got := "met", t.Value(t.Got)
		switch {
		case t.Cases == 0:
			res, got = "no case in this regime", "-"
		case !t.Met:
			res = "NOT MET"
		}
		tt.Rows = append(tt.Rows, []string{t.What, t.Value(t.Want), got, strconv.Itoa(t.Cases), res})
	}
	doc.Sections = append(doc.Sections, reports.Section{Title: "Summary over cases", Blocks: []reports.Block{st, tt}})

	var deg reports.Findings
	for _, c := range rep.Cases {
		if c.Expect == "" {
			continue
		}
		f := reports.Finding{Severity: reports.SeverityInfo, Title: fmt.Sprintf("%s: validate names %s", c.ID, c.Expect),
			Evidence: fmt.Sprintf("diagnosed (best first): %s; checked against %s", strings.Join(c.Diagnosed, ", "), c.HealthyCluster)}
		if !c.NamesCause {
			f.Severity, f.Title = reports.SeverityCritical, fmt.Sprintf("%s: validate misses %s", c.ID, c.Expect)
			f.Fix = "Improve the diagnosis of " + c.Expect + " (calibrate/diagnose.go) until this case names it."
		}
		deg = append(deg, f)
	}
	if len(deg) > 0 {
		doc.Sections = append(doc.Sections, reports.Section{Title: "Degraded cases", Blocks: []reports.Block{
			reports.Paragraph{Text: "Each degraded run is validated against the healthy cluster; the diagnosis must name the misconfiguration the case is known to have."}, deg}})
	}
	cs := reports.Section{Title: "Cases"}
	for _, c := range rep.Cases {
		cs.Blocks = append(cs.Blocks, caseBlocks(c)...)
	}
	if len(cs.Blocks) > 0 {
		doc.Sections = append(doc.Sections, cs)
	}
	return doc, nil
}

// accuracySummary states the targets and the errors in the bandwidth and
// latency regimes.
func accuracySummary(rep *accuracy.Report) (string, *reports.Verdict) {
	var b strings.Builder
	fmt.Fprintf(&b, "Over %d cases (engine %s):", len(rep.Cases), rep.Engine)
	var parts []string
	for _, s := range rep.Summary {
		parts = append(parts, fmt.Sprintf(" in the %s regime (%d cases) the median |busbw error| is %s uncalibrated and %s calibrated", s.Regime, s.Cases, pct1(s.UncalCaseMedian), pct1(s.CalCaseMedian)))
	}
	if len(parts) == 0 {
		parts = append(parts, " no case was scored")
	}
	b.WriteString(strings.Join(parts, ";") + ".")
	var missed []string
	applicable := 0
	for _, t := range rep.Targets {
		if t.Cases == 0 {
			continue
		}
		applicable++
		if !t.Met {
			missed = append(missed, fmt.Sprintf("%s (%s, target %s)", t.What, t.Value(t.Got), t.Value(t.Want)))
		}
	}
	deg, named := 0, 0
	for _, c := range rep.Cases {
		if c.Expect != "" {
			deg++
			if c.NamesCause {
				named++
			}
		}
	}
	if len(missed) == 0 {
		fmt.Fprintf(&b, " All %d applicable targets are met.", applicable)
	} else {
		fmt.Fprintf(&b, " Missed: %s.", strings.Join(missed, "; "))
	}
	if deg > 0 {
		fmt.Fprintf(&b, " Validate names the cause of %d of %d degraded runs.", named, deg)
	}
	if worst := worstCase(rep); worst != "" {
		b.WriteString(" " + worst)
	}
	vd := &reports.Verdict{Status: reports.StatusPass, Label: "targets met"}
	if !rep.Passed() {
		vd = &reports.Verdict{Status: reports.StatusFail, Label: fmt.Sprintf("%d target(s) missed, %d of %d causes named", len(missed), named, deg)}
	}
	return b.String(), vd
}

// worstCase names the case with the largest calibrated bandwidth-regime
// error (or mid, for runs that stop early).
func worstCase(rep *accuracy.Report) string {
	best, id := -1.0, ""
	for _, c := range rep.Cases {
		r := c.Regime(bwRegime(c), true)
		if r.Points > 0 && r.MedianAbs > best {
			best, id = r.MedianAbs, c.ID
		}
	}
	if id == "" {
		return ""
	}
	return fmt.Sprintf("The largest calibrated bandwidth-regime error is %s's (median %s).", id, pct1(best))
}

// bwRegime is the regime a case's bandwidth is judged in: bandwidth, or
// mid for runs that stop below 64 MiB.
func bwRegime(c accuracy.CaseResult) string {
	if c.Regime(calibrate.RegimeBandwidth, false).Points == 0 && c.Regime(calibrate.RegimeMid, false).Points > 0 {
		return calibrate.RegimeMid
	}
	return calibrate.RegimeBandwidth
}

// caseErrorsSection draws every case's median |error| as bars and lists
// the numbers per case.
func caseErrorsSection(rep *accuracy.Report) reports.Section {
	sec := reports.Section{Title: "Error per case"}
	if len(rep.Cases) == 0 {
		sec.Blocks = append(sec.Blocks, reports.Paragraph{Text: "No case was run."})
		return sec
	}
	bw := reports.BarPlot{Title: "Bandwidth regime: median |busbw error| per case", CategoryLabel: "case", ValueLabel: "median |error| (%)",
		Caption: "Sizes >= 64 MiB (>= 8 MiB for runs that stop earlier). A missing bar: the case has no such size.",
		Series:  []reports.BarSeries{{Name: "uncalibrated"}, {Name: "calibrated"}}}
	lat := reports.BarPlot{Title: "Latency regime: median |busbw error| per case", CategoryLabel: "case", ValueLabel: "median |error| (%)",
		Caption: "Sizes < 64 KiB. A missing bar: the case has no such size.",
		Series:  []reports.BarSeries{{Name: "uncalibrated"}, {Name: "calibrated"}}}
	t := reports.Table{Caption: "Per case: median / p90 |error|",
		Columns: []string{"case", "quality", "class", "collective", "ranks", "nodes", "latency uncal.", "latency cal.", "bandwidth uncal.", "bandwidth cal.", "bandwidth regime", "degraded check", "validate (healthy)", "calibrated on"}}
	cell := func(s calibrate.RegimeStats) string {
		if s.Points == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f / %.1f%%", s.MedianAbs*100, s.P90Abs*100)
	}
	val := func(s calibrate.RegimeStats) float64 {
		if s.Points == 0 {
			return math.NaN()
		}
		return s.MedianAbs * 100
	}
	seen := map[string]bool{}
	for _, c := range rep.Cases {
		r := bwRegime(c)
		check := "-"
		if c.Expect != "" {
			check = "names " + c.Expect
			if !c.NamesCause {
				check = "MISSES " + c.Expect
			}
		}
		t.Rows = append(t.Rows, []string{c.ID, c.Quality, c.Class, c.Collective, strconv.Itoa(c.Ranks), strconv.Itoa(c.Nodes),
			cell(c.Regime(calibrate.RegimeLatency, false)), cell(c.Regime(calibrate.RegimeLatency, true)),
			cell(c.Regime(r, false)), cell(c.Regime(r, true)), r, check, c.Validate.String(), c.Calibration})
		if seen[c.ID] || c.ID == "" {
			continue
		}
		seen[c.ID] = true
		bw.Categories = append(bw.Categories, c.ID)
		lat.Categories = append(lat.Categories, c.ID)
		for i, cal := range []bool{false, true} {
			bw.Series[i].Values = append(bw.Series[i].Values, val(c.Regime(r, cal)))
			lat.Series[i].Values = append(lat.Series[i].Values, val(c.Regime(calibrate.RegimeLatency, cal)))
		}
	}
	if len(bw.Categories) > 0 {
		sec.Blocks = append(sec.Blocks, bw, lat)
	}
	sec.Blocks = append(sec.Blocks, t)
	return sec
}

// caseBlocks draws one case's busbw: measured, uncalibrated and calibrated.
func caseBlocks(c accuracy.CaseResult) []reports.Block {
	var m, u, k []reports.BWPoint
	seen := map[int64]bool{}
	for _, p := range c.Points {
		if p.Size <= 0 || seen[p.Size] || !finiteNonNeg(p.MeasuredBusBW) || !finiteNonNeg(p.UncalBusBW) || !finiteNonNeg(p.CalBusBW) {
			continue
		}
		seen[p.Size] = true
		sz := model.Bytes(p.Size)
		m = append(m, reports.BWPoint{Size: sz, BusBW: model.GBps(p.MeasuredBusBW)})
		u = append(u, reports.BWPoint{Size: sz, BusBW: model.GBps(p.UncalBusBW)})
		k = append(k, reports.BWPoint{Size: sz, BusBW: model.GBps(p.CalBusBW)})
	}
	if len(m) == 0 {
		return nil
	}
	return []reports.Block{reports.BusBWPlot{
		Title:   c.ID,
		Caption: fmt.Sprintf("%s, %d ranks on %d node(s), %s. Model: %s. Calibrated on %s. File: %s.", c.Collective, c.Ranks, c.Nodes, c.Quality, c.Cluster, c.Calibration, c.File),
		Series: []reports.BWSeries{{Name: "measured", Style: reports.StyleLinePoints, Points: m}, {Name: "uncalibrated", Style: reports.StyleDashed, Points: u},
			{Name: "calibrated", Style: reports.StyleLine, Points: k}},
	}}
}

// pct1 formats a fraction as a percentage with one decimal.
func pct1(f float64) string { return fmtF(f*100, 1) + "%" }
