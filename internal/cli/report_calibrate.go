package cli

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/sim"
)

// calibrateInputs are the options of a calibrate run that its report lists.
type calibrateInputs struct {
	files clusterFiles
	// terms is the --terms filter ("" for all), output the profile written
	// ("" for none), maxEvals the evaluation budget.
	terms, output string
	maxEvals      int
	// version and versionFrom are the NCCL release modelled and why.
	version, versionFrom string
	// findings are the warnings and errors the measured files show by
	// themselves (their messages prefixed with the file).
	findings []ingest.Finding
}

// calibrateReport builds the report of a calibrate run: the fit's outcome
// in the summary; the fitted terms with their uncertainty and change; the
// held terms with why; for every measured series busbw against size
// (measured, model before and after) and the error per point before and
// after; the link observations; and the fit statistics. base is the
// parameter set the fit started from, cl the cluster of the measurements.
func calibrateReport(ctx context.Context, e *env, fr *calibrate.FitResult, ds *calibrate.Dataset, prof *calibrate.Profile, base sim.Params, cl *model.Cluster, in calibrateInputs) (*reports.Document, error) {
	if fr == nil || ds == nil || prof == nil {
		return nil, fmt.Errorf("calibrate: --report: no fit to report")
	}
	short, _, _ := strings.Cut(prof.Cluster, " (")
	doc := e.newReport("Calibration of " + short)
	doc.Subtitle = "the model's free parameters fitted to measurements of " + prof.Cluster
	doc.Summary, doc.Verdict = calibrateSummary(fr, ds, in.output)
	if len(in.findings) > 0 {
		// A fit on a run that shows a fault bakes the fault into the
		// terms: the verdict says so, whatever the fit's quality.
		var codes []string
		for _, f := range in.findings {
			if !slices.Contains(codes, f.Code) {
				codes = append(codes, f.Code)
			}
		}
		doc.Summary += fmt.Sprintf(" The measured files show %s (below): a profile fitted to them describes the cluster in that state; collsim validate says whether it is a fault to fix first.", strings.Join(codes, ", "))
		doc.Verdict = &reports.Verdict{Status: reports.StatusWarn, Label: "the measurements show " + strings.Join(codes, ", ")}
	}

	doc.Inputs = clusterInputs(cl, in.files)
	for _, s := range ds.Sources {
		v := fmt.Sprintf("%s, %s", s.Kind, count(s.Points, "point"))
		if reportedOnly(fr, ds, s) {
			v += " (reported, not fitted: the nccl-tests runs determine its term)"
		}
		if s.Collective != "" {
			v += fmt.Sprintf(", %s on %d ranks", s.Collective, s.Ranks)
		}
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "measured " + s.File, Value: v})
	}
	terms := in.terms
	if terms == "" {
		terms = "all the measurements determine"
	}
	doc.Inputs = append(doc.Inputs,
		reports.KV{Key: "terms", Value: terms},
		reports.KV{Key: "engine", Value: string(fr.Engine)},
		reports.KV{Key: "evaluation budget", Value: strconv.Itoa(in.maxEvals)},
	)
	if in.output != "" {
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "profile written", Value: in.output})
	}
	override := map[string]string{}
	for _, t := range fr.Fitted {
		override[t.Name] = fmt.Sprintf("fitted here to %s, ±%s (1σ); default %s: %s", count(fr.Points, "point"), fmtStdErr(t.StdErr), fmtTerm(t.Default, t.Unit), sim.TermSource(t.Name))
	}
	for _, h := range fr.Held {
		override[h.Name] = "held: " + h.Reason + "; " + sim.TermSource(h.Name)
	}
	fitted := map[string]bool{}
	for name := range override {
		fitted[name] = true // fitted or held: part of this fit whatever the cluster
	}
	modelTerms, other := splitAssumptions(modelAssumptions(fr.Params, in.version, in.versionFrom, fr.Engine, in.files.Profile, override), []*model.Cluster{cl}, fitted)
	doc.OtherAssumptions = other
	doc.Assumptions = append([]reports.Assumption{
		{Term: "fit", Value: fr.Objective, Source: "calibrate.Fit (gonum/optimize); each term kept within its bounds; uncertainty from the covariance at the optimum"},
		{Term: "error", Value: "model busbw / measured busbw - 1", Source: "= measured time / model time - 1"},
	}, modelTerms...)

	if len(in.findings) > 0 {
		ft := reports.Table{Caption: "What the measured files show by themselves", Columns: []string{"severity", "finding", "what", "evidence"}}
		for _, f := range in.findings {
			ft.Rows = append(ft.Rows, []string{f.Severity, f.Code, f.Message, f.Evidence})
		}
		doc.Sections = append(doc.Sections, reports.Section{Title: "Findings", Blocks: []reports.Block{ft}})
	}
	doc.Sections = append(doc.Sections, fittedSection(fr))
	for _, s := range ds.Series {
		sec, err := beforeAfterSection(ctx, s, base, fr.Params, fr.Engine)
		if err != nil {
			return nil, fmt.Errorf("calibrate: --report: %w", err)
		}
		doc.Sections = append(doc.Sections, sec)
	}
	if len(ds.Links) > 0 {
		t := reports.Table{Caption: "Bandwidths measured by other tools, each observing one efficiency term", Columns: []string{"term", "line rate (GB/s)", "measured (GB/s)", "implied efficiency", "fitted value", "source", "used"}}
		for _, l := range ds.Links {
			use := "fitted"
			if slices.Contains(fr.ReportedOnly, l.Source) {
				use = "reported only (the nccl-tests runs determine the term)"
			}
			fitted, _ := fr.Params.Get(l.Term)
			eff := "n/a"
			if l.LineGBps > 0 {
				eff = fmtF(l.MeasuredGBps/l.LineGBps, 3)
			}
			t.Rows = append(t.Rows, []string{l.Term, fmtG4(l.LineGBps), fmtG4(l.MeasuredGBps), eff, fmtG4(fitted), l.Source, use})
		}
		doc.Sections = append(doc.Sections, reports.Section{Title: "Link measurements", Blocks: []reports.Block{t}})
	}
	stats := reports.Table{Caption: "Fit", Columns: []string{"quantity", "value"}, Rows: [][]string{
		{"points", strconv.Itoa(fr.Points)},
		{"status", fr.Status},
		{"converged", yesNo(fr.Converged)},
		{"evaluations", strconv.Itoa(fr.Evaluations)},
		{"iterations", strconv.Itoa(fr.Iterations)},
		{"engine", string(fr.Engine)},
		{"rms log(model/measured time)", fmtF(fr.RMSLogBefore, 4) + " -> " + fmtF(fr.RMSLogAfter, 4)},
		{"median |busbw error|", fmtF(fr.MedianAbsBefore*100, 1) + "% -> " + fmtF(fr.MedianAbsAfter*100, 1) + "%"},
	}}
	stats.Notes = append(append([]string(nil), ds.Notes...), fr.Notes...)
	doc.Sections = append(doc.Sections, reports.Section{Title: "Fit statistics", Blocks: []reports.Block{stats}})
	doc.Sections = append(doc.Sections, reports.Section{Title: "Topology", Blocks: []reports.Block{
		topologyPicture("The cluster the measurements come from: "+prof.Cluster, "", cl, nil)}})
	return doc, nil
}

// calibrateSummary states what the fit changed and how much it helped.
func calibrateSummary(fr *calibrate.FitResult, ds *calibrate.Dataset, output string) (string, *reports.Verdict) {
	var b strings.Builder
	used := 0
	for _, s := range ds.Sources {
		if !reportedOnly(fr, ds, s) {
			used++
		}
	}
	fmt.Fprintf(&b, "Fitted %d term(s) to %s from %d file(s) (%s). The median |busbw error| went from %s%% to %s%% (rms log time %s -> %s).",
		len(fr.Fitted), count(fr.Points, "point"), used, fr.Status, fmtF(fr.MedianAbsBefore*100, 1), fmtF(fr.MedianAbsAfter*100, 1), fmtF(fr.RMSLogBefore, 3), fmtF(fr.RMSLogAfter, 3))
	moved := append([]calibrate.FittedTerm(nil), fr.Fitted...)
	sort.SliceStable(moved, func(i, j int) bool { return math.Abs(moved[i].Change()) > math.Abs(moved[j].Change()) })
	var parts []string
	for i, t := range moved {
		if i == 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s -> %s (%s)", t.Name, fmtTerm(t.Default, t.Unit), fmtTerm(t.Value, t.Unit), t.ChangeText()))
	}
	if len(parts) > 0 {
		fmt.Fprintf(&b, " Largest changes: %s.", strings.Join(parts, "; "))
	}
	var bound []string
	for _, t := range fr.Fitted {
		if t.AtBound != "" {
			bound = append(bound, t.Name+" ("+t.AtBound+")")
		}
	}
	vd := &reports.Verdict{Status: reports.StatusPass, Label: fmt.Sprintf("fit converged: median error %s%% -> %s%%", fmtF(fr.MedianAbsBefore*100, 1), fmtF(fr.MedianAbsAfter*100, 1))}
	if len(bound) > 0 {
		fmt.Fprintf(&b, " %s ran into a bound: the model cannot match the data with a sensible value, so look for a structural cause (collsim validate names likely ones).", strings.Join(bound, ", "))
		vd = &reports.Verdict{Status: reports.StatusWarn, Label: fmt.Sprintf("%d term(s) at a bound", len(bound))}
	}
	if len(fr.Fitted) > 0 && fr.Points < 2*len(fr.Fitted) {
		// One term may be fitted to a single point (the prior keeps it
		// sensible), but such a fit cannot tell latency from bandwidth.
		fmt.Fprintf(&b, " %d point(s) for %d fitted term(s): the fit is underdetermined, so treat its values as a guess until more sizes are measured.", fr.Points, len(fr.Fitted))
		vd = &reports.Verdict{Status: reports.StatusWarn, Label: fmt.Sprintf("underdetermined: %d point(s) for %d term(s)", fr.Points, len(fr.Fitted))}
	}
	if !fr.Converged {
		vd = &reports.Verdict{Status: reports.StatusWarn, Label: "fit stopped: " + fr.Status}
	}
	if len(fr.Fitted) == 0 {
		vd = &reports.Verdict{Status: reports.StatusWarn, Label: "no term could be fitted"}
	}
	if n := len(fr.Held); n > 0 {
		fmt.Fprintf(&b, " %d applicable term(s) stay at their values because the measurements do not determine them.", n)
	}
	if output != "" {
		fmt.Fprintf(&b, " The profile is in %s: pass it to predict or validate with --profile.", output)
	} else {
		b.WriteString(" No profile was written (give -o FILE).")
	}
	return b.String(), vd
}

// fittedSection lists the fitted terms with their uncertainty, the change
// from the default as bars, and the held terms.
func fittedSection(fr *calibrate.FitResult) reports.Section {
	sec := reports.Section{Title: "Fitted terms"}
	t := reports.Table{Caption: "Fitted terms with their 1σ uncertainty", Columns: []string{"term", "meaning", "default", "fitted", "± 1σ", "change", "unit", "note"}}
	bars := reports.BarPlot{Title: "Change of each fitted term from its default", CategoryLabel: "term", ValueLabel: "change (%)",
		Series: []reports.BarSeries{{Name: "change"}}, Fitted: true}
	for _, f := range fr.Fitted {
		note := ""
		if f.AtBound != "" {
			note = "at its " + f.AtBound + " bound"
		}
		t.Rows = append(t.Rows, []string{f.Name, f.Doc, fmtG4(f.Default), fmtG4(f.Value), fmtStdErr(f.StdErr), f.ChangeText(), f.Unit, note})
		bars.Categories = append(bars.Categories, f.Name)
		c := f.Change() * 100
		if f.Default == 0 {
			// No relative change from 0: N/A here, its shift in the table.
			c = math.NaN()
			bars.Caption = "A term whose default is 0 has no relative change (N/A); the table gives how far it moved in its unit."
		}
		bars.Series[0].Values = append(bars.Series[0].Values, c)
	}
	if len(fr.Fitted) == 0 {
		sec.Blocks = append(sec.Blocks, reports.Paragraph{Text: "No term could be fitted: the measurements do not determine any."})
	} else {
		sec.Blocks = append(sec.Blocks, t, bars)
	}
	if len(fr.Held) > 0 {
		h := reports.Table{Caption: "Held at their values (the measurements do not determine them)", Columns: []string{"term", "value", "reason"}}
		for _, x := range fr.Held {
			h.Rows = append(h.Rows, []string{x.Name, fmtG4(x.Value), x.Reason})
		}
		sec.Blocks = append(sec.Blocks, h)
	}
	return sec
}

// beforeAfterSection compares one measured series with the model before
// and after the fit, point by point.
func beforeAfterSection(ctx context.Context, s calibrate.Series, before, after sim.Params, engine sim.EngineKind) (reports.Section, error) {
	sec := reports.Section{Title: "Before and after: " + s.Name}
	cl, err := s.Spec.Build()
	if err != nil {
		return sec, fmt.Errorf("%s: %w", s.Name, err)
	}
	var checks [2]*calibrate.SeriesCheck
	for i, p := range []sim.Params{before, after} {
		env, err := sim.NewEnv(cl, p)
		if err != nil {
			return sec, fmt.Errorf("%s: %w", s.Name, err)
		}
		if checks[i], err = calibrate.CheckSeries(ctx, env, s, engine, 0.1); err != nil {
			return sec, fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	b, a := checks[0], checks[1]
	var meas, mb, ma []reports.BWPoint
	bars := reports.BarPlot{Title: s.Coll.TestName() + ": error per size before and after the fit", CategoryLabel: "size", ValueLabel: "model/measured busbw - 1 (%)",
		Series: []reports.BarSeries{{Name: "before"}, {Name: "after"}}}
	t := reports.Table{Caption: "Per point", Columns: []string{"size", "measured busbw (GB/s)", "model before (GB/s)", "model after (GB/s)", "error before", "error after", "regime"}}
	seen := map[int64]bool{}
	for i := range b.Points {
		pb, pa := b.Points[i], a.Points[i]
		t.Rows = append(t.Rows, []string{fmtBytes(pb.Size), fmtG4(pb.MeasuredBusBW), fmtG4(pb.ModelBusBW), fmtG4(pa.ModelBusBW), signedPct(pb.Error), signedPct(pa.Error), pb.Regime})
		if pb.Size <= 0 || seen[pb.Size] {
			continue
		}
		seen[pb.Size] = true
		sz := model.Bytes(pb.Size)
		if finiteNonNeg(pb.MeasuredBusBW) && finiteNonNeg(pb.ModelBusBW) && finiteNonNeg(pa.ModelBusBW) {
			meas = append(meas, reports.BWPoint{Size: sz, BusBW: model.GBps(pb.MeasuredBusBW)})
			mb = append(mb, reports.BWPoint{Size: sz, BusBW: model.GBps(pb.ModelBusBW)})
			ma = append(ma, reports.BWPoint{Size: sz, BusBW: model.GBps(pa.ModelBusBW)})
		}
		bars.Categories = append(bars.Categories, model.FormatBytes(sz))
		bars.Series[0].Values = append(bars.Series[0].Values, finiteOrNaN(pb.Error*100))
		bars.Series[1].Values = append(bars.Series[1].Values, finiteOrNaN(pa.Error*100))
	}
	sec.Blocks = append(sec.Blocks, reports.Paragraph{Text: fmt.Sprintf("%s of %s on %d ranks. Median |error| %s before the fit, %s after.",
		count(len(s.Points), "point"), s.Coll.TestName(), s.Ranks, medianAbsPct(b), medianAbsPct(a))})
	if len(meas) > 0 {
		sec.Blocks = append(sec.Blocks, reports.BusBWPlot{Title: s.Coll.TestName() + " busbw: measured, model before and after the fit",
			Series: []reports.BWSeries{{Name: "measured", Style: reports.StyleLinePoints, Points: meas}, {Name: "model before", Style: reports.StyleDashed, Points: mb}, {Name: "model after", Style: reports.StyleLine, Points: ma}}})
	}
	if len(bars.Categories) > 0 {
		sec.Blocks = append(sec.Blocks, bars)
	}
	sec.Blocks = append(sec.Blocks, t)
	return sec, nil
}

// medianAbsPct is the median |error| over all points of a check.
func medianAbsPct(c *calibrate.SeriesCheck) string {
	var errs []float64
	for _, p := range c.Points {
		errs = append(errs, p.Error)
	}
	return fmtF(calibrate.Stats("all", errs).MedianAbs*100, 1) + "%"
}

// finiteOrNaN returns v, or NaN (a missing value) when v is infinite.
func finiteOrNaN(v float64) float64 {
	if math.IsInf(v, 0) {
		return math.NaN()
	}
	return v
}
