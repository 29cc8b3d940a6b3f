package cli

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/sim"
)

// validateInputs are the options of a validate run that its report lists.
type validateInputs struct {
	files clusterFiles
	// log is the --log file ("" for none).
	log string
	// version and versionFrom are the NCCL release modelled and why.
	version, versionFrom string
	engine               sim.EngineKind
}

// validateReport builds the report of a validate run: the verdict with the
// worst gap and the most likely cause in the summary; for every measured
// series busbw against size for model and measurement with the tolerance
// band, time against size and the point-by-point table; the diagnoses with
// their evidence and fixes; what the files show by themselves; and measured
// bandwidth matrices as heat maps.
func validateReport(e *env, v *calibrate.Validation, cl *model.Cluster, params sim.Params, arts []*ingest.Artifact, in validateInputs) (*reports.Document, error) {
	if v == nil {
		return nil, fmt.Errorf("validate: --report: no results to report")
	}
	ci := clusterInfo(&sim.Env{Cluster: cl})
	node := ci.nodeLabel(ci.GPU + " node")
	doc := e.newReport(fmt.Sprintf("Validation of %d x %s", ci.Nodes, node))
	doc.Subtitle = "measurements against the model of the cluster as it should be: " + v.Cluster
	doc.Summary, doc.Verdict = validateSummary(v)

	doc.Inputs = clusterInputs(cl, in.files)
	for _, a := range arts {
		what := artifactKind(a.Kind)
		if n := len(a.Runs); n > 0 {
			var cs []string
			for _, r := range a.Runs {
				cs = append(cs, runName(r))
			}
			what += ": " + strings.Join(cs, "; ")
		}
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "measured " + a.File, Value: what})
	}
	if in.log != "" {
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "NCCL log", Value: in.log})
	}
	doc.Inputs = append(doc.Inputs,
		reports.KV{Key: "tolerance", Value: "±" + pct(v.Tolerance) + " on busbw in the gate regime"},
		reports.KV{Key: "engine", Value: v.Engine},
	)
	modelTerms, other := splitAssumptions(modelAssumptions(params, in.version, in.versionFrom, in.engine, in.files.Profile, nil), []*model.Cluster{cl}, nil)
	doc.OtherAssumptions = other
	doc.Assumptions = append([]reports.Assumption{
		{Term: "error", Value: "model busbw / measured busbw - 1", Source: "= measured time / model time - 1; positive: the cluster is slower than the model"},
		{Term: "gate regime", Value: "sizes >= 64 MiB", Source: "where bandwidth, not latency, sets the time; runs that stop earlier are judged on their sizes >= 8 MiB (mid regime)"},
		{Term: "latency regime", Value: "sizes < 64 KiB", Source: "reported, not judged"},
		{Term: "measured busbw", Value: "recomputed from the measured time", Source: "size x nccl-tests factor / time: equals the printed busbw and stays meaningful where nccl-tests prints 0.00"},
	}, modelTerms...)

	for _, s := range v.Series {
		doc.Sections = append(doc.Sections, seriesSection(s, v.Tolerance))
	}
	doc.Sections = append(doc.Sections, reports.Section{Title: "Topology", Blocks: []reports.Block{validateTopology(v, cl)}})
	ds := reports.Section{Title: "Diagnosis"}
	if len(v.Diagnoses) == 0 {
		ds.Blocks = append(ds.Blocks, reports.Paragraph{Text: "Nothing to report: no cause of a gap was found."})
	} else {
		ds.Blocks = append(ds.Blocks, reports.Paragraph{Text: "Likely causes, best explanation first. A cause is re-predicted by changing the model as the cause would (\"reproduced by\"); it explains the measurement when that fits the measured points far better than the healthy model."},
			diagnosisFindings(v.Diagnoses))
	}
	doc.Sections = append(doc.Sections, ds)
	if len(v.Findings) > 0 {
		fs := make([]ingest.Finding, len(v.Findings))
		copy(fs, v.Findings)
		for i := range fs {
			fs[i].Line = 0 // the evidence already names file and line
		}
		found := reportFindings("", fs)
		for i, f := range v.Findings {
			// A finding that is evidence of a diagnosis is graded once:
			// with the diagnosis's severity, pointing to it.
			if d := diagnosisCiting(v.Diagnoses, f); d != nil {
				found[i].Severity = findingSeverity(d.Severity)
				found[i].Title += "; see Diagnosis: " + d.Code
			}
		}
		doc.Sections = append(doc.Sections, reports.Section{Title: "What the files show", Blocks: []reports.Block{found}})
	}
	var mats []reports.Block
	for _, a := range arts {
		for _, m := range a.Matrices {
			mats = append(mats, matrixBlock(filepath.Base(a.File), m))
		}
	}
	if len(mats) > 0 {
		doc.Sections = append(doc.Sections, reports.Section{Title: "Measured bandwidth matrices", Blocks: mats})
	}
	if len(v.Notes) > 0 {
		doc.Sections = append(doc.Sections, reports.Section{Title: "Notes", Blocks: []reports.Block{reports.Paragraph{Text: strings.Join(v.Notes, "\n\n")}}})
	}
	return doc, nil
}

// validateSummary states the verdict, the largest gap and the most likely
// cause with its evidence and fix.
func validateSummary(v *calibrate.Validation) (string, *reports.Verdict) {
	gate, fails := 0, 0
	var worst *calibrate.PointCheck
	var worstS *calibrate.SeriesCheck
	for _, s := range v.Series {
		for i := range s.Points {
			p := &s.Points[i]
			if p.Regime != s.Gate {
				continue
			}
			gate++
			if !p.Pass {
				fails++
			}
			if worst == nil || math.Abs(p.Error) > math.Abs(worst.Error) {
				worst, worstS = p, s
			}
		}
	}
	var b strings.Builder
	vd := &reports.Verdict{Status: reports.StatusPass, Label: fmt.Sprintf("all %d gate points within ±%s", gate, pct(v.Tolerance))}
	if v.Pass {
		fmt.Fprintf(&b, "PASS: every one of the %d bandwidth-regime points of %d measured series is within ±%s of the model.", gate, len(v.Series), pct(v.Tolerance))
	} else {
		vd = &reports.Verdict{Status: reports.StatusFail, Label: fmt.Sprintf("%d of %d gate points outside ±%s", fails, gate, pct(v.Tolerance))}
		fmt.Fprintf(&b, "FAIL: %d of the %d bandwidth-regime points of %d measured series are outside ±%s of the model.", fails, gate, len(v.Series), pct(v.Tolerance))
	}
	if worst != nil && worst.ModelBusBW > 0 {
		fmt.Fprintf(&b, " The largest gap is %s at %s: measured %s, model %s, error %s (%s).", worstS.Collective, fmtBytes(worst.Size),
			gbps(worst.MeasuredBusBW), gbps(worst.ModelBusBW), signedPct(worst.Error), errorMeaning(worst.Error))
	}
	for _, d := range v.Diagnoses {
		if d.Severity == ingest.SevInfo {
			continue
		}
		fmt.Fprintf(&b, " Most likely cause: %s", strings.TrimSuffix(d.Title, "."))
		if len(d.Evidence) > 0 {
			fmt.Fprintf(&b, " (evidence: %s)", clipText(d.Evidence[0], 200))
		}
		b.WriteString(".")
		if d.Fix != "" {
			b.WriteString(" Fix: " + strings.TrimSuffix(d.Fix, ".") + ".")
		}
		break
	}
	if v.Pass && len(v.Diagnoses) == 0 {
		b.WriteString(" Nothing needs fixing.")
	}
	return b.String(), vd
}

// errorMeaning says what a validation error (model busbw / measured busbw
// - 1, the sign convention of docs/calibrate.md used in every table) means
// for the cluster.
func errorMeaning(e float64) string {
	switch {
	case e > 0:
		return "the cluster is slower than the model: the model's busbw is " + sig3(1+e) + "x the measured"
	case e < 0:
		return "the cluster is faster than the model: the measured busbw is " + sig3(1/(1+e)) + "x the model's"
	}
	return "the cluster matches the model"
}

// seriesSection shows one measured series against the model.
func seriesSection(s *calibrate.SeriesCheck, tol float64) reports.Section {
	title := s.Series
	if title == "" {
		title = s.Collective
	}
	sec := reports.Section{Title: title}
	var lines []string
	for _, r := range s.Regimes {
		lines = append(lines, fmt.Sprintf("%s: %d points, median |error| %.1f%%, p90 %.1f%%, worst %s.", regimeLabel(r.Regime), r.Points, r.MedianAbs*100, r.P90Abs*100, signedPct(r.Worst)))
	}
	if s.Gate != "" {
		lines = append(lines, fmt.Sprintf("Verdict: %s (%d of the %s points outside ±%s).", verdict(s.Pass), s.Failures, s.Gate, pct(tol)))
	}
	sec.Blocks = append(sec.Blocks, reports.Paragraph{Text: fmt.Sprintf("%s, %d ranks, from %s. ", s.Collective, s.Ranks, s.File) + strings.Join(lines, " ")})
	var mbw, obw []reports.BWPoint
	var mt, ot []reports.TimePoint
	seen := map[int64]bool{}
	for _, p := range s.Points {
		if p.Size <= 0 || seen[p.Size] {
			continue
		}
		seen[p.Size] = true
		sz := model.Bytes(p.Size)
		if finiteNonNeg(p.ModelBusBW) {
			mbw = append(mbw, reports.BWPoint{Size: sz, BusBW: model.GBps(p.ModelBusBW)})
		}
		if finiteNonNeg(p.MeasuredBusBW) {
			obw = append(obw, reports.BWPoint{Size: sz, BusBW: model.GBps(p.MeasuredBusBW)})
		}
		if t := usTime(p.ModelTimeUs); t > 0 {
			mt = append(mt, reports.TimePoint{Size: sz, Time: t})
		}
		if t := usTime(p.MeasuredTimeUs); t > 0 {
			ot = append(ot, reports.TimePoint{Size: sz, Time: t})
		}
	}
	if len(mbw) > 0 && len(obw) > 0 {
		plot := reports.BusBWPlot{Title: s.Collective + " busbw: measured against the model",
			Caption: "Model (line) and measurement (points); measured points of the gate regime outside the band fail.",
			Series:  []reports.BWSeries{{Name: "model", Style: reports.StyleLine, Points: mbw}, {Name: "measured", Style: reports.StyleLinePoints, Points: obw}}}
		if tol > 0 && tol <= 1 {
			plot.Band = &reports.Band{Reference: "model", Tolerance: tol, Label: "±" + pct(tol) + " of model"}
		}
		sec.Blocks = append(sec.Blocks, plot)
	}
	if len(mt) > 0 && len(ot) > 0 {
		sec.Blocks = append(sec.Blocks, reports.TimePlot{Title: s.Collective + " time: measured against the model",
			Series: []reports.TimeSeries{{Name: "model", Style: reports.StyleLine, Points: mt}, {Name: "measured", Style: reports.StyleLinePoints, Points: ot}}})
	}
	t := reports.Table{Caption: "Point by point",
		Columns: []string{"size", "line", "measured time (us)", "model time (us)", "measured busbw (GB/s)", "model busbw (GB/s)", "error", "regime", "result", "model choice", "model bottleneck"}}
	for _, p := range s.Points {
		res := ""
		if p.Regime == s.Gate {
			res = verdict(p.Pass)
		}
		bn := p.BottleneckClass
		if p.Bottleneck != "" {
			bn += ": " + p.Bottleneck
		}
		line := ""
		if p.Line > 0 {
			line = strconv.Itoa(p.Line)
		}
		t.Rows = append(t.Rows, []string{fmtBytes(p.Size), line, fmtG4(p.MeasuredTimeUs), fmtG4(p.ModelTimeUs), fmtG4(p.MeasuredBusBW), fmtG4(p.ModelBusBW),
			signedPct(p.Error), p.Regime, res, fmt.Sprintf("%s/%s/%d", p.Algo, p.Proto, p.Channels), bn})
	}
	sec.Blocks = append(sec.Blocks, t)
	return sec
}

// diagnosisFindings turns diagnoses into report findings: the evidence
// joined, with the re-prediction that reproduces the measurement.
func diagnosisFindings(ds []calibrate.Diagnosis) reports.Findings {
	out := make(reports.Findings, 0, len(ds))
	for _, d := range ds {
		ev := strings.Join(d.Evidence, "; ")
		if d.Reproduce != "" && d.Explains {
			if ev != "" {
				ev += "; "
			}
			ev += fmt.Sprintf("reproduced by %s (residual %.3f against %.3f for the healthy model)", d.Reproduce, d.Residual, d.Baseline)
		}
		out = append(out, reports.Finding{Severity: findingSeverity(d.Severity), Title: d.Title + " (" + d.Code + ")", Evidence: ev, Fix: d.Fix})
	}
	return out
}

// validateTopology draws the healthy cluster with the model's bottleneck
// at the largest gate point of the first series (its utilisation is not
// part of a validation, so none is shown).
func validateTopology(v *calibrate.Validation, cl *model.Cluster) reports.TopologyPlot {
	var pt *sim.Point
	for _, s := range v.Series {
		for i := len(s.Points) - 1; i >= 0; i-- {
			if p := s.Points[i]; p.Regime == s.Gate && p.Bottleneck != "" {
				pt = &sim.Point{Bottleneck: p.Bottleneck, BottleneckClass: p.BottleneckClass}
				break
			}
		}
		if pt != nil {
			break
		}
	}
	tp := topologyPicture("The cluster as it should be: "+v.Cluster, "", cl, pt)
	if tp.Bottleneck != "" {
		tp.Caption = "The healthy cluster as the model built it; the red link is the model's bottleneck at the largest measured size of the bandwidth regime. Hover over a part for its name."
	}
	return tp
}

// diagnosisCiting returns the first diagnosis that quotes file finding f as
// evidence (calibrate quotes it as "message [evidence]"), or nil.
func diagnosisCiting(ds []calibrate.Diagnosis, f ingest.Finding) *calibrate.Diagnosis {
	quote := f.Message + " [" + f.Evidence + "]"
	for i := range ds {
		for _, ev := range ds[i].Evidence {
			if ev == quote {
				return &ds[i]
			}
		}
	}
	return nil
}

// finiteNonNeg reports whether v is a finite number >= 0.
func finiteNonNeg(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// usTime converts microseconds to model time; 0 for anything not positive
// and finite.
func usTime(us float64) model.Time {
	if !(us > 0) || math.IsInf(us, 0) {
		return 0
	}
	return model.Time(math.Round(us * float64(model.Microsecond)))
}

// fmtG4 formats v with four significant digits.
func fmtG4(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
