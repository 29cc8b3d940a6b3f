package cli

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/calibrate/accuracy"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// reportDate is the fixed clock of the report tests.
var reportDate = time.Date(2026, 3, 4, 10, 15, 0, 0, time.UTC)

// runAt runs collsim like runCLI with the clock fixed at reportDate.
func runAt(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"collsim"}, args...)
	e := &env{stdout: &out, stderr: &errb, args: full, now: func() time.Time { return reportDate }}
	code = runWith(context.Background(), e, full)
	return code, out.String(), errb.String()
}

// readFile returns a file's content or fails the test.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// svgLink matches the figure links of a Markdown report.
var svgLink = regexp.MustCompile(`\]\(([^)]+\.svg)\)`)

// TestReportMarkdownGolden writes Markdown reports and compares their text
// with testdata/report; every figure the text links to must exist.
func TestReportMarkdownGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		// the default scenario: NIC-bound, with the one-node comparison
		{"report/predict.md", []string{"predict", "--engine", "analytic", "-b", "1M", "-e", "1G", "-f", "4"}},
		// one NVLink node, another collective, a forced algorithm
		{"report/predict_h100.md", []string{"predict", "--node", "dgx-h100", "--nodes", "1", "--collective", "allgather", "--algo", "ring", "--engine", "analytic", "-b", "64K", "-e", "256M", "-f", "16"}},
		// nccl-tests with a log and ibstat; p2p matrices (heat maps) and topology of a GPU pair without P2P
		{"report/inspect.md", []string{"inspect", corpus + "/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_allgather_2.txt", corpus + "/ibstat_snellius_h100_node.txt",
			corpus + "/p2pbw_rtx2080ti_1x2_pcie-nop2p_autodl.txt", corpus + "/topo_rtx2080ti_1x2_pcie-nop2p_autodl.txt"}},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.golden), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, filepath.Base(tc.golden))
			code, stdout, stderr := runAt(t, append(tc.args, "--report", out)...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if stdout == "" {
				t.Error("the command's normal output is missing")
			}
			md := readFile(t, out)
			for _, m := range svgLink.FindAllStringSubmatch(md, -1) {
				if _, err := os.Stat(filepath.Join(dir, m[1])); err != nil {
					t.Errorf("figure %s: %v", m[1], err)
				}
			}
			if n := len(svgLink.FindAllString(md, -1)); n == 0 {
				t.Error("no figure in the report")
			}
			// Every model term is listed with its value; the rows are left out
			// of the golden so that adding a term to sim.Params does not
			// change it (TestReportTermSources checks them).
			params := sim.DefaultParams()
			for _, term := range params.Terms() {
				if strings.HasPrefix(tc.golden, "report/predict") && !strings.Contains(md, "| "+term.Name+": "+term.Doc+" | "+fmtTerm(*term.Value, term.Unit)+" | ") {
					t.Errorf("assumptions lack %s = %v", term.Name, *term.Value)
				}
			}
			md = termRow.ReplaceAllString(md, "")
			checkGolden(t, tc.golden, strings.ReplaceAll(md, dir, "$TMP"))
		})
	}
}

// termRow matches an assumptions row of a sim.Params term ("| net.eff.ib: ...").
var termRow = regexp.MustCompile(`(?m)^\| [a-z][a-z0-9]*(\.[a-z0-9]+)+: .*\n`)

// TestReportTermSources: every model term has a source, and one that a
// profile changed names the profile and the default.
func TestReportTermSources(t *testing.T) {
	params := sim.DefaultParams()
	if err := params.Set("net.eff.ib", 0.8); err != nil {
		t.Fatal(err)
	}
	as := modelAssumptions(params, "2.30", "default", sim.EngineAnalytic, "p.yaml", map[string]string{"nvls.lat.us": "fitted here"})
	n := 0
	for _, a := range as {
		name, _, ok := strings.Cut(a.Term, ":")
		if !ok {
			continue
		}
		n++
		switch {
		case strings.TrimSpace(a.Source) == "" || a.Value == "":
			t.Errorf("%s: value %q, source %q", name, a.Value, a.Source)
		case name == "net.eff.ib" && !strings.HasPrefix(a.Source, "calibration profile p.yaml (default 0.95: 46-48 of 50 GB/s"):
			t.Errorf("net.eff.ib source %q", a.Source)
		case name == "nvls.lat.us" && a.Source != "fitted here":
			t.Errorf("nvls.lat.us source %q", a.Source)
		}
	}
	if n != len(params.Terms()) {
		t.Errorf("%d term rows for %d terms", n, len(params.Terms()))
	}
}

// TestReportHTML checks the structure of each command's HTML report: the
// title, the summary, inline plots, the data tables, and nothing that
// would be fetched from anywhere.
func TestReportHTML(t *testing.T) {
	if testing.Short() {
		t.Skip("renders every report kind; the full run covers it")
	}
	moc := corpus + "/nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt"
	snellius := []string{corpus + "/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt", corpus + "/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_allgather_2.txt"}
	tests := []struct {
		name string
		args []string
		want []string
		code int
	}{
		{"predict", []string{"predict", "--engine", "analytic", "-b", "1M", "-e", "256M", "-f", "4"},
			[]string{"<title>AllReduce on default-4x-dgx-a100-2x100g-roce (4 x dgx-a100): prediction</title>", "limited by the NICs (2x100G-roce per node",
				"More or faster NICs", "Data behind", "Busiest links at 256M", "lat.step.net.simple", "nccl-tests#290", "Reproduce", "2026-03-04 10:15 UTC"}, ExitOK},
		{"inspect", []string{"inspect", corpus + "/p2pbw_a100sxm80_1x8_nvswitch_distserve3.txt", moc},
			[]string{"<title>Inspection of 2 files</title>", "net-without-gdr", "load nvidia-peermem", "Data behind", "GPU7", "run 1, all_reduce"}, ExitOK},
		{"hwbench", []string{"hwbench", "--fake", "-q", "--maxbytes", "64K", "--copybytes", "1M", "--iters", "2", "--warmup", "1"},
			[]string{"<title>hwbench on fakehost</title>", "6 of 7 probes ran", "not measurements", "Data behind", "Probes, in run order", "all_reduce, 4 ranks"}, ExitOK},
		// RoCE without GPUDirect RDMA against the healthy model: the check fails (exit 1) and the report says why
		{"validate", []string{"validate", "--node", "dgx-h100", "--gpus-per-node", "1", "--nodes", "2", "--nics", "1x400G-roce", "--measured", moc},
			[]string{"<title>Validation of 2 x dgx-h100</title>", "FAIL", "Most likely cause: No GPUDirect RDMA", "±10% of model", "Point by point", "no-gpudirect-rdma", "Diagnosis",
				// the file finding behind the diagnosis has the diagnosis's severity
				"critical</div>\n<p class=\"title\">network transfers do not use GPUDirect RDMA", "(net-without-gdr); see Diagnosis: no-gpudirect-rdma"}, ExitFailed},
		{"calibrate", []string{"calibrate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", snellius[0], "--measured", snellius[1]},
			[]string{"<title>Calibration of 2 x hgx-h100-4gpu</title>", "Fitted terms with their 1σ uncertainty", "fitted here to", "model before", "model after", "error per size before and after the fit", "No profile was written"}, ExitOK},
		{"accuracy", []string{"accuracy", "--cases", "../../ingest/testdata/cases.yaml", "--only", "moc_,bcm_"},
			[]string{"<title>Model accuracy on 2 published runs</title>", "Bandwidth regime: median |busbw error| per case", "moc_h100_2x1_roce400_nogdr", "validate names no-gpudirect-rdma", "Targets", "NOT MET"}, ExitFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "r.html")
			args := append([]string(nil), tc.args...)
			if tc.name == "hwbench" {
				args = append(args, "--out", filepath.Join(dir, "hw.json"))
			}
			code, stdout, stderr := runAt(t, append(args, "--report", out)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			if stdout == "" {
				t.Error("the command's normal output is missing")
			}
			page := readFile(t, out)
			for _, w := range append(tc.want, "<svg", "<table", "<details", "Summary", "Inputs", "Assumptions") {
				if !strings.Contains(page, w) {
					t.Errorf("report lacks %q", w)
				}
			}
			for _, bad := range []string{"http://", "https://", "<script", "<img", "<link"} {
				if strings.Contains(page, bad) {
					t.Errorf("report contains %q", bad)
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.Contains(e.Name(), ".tmp") {
					t.Errorf("temporary file left behind: %s", e.Name())
				}
			}
		})
	}
}

// TestReportBadPath: an unknown extension is a usage error that lists the
// known ones; a missing directory and a target that is a directory are
// too, found before any work, leaving no file.
func TestReportBadPath(t *testing.T) {
	dir := t.TempDir()
	file := corpus + "/ibstat_snellius_h100_node.txt"
	isDir := filepath.Join(dir, "taken.html")
	if err := os.Mkdir(isDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		code    int
		stderr  string
		stdout  bool // the normal output was printed
		created bool // something besides taken.html appeared in dir
	}{
		{"predict pdf", []string{"predict", "--engine", "analytic", "--report", filepath.Join(dir, "r.pdf")}, ExitBadInput, `unknown report extension ".pdf" (known: .html, .htm, .md)`, false, false},
		{"inspect no extension", []string{"inspect", file, "--report", filepath.Join(dir, "report")}, ExitBadInput, `unknown report extension "" (known: .html, .htm, .md)`, false, false},
		{"predict extension only", []string{"predict", "--engine", "analytic", "--report", filepath.Join(dir, ".md")}, ExitBadInput, "give the report a name before its extension (report.md)", false, false},
		{"hwbench txt", []string{"hwbench", "--fake", "-q", "--out", "", "--report", filepath.Join(dir, "r.txt")}, ExitBadInput, "(known: .html, .htm, .md)", false, false},
		{"empty", []string{"predict", "--report", ""}, ExitBadInput, "give a file name ending in .html, .htm, .md", false, false},
		{"validate docx", []string{"validate", "--node", "dgx-h100", "--measured", file, "--report", filepath.Join(dir, "r.docx")}, ExitBadInput, "validate: --report", false, false},
		{"calibrate csv", []string{"calibrate", "--node", "dgx-h100", "--measured", file, "--report", filepath.Join(dir, "r.csv")}, ExitBadInput, "calibrate: --report", false, false},
		{"accuracy missing directory", []string{"accuracy", "--cases", "../../ingest/testdata/cases.yaml", "--report", filepath.Join(dir, "no", "a.html")}, ExitBadInput, "accuracy: --report", false, false},
		{"missing directory", []string{"predict", "--engine", "analytic", "--report", filepath.Join(dir, "missing", "r.html")}, ExitBadInput, "missing does not exist", false, false},
		{"inspect missing directory", []string{"inspect", file, "--report", filepath.Join(dir, "missing", "r.md")}, ExitBadInput, "missing does not exist", false, false},
		{"target is a directory", []string{"predict", "--engine", "analytic", "-b", "1M", "-e", "4M", "--report", isDir}, ExitBadInput, "taken.html: is a directory", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runAt(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.stderr) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr = %q, want one line with %q", stderr, tc.stderr)
			}
			if (stdout != "") != tc.stdout {
				t.Errorf("stdout = %q, want output: %v", stdout, tc.stdout)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("directory holds %v, want only taken.html", names)
			}
		})
	}
}

// TestReportDeterministic: the same command twice, with the same clock,
// writes byte-identical reports (and Markdown figures).
func TestReportDeterministic(t *testing.T) {
	for _, ext := range []string{".html", ".md"} {
		for _, args := range [][]string{
			{"predict", "--node", "dgx-h100", "--nodes", "2", "-b", "1M", "-e", "64M", "-f", "8"},
			{"inspect", corpus + "/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt", corpus + "/p2pbw_a100sxm80_1x8_nvswitch_distserve3.txt"},
		} {
			t.Run(args[0]+ext, func(t *testing.T) {
				dir := t.TempDir()
				out := filepath.Join(dir, "r"+ext)
				snapshot := func() map[string]string {
					if code, _, stderr := runAt(t, append(args, "--report", out)...); code != ExitOK {
						t.Fatalf("exit %d: %s", code, stderr)
					}
					files := map[string]string{}
					entries, err := os.ReadDir(dir)
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range entries {
						files[e.Name()] = readFile(t, filepath.Join(dir, e.Name()))
					}
					return files
				}
				a, b := snapshot(), snapshot()
				if len(a) != len(b) {
					t.Fatalf("%d files, then %d", len(a), len(b))
				}
				for name, content := range a {
					if b[name] != content {
						t.Errorf("%s differs between two runs", name)
					}
				}
			})
		}
	}
}

// TestPredictSummary checks the executive summary against the bottleneck
// each cluster has: what limits it and what would help.
func TestPredictSummary(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"NIC-bound with one-node comparison", nil, []string{"limited by the NICs (2x100G-roce per node", "Inside one node the same AllReduce reaches", "bound by NVLink", "More or faster NICs than 2x100G-roce"}},
		{"NVLink with NVLS", []string{"--node", "dgx-h100", "--nodes", "1"}, []string{"limited by NVLink", "NVLS already reduces in the NVSwitch"}},
		{"sockets", []string{"--nics", "1x10G-tcp"}, []string{"NET/Socket", "RDMA NICs (InfiniBand or RoCE) would help most"}},
		{"no GPUDirect RDMA", []string{"--set", "NCCL_NET_GDR_LEVEL=LOC"}, []string{"per-channel host-memory read ceiling", "enabling them would help most"}},
		{"PCIe without P2P", []string{"--node", "pcie-gpu-server", "--nodes", "1"}, []string{"Why: SHM", "host-memory reads, traffic both ways (SHM)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.md")
			args := append([]string{"predict", "--engine", "analytic", "-b", "64M", "-e", "1G", "-f", "4", "--report", out}, tc.args...)
			if code, _, stderr := runAt(t, args...); code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			md := readFile(t, out)
			summary, _, _ := strings.Cut(md[strings.Index(md, "## Summary"):], "## Inputs")
			for _, w := range tc.want {
				if !strings.Contains(summary, w) {
					t.Errorf("summary lacks %q:\n%s", w, summary)
				}
			}
		})
	}
}

// TestRecommendation covers every bottleneck class on synthetic points.
func TestRecommendation(t *testing.T) {
	ci := clusterJSON{NICs: "8x400G-ib"}
	busy := []sim.LinkUse{{Link: "x", Busy: 1}}
	tests := []struct {
		pt   sim.Point
		ts   model.TransportSummary
		want string
	}{
		{sim.Point{BottleneckClass: "NIC", Bottleneck: "n", Utilisation: busy}, model.TransportSummary{Net: "IB", GDR: true, NICsUsed: 4, NICsInstalled: 8}, "Only 4 of the 8 NICs"},
		{sim.Point{BottleneckClass: "NIC", Bottleneck: "n", Utilisation: busy}, model.TransportSummary{Net: "IB", NICsUsed: 8, NICsInstalled: 8}, "GPUDirect RDMA is off"},
		{sim.Point{BottleneckClass: "NIC", Bottleneck: "n", Utilisation: busy}, model.TransportSummary{Net: "IB", GDR: true, NICsUsed: 8, NICsInstalled: 8}, "More or faster NICs than 8x400G-ib"},
		{sim.Point{BottleneckClass: "fabric", Bottleneck: "leaf0->spine", Utilisation: busy}, model.TransportSummary{}, "less oversubscribed fabric"},
		{sim.Point{BottleneckClass: "NVLink", Bottleneck: "g", Utilisation: busy}, model.TransportSummary{}, "faster NVLink generation"},
		{sim.Point{BottleneckClass: "PCIe", Bottleneck: "p", Utilisation: busy}, model.TransportSummary{}, "PCIe is the limit"},
		{sim.Point{BottleneckClass: "inter-socket", Bottleneck: "s", Utilisation: busy}, model.TransportSummary{}, "crosses the CPU sockets"},
		{sim.Point{BottleneckClass: "channel ceiling", Bottleneck: "per-channel copy ceiling of one CTA"}, model.TransportSummary{}, "more channels (NCCL_MIN_NCHANNELS)"},
		{sim.Point{BottleneckClass: "NIC", Bottleneck: "n", Utilisation: []sim.LinkUse{{Link: "n", Busy: 0.2}}}, model.TransportSummary{}, "Larger messages"},
	}
	for _, tc := range tests {
		if got := recommendation(tc.pt, ci, tc.ts); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.pt.BottleneckClass, got, tc.want)
		}
	}
}

// TestInspectReportSynthetic builds an inspect report from hand-made
// records with awkward content (a non-square matrix, N/A and infinite
// cells, a run without valid rows, an unreadable file) and renders it.
func TestInspectReportSynthetic(t *testing.T) {
	nan := math.NaN()
	arts := []*ingest.Artifact{
		{File: "p2p.txt", Kind: ingest.KindP2PBandwidth, Matrices: []*ingest.Matrix{
			{Title: "square with N/A", Metric: "bandwidth-uni", Unit: "GB/s", Rows: []string{"0", "1"}, Cols: []string{"0", "1"}, Values: [][]float64{{500, nan}, {20, 500}}},
			{Title: "square with inf", Metric: "bandwidth-uni", Unit: "GB/s", Rows: []string{"0", "1"}, Cols: []string{"0", "1"}, Values: [][]float64{{500, math.Inf(1)}, {20, 500}}},
			{Title: "CPU to GPU", Metric: "bandwidth-uni", Unit: "GB/s", Path: "h2d", Rows: []string{"CPU"}, Cols: []string{"0", "1"}, Values: [][]float64{{25, nan}}},
		}},
		{File: "t.txt", Kind: ingest.KindNCCLTests, Runs: []*ingest.Run{
			{CollectiveName: "all_reduce", Ranks: 2, Rows: []ingest.Row{{Size: 0, OOP: ingest.Result{Valid: true}}, {Size: 8, OOP: ingest.Result{BusBW: nan, Valid: true}}}},
			{CollectiveName: "all_gather", Rows: []ingest.Row{{Size: 1 << 20, OOP: ingest.Result{BusBW: 10, Valid: true}}, {Size: 1 << 20, OOP: ingest.Result{BusBW: 11, Valid: true}}}},
		}, Findings: []ingest.Finding{{Code: ingest.FindSocketNotIB, Severity: ingest.SevWarning, Message: "sockets", Evidence: "via NET/Socket", Line: 7}}},
	}
	errs := []inspectError{{File: "gone.txt", Error: "open gone.txt: no such file or directory"}}
	e := &env{args: []string{"/usr/bin/collsim", "inspect", "p2p.txt"}, now: func() time.Time { return reportDate }}
	doc, err := inspectReport(e, arts, errs)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(); err != nil {
		t.Fatal(err)
	}
	if doc.Verdict.Status != reports.StatusFail || !strings.Contains(doc.Summary, "Read 2 of 3 files") || !strings.Contains(doc.Summary, "gone.txt") {
		t.Errorf("verdict %v, summary %q", doc.Verdict, doc.Summary)
	}
	if doc.CommandLine[0] != "collsim" {
		t.Errorf("command line %q", doc.CommandLine)
	}
	var heat, tables, plots int
	for _, s := range doc.Sections {
		for _, b := range s.Blocks {
			switch b := b.(type) {
			case reports.HeatMapPlot:
				heat++
				if b.Labels[0] != "GPU0" {
					t.Errorf("labels %q", b.Labels)
				}
			case reports.Table:
				tables++
			case reports.BusBWPlot:
				plots++
				if len(b.Series) != 1 || len(b.Series[0].Points) != 1 {
					t.Errorf("busbw plot %+v: want the one usable point", b.Series)
				}
			}
		}
	}
	if heat != 1 || plots != 1 || tables < 3 {
		t.Errorf("%d heat maps, %d busbw plots, %d tables", heat, plots, tables)
	}
	var buf bytes.Buffer
	if err := reports.WriteHTML(&buf, doc); err != nil {
		t.Fatal(err)
	}
}

// TestValidateReportSynthetic renders a validation with awkward content: a
// tolerance above 100% (no band), a point without a model, a size of 0, and
// a diagnosis that reproduces the measurement.
func TestValidateReportSynthetic(t *testing.T) {
	spec, err := scenarios.Overrides{Node: "dgx-h100", Nodes: 1}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	v := &calibrate.Validation{Cluster: "1 x dgx-h100", Engine: "analytic", Tolerance: 2, Series: []*calibrate.SeriesCheck{{
		Series: "x.txt:3 all_reduce_perf", File: "x.txt", Collective: "all_reduce", Ranks: 8, Gate: calibrate.RegimeBandwidth, Failures: 1,
		Points: []calibrate.PointCheck{
			{Size: 0, MeasuredTimeUs: 10, ModelTimeUs: 10, Regime: calibrate.RegimeLatency},
			{Size: 1 << 26, MeasuredTimeUs: 900, ModelTimeUs: 300, MeasuredBusBW: 130, ModelBusBW: 390, Error: 2, Ratio: 3, Regime: calibrate.RegimeBandwidth},
			{Size: 1 << 27, MeasuredTimeUs: 1800, ModelTimeUs: 0, MeasuredBusBW: 130, ModelBusBW: math.NaN(), Regime: calibrate.RegimeBandwidth, Pass: true},
		},
	}}, Diagnoses: []calibrate.Diagnosis{{Code: "nvlink-degraded", Title: "An NVLink runs slow", Severity: ingest.SevError, Evidence: []string{"P2P 0->1: 40 GB/s"},
		Fix: "Reseat the GPU", Reproduce: "--set X=1", Residual: 0.01, Baseline: 0.9, Explains: true}},
		Findings: []ingest.Finding{{Code: ingest.FindNoGDR, Severity: ingest.SevWarning, Message: "no GDR", Evidence: "x.txt:9: via NET/IB/0", Line: 9}},
		Notes:    []string{"a note"}}
	e := &env{args: []string{"collsim", "validate"}, now: func() time.Time { return reportDate }}
	doc, err := validateReport(e, v, cl, sim.DefaultParams(), nil, validateInputs{version: "2.30", versionFrom: "default", engine: sim.EngineAnalytic})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := reports.WriteHTML(&buf, doc); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, w := range []string{"FAIL", "1 of 2 gate points outside ±200%", "Most likely cause: An NVLink runs slow", "reproduced by --set X=1", "a note", "error &#43;200.0% (the cluster is slower than the model: the model&#39;s busbw is 3.00x the measured)"} {
		if !strings.Contains(page, w) {
			t.Errorf("report lacks %q", w)
		}
	}
	if strings.Contains(page, "of model</") || strings.Contains(page, "band low") {
		t.Error("a tolerance above 100% drew a band")
	}
	if strings.Contains(page, "x.txt:9: 9:") || strings.Contains(page, "9: x.txt:9") {
		t.Error("finding evidence names the line twice")
	}
}

// TestAccuracyReportSynthetic: a missed target and a missed cause fail the
// verdict; cases without points, and no cases at all, still render.
func TestAccuracyReportSynthetic(t *testing.T) {
	e := &env{args: []string{"collsim", "accuracy"}, now: func() time.Time { return reportDate }}
	bw := calibrate.RegimeStats{Regime: calibrate.RegimeBandwidth, Points: 2, MedianAbs: 0.05, P90Abs: 0.08}
	rep := &accuracy.Report{CasesFile: "cases.yaml", Engine: "analytic",
		Cases: []accuracy.CaseResult{
			{ID: "a", Quality: "good", Uncalibrated: []calibrate.RegimeStats{bw}, Calibrated: []calibrate.RegimeStats{bw},
				Points: []accuracy.Point{{Size: 1 << 26, MeasuredBusBW: 100, UncalBusBW: 105, CalBusBW: 101}, {Size: 1 << 27, MeasuredBusBW: 100, UncalBusBW: math.NaN(), CalBusBW: 100}}},
			{ID: "b", Quality: "degraded", Expect: "no-gpudirect-rdma", Diagnosed: []string{"socket-instead-of-ib"}},
		},
		Targets: []accuracy.Target{{What: "bandwidth", Want: 0.1, Got: 0.05, Cases: 1, Met: true}, {What: "latency", Want: 0.2, Got: 0.5, Cases: 1}}}
	for _, r := range []*accuracy.Report{rep, {CasesFile: "none.yaml", Engine: "des"}} {
		doc, err := accuracyReport(e, r, []string{"a"})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := reports.WriteHTML(&buf, doc); err != nil {
			t.Fatal(err)
		}
		if r == rep {
			page := buf.String()
			for _, w := range []string{"FAIL", "Missed: latency (50.0%, target 20.0%)", "b: validate misses no-gpudirect-rdma", "NOT MET", "<svg"} {
				if !strings.Contains(page, w) {
					t.Errorf("report lacks %q", w)
				}
			}
		}
	}
}

// TestPredictReportRepeatedSizes: a step factor below 2 rounds several
// requested sizes to the same printed size (nccl-tests prints the rows
// twice); the report's plots take each size once instead of failing.
func TestPredictReportRepeatedSizes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	code, _, errs := runCLI(t, "predict", "--node", "dgx-a100", "--nodes", "1", "-b", "8", "-e", "64", "-f", "1.1", "--engine", "analytic", "--report", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// TestPredictReportRows: rows whose busiest link idles most of the call
// say latency-bound; NCCL's algorithm and protocol switches are marked on
// both curves and explained; a time that steps back is explained.
func TestPredictReportRows(t *testing.T) {
	busy := func(u float64) []sim.LinkUse { return []sim.LinkUse{{Link: "node0/nic0->fabric/switch", Busy: u}} }
	lat := sim.Point{BottleneckClass: "NIC", Bottleneck: "node0/nic0->fabric/switch", Utilisation: busy(0.02)}
	if got := rowBottleneck(lat); !strings.HasPrefix(got, "latency-bound (busiest: NIC node0/nic0->fabric/switch, 2% busy") {
		t.Errorf("8-byte row: %q", got)
	}
	bw := sim.Point{BottleneckClass: "NIC", Bottleneck: "node0/nic0->fabric/switch", Utilisation: busy(1)}
	if got := rowBottleneck(bw); got != "NIC: node0/nic0->fabric/switch" {
		t.Errorf("1G row: %q", got)
	}
	ceil := sim.Point{BottleneckClass: "channel ceiling", Bottleneck: "per-channel copy ceiling of one CTA"}
	if latencyBound(ceil) {
		t.Error("a per-channel ceiling is a bandwidth limit, not latency")
	}
	ch := func(a model.Algo, p model.Proto, n int) model.Choice {
		return model.Choice{Algo: a, Proto: p, Channels: n}
	}
	pts := []sim.Point{
		{Size: 4 << 20, TimeUs: 300, Choice: ch(model.AlgoTree, model.ProtoLL128, 4)},
		{Size: 8 << 20, TimeUs: 449, Choice: ch(model.AlgoTree, model.ProtoLL128, 4)},
		{Size: 16 << 20, TimeUs: 258, Choice: ch(model.AlgoRing, model.ProtoSimple, 8)},
		{Size: 32 << 20, TimeUs: 500, Choice: ch(model.AlgoRing, model.ProtoSimple, 8)},
	}
	marks, text := choiceSwitches(pts)
	if len(marks) != 1 || marks[0].Size != 16<<20 || marks[0].Label != "ring/simple" {
		t.Errorf("marks %+v", marks)
	}
	if !strings.Contains(text, "tree/ll128 to ring/simple at 16M") {
		t.Errorf("switch text %q", text)
	}
	if got := timeStepText(pts); !strings.Contains(got, "16M takes 258 us against 449 us for 8M: NCCL switches from tree/ll128 to ring/simple") {
		t.Errorf("time step text %q", got)
	}
	if m, s := choiceSwitches(pts[:2]); m != nil || s != "" {
		t.Error("marks without a switch")
	}
}

// TestAssumptionsApply: the assumptions list the terms of the cluster's
// NVLink and PCIe generations and NIC kind, and collapse the others; one
// node has no network terms; a term a profile changed always shows.
func TestAssumptionsApply(t *testing.T) {
	build := func(o scenarios.Overrides) *model.Cluster { return buildCluster(t, o) }
	names := func(as []reports.Assumption) []string {
		var out []string
		for _, a := range as {
			if n, _, ok := strings.Cut(a.Term, ":"); ok {
				out = append(out, n)
			}
		}
		return out
	}
	params := sim.DefaultParams()
	if err := params.Set("net.eff.efa", 0.7); err != nil {
		t.Fatal(err)
	}
	as := modelAssumptions(params, "2.30", "default", sim.EngineAnalytic, "p.yaml", nil)
	h100 := build(scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "8x400G-ib"})
	keep, other := splitAssumptions(as, []*model.Cluster{h100}, nil)
	k, o := names(keep), names(other)
	for _, want := range []string{"nvlink.eff.4", "pcie.eff.5", "net.eff.ib", "lat.step.net.simple", "nvls.eff.hopper", "net.eff.efa", "chan.cap.simple.hopper"} {
		if !slices.Contains(k, want) {
			t.Errorf("%s not among the applicable terms %q", want, k)
		}
	}
	for _, want := range []string{"nvlink.eff.2", "pcie.eff.6", "net.eff.roce", "lat.net.tcp", "socket.gbps", "nvls.eff.blackwell", "chan.cap.ll.ampere", "chan.cap.simple.volta"} {
		if !slices.Contains(o, want) {
			t.Errorf("%s not collapsed; collapsed: %q", want, o)
		}
	}
	if len(keep)+len(other) != len(as) {
		t.Errorf("%d + %d terms for %d", len(keep), len(other), len(as))
	}
	one := build(scenarios.Overrides{Node: "dgx-h100", Nodes: 1})
	_, other = splitAssumptions(as, []*model.Cluster{one}, nil)
	if o := names(other); !slices.Contains(o, "net.eff.ib") || !slices.Contains(o, "lat.step.net.ll") {
		t.Errorf("one node keeps network terms; collapsed: %q", o)
	}
	// Two designs: a term stays if it applies to either.
	roce := build(scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "2x100G-roce"})
	keep, _ = splitAssumptions(as, []*model.Cluster{h100, roce}, nil)
	if k := names(keep); !slices.Contains(k, "net.eff.roce") || !slices.Contains(k, "nvlink.eff.3") {
		t.Errorf("terms of the second design collapsed: %q", k)
	}
}

// TestReportTopologyEverywhere: every report of a cluster carries the
// topology picture, with the bottleneck named where the report has one.
func TestReportTopologyEverywhere(t *testing.T) {
	moc := corpus + "/nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt"
	snellius := corpus + "/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt"
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"predict", "--engine", "analytic", "-b", "1M", "-e", "64M", "-f", "8"}, ExitOK, "bottleneck: node0/nic0-&gt;fabric/switch (NIC), 94.7% busy"},
		{compareArgs, ExitOK, "Topology of ib with the bottleneck at 512M"},
		{[]string{"scale", "--node", "dgx-h100", "--nics", "4x400G-roce", "--max-nodes", "4"}, ExitOK, "Topology at 4 nodes"},
		{[]string{"validate", "--node", "dgx-h100", "--gpus-per-node", "1", "--nodes", "2", "--nics", "1x400G-roce", "--measured", moc}, ExitFailed, "the red link is the model&#39;s bottleneck"},
		{[]string{"calibrate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", snellius}, ExitOK, "The cluster the measurements come from"},
		// A mesh node: 6 links per pair, 18 per H100 (not one pair's 6).
		{[]string{"predict", "--node", "hgx-h100-4gpu", "--engine", "analytic", "-b", "1G", "-e", "1G"}, ExitOK, "NVLink4, 18 links per GPU"},
		{[]string{"predict", "--node", "dgx-h100", "--engine", "analytic", "-b", "1G", "-e", "1G"}, ExitOK, "NVLink4, 18 links per GPU, through NVSwitch"},
	}
	for _, tc := range tests {
		t.Run(tc.args[0], func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.html")
			if code, _, stderr := runAt(t, append(append([]string{}, tc.args...), "--report", out)...); code != tc.code {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			page := readFile(t, out)
			if !strings.Contains(page, "NVLink domain") || !strings.Contains(page, tc.want) {
				t.Errorf("no topology picture with %q", tc.want)
			}
		})
	}
	// A bottleneck that is no link is named in the caption, not claimed in
	// the title.
	ceil := &sim.Point{BottleneckClass: "channel ceiling", Bottleneck: "per-channel host-memory read ceiling"}
	spec, err := scenarios.Overrides{Node: "pcie-gpu-server", Nodes: 1}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	c, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	tp := topologyPicture("Topology", "at 64M", c, ceil)
	if tp.Title != "Topology" || tp.Bottleneck != "" || !strings.Contains(tp.Caption, "No link is the bottleneck: the per-channel host-memory read ceiling is.") {
		t.Errorf("title %q, bottleneck %q, caption %q", tp.Title, tp.Bottleneck, tp.Caption)
	}
}

// TestTermAppliesByStackAndFabric: a network stack's own terms apply only
// to clusters on that stack, RoCE's congestion and header terms only to
// RoCE NICs, the tree's network hop latency only before NCCL 2.18, the
// cross-socket P2P ceiling only to nodes of several sockets.
func TestTermAppliesByStackAndFabric(t *testing.T) {
	build := func(o scenarios.Overrides) *model.Cluster { return buildCluster(t, o) }
	ib := termApplies(build(scenarios.Overrides{Node: "dgx-h100", Nodes: 2}))
	roce := termApplies(build(scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "8x400G-roce"}))
	gib := termApplies(build(scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "8x400G-roce", NetStack: "gib"}))
	old := termApplies(build(scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NCCLVersion: "2.8.4"}))
	one := termApplies(build(scenarios.Overrides{Node: "dgx-h100", Nodes: 1}))
	for _, tc := range []struct {
		name string
		f    func(string) bool
		term string
		want bool
	}{
		{"IB", ib, "stack.gib.eff", false}, {"IB", ib, "dcqcn.cut", false}, {"IB", ib, "hdr.roce.bytes", false},
		{"IB", ib, "lat.tree.net.ll", false}, {"IB", ib, "net.eff.ib", true}, {"IB", ib, "p2p.xsocket.gbps", true},
		{"RoCE", roce, "dcqcn.conv.us", true}, {"RoCE", roce, "roce.rtt.us", true}, {"RoCE", roce, "stack.gib.eff", false},
		{"gIB", gib, "stack.gib.eff", true}, {"gIB", gib, "stack.tcpxo.eff", false},
		{"NCCL 2.8.4", old, "lat.tree.net.ll128", true},
		{"one node", one, "dcqcn.cut", false}, {"one node", one, "stack.gib.eff", false},
	} {
		if got := tc.f(tc.term); got != tc.want {
			t.Errorf("%s: %s applies %v, want %v", tc.name, tc.term, got, tc.want)
		}
	}
}

// buildCluster resolves and builds the cluster o describes.
func buildCluster(t *testing.T, o scenarios.Overrides) *model.Cluster {
	t.Helper()
	spec, err := o.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	c, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	return c
}
