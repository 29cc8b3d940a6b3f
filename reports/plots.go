package reports

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/collsim/collsim/model"
)

// Plot is a block that draws a figure: one of BusBWPlot, TimePlot, BarPlot,
// ScalingPlot, ParetoPlot, LinkUtilPlot or HeatMapPlot. Every plot carries
// the numbers behind it as a table, which the renderers show next to it.
// The set is closed: other packages cannot add plot kinds.
type Plot interface {
	Block
	// PlotTitle returns the title drawn above the plot.
	PlotTitle() string
	// PlotCaption returns the caption shown under the plot ("" for none).
	PlotCaption() string
	// DataTable returns the numbers behind the plot as a table. It does not
	// validate the plot; invalid values are printed as they are.
	DataTable() Table

	kind() string
	validate() error
	// render draws the plot as a standalone SVG document, colouring its
	// series by meaning with pal (shared by the plots of one report).
	render(pal *palette) ([]byte, error)
}

// RenderSVG renders p as a standalone SVG document (UTF-8, no external
// references, fonts falling back to generic families). The same spec gives
// byte-identical output. It returns an error naming the problem when the
// spec is invalid.
func RenderSVG(p Plot) ([]byte, error) {
	if p == nil {
		return nil, errors.New("reports: nil plot")
	}
	b, err := deref(p)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	return renderPlot(b.(Plot), newPalette())
}

// renderPlot renders p with the report's palette; errors name the plot.
func renderPlot(p Plot, pal *palette) ([]byte, error) {
	svg, err := p.render(pal)
	if err != nil {
		return nil, fmt.Errorf("reports: %s: %w", blockName(p), err)
	}
	return svg, nil
}

// renderFigure builds a gonum figure and draws it as SVG.
func renderFigure(build func(*palette) (*figure, error), pal *palette) ([]byte, error) {
	f, err := build(pal)
	if err != nil {
		return nil, err
	}
	return f.svg()
}

func (p BusBWPlot) render(pal *palette) ([]byte, error)    { return renderFigure(p.build, pal) }
func (p TimePlot) render(pal *palette) ([]byte, error)     { return renderFigure(p.build, pal) }
func (p BarPlot) render(pal *palette) ([]byte, error)      { return renderFigure(p.build, pal) }
func (p ScalingPlot) render(pal *palette) ([]byte, error)  { return renderFigure(p.build, pal) }
func (p ParetoPlot) render(pal *palette) ([]byte, error)   { return renderFigure(p.build, pal) }
func (p LinkUtilPlot) render(pal *palette) ([]byte, error) { return renderFigure(p.build, pal) }
func (p HeatMapPlot) render(pal *palette) ([]byte, error)  { return renderFigure(p.build, pal) }

// SeriesStyle says how a series is drawn.
type SeriesStyle int

// Series styles. By convention model predictions are StyleLine, measurements
// StyleLinePoints, and alternatives or references StyleDashed.
const (
	StyleLine       SeriesStyle = iota // solid line
	StyleLinePoints                    // solid line with a marker at each point
	StylePoints                        // markers only
	StyleDashed                        // dashed line
)

func (s SeriesStyle) valid() bool { return s >= StyleLine && s <= StyleDashed }

// checkNames checks that series names are present and distinct.
func checkNames(what string, names []string) error {
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("%s %d has no name", what, i+1)
		}
		if seen[n] {
			return fmt.Errorf("duplicate %s name %q", what, n)
		}
		seen[n] = true
	}
	return nil
}

// ---- busbw vs message size ----

// BusBWPlot draws bus bandwidth against message size, as nccl-tests reports
// it: a log2 size axis labelled 8B, 1K, 1M, 1G, a linear busbw axis from 0,
// one line per series, and an optional shaded tolerance band around a
// reference series.
type BusBWPlot struct {
	Title   string
	Caption string
	// Series are drawn in order and named in the legend; names must be
	// distinct and each series needs at least one point.
	Series []BWSeries
	// Band, when not nil, shades the tolerance band around one series.
	Band *Band
	// Marks are sizes to mark with a vertical line, such as where NCCL
	// switches algorithm or protocol.
	Marks []SizeMark
}

// BWSeries is one busbw curve, such as "model", "measured" or a design.
type BWSeries struct {
	Name   string
	Style  SeriesStyle
	Points []BWPoint
}

// BWPoint is the bus bandwidth at one message size. Size must be positive
// and distinct within a series; BusBW must be finite and not negative.
type BWPoint struct {
	Size  model.Bytes
	BusBW model.GBps
}

// Band is a shaded tolerance band around a reference series: from
// (1-Tolerance) to (1+Tolerance) times the reference at each of its points.
type Band struct {
	// Reference names the series the band surrounds.
	Reference string
	// Tolerance is relative, in (0, 1]: 0.1 is ±10%.
	Tolerance float64
	// Label is the legend entry; empty gives "±10% of model".
	Label string
}

func (p BusBWPlot) isBlock()     {}
func (p BusBWPlot) kind() string { return "busbw plot" }

// PlotTitle returns p.Title; it implements Plot.
func (p BusBWPlot) PlotTitle() string { return p.Title }

// PlotCaption returns p.Caption; it implements Plot.
func (p BusBWPlot) PlotCaption() string { return p.Caption }

func (b Band) label() string {
	if b.Label != "" {
		return b.Label
	}
	return "±" + strconv.FormatFloat(math.Round(b.Tolerance*1e4)/1e2, 'f', -1, 64) + "% of " + b.Reference
}

func (s BWSeries) header() (string, SeriesStyle) { return s.Name, s.Style }
func (s BWSeries) pts() []BWPoint                { return s.Points }

func (pt BWPoint) x() model.Bytes { return pt.Size }
func (pt BWPoint) xy() plotter.XY { return plotter.XY{X: float64(pt.Size), Y: float64(pt.BusBW)} }
func (pt BWPoint) cell() string   { return fmtFixed(float64(pt.BusBW), 2) }

func (pt BWPoint) check(dup bool) error {
	if err := checkSizeKey(pt.Size, dup); err != nil {
		return err
	}
	if !finite(float64(pt.BusBW)) || pt.BusBW < 0 {
		return fmt.Errorf("busbw %v GB/s is not a finite non-negative number", float64(pt.BusBW))
	}
	return nil
}

func (p BusBWPlot) validate() error {
	if err := validateLines(p.Series); err != nil {
		return err
	}
	if err := checkMarks(p.Marks); err != nil {
		return err
	}
	if b := p.Band; b != nil {
		names := make([]string, len(p.Series))
		for i, s := range p.Series {
			names[i] = s.Name
		}
		if !slices.Contains(names, b.Reference) {
			return fmt.Errorf("band reference %q is not a series (series: %s)", b.Reference, strings.Join(names, ", "))
		}
		if !(b.Tolerance > 0 && b.Tolerance <= 1) {
			return fmt.Errorf("band tolerance %v is outside (0, 1]", b.Tolerance)
		}
	}
	return nil
}

func (p BusBWPlot) build(pal *palette) (*figure, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	f := newFigure(pal, p.Title, "message size (bytes)", "busbw (GB/s)", true, true)
	pl := f.plot
	top := 0.0
	var band *plotter.Polygon
	if b := p.Band; b != nil {
		ref := slices.IndexFunc(p.Series, func(s BWSeries) bool { return s.Name == b.Reference })
		pts := sortedByX[model.Bytes](p.Series[ref].Points)
		ring := make(plotter.XYs, 0, 2*len(pts))
		for _, pt := range pts {
			ring = append(ring, plotter.XY{X: float64(pt.Size), Y: float64(pt.BusBW) * (1 + b.Tolerance)})
		}
		for i := len(pts) - 1; i >= 0; i-- {
			ring = append(ring, plotter.XY{X: float64(pts[i].Size), Y: float64(pts[i].BusBW) * (1 - b.Tolerance)})
		}
		poly, err := plotter.NewPolygon(ring)
		if err != nil {
			return nil, err
		}
		c := seriesColor(f.pal.of(b.Reference))
		c.A = 0x40
		c.R, c.G, c.B = uint8(uint16(c.R)*0x40/0xFF), uint8(uint16(c.G)*0x40/0xFF), uint8(uint16(c.B)*0x40/0xFF)
		poly.Color = c
		poly.LineStyle.Width = 0
		pl.Add(poly)
		band = poly
		for _, pt := range pts {
			top = math.Max(top, float64(pt.BusBW)*(1+b.Tolerance))
		}
	}
	lo, hi, _, yhi, sus, err := addLines(f, p.Series, lineOpts[model.Bytes]{xLabel: model.FormatBytes, yUnit: " GB/s", flagSuspects: true})
	if err != nil {
		return nil, err
	}
	if band != nil {
		f.addLegend(p.Band.label(), band)
	}
	log2Axis(&pl.X, lo, hi, sizeLabel)
	pl.Y.Min, pl.Y.Max = 0, headroom(math.Max(top, yhi))
	pl.Y.Tick.Marker = linearTicks("")
	if err := f.markSuspects(sus, pl.Y.Max); err != nil {
		return nil, err
	}
	if err := f.addMarks(p.Marks, pl.Y.Min, pl.Y.Max, false, seriesXYs(p.Series)); err != nil {
		return nil, err
	}
	return f, nil
}

// headroom returns an axis maximum 5% above top, or 1 when top is 0.
func headroom(top float64) float64 {
	if top <= 0 {
		return 1
	}
	return top * 1.05
}

// DataTable returns one row per message size (the union over all series)
// and one busbw column per series, plus the band limits when there is a band.
func (p BusBWPlot) DataTable() Table {
	t, sizes := linesTable(p.Series, "size", " (GB/s)", model.FormatBytes)
	if len(p.Marks) > 0 {
		t.Notes = append(t.Notes, marksNote(p.Marks))
	}
	b := p.Band
	if b == nil {
		return t
	}
	t.Columns = append(t.Columns, "band low (GB/s)", "band high (GB/s)")
	ref := map[model.Bytes]float64{}
	for _, s := range p.Series {
		if s.Name == b.Reference {
			for _, pt := range s.Points {
				ref[pt.Size] = float64(pt.BusBW)
			}
		}
	}
	t.Notes = append(t.Notes, "Band: "+b.label()+".")
	for i, size := range sizes {
		if v, ok := ref[size]; ok {
			t.Rows[i] = append(t.Rows[i], fmtFixed(v*(1-b.Tolerance), 2), fmtFixed(v*(1+b.Tolerance), 2))
		} else {
			t.Rows[i] = append(t.Rows[i], "–", "–")
		}
	}
	return t
}

// ---- time vs message size ----

// TimePlot draws the time of an operation against message size on log-log
// axes: a log2 size axis labelled like nccl-tests sizes and a log10 time
// axis labelled 1us, 10us, 1ms.
type TimePlot struct {
	Title   string
	Caption string
	// Series are drawn in order and named in the legend; names must be
	// distinct and each series needs at least one point.
	Series []TimeSeries
	// Marks are sizes to mark with a vertical line, such as where NCCL
	// switches algorithm or protocol.
	Marks []SizeMark
}

// TimeSeries is one time curve.
type TimeSeries struct {
	Name   string
	Style  SeriesStyle
	Points []TimePoint
}

// TimePoint is the time at one message size; both must be positive (the
// axes are logarithmic) and sizes distinct within a series.
type TimePoint struct {
	Size model.Bytes
	Time model.Time
}

func (p TimePlot) isBlock()     {}
func (p TimePlot) kind() string { return "time plot" }

// PlotTitle returns p.Title; it implements Plot.
func (p TimePlot) PlotTitle() string { return p.Title }

// PlotCaption returns p.Caption; it implements Plot.
func (p TimePlot) PlotCaption() string { return p.Caption }

func (s TimeSeries) header() (string, SeriesStyle) { return s.Name, s.Style }
func (s TimeSeries) pts() []TimePoint              { return s.Points }

func (pt TimePoint) x() model.Bytes { return pt.Size }
func (pt TimePoint) xy() plotter.XY {
	return plotter.XY{X: float64(pt.Size), Y: pt.Time.Microseconds()}
}
func (pt TimePoint) cell() string { return fmtFixed(pt.Time.Microseconds(), 2) }

func (pt TimePoint) check(dup bool) error {
	if err := checkSizeKey(pt.Size, dup); err != nil {
		return err
	}
	if pt.Time <= 0 {
		return fmt.Errorf("time %v is not positive (the time axis is logarithmic)", pt.Time)
	}
	return nil
}

func (p TimePlot) validate() error {
	if err := validateLines(p.Series); err != nil {
		return err
	}
	return checkMarks(p.Marks)
}

func (p TimePlot) build(pal *palette) (*figure, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	f := newFigure(pal, p.Title, "message size (bytes)", "time", true, true)
	pl := f.plot
	xlo, xhi, ylo, yhi, _, err := addLines(f, p.Series, lineOpts[model.Bytes]{xLabel: model.FormatBytes, yUnit: " us"})
	if err != nil {
		return nil, err
	}
	log2Axis(&pl.X, xlo, xhi, sizeLabel)
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = timeTicks()
	pl.Y.Min, pl.Y.Max = padLog(ylo, yhi, 0.04)
	if math.Floor(math.Log10(pl.Y.Max)) < math.Ceil(math.Log10(pl.Y.Min)) {
		pl.Y.Min, pl.Y.Max = log10Range(ylo, yhi) // keep a labelled decade in view
	}
	if err := f.addMarks(p.Marks, pl.Y.Min, pl.Y.Max, true, seriesXYs(p.Series)); err != nil {
		return nil, err
	}
	return f, nil
}

// DataTable returns one row per message size and one time column (in
// microseconds) per series.
func (p TimePlot) DataTable() Table {
	t, _ := linesTable(p.Series, "size", " (us)", model.FormatBytes)
	if len(p.Marks) > 0 {
		t.Notes = append(t.Notes, marksNote(p.Marks))
	}
	return t
}

// ---- grouped bars ----

// BarPlot draws grouped vertical bars: one group per category (for example
// a design, or a collective at a size) and one bar per series in each group,
// side by side, with the value printed above each bar when there is room.
// Stacked bars put the series of a category on top of each other instead
// (parts of a whole, such as compute and exposed communication time).
// Category labels that would overlap are slanted and, if need be, thinned;
// a ValueLabel whose unit is a currency ("cost (USD)") gets money ticks.
type BarPlot struct {
	Title   string
	Caption string
	// CategoryLabel names the categories on the x axis, e.g. "design".
	CategoryLabel string
	// ValueLabel names the values with their unit, e.g. "busbw (GB/s)" or
	// "cost (USD)"; it labels the y axis.
	ValueLabel string
	// Categories are the groups along the x axis, in order.
	Categories []string
	// Series each give one value per category. With more than one series
	// the names must be present and distinct; they form the legend.
	Series []BarSeries
	// Stacked stacks the series of each category, first at the bottom,
	// and prints each category's total above it. Stacked values must not
	// be negative.
	Stacked bool
	// Fitted marks values that are fitted model terms, not measurements:
	// no bar is flagged as a suspect measurement or cut at the edge.
	Fitted bool
}

// BarSeries is one bar per category. Values must have one entry per
// category; NaN marks a missing value (no bar, "n/a" in the table).
type BarSeries struct {
	Name   string
	Values []float64
}

func (p BarPlot) isBlock()     {}
func (p BarPlot) kind() string { return "bar plot" }

// PlotTitle returns p.Title; it implements Plot.
func (p BarPlot) PlotTitle() string { return p.Title }

// PlotCaption returns p.Caption; it implements Plot.
func (p BarPlot) PlotCaption() string { return p.Caption }

func (p BarPlot) validate() error {
	if len(p.Categories) == 0 {
		return errors.New("no categories")
	}
	if len(p.Series) == 0 {
		return errors.New("no series")
	}
	if err := checkNames("category", p.Categories); err != nil {
		return err
	}
	if len(p.Series) > 1 {
		names := make([]string, len(p.Series))
		for i, s := range p.Series {
			names[i] = s.Name
		}
		if err := checkNames("series", names); err != nil {
			return err
		}
	}
	for i, s := range p.Series {
		if len(s.Values) != len(p.Categories) {
			return fmt.Errorf("series %d (%q) has %d values for %d categories", i+1, s.Name, len(s.Values), len(p.Categories))
		}
		for j, v := range s.Values {
			if math.IsInf(v, 0) {
				return fmt.Errorf("series %d (%q) category %q: value is infinite", i+1, s.Name, p.Categories[j])
			}
			if p.Stacked && v < 0 {
				return fmt.Errorf("series %d (%q) category %q: stacked value %v is negative", i+1, s.Name, p.Categories[j], v)
			}
		}
	}
	return nil
}

// barLabel prints a bar's value above it: as money for a money axis
// ($4.6M), else short (fmtCell).
func barLabel(valueLabel string, v float64) string {
	if sym := currencySymbol(valueLabel); sym != "" && finite(v) {
		return moneyLabel(sym, v)
	}
	return fmtCell(v)
}

// barLabelLimit is the most bars that get their value printed above them.
const barLabelLimit = 24

// barValueLabels writes texts centred above the bar tops at xys, in 7 pt.
func barValueLabels(xys plotter.XYs, texts []string) (*plotter.Labels, error) {
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
	if err != nil {
		return nil, err
	}
	for j := range lb.TextStyle {
		lb.TextStyle[j].Font = sans(7, false)
		lb.TextStyle[j].XAlign = -0.5
	}
	lb.Offset.Y = 2
	return lb, nil
}

func (p BarPlot) build(pal *palette) (*figure, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	f := newFigure(pal, p.Title, p.CategoryLabel, p.ValueLabel, false, true)
	pl := f.plot
	k, n := len(p.Categories), len(p.Series)
	slot := (f.width - vg.Points(72)) / vg.Length(float64(k))
	perSlot := n
	if p.Stacked {
		perSlot = 1
	}
	barW := slot * 0.8 / vg.Length(float64(perSlot))
	if barW > 40 {
		barW = 40
	}
	lo, hi := 0.0, 0.0
	labelled := k*perSlot <= barLabelLimit
	totals := make([]float64, k)
	var below *plotter.BarChart
	flags := p.suspectBars()
	for i, s := range p.Series {
		vals := make(plotter.Values, k)
		texts := make([]string, k)
		hover := make([]string, k)
		xys := make(plotter.XYs, k)
		for j, v := range s.Values {
			texts[j] = barLabel(p.ValueLabel, v)
			hover[j] = p.Categories[j] + ": " + fmtValue(p.ValueLabel, v)
			if s.Name != "" {
				hover[j] = s.Name + ", " + hover[j]
			}
			if !math.IsNaN(v) {
				vals[j] = v
				if !flags[i][j] {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
			xys[j] = plotter.XY{X: float64(j), Y: vals[j]}
			if p.Stacked {
				// hover at the middle of the segment
				xys[j].Y = totals[j] + vals[j]/2
				totals[j] += vals[j]
			}
		}
		bc, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return nil, err
		}
		bc.Color = seriesColor(f.pal.of(s.Name))
		bc.LineStyle.Width = 0
		if p.Stacked {
			if below != nil {
				bc.StackOn(below)
			}
			below = bc
		} else {
			bc.Offset = (vg.Length(float64(i)) - vg.Length(float64(n-1))/2) * barW
		}
		pl.Add(bc)
		if n > 1 {
			f.addLegend(s.Name, bc)
		}
		f.addHover(xys, hover, float64(barW)/2)
		if labelled && !p.Stacked {
			lb, err := barValueLabels(xys, texts)
			if err != nil {
				return nil, err
			}
			lb.Offset.X = bc.Offset
			pl.Add(lb)
		}
	}
	if p.Stacked {
		hi = slices.Max(totals)
		if labelled {
			xys := make(plotter.XYs, k)
			texts := make([]string, k)
			for j, t := range totals {
				xys[j] = plotter.XY{X: float64(j), Y: t}
				texts[j] = barLabel(p.ValueLabel, t)
				if !slices.ContainsFunc(p.Series, func(s BarSeries) bool { return j < len(s.Values) && !math.IsNaN(s.Values[j]) }) {
					texts[j] = "N/A" // nothing stacked here
				}
			}
			lb, err := barValueLabels(xys, texts)
			if err != nil {
				return nil, err
			}
			pl.Add(lb)
		}
	}
	f.height += categoryAxis(pl, p.Categories, slot)
	pl.X.Min, pl.X.Max = -0.5, float64(k)-0.5
	pl.Y.Min = lo * 1.1
	pl.Y.Max = hi * 1.12
	if pl.Y.Max == pl.Y.Min {
		pl.Y.Max = 1
	}
	pl.Y.Tick.Marker = valueTicks(p.ValueLabel)
	// Suspect bars run off the scale: say so where they are cut.
	var sxy plotter.XYs
	var stext []string
	for j := range p.Categories {
		var vs []string
		edge := pl.Y.Max
		for i, s := range p.Series {
			if flags[i][j] {
				vs = append(vs, barLabel(p.ValueLabel, s.Values[j]))
				if s.Values[j] < 0 {
					edge = pl.Y.Min
				}
			}
		}
		if len(vs) > 0 {
			sxy = append(sxy, plotter.XY{X: float64(j), Y: edge})
			stext = append(stext, "suspect, off scale: "+strings.Join(vs, " / "))
		}
	}
	if len(sxy) > 0 {
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: sxy, Labels: stext})
		if err != nil {
			return nil, err
		}
		for j := range lb.TextStyle {
			lb.TextStyle[j].Font = sans(8, true)
			lb.TextStyle[j].XAlign = draw.XLeft
			lb.TextStyle[j].YAlign = draw.YTop
			if sxy[j].Y == pl.Y.Min {
				lb.TextStyle[j].YAlign = draw.YBottom
			}
		}
		lb.Offset = vg.Point{X: barW*vg.Length(float64(n))/2 + 3, Y: -2}
		pl.Add(lb)
	}
	return f, nil
}

// suspectBars flags, per series, the value of a glitch (see suspects): by
// magnitude, more than suspectFactor times the median of its neighbours
// and the largest of its series. Stacked bars are parts of a whole and
// are never flagged.
func (p BarPlot) suspectBars() [][]bool {
	out := make([][]bool, len(p.Series))
	for i, s := range p.Series {
		out[i] = make([]bool, len(s.Values))
		if p.Stacked || p.Fitted || len(s.Values) < 5 {
			continue
		}
		abs := make([]float64, len(s.Values))
		for j, v := range s.Values {
			if !math.IsNaN(v) {
				abs[j] = math.Abs(v)
			}
		}
		for j, f := range suspects(abs) {
			out[i][j] = f && isTop(abs, j)
		}
	}
	return out
}

// DataTable returns one row per category and one column per series.
func (p BarPlot) DataTable() Table {
	first := p.CategoryLabel
	if first == "" {
		first = "category"
	}
	t := Table{Columns: []string{first}}
	for _, s := range p.Series {
		name := s.Name
		if name == "" {
			name = p.ValueLabel
		}
		if name == "" {
			name = "value"
		}
		t.Columns = append(t.Columns, name)
	}
	if p.Stacked {
		t.Columns = append(t.Columns, "total")
	}
	for j, c := range p.Categories {
		row := []string{c}
		total, any := 0.0, false
		for _, s := range p.Series {
			cell := "–"
			if j < len(s.Values) {
				cell = fmtNum(s.Values[j])
				if !math.IsNaN(s.Values[j]) {
					total += s.Values[j]
					any = true
				}
			}
			row = append(row, cell)
		}
		if p.Stacked {
			if !any {
				total = math.NaN() // no value in the stack: no total either
			}
			row = append(row, fmtNum(total))
		}
		t.Rows = append(t.Rows, row)
	}
	if p.ValueLabel != "" && len(p.Series) > 0 && p.Series[0].Name != "" {
		t.Notes = append(t.Notes, "Values: "+p.ValueLabel+".")
	}
	if p.validate() == nil {
		var cut []string
		flags := p.suspectBars()
		for j, c := range p.Categories {
			for i := range p.Series {
				if flags[i][j] {
					cut = append(cut, c)
					break
				}
			}
		}
		if len(cut) > 0 {
			t.Notes = append(t.Notes, fmt.Sprintf("Suspect (over %dx the median of its neighbours), drawn cut at the edge of the plot: %s.", suspectFactor, strings.Join(cut, ", ")))
		}
	}
	return t
}

// ---- scaling efficiency ----

// ScalingPlot draws scaling efficiency against GPU count: a log2 GPU axis,
// a percentage axis from 0, one line per series and a dashed line at 100%
// (ideal scaling).
type ScalingPlot struct {
	Title   string
	Caption string
	// Series are drawn in order and named in the legend; names must be
	// distinct and each series needs at least one point.
	Series []ScalingSeries
}

// ScalingSeries is one efficiency curve, e.g. one design or collective.
type ScalingSeries struct {
	Name   string
	Style  SeriesStyle
	Points []ScalingPoint
}

// ScalingPoint is the efficiency at one GPU count. GPUs must be positive
// and distinct within a series; Efficiency is a fraction (1 is perfect
// scaling) and must be finite and not negative. How efficiency is defined
// (busbw relative to the smallest count, throughput per GPU, ...) is the
// caller's to state in the caption.
type ScalingPoint struct {
	GPUs       int
	Efficiency float64
}

func (p ScalingPlot) isBlock()     {}
func (p ScalingPlot) kind() string { return "scaling plot" }

// PlotTitle returns p.Title; it implements Plot.
func (p ScalingPlot) PlotTitle() string { return p.Title }

// PlotCaption returns p.Caption; it implements Plot.
func (p ScalingPlot) PlotCaption() string { return p.Caption }

func (s ScalingSeries) header() (string, SeriesStyle) { return s.Name, s.Style }
func (s ScalingSeries) pts() []ScalingPoint           { return s.Points }

func (pt ScalingPoint) x() int { return pt.GPUs }
func (pt ScalingPoint) xy() plotter.XY {
	return plotter.XY{X: float64(pt.GPUs), Y: pt.Efficiency * 100}
}
func (pt ScalingPoint) cell() string { return fmtPercent(pt.Efficiency) }

func (pt ScalingPoint) check(dup bool) error {
	switch {
	case pt.GPUs <= 0:
		return fmt.Errorf("GPU count %d is not positive", pt.GPUs)
	case dup:
		return fmt.Errorf("duplicate GPU count %d", pt.GPUs)
	case !finite(pt.Efficiency) || pt.Efficiency < 0:
		return fmt.Errorf("efficiency %v is not a finite non-negative fraction", pt.Efficiency)
	}
	return nil
}

func (p ScalingPlot) validate() error { return validateLines(p.Series) }

func (p ScalingPlot) build(pal *palette) (*figure, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	f := newFigure(pal, p.Title, "GPUs", "scaling efficiency", true, true)
	pl := f.plot
	lo, hi, _, yhi, _, err := addLines(f, p.Series, lineOpts[int]{xLabel: func(g int) string { return strconv.Itoa(g) + " GPUs" }})
	if err != nil {
		return nil, err
	}
	top := math.Max(100, yhi)
	log2Axis(&pl.X, lo, hi, countLabel)
	xmin, xmax := pl.X.Min, pl.X.Max
	ideal, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: 100}, {X: xmax, Y: 100}})
	if err != nil {
		return nil, err
	}
	ideal.LineStyle = lineStyle(0, StyleDashed)
	ideal.LineStyle.Color = greyColor()
	ideal.LineStyle.Width = 1
	pl.Add(ideal)
	f.addLegend("ideal (100%)", ideal)
	pl.Y.Tick.Marker = linearTicks("%")
	pl.Y.Min, pl.Y.Max = 0, top*1.05
	return f, nil
}

// DataTable returns one row per GPU count and one efficiency column per
// series.
func (p ScalingPlot) DataTable() Table {
	t, _ := linesTable(p.Series, "GPUs", "", strconv.Itoa)
	return t
}

// ---- cost vs throughput ----

// ParetoPlot draws the designs of a sweep as cost against throughput and
// marks the Pareto frontier the caller computed (study.ParetoFrontier):
// frontier points are coloured, labelled with their names and connected in
// the order given; the other points are grey.
type ParetoPlot struct {
	Title   string
	Caption string
	// CostLabel names the x axis with its unit, e.g. "cost (USD)"; empty
	// gives "cost".
	CostLabel string
	// ThroughputLabel names the y axis with its unit, e.g. "AllReduce 1G
	// busbw (GB/s)"; empty gives "throughput".
	ThroughputLabel string
	// Points are the designs; names must be present and distinct, values
	// finite.
	Points []DesignPoint
	// Frontier are the indices into Points of the Pareto-optimal designs,
	// distinct, in order of cost (as study.ParetoFrontier returns them).
	Frontier []int
}

// DesignPoint is one design of a sweep: what it costs and what it delivers.
type DesignPoint struct {
	Name       string
	Cost       float64
	Throughput float64
}

func (p ParetoPlot) isBlock()     {}
func (p ParetoPlot) kind() string { return "pareto plot" }

// PlotTitle returns p.Title; it implements Plot.
func (p ParetoPlot) PlotTitle() string { return p.Title }

// PlotCaption returns p.Caption; it implements Plot.
func (p ParetoPlot) PlotCaption() string { return p.Caption }

func (p ParetoPlot) costLabel() string {
	if p.CostLabel == "" {
		return "cost"
	}
	return p.CostLabel
}

func (p ParetoPlot) throughputLabel() string {
	if p.ThroughputLabel == "" {
		return "throughput"
	}
	return p.ThroughputLabel
}

func (p ParetoPlot) validate() error {
	if len(p.Points) == 0 {
		return errors.New("no points")
	}
	names := make([]string, len(p.Points))
	for i, d := range p.Points {
		names[i] = d.Name
	}
	if err := checkNames("design", names); err != nil {
		return err
	}
	for _, d := range p.Points {
		if !finite(d.Cost) || !finite(d.Throughput) {
			return fmt.Errorf("design %q: cost %v and throughput %v must be finite", d.Name, d.Cost, d.Throughput)
		}
	}
	if len(p.Frontier) == 0 {
		return errors.New("no frontier: give the indices of the Pareto-optimal points")
	}
	seen := make(map[int]bool, len(p.Frontier))
	for _, i := range p.Frontier {
		if i < 0 || i >= len(p.Points) || seen[i] {
			return fmt.Errorf("frontier index %d is out of range or repeated (%d points)", i, len(p.Points))
		}
		seen[i] = true
	}
	return nil
}

func (p ParetoPlot) build(pal *palette) (*figure, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	f := newFigure(pal, p.Title, p.costLabel(), p.throughputLabel(), true, true)
	pl := f.plot
	front := p.Frontier
	on := make(map[int]bool, len(front))
	for _, i := range front {
		on[i] = true
	}
	var others plotter.XYs
	xlo, xhi := math.Inf(1), math.Inf(-1)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	all := make(plotter.XYs, len(p.Points))
	hover := make([]string, len(p.Points))
	for i, d := range p.Points {
		xlo, xhi = math.Min(xlo, d.Cost), math.Max(xhi, d.Cost)
		ylo, yhi = math.Min(ylo, d.Throughput), math.Max(yhi, d.Throughput)
		all[i] = plotter.XY{X: d.Cost, Y: d.Throughput}
		hover[i] = d.Name + ": " + fmtValue(p.costLabel(), d.Cost) + ", " + fmtNum(d.Throughput) + " " + p.throughputLabel()
		if !on[i] {
			others = append(others, plotter.XY{X: d.Cost, Y: d.Throughput})
		}
	}
	if len(others) > 0 {
		sc, err := plotter.NewScatter(others)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = glyphStyle(0)
		sc.GlyphStyle.Color = greyColor()
		sc.GlyphStyle.Shape = seriesGlyph(0)
		pl.Add(sc)
		f.addLegend("dominated design", sc)
	}
	fxy := make(plotter.XYs, len(front))
	names := make([]string, len(front))
	for k, i := range front {
		fxy[k] = plotter.XY{X: p.Points[i].Cost, Y: p.Points[i].Throughput}
		names[k] = p.Points[i].Name
	}
	line, err := plotter.NewLine(fxy)
	if err != nil {
		return nil, err
	}
	line.LineStyle = lineStyle(f.pal.of("Pareto frontier"), StyleLine)
	sc, err := plotter.NewScatter(fxy)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle = glyphStyle(f.pal.of("Pareto frontier"))
	sc.GlyphStyle.Shape = seriesGlyph(0)
	sc.GlyphStyle.Radius = 3.5
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: fxy, Labels: names})
	if err != nil {
		return nil, err
	}
	for j := range lb.TextStyle {
		lb.TextStyle[j].Font = sans(8, false)
	}
	lb.Offset = vg.Point{X: 5, Y: 3}
	pl.Add(line, sc, lb)
	f.addLegend("Pareto frontier", line, sc)
	f.addHover(all, hover, 5)
	// Padded so no point sits on the frame, with room on the right for
	// the labels of the costliest frontier points.
	pl.X.Min, pl.X.Max = padLinear(xlo, xhi, 0.05)
	_, pl.X.Max = padLinear(xlo, xhi, 0.15)
	pl.Y.Min, pl.Y.Max = padLinear(ylo, yhi, 0.08)
	pl.X.Tick.Marker = valueTicks(p.costLabel())
	pl.Y.Tick.Marker = linearTicks("")
	return f, nil
}

// DataTable returns one row per design, in the given order, with whether it
// is on the Pareto frontier.
func (p ParetoPlot) DataTable() Table {
	on := map[int]bool{}
	for _, i := range p.Frontier {
		on[i] = true
	}
	t := Table{
		Columns: []string{"design", p.costLabel(), p.throughputLabel(), "Pareto-optimal"},
		Align:   []Align{AlignLeft, AlignRight, AlignRight, AlignCenter},
	}
	for i, d := range p.Points {
		mark := ""
		if on[i] {
			mark = "yes"
		}
		t.Rows = append(t.Rows, []string{d.Name, fmtNum(d.Cost), fmtNum(d.Throughput), mark})
	}
	return t
}

// ---- link utilisation ----

// LinkUtilPlot draws the utilisation of the busiest links as horizontal
// bars from 0 to 100%, first link at the top, coloured by level (at least
// 90%: saturated; 70-90%: high; below 70%) with the value printed at the
// end of each bar.
type LinkUtilPlot struct {
	Title   string
	Caption string
	// Links are drawn top to bottom in this order; names must be present
	// and distinct.
	Links []LinkUtil
}

// LinkUtil is one link's utilisation: the fraction of its capacity in use
// (in [0, 1]) over the interval the caller states in the caption.
type LinkUtil struct {
	Name        string
	Utilization float64
}

func (p LinkUtilPlot) isBlock()     {}
func (p LinkUtilPlot) kind() string { return "link utilisation plot" }

// PlotTitle returns p.Title; it implements Plot.
func (p LinkUtilPlot) PlotTitle() string { return p.Title }

// PlotCaption returns p.Caption; it implements Plot.
func (p LinkUtilPlot) PlotCaption() string { return p.Caption }

func (p LinkUtilPlot) validate() error {
	if len(p.Links) == 0 {
		return errors.New("no links")
	}
	names := make([]string, len(p.Links))
	for i, l := range p.Links {
		names[i] = l.Name
	}
	if err := checkNames("link", names); err != nil {
		return err
	}
	for _, l := range p.Links {
		if !(l.Utilization >= 0 && l.Utilization <= 1+1e-9) {
			return fmt.Errorf("link %q: utilisation %v is outside [0, 1]", l.Name, l.Utilization)
		}
	}
	return nil
}

// utilClass returns the colour class of a utilisation: 0 below 70%, 1 for
// 70-90%, 2 from 90%.
func utilClass(u float64) int {
	switch {
	case u >= 0.9:
		return 2
	case u >= 0.7:
		return 1
	}
	return 0
}

// utilColors are the fixed colours of the utilisation classes, apart from
// the series colours so that load never reads as a series: grey below 70%,
// amber from 70%, dark red from 90% (saturated).
var utilColors = [3]color.RGBA{{0xA6, 0xA6, 0xA6, 0xFF}, {0xD9, 0x8E, 0x04, 0xFF}, {0xA5, 0x00, 0x26, 0xFF}}

func (p LinkUtilPlot) build(pal *palette) (*figure, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	n := len(p.Links)
	rowH := vg.Length(22)
	f := &figure{plot: newPlot(p.Title, "utilisation", "", true, false), width: figWidth, height: max(vg.Length(n)*rowH+vg.Points(80), vg.Points(150)), pal: pal}
	pl := f.plot
	classNames := [3]string{"below 70%", "70% to 90%", "90% and above (saturated)"}
	var classThumb [3]plot.Thumbnailer
	names := make([]string, n)
	for j, l := range p.Links {
		pos := float64(n - 1 - j)
		names[n-1-j] = l.Name
		bc, err := plotter.NewBarChart(plotter.Values{math.Min(l.Utilization, 1) * 100}, rowH*0.6)
		if err != nil {
			return nil, err
		}
		cls := utilClass(l.Utilization)
		bc.Color = utilColors[cls]
		bc.LineStyle.Width = 0
		bc.Horizontal = true
		bc.XMin = pos
		pl.Add(bc)
		if classThumb[cls] == nil {
			classThumb[cls] = bc
		}
		lb, err := plotter.NewLabels(plotter.XYLabels{
			XYs:    plotter.XYs{{X: math.Min(l.Utilization, 1) * 100, Y: pos}},
			Labels: []string{fmtPercent(l.Utilization)},
		})
		if err != nil {
			return nil, err
		}
		lb.TextStyle[0].Font = sans(8, false)
		lb.TextStyle[0].YAlign = -0.5
		lb.Offset.X = 3
		pl.Add(lb)
		f.addHoverCells(plotter.XYs{{X: 50, Y: pos}}, []string{l.Name + ": " + fmtPercent(l.Utilization) + " busy"}, 100, 0.8)
	}
	for cls := range classThumb {
		if classThumb[cls] != nil {
			f.addLegend(classNames[cls], classThumb[cls])
		}
	}
	pl.NominalY(names...)
	pl.Y.Min, pl.Y.Max = -0.5, float64(n)-0.5
	ticks := make(plot.ConstantTicks, 0, 6)
	for v := 0; v <= 100; v += 20 {
		ticks = append(ticks, plot.Tick{Value: float64(v), Label: strconv.Itoa(v) + "%"})
	}
	pl.X.Tick.Marker = ticks
	pl.X.Min, pl.X.Max = 0, 112 // room for the value labels past 100%
	return f, nil
}

// DataTable returns one row per link with its utilisation.
func (p LinkUtilPlot) DataTable() Table {
	t := Table{Columns: []string{"link", "utilisation"}}
	for _, l := range p.Links {
		t.Rows = append(t.Rows, []string{l.Name, fmtPercent(l.Utilization)})
	}
	return t
}
