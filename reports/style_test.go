package reports

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"

	"github.com/collsim/collsim/model"
)

// TestPaletteByMeaning: a meaning keeps its colour across the plots of a
// report, "model ..." and the bare word share one, and the fixed meanings
// take the first two colours whatever comes first.
func TestPaletteByMeaning(t *testing.T) {
	p := newPalette()
	before := p.of("before")
	if p.of("model before") != before || p.of("Before") != before {
		t.Error(`"model before" and "before" have different colours`)
	}
	if p.of("model (analytic)") != colorModel || p.of("model") != colorModel || p.of("measured") != colorMeasured {
		t.Error("model or measured lost its fixed colour")
	}
	if a, b := p.of("mean >= 64M"), p.of("at 1G"); a == b || a == before || b == before || a < firstFree || b < firstFree {
		t.Errorf("new meanings share colours: %d, %d, before %d", a, b, before)
	}
	// Within a document the calibrate-style bars and lines agree: the bar
	// series "before" has the colour of the line "model before".
	doc := &Document{Title: "t", Sections: []Section{{Title: "s", Blocks: []Block{
		BusBWPlot{Title: "lines", Series: []BWSeries{{Name: "measured", Points: []BWPoint{{8, 1}}}, {Name: "model before", Points: []BWPoint{{8, 2}}}, {Name: "model after", Points: []BWPoint{{8, 3}}}}},
		BarPlot{Title: "bars", Categories: []string{"8B"}, Series: []BarSeries{{Name: "before", Values: []float64{1}}, {Name: "after", Values: []float64{2}}}},
	}}}}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{hexColor(seriesColor(firstFree)), hexColor(seriesColor(firstFree + 1))} {
		if n := strings.Count(buf.String(), c); n < 2 {
			t.Errorf("colour %s drawn %d times, want in both plots", c, n)
		}
	}
}

func TestWrapText(t *testing.T) {
	st := text.Style{Font: sans(titleSize, true), Handler: plot.DefaultTextHandler}
	long := "nccltests_h100sxm_2x4_ib-ndr200x4_snellius_allgather_2.txt: run 1, all_gather, 8 ranks, out of place"
	got := wrapText(st, long, 300)
	lines := strings.Split(got, "\n")
	if len(lines) < 2 {
		t.Fatalf("not wrapped: %q", got)
	}
	for _, l := range lines[1:] {
		if st.Width(l) > 300 {
			t.Errorf("line %q is %v wide, over 300", l, st.Width(l))
		}
	}
	if strings.Join(strings.Fields(got), " ") != long {
		t.Errorf("wrapping changed the words: %q", got)
	}
	if short := "busbw"; wrapText(st, short, 300) != short {
		t.Error("a short title was wrapped")
	}
}

func TestMoneyLabels(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{4.6e6, "$4.6M"}, {4e6, "$4M"}, {950, "$950"}, {12500, "$12K"}, {1.25e9, "$1.2B"}, {0, "$0"}, {-2e6, "-$2M"}} {
		if got := moneyLabel("$", tc.v); got != tc.want {
			t.Errorf("moneyLabel(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	for label, want := range map[string]string{"total cost (USD)": "$", "cost ($)": "$", "cost (EUR)": "€", "thousand USD": "", "busbw (GB/s)": "", "": ""} {
		if got := currencySymbol(label); got != want {
			t.Errorf("currencySymbol(%q) = %q, want %q", label, got, want)
		}
	}
	// A Pareto plot in USD labels its cost axis in dollars.
	f := mustBuild(t, ParetoPlot{Title: "p", CostLabel: "total cost (USD)", Points: []DesignPoint{{"a", 4.6e6, 10}, {"b", 9.2e6, 20}}, Frontier: []int{0, 1}})
	labels := tickLabels(f.plot.X)
	if len(labels) == 0 || !strings.HasPrefix(labels[0], "$") || !slices.ContainsFunc(labels, func(l string) bool { return strings.HasSuffix(l, "M") }) {
		t.Errorf("cost ticks %q, want $...M", labels)
	}
	// The points do not sit on the frame.
	if !(f.plot.X.Min < 4.6e6 && f.plot.X.Max > 9.2e6 && f.plot.Y.Min < 10 && f.plot.Y.Max > 20) {
		t.Errorf("ranges x [%v, %v] y [%v, %v] not padded", f.plot.X.Min, f.plot.X.Max, f.plot.Y.Min, f.plot.Y.Max)
	}
}

// TestSuspectPoint: one glitch far above its neighbours is flagged and
// does not set the y range; a smooth curve has no suspects.
func TestSuspectPoint(t *testing.T) {
	if got := suspects([]float64{1, 2, 4, 8, 16, 32}); slices.Contains(got, true) {
		t.Errorf("a doubling curve has suspects: %v", got)
	}
	ys := []float64{10, 11, 12, 900, 12, 12}
	got := suspects(ys)
	if !got[3] || slices.Contains(got[:3], true) || slices.Contains(got[4:], true) {
		t.Errorf("suspects %v, want only the 900", got)
	}
	var pts []BWPoint
	for i, y := range ys {
		pts = append(pts, BWPoint{Size: model.Bytes(1 << (20 + i)), BusBW: model.GBps(y)})
	}
	p := BusBWPlot{Title: "glitch", Series: []BWSeries{{Name: "measured", Style: StyleLinePoints, Points: pts}}}
	f := mustBuild(t, p)
	if f.plot.Y.Max > 20 {
		t.Errorf("y axis up to %v: the glitch set the scale", f.plot.Y.Max)
	}
	if !slices.ContainsFunc(legendNames(f), func(n string) bool { return strings.HasPrefix(n, "suspect point") }) {
		t.Errorf("legend %q has no suspect entry", legendNames(f))
	}
	if texts := svgTexts(mustSVG(t, p)); !slices.Contains(texts, "suspect, off scale: 900.00") {
		t.Errorf("no off-scale label in %q", texts)
	}
}

// TestSuspectBar: in an error-per-size bar plot one glitch size does not
// set the scale; it is cut at the edge and labelled, and the table says so.
func TestSuspectBar(t *testing.T) {
	cats := []string{"4K", "8K", "16K", "32K", "64K", "128K"}
	p := BarPlot{Title: "error per size", CategoryLabel: "size", ValueLabel: "error (%)", Categories: cats,
		Series: []BarSeries{{Name: "before", Values: []float64{-10, -19, 245, -8, -20, -22}}, {Name: "after", Values: []float64{4, -4, 315, 10, -1, 16}}}}
	f := mustBuild(t, p)
	if f.plot.Y.Max > 50 {
		t.Errorf("y max %v: the glitch set the scale", f.plot.Y.Max)
	}
	if !slices.Contains(svgTexts(mustSVG(t, p)), "suspect, off scale: 245 / 315") {
		t.Error("the cut bars are not labelled")
	}
	if notes := strings.Join(p.DataTable().Notes, " "); !strings.Contains(notes, "edge of the plot: 16K.") {
		t.Errorf("notes %q", notes)
	}
}

// TestCoincidentLines: a series on top of another is dashed and says so.
func TestCoincidentLines(t *testing.T) {
	var a, b, c []BWPoint
	for i := range 6 {
		s := model.Bytes(1 << (10 + 2*i))
		a = append(a, BWPoint{s, model.GBps(10 * float64(i+1))})
		b = append(b, BWPoint{s, model.GBps(10*float64(i+1)) * 1.001})
		c = append(c, BWPoint{s, model.GBps(5 * float64(i+1))})
	}
	f := mustBuild(t, BusBWPlot{Title: "designs", Series: []BWSeries{{Name: "roce", Points: a}, {Name: "ib", Points: b}, {Name: "eth", Points: c}}})
	names := legendNames(f)
	if !slices.Contains(names, "ib (lines coincide with roce)") || !slices.Contains(names, "eth") || !slices.Contains(names, "roce") {
		t.Errorf("legend %q", names)
	}
}

// TestCategoryLabelsThinned: many long categories are slanted and only
// every k-th is labelled, so that none overlap; the data table keeps all.
func TestCategoryLabelsThinned(t *testing.T) {
	var cats []string
	var vals []float64
	for i := range 30 {
		cats = append(cats, model.FormatBytes(model.Bytes(64<<i)))
		vals = append(vals, float64(i))
	}
	p := BarPlot{Title: "error per size", Categories: cats, Series: []BarSeries{{Name: "before", Values: vals}}}
	f := mustBuild(t, p)
	labels := tickLabels(f.plot.X)
	if f.plot.X.Tick.Label.Rotation == 0 || len(labels) >= len(cats) || len(labels) < 5 {
		t.Errorf("rotation %v, %d labels of %d", f.plot.X.Tick.Label.Rotation, len(labels), len(cats))
	}
	if len(p.DataTable().Rows) != len(cats) {
		t.Error("the data table lost categories")
	}
	// A few short ones stay upright and whole.
	f = mustBuild(t, BarPlot{Title: "b", Categories: []string{"a", "b"}, Series: []BarSeries{{Values: []float64{1, 2}}}})
	if f.plot.X.Tick.Label.Rotation != 0 || len(tickLabels(f.plot.X)) != 2 {
		t.Error("two short labels were slanted or thinned")
	}
	if got := clipLabel(strings.Repeat("x", 40)); len([]rune(got)) != maxCategoryLabel || !strings.HasSuffix(got, "…") {
		t.Errorf("clipLabel gave %q", got)
	}
}

func TestStackedBars(t *testing.T) {
	p := BarPlot{Title: "Step time", CategoryLabel: "GPUs", ValueLabel: "time per step (ms)", Stacked: true, Categories: []string{"8", "16"},
		Series: []BarSeries{{Name: "compute", Values: []float64{100, 100}}, {Name: "exposed communication", Values: []float64{5, 40}}}}
	f := mustBuild(t, p)
	if f.plot.Y.Max < 140 {
		t.Errorf("y max %v below the stacked total 140", f.plot.Y.Max)
	}
	texts := svgTexts(mustSVG(t, p))
	if !slices.Contains(texts, "105") || !slices.Contains(texts, "140") {
		t.Errorf("totals not printed: %q", texts)
	}
	dt := p.DataTable()
	if dt.Columns[len(dt.Columns)-1] != "total" || dt.Rows[1][len(dt.Rows[1])-1] != "140.00" {
		t.Errorf("data table %q %q", dt.Columns, dt.Rows)
	}
	bad := p
	bad.Series = []BarSeries{{Name: "x", Values: []float64{-1, 2}}}
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative stacked value: %v", err)
	}
}

// TestHoverAndMarks: every drawn point has a hover title, marks draw their
// labels, and a mark without a label is refused.
func TestHoverAndMarks(t *testing.T) {
	p := fixtureBusBW()
	p.Marks = []SizeMark{{Size: 64 * model.MiB, Label: "ring/simple"}}
	svg := mustSVG(t, p)
	n := 0
	for _, s := range p.Series {
		n += len(s.Points)
	}
	if got := strings.Count(svg, "<title>"); got != n {
		t.Errorf("%d hover titles for %d points", got, n)
	}
	if !strings.Contains(svg, "<title>model, 128M: ") {
		t.Error("hover text lacks series and size")
	}
	if !slices.Contains(svgTexts(svg), "ring/simple") {
		t.Error("mark label not drawn")
	}
	if !strings.Contains(strings.Join(p.DataTable().Notes, " "), "64M: ring/simple") {
		t.Error("data table does not list the mark")
	}
	p.Marks = []SizeMark{{Size: 64, Label: " "}}
	if err := p.validate(); err == nil {
		t.Error("a mark without a label was accepted")
	}
}

func TestTopologyPlot(t *testing.T) {
	p := fixtureTopology()
	svg := mustSVG(t, p)
	texts := svgTexts(svg)
	for _, want := range []string{"spine0", "leaf0", "leaf3", "node0 · dgx-h100", "node15 · dgx-h100", "12 more nodes", "99.1% busy", "NVLink domain"} {
		if !slices.Contains(texts, want) {
			t.Errorf("picture lacks %q; texts %q", want, texts)
		}
	}
	// The bottleneck link is drawn in the highlight colour.
	if !strings.Contains(svg, "stroke:"+hexColor(topoHot)+";stroke-width:3") {
		t.Error("bottleneck link not highlighted")
	}
	// It inlines like the gonum figures.
	if _, err := inlineSVG([]byte(svg), p.Title); err != nil {
		t.Error(err)
	}
	// The bottleneck's node is among those drawn even when it is in the
	// middle of a large cluster.
	nodes := shownNodes(64, 40)
	if !slices.ContainsFunc(nodes, func(n topoNode) bool { return n.idx == 40 }) || len(nodes) > topoMaxNode+2 {
		t.Errorf("shown nodes %v", nodes)
	}
	more := 0
	for _, n := range nodes {
		more += n.more
		if n.idx >= 0 {
			more++
		}
	}
	if more != 64 {
		t.Errorf("shown and summarised nodes add up to %d, want 64", more)
	}
	if dt := p.DataTable(); !slices.ContainsFunc(dt.Rows, func(r []string) bool { return r[0] == "fabric" && r[1] == "4 leaves under 1 spine" }) {
		t.Errorf("data table %q", dt.Rows)
	}
	// Bad specs.
	bad := p
	bad.Bottleneck = "node0/gpu0->nowhere"
	if err := bad.validate(); err == nil {
		t.Error("a bottleneck that is not a link was accepted")
	}
	bad = p
	bad.Cluster = nil
	if _, err := RenderSVG(bad); err == nil {
		t.Error("a picture without a cluster rendered")
	}
	bad = p
	bad.Utilization = 1.5
	if err := bad.validate(); err == nil {
		t.Error("utilisation 150% accepted")
	}
	// Unknown utilisation: no percentage.
	p.Utilization = math.NaN()
	if strings.Contains(strings.Join(svgTexts(mustSVG(t, p)), " "), "% busy") {
		t.Error("unknown utilisation printed")
	}
}

func TestPadLog(t *testing.T) {
	lo, hi := padLog(8, 8*float64(model.GiB), 0.03)
	if !(lo < 8 && lo > 4 && hi > 8*float64(model.GiB)) {
		t.Errorf("padLog gave [%v, %v]", lo, hi)
	}
	if lo, hi := padLinear(5, 5, 0.1); !(lo < 5 && hi > 5) {
		t.Errorf("padLinear of a point gave [%v, %v]", lo, hi)
	}
}
