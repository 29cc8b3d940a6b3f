package reports

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/collsim/collsim/model"
)

// tickLabels returns the labels of the labelled ticks of an axis.
func tickLabels(a plot.Axis) []string {
	var out []string
	for _, t := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

func legendNames(f *figure) []string {
	var out []string
	for _, e := range f.legend {
		out = append(out, e.name)
	}
	return out
}

func mustBuild(t *testing.T, p Plot) *figure {
	t.Helper()
	b, ok := p.(interface {
		build(*palette) (*figure, error)
	})
	if !ok {
		t.Fatalf("%s is not drawn by gonum/plot", blockName(p))
	}
	f, err := b.build(newPalette())
	if err != nil {
		t.Fatalf("build %s: %v", blockName(p), err)
	}
	return f
}

func mustSVG(t *testing.T, p Plot) string {
	t.Helper()
	b, err := RenderSVG(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLog2Ticks(t *testing.T) {
	tests := []struct {
		name     string
		min, max float64
		want     []string
	}{
		// Exponents 3..34 (32 of them): step 4 gives 8 labels.
		{"8B to 16G", 8, 16 * float64(model.GiB), []string{"16B", "256B", "4K", "64K", "1M", "16M", "256M", "4G"}},
		// Exponents 10..20 (11): step 2 gives 6 labels.
		{"1K to 1M", 1024, 1 << 20, []string{"1K", "4K", "16K", "64K", "256K", "1M"}},
		// Exponents 0..6: every power of two.
		{"1B to 64B", 1, 64, []string{"1B", "2B", "4B", "8B", "16B", "32B", "64B"}},
		{"one power", 1 << 20, 1 << 20, []string{"1M"}},
		{"invalid range", 0, 8, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tk := range log2Ticks(sizeLabel).Ticks(tt.min, tt.max) {
				if tk.Label != "" {
					got = append(got, tk.Label)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("labels = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTimeTicks(t *testing.T) {
	var got []string
	minor := 0
	// 1us .. 10ms in microseconds: decades labelled with model.Time.String.
	for _, tk := range timeTicks().Ticks(1, 1e4) {
		if tk.Label != "" {
			got = append(got, tk.Label)
		} else {
			minor++
		}
	}
	if want := []string{"1us", "10us", "100us", "1ms", "10ms"}; !slices.Equal(got, want) {
		t.Errorf("labels = %q, want %q", got, want)
	}
	if minor != 4*8 { // 2..9 inside each of the 4 decades
		t.Errorf("%d minor ticks, want 32", minor)
	}
}

func TestLinearTicks(t *testing.T) {
	tests := []struct {
		min, max float64
		suffix   string
		want     []string
	}{
		{0, 400, "", []string{"0", "100", "200", "300", "400"}},
		{0, 105, "%", []string{"0%", "20%", "40%", "60%", "80%", "100%"}},
		{0, 1, "", []string{"0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{0, 12, "", []string{"0", "2", "4", "6", "8", "10", "12"}},
		{-30, 30, "", []string{"-30", "-20", "-10", "0", "10", "20", "30"}},
		{0, 0.05, "", []string{"0", "0.01", "0.02", "0.03", "0.04", "0.05"}},
		{0, 25, "", []string{"0", "5", "10", "15", "20", "25"}},
	}
	for _, tt := range tests {
		var got []string
		for _, tk := range linearTicks(tt.suffix).Ticks(tt.min, tt.max) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("linearTicks(%v, %v) = %q, want %q", tt.min, tt.max, got, tt.want)
		}
	}
}

func TestBusBWPlot(t *testing.T) {
	p := fixtureBusBW()
	f := mustBuild(t, p)
	if _, ok := f.plot.X.Scale.(plot.LogScale); !ok {
		t.Errorf("x scale is %T, want plot.LogScale", f.plot.X.Scale)
	}
	if got, want := f.plot.X.Label.Text, "message size (bytes)"; got != want {
		t.Errorf("x label %q, want %q", got, want)
	}
	if got, want := f.plot.Y.Label.Text, "busbw (GB/s)"; got != want {
		t.Errorf("y label %q, want %q", got, want)
	}
	// Sizes 8B..8G: the axis spans a little more than 8B..8G, so that
	// the end points do not sit on the frame.
	if !(f.plot.X.Min < 8 && f.plot.X.Min > 4 && f.plot.X.Max > 8*float64(model.GiB) && f.plot.X.Max < 16*float64(model.GiB)) {
		t.Errorf("x range [%v, %v], want a little wider than [8, 8G]", f.plot.X.Min, f.plot.X.Max)
	}
	labels := tickLabels(f.plot.X)
	for _, want := range []string{"1M", "16M", "4G"} {
		if !slices.Contains(labels, want) {
			t.Errorf("x tick labels %q lack %q", labels, want)
		}
	}
	if f.plot.Y.Min != 0 {
		t.Errorf("busbw axis starts at %v, want 0", f.plot.Y.Min)
	}
	if got, want := legendNames(f), []string{"model", "measured", "±10% of model"}; !slices.Equal(got, want) {
		t.Errorf("legend %q, want %q", got, want)
	}
	// One line per series with one vertex per point, and the band ring
	// has two vertices per reference point.
	var lines []int
	var ring int
	for _, e := range f.legend {
		for _, th := range e.thumbs {
			switch v := th.(type) {
			case *plotter.Line:
				lines = append(lines, len(v.XYs))
			case *plotter.Polygon:
				ring = len(v.XYs[0])
			}
		}
	}
	n := len(p.Series[0].Points)
	if !slices.Equal(lines, []int{n, n}) {
		t.Errorf("line point counts %v, want [%d %d]", lines, n, n)
	}
	if ring != 2*n {
		t.Errorf("band ring has %d vertices, want %d", ring, 2*n)
	}

	svg := mustSVG(t, p)
	texts := svgTexts(svg)
	for _, want := range []string{"AllReduce busbw, 8x H100", "message size (bytes)", "busbw (GB/s)", "1M", "4G", "model", "measured", "±10% of model"} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG texts %q lack %q", texts, want)
		}
	}
	// The measured series (vermillion) is a line plus one triangle marker
	// per point, each stroked separately, plus its legend thumbnail (a
	// line and a marker).
	if got := strings.Count(svg, "stroke:#D55E00"); got != n+3 {
		t.Errorf("%d vermillion strokes, want %d (line + markers + legend)", got, n+3)
	}
}

func TestTimePlot(t *testing.T) {
	f := mustBuild(t, fixtureTime())
	if _, ok := f.plot.Y.Scale.(plot.LogScale); !ok {
		t.Errorf("y scale is %T, want log", f.plot.Y.Scale)
	}
	// Times range from 7us to ~50ms: decades 1us..100ms.
	if got, want := tickLabels(f.plot.Y), []string{"1us", "10us", "100us", "1ms", "10ms", "100ms"}; !slices.Equal(got, want) {
		t.Errorf("y labels %q, want %q", got, want)
	}
	if got, want := legendNames(f), []string{"ring", "tree"}; !slices.Equal(got, want) {
		t.Errorf("legend %q, want %q", got, want)
	}
}

func TestScalingPlot(t *testing.T) {
	f := mustBuild(t, fixtureScaling())
	if got, want := tickLabels(f.plot.X), []string{"8", "16", "32", "64", "128", "256", "512"}; !slices.Equal(got, want) {
		t.Errorf("x labels %q, want %q", got, want)
	}
	if got := tickLabels(f.plot.Y); !slices.Contains(got, "100%") || !slices.Contains(got, "0%") {
		t.Errorf("y labels %q lack 0%% or 100%%", got)
	}
	if got, want := legendNames(f), []string{"IB NDR 1:1", "RoCE 400G 2:1", "ideal (100%)"}; !slices.Equal(got, want) {
		t.Errorf("legend %q, want %q", got, want)
	}
	tab := fixtureScaling().DataTable()
	if got := tab.Rows[len(tab.Rows)-1]; !slices.Equal(got, []string{"512", "91.0%", "60.0%"}) {
		t.Errorf("last row %q", got)
	}
}

func TestBarPlot(t *testing.T) {
	p := fixtureBars()
	f := mustBuild(t, p)
	if got, want := tickLabels(f.plot.X), p.Categories; !slices.Equal(got, want) {
		t.Errorf("x labels %q, want %q", got, want)
	}
	if got, want := legendNames(f), []string{"AllReduce 1G", "AllGather 1G"}; !slices.Equal(got, want) {
		t.Errorf("legend %q, want %q", got, want)
	}
	texts := svgTexts(mustSVG(t, p))
	// Values above the bars; the missing one is marked N/A.
	for _, want := range []string{"361", "355", "120", "N/A"} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG texts %q lack %q", texts, want)
		}
	}
	tab := p.DataTable()
	if got := tab.Rows[2]; !slices.Equal(got, []string{"Eth 200G", "120.00", "n/a"}) {
		t.Errorf("row 3 = %q", got)
	}
	// A single unnamed series has no legend; its column is the value label.
	one := BarPlot{Title: "cost", ValueLabel: "cost (kUSD)", Categories: []string{"a", "b"}, Series: []BarSeries{{Values: []float64{1, 2}}}}
	if f := mustBuild(t, one); len(f.legend) != 0 {
		t.Errorf("single series legend %q", legendNames(f))
	}
	if got := one.DataTable().Columns; !slices.Equal(got, []string{"category", "cost (kUSD)"}) {
		t.Errorf("columns %q", got)
	}
}
func TestParetoPlot(t *testing.T) {
	p := fixturePareto()
	f := mustBuild(t, p)
	if got, want := legendNames(f), []string{"dominated design", "Pareto frontier"}; !slices.Equal(got, want) {
		t.Errorf("legend %q, want %q", got, want)
	}
	if f.plot.X.Label.Text != "cost (kUSD)" || f.plot.Y.Label.Text != "AllReduce 1G busbw (GB/s)" {
		t.Errorf("axis labels %q, %q", f.plot.X.Label.Text, f.plot.Y.Label.Text)
	}
	// The frontier line joins the 4 frontier points in order of cost.
	var line *plotter.Line
	for _, th := range f.legend[1].thumbs {
		if l, ok := th.(*plotter.Line); ok {
			line = l
		}
	}
	if line == nil || len(line.XYs) != 4 {
		t.Fatalf("frontier line %v, want 4 points", line)
	}
	for i := 1; i < len(line.XYs); i++ {
		if line.XYs[i].X <= line.XYs[i-1].X || line.XYs[i].Y <= line.XYs[i-1].Y {
			t.Errorf("frontier not increasing in cost and throughput at %d: %v", i, line.XYs)
		}
	}
	// Frontier points are labelled by name; dominated ones are not.
	texts := svgTexts(mustSVG(t, p))
	for _, want := range []string{"Eth 200G", "RoCE 400G 2:1", "RoCE 400G 1:1", "IB NDR 1:1"} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG lacks frontier label %q", want)
		}
	}
	for _, not := range []string{"IB HDR 1:1", "IB NDR 2:1"} {
		if slices.Contains(texts, not) {
			t.Errorf("SVG labels dominated design %q", not)
		}
	}
	tab := p.DataTable()
	var on []string
	for _, r := range tab.Rows {
		if r[3] == "yes" {
			on = append(on, r[0])
		}
	}
	if want := []string{"IB NDR 1:1", "RoCE 400G 1:1", "RoCE 400G 2:1", "Eth 200G"}; !slices.Equal(on, want) {
		t.Errorf("Pareto-optimal rows %q, want %q", on, want)
	}
}

func TestLinkUtilPlot(t *testing.T) {
	p := fixtureLinks()
	f := mustBuild(t, p)
	// First link at the top: nominal y labels run bottom to top.
	if got, want := tickLabels(f.plot.Y), []string{"leaf1 -> spine0", "node5/gpu2 -> node5/nvswitch0", "node5/nic2 -> leaf3", "leaf3 -> spine1"}; !slices.Equal(got, want) {
		t.Errorf("y labels %q, want %q", got, want)
	}
	if got, want := tickLabels(f.plot.X), []string{"0%", "20%", "40%", "60%", "80%", "100%"}; !slices.Equal(got, want) {
		t.Errorf("x labels %q, want %q", got, want)
	}
	if got, want := legendNames(f), []string{"below 70%", "70% to 90%", "90% and above (saturated)"}; !slices.Equal(got, want) {
		t.Errorf("legend %q, want %q", got, want)
	}
	texts := svgTexts(mustSVG(t, p))
	for _, want := range []string{"97.0%", "91.0%", "74.0%", "41.0%"} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG lacks value label %q", want)
		}
	}
}

func TestHeatMapPlot(t *testing.T) {
	p := fixtureHeatMap()
	f := mustBuild(t, p)
	if got, want := tickLabels(f.plot.X), p.Labels; !slices.Equal(got, want) {
		t.Errorf("x labels %q, want %q", got, want)
	}
	if got := tickLabels(f.plot.Y); got[len(got)-1] != "GPU0" {
		t.Errorf("y labels %q: GPU0 should be at the top (last)", got)
	}
	// The colour scale spans the off-diagonal cells: the diagonal would
	// make every link look alike.
	if got, want := legendNames(f), []string{"low: 121.70 GB/s", "high: 392.10 GB/s", "diagonal (to itself): not on the colour scale", "N/A"}; !slices.Equal(got, want) {
		t.Errorf("legend %q, want %q", got, want)
	}
	svg := mustSVG(t, p)
	texts := svgTexts(svg)
	count := func(s string) int {
		n := 0
		for _, x := range texts {
			if x == s {
				n++
			}
		}
		return n
	}
	// 64 annotations: 8 diagonal 1520s, one 122, one N/A, 54 others.
	if got := count("1520"); got != 8 {
		t.Errorf("%d cells annotated 1520, want 8", got)
	}
	if count("122") != 1 || count("N/A") != 2 { // the cell and the legend
		t.Errorf("annotations 122 x%d, N/A x%d; want 1 and 2", count("122"), count("N/A"))
	}
	if got := count("392") + count("390"); got != 54 {
		t.Errorf("%d cells annotated 392 or 390, want 54", got)
	}
	// The N/A cell is filled with the distinct grey.
	if !strings.Contains(svg, "fill:#E6E6E6") {
		t.Error("no N/A grey cell in the SVG")
	}
	// The diagonal is drawn in its own neutral colour with dark text; the
	// fast links are the dark end of the scale (white text), the slow one
	// the light end (dark text).
	if !strings.Contains(svg, "fill:#F2E8D5") {
		t.Error("no neutral diagonal cell in the SVG")
	}
	if strings.Contains(svg, `fill:#FFFFFF">1520</text>`) || strings.Contains(svg, `fill:#FFFFFF">122</text>`) {
		t.Error("white annotation on a light cell")
	}
	if got := strings.Count(svg, `fill:#FFFFFF">392</text>`) + strings.Count(svg, `fill:#FFFFFF">390</text>`); got < 40 {
		t.Errorf("%d white annotations on the fast links, want most of the 54", got)
	}
	// Row sums of the off-diagonal cells: the slow link's row is lower.
	if count("row sum") != 1 {
		t.Error("no row-sum heading")
	}
	if dt := p.DataTable(); dt.Columns[len(dt.Columns)-1] != "row sum" {
		t.Errorf("data table columns %q lack the row sum", dt.Columns)
	}
	if s0, _ := p.rowSum(0); !(s0 > 6*390 && s0 < 7*392.2) {
		t.Errorf("row 0 sums to %v, want the 7 links to the other GPUs", s0)
	}
	// Every cell has a hover value.
	if got := strings.Count(svg, "<title>"); got != 64 {
		t.Errorf("%d hover titles, want 64", got)
	}
	// Past 16x16 the cells are not annotated.
	n := 20
	big := HeatMapPlot{Title: "big"}
	for i := range n {
		big.Labels = append(big.Labels, "g"+strings.Repeat("x", i))
		row := make([]float64, n)
		for j := range row {
			row[j] = float64(i + j)
		}
		big.Values = append(big.Values, row)
	}
	if got := len(svgTexts(mustSVG(t, big))); got > 3*n+12 {
		t.Errorf("20x20 heat map draws %d texts; cells should not be annotated", got)
	}
	// All values equal, or all N/A: still renders.
	for _, v := range []float64{5, math.NaN()} {
		flat := HeatMapPlot{Title: "flat", Labels: []string{"a", "b"}, Values: [][]float64{{v, v}, {v, v}}}
		mustSVG(t, flat)
	}
}

// TestPlotValidation checks that bad specs are errors naming the problem,
// never panics.
func TestPlotValidation(t *testing.T) {
	bw := func(pts ...BWPoint) BusBWPlot {
		return BusBWPlot{Title: "t", Series: []BWSeries{{Name: "s", Points: pts}}}
	}
	tests := []struct {
		name string
		plot Plot
		want string
	}{
		{"busbw no series", BusBWPlot{Title: "t"}, "no series"},
		{"busbw zero size", bw(BWPoint{0, 1}), "size 0 is not positive"},
		{"busbw NaN", bw(BWPoint{8, model.GBps(math.NaN())}), "not a finite non-negative"},
		{"busbw duplicate size", bw(BWPoint{8, 1}, BWPoint{8, 2}), "duplicate size 8B"},
		{"busbw no points", bw(), `series "s" has no points`},
		{"busbw band ref", BusBWPlot{Title: "t", Series: []BWSeries{{Name: "s", Points: []BWPoint{{8, 1}}}}, Band: &Band{Reference: "x", Tolerance: 0.1}}, `band reference "x" is not a series`},
		{"busbw band tol", BusBWPlot{Title: "t", Series: []BWSeries{{Name: "s", Points: []BWPoint{{8, 1}}}}, Band: &Band{Reference: "s", Tolerance: 0}}, "outside (0, 1]"},
		{"busbw dup names", BusBWPlot{Title: "t", Series: []BWSeries{{Name: "s", Points: []BWPoint{{8, 1}}}, {Name: "s", Points: []BWPoint{{8, 1}}}}}, `duplicate series name "s"`},
		{"busbw bad style", BusBWPlot{Title: "t", Series: []BWSeries{{Name: "s", Style: 9, Points: []BWPoint{{8, 1}}}}}, "invalid style 9"},
		{"time zero", TimePlot{Title: "t", Series: []TimeSeries{{Name: "s", Points: []TimePoint{{8, 0}}}}}, "time 0ps is not positive"},
		{"bars length", BarPlot{Title: "t", Categories: []string{"a"}, Series: []BarSeries{{Values: []float64{1, 2}}}}, "2 values for 1 categories"},
		{"bars inf", BarPlot{Title: "t", Categories: []string{"a"}, Series: []BarSeries{{Values: []float64{math.Inf(1)}}}}, "infinite"},
		{"scaling gpus", ScalingPlot{Title: "t", Series: []ScalingSeries{{Name: "s", Points: []ScalingPoint{{0, 1}}}}}, "GPU count 0"},
		{"pareto empty", ParetoPlot{Title: "t"}, "no points"},
		{"pareto nan", ParetoPlot{Title: "t", Points: []DesignPoint{{"a", math.NaN(), 1}}}, "must be finite"},
		{"pareto no frontier", ParetoPlot{Title: "t", Points: []DesignPoint{{"a", 1, 1}}}, "no frontier"},
		{"pareto frontier range", ParetoPlot{Title: "t", Points: []DesignPoint{{"a", 1, 1}}, Frontier: []int{0, 1}}, "frontier index 1 is out of range"},
		{"pareto frontier repeated", ParetoPlot{Title: "t", Points: []DesignPoint{{"a", 1, 1}, {"b", 2, 2}}, Frontier: []int{0, 0}}, "frontier index 0 is out of range or repeated"},
		{"links range", LinkUtilPlot{Title: "t", Links: []LinkUtil{{"l", 1.5}}}, "outside [0, 1]"},
		{"heat shape", HeatMapPlot{Title: "t", Labels: []string{"a", "b"}, Values: [][]float64{{1, 2}}}, "1 rows of values for 2 labels"},
		{"heat row", HeatMapPlot{Title: "t", Labels: []string{"a", "b"}, Values: [][]float64{{1, 2}, {1}}}, `row 2 ("b") has 1 values`},
		{"heat inf", HeatMapPlot{Title: "t", Labels: []string{"a"}, Values: [][]float64{{math.Inf(-1)}}}, "infinite"},
		{"nil pointer", (*BusBWPlot)(nil), "nil *reports.BusBWPlot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RenderSVG(tt.plot)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "reports: ") {
				t.Errorf("RenderSVG error %v, want one starting %q containing %q", err, "reports: ", tt.want)
			}
		})
	}
}

// TestSVGHygiene checks every plot kind's standalone SVG: no fonts or
// stylesheets from anywhere, font families that fall back to generic ones,
// and the inline form has no URL at all.
func TestSVGHygiene(t *testing.T) {
	plots := []Plot{fixtureBusBW(), fixtureTime(), fixtureBars(), fixtureScaling(), fixturePareto(), fixtureLinks(), fixtureHeatMap()}
	for _, p := range plots {
		t.Run(p.kind(), func(t *testing.T) {
			svg := mustSVG(t, p)
			for _, bad := range []string{"@import", "url(", "@font-face", "<image", "font-family:Liberation"} {
				if strings.Contains(svg, bad) {
					t.Errorf("SVG contains %q", bad)
				}
			}
			if !strings.Contains(svg, "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;") {
				t.Error("SVG text has no generic font fallback")
			}
			// The only URLs in the standalone file are the XML namespace names.
			rest := strings.NewReplacer(`xmlns="http://www.w3.org/2000/svg"`, "", `xmlns:xlink="http://www.w3.org/1999/xlink"`, "").Replace(svg)
			if strings.Contains(rest, "http") || strings.Contains(rest, "//") {
				t.Error("SVG contains a URL other than its namespaces")
			}
			inline, err := inlineSVG([]byte(svg), p.PlotTitle())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(inline, `<svg class="plot" viewBox="0 0 `) || !strings.Contains(inline, `style="max-width:`) || !strings.HasSuffix(inline, "</svg>") {
				t.Errorf("inline SVG starts %.60q, ends %q", inline, inline[len(inline)-20:])
			}
			if strings.Contains(inline, "http") || strings.Contains(inline, "<?xml") {
				t.Error("inline SVG has a URL or an XML prolog")
			}
		})
	}
}

// TestDegeneratePlots renders the smallest and flattest inputs of every
// kind: one point, all zeros, all equal. They must draw, not fail or panic.
func TestDegeneratePlots(t *testing.T) {
	plots := []Plot{
		BusBWPlot{Title: "one", Series: []BWSeries{{Name: "m", Points: []BWPoint{{model.MiB, 10}}}}, Band: &Band{Reference: "m", Tolerance: 1}},
		BusBWPlot{Title: "zeros", Series: []BWSeries{{Name: "m", Points: []BWPoint{{8, 0}, {16, 0}}}}},
		BusBWPlot{Title: "odd sizes", Series: []BWSeries{{Name: "m", Style: StylePoints, Points: []BWPoint{{1000, 1}, {3, 2}, {1 << 40, 3}}}}},
		TimePlot{Title: "one", Series: []TimeSeries{{Name: "m", Points: []TimePoint{{1, 1}}}}},
		BarPlot{Title: "zeros", Categories: []string{"a"}, Series: []BarSeries{{Values: []float64{0}}}},
		BarPlot{Title: "negative", Categories: []string{"a", "b"}, Series: []BarSeries{{Values: []float64{-5, 3}}}},
		BarPlot{Title: "all n/a", Categories: []string{"a"}, Series: []BarSeries{{Values: []float64{math.NaN()}}}},
		BarPlot{Title: "crowded", Categories: []string{"a very long category name one", "a very long category name two", "a very long category name three", "a very long category name four"}, Series: []BarSeries{{Values: []float64{1, 2, 3, 4}}}},
		ScalingPlot{Title: "one", Series: []ScalingSeries{{Name: "s", Points: []ScalingPoint{{1, 1.2}}}}},
		ParetoPlot{Title: "one", Points: []DesignPoint{{"a", 0, 0}}, Frontier: []int{0}},
		ParetoPlot{Title: "same", Points: []DesignPoint{{"a", 5, 5}, {"b", 5, 5}}, Frontier: []int{0, 1}},
		LinkUtilPlot{Title: "edges", Links: []LinkUtil{{"idle", 0}, {"full", 1}}},
		HeatMapPlot{Title: "one", Labels: []string{"g"}, Values: [][]float64{{math.NaN()}}},
	}
	for _, p := range plots {
		t.Run(p.kind()+"/"+p.PlotTitle(), func(t *testing.T) {
			svg := mustSVG(t, p)
			if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
				t.Error("SVG has NaN or Inf coordinates")
			}
			if tab := p.DataTable(); tab.validate() != nil || len(tab.Rows) == 0 {
				t.Errorf("data table %+v", tab)
			}
		})
	}
}

// TestStackedBarMissingCategory: a category with no value in any series
// (a refused node count) is N/A above its slot and in the data table's
// total, not 0; a category with values keeps its total.
func TestStackedBarMissingCategory(t *testing.T) {
	p := BarPlot{Title: "Step time", CategoryLabel: "GPUs", ValueLabel: "time (ms)", Categories: []string{"32", "64"}, Stacked: true,
		Series: []BarSeries{{Name: "compute", Values: []float64{math.NaN(), 300}}, {Name: "exposed", Values: []float64{math.NaN(), 50}}}}
	texts := svgTexts(mustSVG(t, p))
	if !slices.Contains(texts, "N/A") || !slices.Contains(texts, "350") {
		t.Errorf("SVG texts %q: want N/A above the empty stack and 350 above the other", texts)
	}
	tab := p.DataTable()
	if got := tab.Rows[0]; !slices.Equal(got, []string{"32", "n/a", "n/a", "n/a"}) {
		t.Errorf("empty stack's row %q", got)
	}
	if got := tab.Rows[1][3]; got != "350" && got != "350.00" {
		t.Errorf("total of the full stack %q", got)
	}
}
