package reports

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/collsim/collsim/model"
)

// This file holds what the line plots (BusBWPlot, TimePlot, ScalingPlot)
// share: series validation, drawing the series, the log2 x axis and the data
// table of one row per x value. Each plot supplies only how its points are
// placed, checked and printed, through the methods of linePoint.

// linePoint is a point of a line plot, positioned on the x axis by a key of
// type K (a message size, a GPU count).
type linePoint[K cmp.Ordered] interface {
	// x returns the key: the position on the x axis and the data-table row.
	x() K
	// xy returns the point as drawn.
	xy() plotter.XY
	// check says what is wrong with the point, if anything; dup reports
	// that an earlier point of the same series has the same key.
	check(dup bool) error
	// cell returns the y value as printed in the data table.
	cell() string
}

// lineSeries is a series of a line plot: BWSeries, TimeSeries, ScalingSeries.
type lineSeries[K cmp.Ordered, P linePoint[K]] interface {
	header() (name string, style SeriesStyle)
	pts() []P
}

// validateLines checks the series of a line plot: at least one, names
// present and distinct, valid styles, at least one point each, and each
// point valid (check), with errors naming the series and the point.
func validateLines[K cmp.Ordered, P linePoint[K], S lineSeries[K, P]](series []S) error {
	if len(series) == 0 {
		return errors.New("no series")
	}
	names := make([]string, len(series))
	for i, s := range series {
		names[i], _ = s.header()
	}
	if err := checkNames("series", names); err != nil {
		return err
	}
	for _, s := range series {
		name, style := s.header()
		if !style.valid() {
			return fmt.Errorf("series %q: invalid style %d", name, int(style))
		}
		pts := s.pts()
		if len(pts) == 0 {
			return fmt.Errorf("series %q has no points", name)
		}
		seen := make(map[K]bool, len(pts))
		for j, pt := range pts {
			if err := pt.check(seen[pt.x()]); err != nil {
				return fmt.Errorf("series %q point %d: %w", name, j+1, err)
			}
			seen[pt.x()] = true
		}
	}
	return nil
}

// checkSizeKey checks a message size used as the key of a point on a log2
// size axis.
func checkSizeKey(size model.Bytes, dup bool) error {
	switch {
	case size <= 0:
		return fmt.Errorf("size %d is not positive (the size axis is logarithmic)", size)
	case dup:
		return fmt.Errorf("duplicate size %s", model.FormatBytes(size))
	}
	return nil
}

// sortedByX returns a copy of pts sorted by key, stable.
func sortedByX[K cmp.Ordered, P linePoint[K]](pts []P) []P {
	out := slices.Clone(pts)
	slices.SortStableFunc(out, func(a, b P) int { return cmp.Compare(a.x(), b.x()) })
	return out
}

// lineOpts says how addLines labels and checks the points of a plot.
type lineOpts[K cmp.Ordered] struct {
	// xLabel prints a key in hover text; yUnit follows the y value there.
	xLabel func(K) string
	yUnit  string
	// flagSuspects marks glitch points (see suspects) instead of letting
	// them set the y range.
	flagSuspects bool
}

// coincides reports whether every point of b lies on a at the same key,
// within 0.5% (or 1e-9 absolute), and they share at least two points: b's
// line would hide under a's (or a's under b's).
func coincides(a, b plotter.XYs) bool {
	if len(b) < 2 {
		return false
	}
	at := make(map[float64]float64, len(a))
	for _, p := range a {
		at[p.X] = p.Y
	}
	for _, p := range b {
		y, ok := at[p.X]
		if !ok || math.Abs(y-p.Y) > 0.005*math.Max(math.Abs(y), math.Abs(p.Y))+1e-9 {
			return false
		}
	}
	return true
}

// suspectPoint is a glitch point of a series, drawn pinned to the top of
// the plot when it is off the scale.
type suspectPoint struct {
	xy   plotter.XY
	text string
}

// addLines draws each series (its points sorted by key) on f, coloured by
// meaning, and returns the range of the drawn coordinates over all points
// but the suspect ones, which it returns apart. A series whose line would
// hide under an earlier one is drawn dashed and says so in the legend.
// Every point gets a hover value.
func addLines[K cmp.Ordered, P linePoint[K], S lineSeries[K, P]](f *figure, series []S, o lineOpts[K]) (xlo, xhi, ylo, yhi float64, sus []suspectPoint, err error) {
	xlo, xhi, ylo, yhi = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	var drawn []plotter.XYs
	for _, s := range series {
		name, style := s.header()
		color := f.pal.of(name)
		pts := sortedByX[K](s.pts())
		xys := make(plotter.XYs, len(pts))
		texts := make([]string, len(pts))
		ys := make([]float64, len(pts))
		for j, pt := range pts {
			xys[j] = pt.xy()
			ys[j] = xys[j].Y
			texts[j] = name + ", " + o.xLabel(pt.x()) + ": " + pt.cell() + o.yUnit
		}
		var flagged []bool
		if o.flagSuspects {
			flagged = suspects(ys)
		}
		for j := range xys {
			xlo, xhi = math.Min(xlo, xys[j].X), math.Max(xhi, xys[j].X)
			if flagged != nil && flagged[j] && isTop(ys, j) {
				sus = append(sus, suspectPoint{xy: xys[j], text: texts[j]})
				continue
			}
			ylo, yhi = math.Min(ylo, xys[j].Y), math.Max(yhi, xys[j].Y)
		}
		for k, d := range drawn {
			if coincides(d, xys) || coincides(xys, d) {
				other, _ := series[k].header()
				name += " (lines coincide with " + other + ")"
				if style == StyleLine || style == StyleLinePoints {
					style = StyleDashed
				}
				break
			}
		}
		drawn = append(drawn, xys)
		if err := f.addSeries(color, name, style, xys); err != nil {
			return 0, 0, 0, 0, nil, err
		}
		f.addHover(xys, texts, 5)
	}
	if ylo > yhi { // every point suspect
		ylo, yhi = 0, 1
	}
	return xlo, xhi, ylo, yhi, sus, nil
}

// isTop reports whether ys[j] is above every other value of ys: only such
// a point would set the y range.
func isTop(ys []float64, j int) bool {
	for i, y := range ys {
		if i != j && y >= ys[j] {
			return false
		}
	}
	return true
}

// markSuspects draws the suspect points: at their place when inside the y
// range, else pinned to its top (ymax) with an arrow-like triangle, each
// labelled, with one legend entry. The data table keeps their values.
func (f *figure) markSuspects(sus []suspectPoint, ymax float64) error {
	if len(sus) == 0 {
		return nil
	}
	xys := make(plotter.XYs, len(sus))
	labels := make([]string, len(sus))
	texts := make([]string, len(sus))
	for i, s := range sus {
		xys[i] = plotter.XY{X: s.xy.X, Y: math.Min(s.xy.Y, ymax)}
		labels[i] = "suspect"
		if s.xy.Y > ymax {
			labels[i] = "suspect, off scale: " + fmtNum(s.xy.Y)
		}
		texts[i] = "suspect point: " + s.text
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(4), Shape: draw.TriangleGlyph{}}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return err
	}
	for j := range lb.TextStyle {
		lb.TextStyle[j].Font = sans(8, false)
		lb.TextStyle[j].XAlign = draw.XLeft
		lb.TextStyle[j].YAlign = draw.YTop
	}
	lb.Offset = vg.Point{X: 6, Y: -2}
	f.plot.Add(sc, lb)
	f.addLegend(fmt.Sprintf("suspect point (over %dx the median of its neighbours; not used for the scale)", suspectFactor), sc)
	f.addHover(xys, texts, 6)
	return nil
}

// SizeMark marks one message size on a size axis with a vertical line and
// a label, e.g. where NCCL switches algorithm or protocol.
type SizeMark struct {
	Size  model.Bytes
	Label string
}

// checkMarks checks size marks: positive sizes, labels present.
func checkMarks(marks []SizeMark) error {
	for i, m := range marks {
		if m.Size <= 0 {
			return fmt.Errorf("mark %d: size %d is not positive", i+1, m.Size)
		}
		if strings.TrimSpace(m.Label) == "" {
			return fmt.Errorf("mark %d at %s has no label", i+1, model.FormatBytes(m.Size))
		}
	}
	return nil
}

// addMarks draws the size marks as grey dotted vertical lines over the
// y range [ylo, yhi], each labelled upright next to its line: at the top
// where the curves (at) run in the lower half of the plot at that size, at
// the bottom where they run in the upper half, so the label stays off them.
func (f *figure) addMarks(marks []SizeMark, ylo, yhi float64, logY bool, at []plotter.XYs) error {
	if len(marks) == 0 {
		return nil
	}
	frac := func(y float64) float64 {
		if logY {
			return (math.Log(y) - math.Log(ylo)) / (math.Log(yhi) - math.Log(ylo))
		}
		return (y - ylo) / (yhi - ylo)
	}
	unfrac := func(t float64) float64 {
		if logY {
			return math.Exp(math.Log(ylo) + t*(math.Log(yhi)-math.Log(ylo)))
		}
		return ylo + t*(yhi-ylo)
	}
	var top, bottom plotter.XYs
	var topL, bottomL []string
	for _, m := range marks {
		x := float64(m.Size)
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: ylo}, {X: x, Y: yhi}})
		if err != nil {
			return err
		}
		l.LineStyle = draw.LineStyle{Color: greyColor(), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
		f.plot.Add(l)
		high := false
		for _, xys := range at {
			for _, p := range xys {
				if p.X == x && frac(p.Y) > 0.5 {
					high = true
				}
			}
		}
		if high {
			bottom, bottomL = append(bottom, plotter.XY{X: x, Y: unfrac(0.02)}), append(bottomL, m.Label)
		} else {
			top, topL = append(top, plotter.XY{X: x, Y: unfrac(0.98)}), append(topL, m.Label)
		}
	}
	for k, xys := range []plotter.XYs{top, bottom} {
		if len(xys) == 0 {
			continue
		}
		labels := [][]string{topL, bottomL}[k]
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return err
		}
		for j := range lb.TextStyle {
			lb.TextStyle[j].Font = sans(8, false)
			lb.TextStyle[j].Color = color.RGBA{0x55, 0x55, 0x55, 0xFF}
			lb.TextStyle[j].Rotation = -math.Pi / 2
			lb.TextStyle[j].YAlign = draw.YTop
			// rotated a quarter turn clockwise, the text runs down from
			// its start at the top, or ends at the bottom
			lb.TextStyle[j].XAlign = draw.XLeft
			if k == 1 {
				lb.TextStyle[j].XAlign = draw.XRight
			}
		}
		lb.Offset = vg.Point{X: -2}
		f.plot.Add(lb)
	}
	return nil
}

// seriesXYs returns the drawn points of every series.
func seriesXYs[K cmp.Ordered, P linePoint[K], S lineSeries[K, P]](series []S) []plotter.XYs {
	out := make([]plotter.XYs, len(series))
	for i, s := range series {
		for _, pt := range s.pts() {
			out[i] = append(out[i], pt.xy())
		}
	}
	return out
}

// marksNote is the data-table note listing the marks.
func marksNote(marks []SizeMark) string {
	var parts []string
	for _, m := range marks {
		parts = append(parts, model.FormatBytes(m.Size)+": "+m.Label)
	}
	return "Marked sizes: " + strings.Join(parts, "; ") + "."
}

// log2Axis makes a a log2 axis enclosing [lo, hi] at powers of two, with
// ticks labelled by label.
// The range is padded so that the end points do not sit on the frame.
func log2Axis(a *plot.Axis, lo, hi float64, label func(float64) string) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = log2Ticks(label)
	a.Min, a.Max = padLog(lo, hi, 0.03)
	if math.Floor(math.Log2(a.Max)+1e-9) < math.Ceil(math.Log2(a.Min)-1e-9) {
		a.Min, a.Max = log2Range(lo, hi) // no power of two inside: no tick
	}
}

// linesTable returns the data table of a line plot: a first column named
// first holding the keys (the sorted union over all series, printed by
// label), then one column per series, named by the series and suffix, with
// the series' first point at that key or "–". It also returns the keys, one
// per row. It does not validate.
func linesTable[K cmp.Ordered, P linePoint[K], S lineSeries[K, P]](series []S, first, suffix string, label func(K) string) (Table, []K) {
	var keys []K
	for _, s := range series {
		for _, pt := range s.pts() {
			keys = append(keys, pt.x())
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	t := Table{Columns: []string{first}}
	for _, s := range series {
		name, _ := s.header()
		t.Columns = append(t.Columns, name+suffix)
	}
	for _, k := range keys {
		row := []string{label(k)}
		for _, s := range series {
			cell := "–"
			for _, pt := range s.pts() {
				if pt.x() == k {
					cell = pt.cell()
					break
				}
			}
			row = append(row, cell)
		}
		t.Rows = append(t.Rows, row)
	}
	return t, keys
}
