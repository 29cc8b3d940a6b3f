package cli

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
)

// inspectReport builds the report of an inspect run: a summary with the
// most serious findings, every finding with its evidence and suggested fix,
// then one section per file with busbw against size for each nccl-tests
// run, P2P and copy matrices as heat maps, and tables of what else the file
// holds. Files that could not be read are listed as critical findings.
func inspectReport(e *env, arts []*ingest.Artifact, errs []inspectError) (*reports.Document, error) {
	title := fmt.Sprintf("Inspection of %d files", len(arts)+len(errs))
	if len(arts)+len(errs) == 1 {
		name := ""
		if len(arts) == 1 {
			name = arts[0].File
		} else {
			name = errs[0].File
		}
		title = "Inspection of " + filepath.Base(name)
	}
	doc := e.newReport(title)
	doc.Subtitle = "what each measurement file is and what it shows"

	var all reports.Findings
	for _, x := range errs {
		all = append(all, reports.Finding{Severity: reports.SeverityCritical, Title: "File could not be inspected: " + x.File, Evidence: x.Error,
			Fix: "Check the path and that the file is one of the formats docs/inspect.md lists."})
	}
	for _, a := range arts {
		all = append(all, reportFindings(a.File, a.Findings)...)
		doc.Inputs = append(doc.Inputs, reports.KV{Key: a.File, Value: artifactKind(a.Kind) + " (" + string(a.Kind) + ")"})
	}
	for _, x := range errs {
		doc.Inputs = append(doc.Inputs, reports.KV{Key: x.File, Value: "not inspected"})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Severity > all[j].Severity })
	doc.Summary, doc.Verdict = findingsSummary(filesLead(arts, errs), arts, all)
	doc.Assumptions = inspectAssumptions()

	fs := reports.Section{Title: "Findings"}
	if len(all) == 0 {
		fs.Blocks = append(fs.Blocks, reports.Paragraph{Text: "No problem found in any file."})
	} else {
		fs.Blocks = append(fs.Blocks, reports.Paragraph{Text: "Most serious first. Evidence gives the file and line that show each finding; fixes are suggestions to try."}, all)
	}
	doc.Sections = append(doc.Sections, fs)
	for _, a := range arts {
		doc.Sections = append(doc.Sections, artifactSection(a))
	}
	return doc, nil
}

// inspectAssumptions are the conventions behind an inspect report.
func inspectAssumptions() []reports.Assumption {
	return []reports.Assumption{
		{Term: "formats", Value: "detected from content", Source: "ingest.ParseFile; never from the file name (docs/inspect.md)"},
		{Term: "busbw", Value: "as the file states it", Source: "nccl-tests' busbw column (doc/PERFORMANCE.md); 1 GB/s = 1e9 B/s"},
		{Term: "findings", Value: "rule-based", Source: "the triggers in docs/inspect.md: each names the line that shows it"},
	}
}

// artifactKind names an artifact's kind for people.
func artifactKind(k ingest.Kind) string {
	if k == ingest.KindHWBench {
		return "collsim hwbench report"
	}
	return kindTitle(k)
}

// filesLead is the first sentence of an inspect summary: how many files
// were read, of which kinds.
func filesLead(arts []*ingest.Artifact, errs []inspectError) string {
	kinds := map[string]int{}
	var order []string
	for _, a := range arts {
		k := artifactKind(a.Kind)
		if kinds[k] == 0 {
			order = append(order, k)
		}
		kinds[k]++
	}
	var ks []string
	for _, k := range order {
		ks = append(ks, fmt.Sprintf("%d %s", kinds[k], k))
	}
	s := fmt.Sprintf("Read %d of %d files", len(arts), len(arts)+len(errs))
	if len(ks) > 0 {
		s += " (" + strings.Join(ks, ", ") + ")"
	}
	return s + "."
}

// findingsSummary writes a summary that starts with lead, names the highest
// busbw of the runs in arts and the most serious finding with its evidence
// and fix, and the verdict: FAIL with a critical finding, WARN with a
// warning, PASS otherwise. all must be sorted, most serious first.
func findingsSummary(lead string, arts []*ingest.Artifact, all reports.Findings) (string, *reports.Verdict) {
	count := [3]int{}
	for _, f := range all {
		count[f.Severity]++
	}
	var b strings.Builder
	b.WriteString(lead + " ")
	if peak := peakRun(arts); peak != "" {
		b.WriteString(peak + " ")
	}
	v := &reports.Verdict{Status: reports.StatusPass, Label: "no problems found"}
	switch {
	case count[reports.SeverityCritical] > 0:
		v = &reports.Verdict{Status: reports.StatusFail, Label: fmt.Sprintf("%d critical, %d warning findings", count[reports.SeverityCritical], count[reports.SeverityWarning])}
	case count[reports.SeverityWarning] > 0:
		v = &reports.Verdict{Status: reports.StatusWarn, Label: fmt.Sprintf("%d warning findings", count[reports.SeverityWarning])}
	}
	if len(all) == 0 || all[0].Severity == reports.SeverityInfo {
		b.WriteString("Nothing points to a problem.")
		return b.String(), v
	}
	fmt.Fprintf(&b, "Most serious: %s", strings.TrimSuffix(all[0].Title, "."))
	if all[0].Evidence != "" {
		fmt.Fprintf(&b, " (%s)", clipText(all[0].Evidence, 160))
	}
	b.WriteString(".")
	if all[0].Fix != "" {
		b.WriteString(" " + all[0].Fix)
	}
	if n := count[reports.SeverityCritical] + count[reports.SeverityWarning] - 1; n > 0 {
		fmt.Fprintf(&b, " %d more critical or warning finding(s) below.", n)
	}
	return b.String(), v
}

// peakRun describes the nccl-tests run with the highest busbw of all files.
func peakRun(arts []*ingest.Artifact) string {
	best, at := -1.0, int64(0)
	var br *ingest.Run
	var bf string
	for _, a := range arts {
		for _, r := range a.Runs {
			for _, row := range r.Rows {
				if row.OOP.Valid && row.OOP.BusBW > best {
					best, at, br, bf = row.OOP.BusBW, row.Size, r, a.File
				}
			}
		}
	}
	if br == nil {
		return ""
	}
	ranks := ""
	if br.Ranks > 0 {
		ranks = fmt.Sprintf(" on %d ranks", br.Ranks)
	}
	return fmt.Sprintf("The highest busbw measured is %s (%s%s, %s, in %s).", gbps(best), br.CollectiveName, ranks, fmtBytes(at), filepath.Base(bf))
}

// artifactSection shows what one file holds: facts, plots and tables.
func artifactSection(a *ingest.Artifact) reports.Section {
	s := reports.Section{Title: filepath.Base(a.File) + ": " + artifactKind(a.Kind)}
	base := filepath.Base(a.File)
	if facts := artifactFacts(a); len(facts) > 0 {
		s.Blocks = append(s.Blocks, reports.Table{Caption: "What " + base + " states", Columns: []string{"item", "value"}, Rows: facts})
	}
	if len(a.Runs) > 0 {
		s.Blocks = append(s.Blocks, runsTable(a.Runs))
		for i, r := range a.Runs {
			series := runSeries(r)
			if len(series) == 0 {
				continue
			}
			title := fmt.Sprintf("%s: run %d, %s", base, i+1, runName(r))
			caption := "Measured busbw per message size"
			if r.Line > 0 {
				caption += fmt.Sprintf(", table at line %d", r.Line)
			}
			s.Blocks = append(s.Blocks, reports.BusBWPlot{Title: title, Caption: caption + ".", Series: series})
		}
	}
	if a.Topo != nil {
		s.Blocks = append(s.Blocks, topoBlocks(a.Topo)...)
	}
	for _, m := range a.Matrices {
		s.Blocks = append(s.Blocks, matrixBlock(base, m))
	}
	if len(a.Perftest) > 0 {
		s.Blocks = append(s.Blocks, perftestTable(a.Perftest))
	}
	if len(a.Ports) > 0 {
		t := reports.Table{Caption: "Network ports", Columns: []string{"device", "port", "state", "physical state", "rate (Gb/s)", "link layer"}}
		for _, p := range a.Ports {
			t.Rows = append(t.Rows, []string{p.Device, strconv.Itoa(p.Port), p.State, p.Physical, strconv.Itoa(p.RateGbps), p.LinkLayer})
		}
		s.Blocks = append(s.Blocks, t)
	}
	if len(a.Figures) > 0 {
		t := reports.Table{Caption: "Bandwidth figures quoted in the text", Columns: []string{"line", "figure", "GB/s", "source", "context"}}
		for _, f := range a.Figures {
			src := f.Section
			if i := strings.Index(src, " ("); i > 0 {
				src = src[:i]
			}
			t.Rows = append(t.Rows, []string{strconv.Itoa(f.Line), strconv.FormatFloat(f.Value, 'g', -1, 64) + " " + f.Unit, strconv.FormatFloat(f.GBps, 'g', -1, 64), src, clipText(f.Context, 80)})
		}
		s.Blocks = append(s.Blocks, t)
	}
	if n := len(a.Skipped); n > 0 {
		t := reports.Table{Caption: fmt.Sprintf("%d lines that looked like data but could not be used", n), Columns: []string{"line", "reason", "text"}}
		for i, k := range a.Skipped {
			if i == 20 {
				t.Notes = append(t.Notes, fmt.Sprintf("%d more: collsim inspect --format json lists them all.", n-20))
				break
			}
			t.Rows = append(t.Rows, []string{strconv.Itoa(k.Line), k.Reason, clipText(k.Text, 80)})
		}
		s.Blocks = append(s.Blocks, t)
	}
	if len(s.Blocks) == 0 {
		s.Blocks = append(s.Blocks, reports.Paragraph{Text: "The file holds no measurements beyond its findings."})
	}
	return s
}

// runName is "all_reduce, 8 ranks" for a run.
func runName(r *ingest.Run) string {
	s := r.CollectiveName
	if r.Ranks > 0 {
		s += fmt.Sprintf(", %d ranks", r.Ranks)
	}
	return s
}

// artifactFacts lists the hardware, software and NCCL facts of a file.
func artifactFacts(a *ingest.Artifact) [][]string {
	var rows [][]string
	seen := map[[2]string]bool{}
	add := func(k, v string) {
		if v != "" && !seen[[2]string{k, v}] {
			seen[[2]string{k, v}] = true
			rows = append(rows, []string{k, v})
		}
	}
	ranks, hostList, gpus := runsHardware(a.Runs)
	for _, r := range a.Runs {
		add("nccl-tests version", r.TestsVersion)
		add("NCCL version (nccl-tests header)", r.NCCLVersion)
	}
	if ranks > 0 {
		add("ranks", strconv.Itoa(ranks))
	}
	if len(hostList) > 0 {
		add("hosts", fmt.Sprintf("%d (%s)", len(hostList), clipText(strings.Join(hostList, ", "), 120)))
	}
	add("GPUs", strings.Join(gpus, ", "))
	if l := a.Log; l != nil {
		add("NCCL version (log)", l.Version)
		if l.Ranks > 0 {
			s := strconv.Itoa(l.Ranks)
			if l.Nodes > 0 {
				s += fmt.Sprintf(" on %d nodes", l.Nodes)
			}
			add("communicator", s)
		}
		add("network", l.Network)
		add("NICs NCCL lists", hcaNames(l.HCAs))
		if l.Channels > 0 {
			add("channels", strconv.Itoa(l.Channels))
		}
		if l.GDR != nil {
			add("GPUDirect RDMA", gdrWord(l))
		}
		if l.NVLSAvailable != nil {
			add("NVLS", availability(*l.NVLSAvailable))
		}
		add("transports", connectionCounts(l.Connections))
		add("NCCL environment", envString(l.Env))
	}
	for _, k := range sortedKeys(a.Machine) {
		add(k, a.Machine[k])
	}
	return rows
}

// runsTable summarises the nccl-tests runs of a file.
func runsTable(runs []*ingest.Run) reports.Table {
	t := reports.Table{Caption: "nccl-tests runs", Columns: []string{"run", "line", "collective", "type", "ranks", "rows", "sizes", "peak busbw (GB/s)", "at", "avg busbw (GB/s)"}}
	for i, r := range runs {
		lo, hi, peak, at := runExtent(r)
		sizes := "-"
		if hi >= 0 {
			sizes = fmtBytes(lo) + " - " + fmtBytes(hi)
		}
		ranks, peakS, atS, avg := "?", "-", "-", "-"
		if r.Ranks > 0 {
			ranks = strconv.Itoa(r.Ranks)
		}
		if peak >= 0 {
			peakS, atS = fmtGB(peak), fmtBytes(at)
		}
		if r.AvgBusBW > 0 {
			avg = strconv.FormatFloat(r.AvgBusBW, 'g', -1, 64)
		}
		name := r.CollectiveName
		if r.Params["collective"] != "" {
			name += " (inferred)"
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(i + 1), strconv.Itoa(r.Line), name, r.DType, ranks, strconv.Itoa(len(r.Rows)), sizes, peakS, atS, avg})
	}
	return t
}

// topoBlocks shows a topology: the path matrix as nvidia-smi prints it and
// the facts read from it.
func topoBlocks(t *ingest.TopoInfo) []reports.Block {
	var out []reports.Block
	if len(t.Labels) > 0 && len(t.Matrix) > 0 {
		m := reports.Table{Caption: "Path matrix (nvidia-smi topo -m notation: X, NV#, PIX, PXB, PHB, NODE, SYS)", Columns: append([]string{""}, t.Labels...)}
		for i, row := range t.Matrix {
			label := ""
			if i < len(t.Labels) {
				label = t.Labels[i]
			}
			cells := append([]string{label}, row...)
			if len(cells) > len(m.Columns) {
				cells = cells[:len(m.Columns)]
			}
			m.Rows = append(m.Rows, cells)
		}
		if len(t.NUMA) > 0 {
			m.Notes = append(m.Notes, "NUMA affinity per GPU: "+strings.Trim(fmt.Sprint(t.NUMA), "[]"))
		}
		out = append(out, m)
	}
	n := t.Node
	facts := [][]string{{"GPUs", fmt.Sprintf("%d, %s", n.GPUs, nodeGPU(n))}}
	if nv := nvlinkSummary(n.NVLink); nv != "" {
		facts = append(facts, []string{"NVLink", nv})
	}
	for si, sk := range n.Sockets {
		facts = append(facts, []string{fmt.Sprintf("socket %d PCIe tree", si), strings.Join(hostBridgeStrings(sk), " ")})
	}
	if n.NICs.Count > 0 {
		facts = append(facts, []string{"NICs", fmt.Sprintf("%d, %s", n.NICs.Count, nicSpeed(t))})
	}
	for _, note := range t.Notes {
		facts = append(facts, []string{"note", note})
	}
	out = append(out, reports.Table{Caption: "Node layout collsim reads from it", Columns: []string{"item", "value"}, Rows: facts})
	return out
}

// matrixBlock draws a square matrix as a heat map, or lists any other
// matrix (CPU-to-GPU copies, connectivity flags) as a table.
func matrixBlock(file string, m *ingest.Matrix) reports.Block {
	square := len(m.Rows) == len(m.Cols) && len(m.Rows) > 0 && len(m.Values) == len(m.Rows)
	for i := 0; square && i < len(m.Rows); i++ {
		square = m.Rows[i] == m.Cols[i] && len(m.Values[i]) == len(m.Cols)
		for _, v := range m.Values[i] {
			square = square && !math.IsInf(v, 0)
		}
	}
	title := clipText(m.Title, 90)
	if m.Path != "" && !strings.Contains(m.Title, m.Path) {
		title += " [" + m.Path + "]"
	}
	caption := "From " + file
	if m.P2P != nil {
		caption += map[bool]string{true: ", P2P enabled", false: ", P2P disabled"}[*m.P2P]
	}
	if m.Path != "" {
		caption += ", path " + m.Path
	}
	caption += "."
	if square && m.Unit != "" {
		labels := make([]string, len(m.Rows))
		for i, r := range m.Rows {
			labels[i] = gpuLabel(r)
		}
		return reports.HeatMapPlot{Title: title, Caption: caption, Labels: labels, Values: m.Values, Unit: m.Unit}
	}
	t := reports.Table{Caption: title, Columns: []string{""}}
	for _, c := range m.Cols {
		t.Columns = append(t.Columns, gpuLabel(c))
	}
	for i, row := range m.Values {
		label := ""
		if i < len(m.Rows) {
			label = gpuLabel(m.Rows[i])
		}
		cells := []string{label}
		for j, v := range row {
			if j+1 >= len(t.Columns) {
				break
			}
			if math.IsNaN(v) {
				cells = append(cells, "N/A")
			} else {
				cells = append(cells, strconv.FormatFloat(v, 'g', 6, 64))
			}
		}
		t.Rows = append(t.Rows, cells)
	}
	t.Notes = append(t.Notes, caption)
	if m.Unit != "" {
		t.Notes = append(t.Notes, "Values in "+m.Unit+".")
	}
	return t
}

// gpuLabel turns a bare device number ("3") into "GPU3".
func gpuLabel(s string) string {
	if _, err := strconv.Atoi(s); err == nil {
		return "GPU" + s
	}
	return s
}

// perftestTable lists perftest (and hwbench loopback) results per size.
func perftestTable(ps []*ingest.PerftestResult) reports.Table {
	t := reports.Table{Caption: "RDMA tests (perftest)", Columns: []string{"test", "device", "link", "size", "peak (Gb/s)", "average (Gb/s)", "typical latency (us)"}}
	for _, p := range ps {
		for _, r := range p.Rows {
			num := func(v float64) string {
				if v == 0 || math.IsNaN(v) {
					return "-"
				}
				return strconv.FormatFloat(v, 'f', 2, 64)
			}
			test := p.Test
			if p.Bidirectional {
				test += " -b (both directions summed)"
			}
			t.Rows = append(t.Rows, []string{test, p.Device, p.LinkType, model.FormatBytes(model.Bytes(r.Bytes)), num(r.PeakGbs), num(r.AvgGbs), num(r.LatTypUs)})
		}
	}
	return t
}
