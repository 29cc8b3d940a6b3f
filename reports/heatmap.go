package reports

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// HeatMapPlot draws a square matrix such as GPU-to-GPU P2P bandwidth
// (p2pBandwidthLatencyTest, nvbandwidth): row i is the source, column j the
// destination, first row at the top. Cells are coloured from light (low) to
// dark (high) and, up to 16x16, annotated with their values; N/A cells
// (NaN) are light grey and marked "N/A". The colour scale spans the
// off-diagonal cells only: the diagonal (a GPU to itself, a local copy far
// faster than any link) is drawn in a neutral colour with its value, so it
// cannot hide a slow link. Each row's sum over its off-diagonal cells is
// printed to the right of the row, as nvbandwidth prints sums.
type HeatMapPlot struct {
	Title   string
	Caption string
	// Labels name the rows and columns, e.g. "GPU0".."GPU7"; they must be
	// present and distinct.
	Labels []string
	// Values[i][j] is the value from Labels[i] to Labels[j]; there must be
	// len(Labels) rows of len(Labels) values. NaN marks N/A (no path, not
	// measured); infinities are errors.
	Values [][]float64
	// Unit of the values, e.g. "GB/s" (the default) or "us".
	Unit string
	// RowAxis and ColAxis title the axes; empty gives "source" and
	// "destination".
	RowAxis, ColAxis string
}

// heatAnnotateLimit is the largest matrix whose cells carry their values.
const heatAnnotateLimit = 16

func (p HeatMapPlot) isBlock()     {}
func (p HeatMapPlot) kind() string { return "heat map" }

// PlotTitle returns p.Title; it implements Plot.
func (p HeatMapPlot) PlotTitle() string { return p.Title }

// PlotCaption returns p.Caption; it implements Plot.
func (p HeatMapPlot) PlotCaption() string { return p.Caption }

func (p HeatMapPlot) unit() string {
	if p.Unit == "" {
		return "GB/s"
	}
	return p.Unit
}

func (p HeatMapPlot) axes() (row, col string) {
	row, col = p.RowAxis, p.ColAxis
	if row == "" {
		row = "source"
	}
	if col == "" {
		col = "destination"
	}
	return row, col
}

func (p HeatMapPlot) validate() error {
	n := len(p.Labels)
	if n == 0 {
		return errors.New("no labels")
	}
	if err := checkNames("label", p.Labels); err != nil {
		return err
	}
	if len(p.Values) != n {
		return fmt.Errorf("%d rows of values for %d labels", len(p.Values), n)
	}
	for i, r := range p.Values {
		if len(r) != n {
			return fmt.Errorf("row %d (%q) has %d values for %d labels", i+1, p.Labels[i], len(r), n)
		}
		for j, v := range r {
			if math.IsInf(v, 0) {
				return fmt.Errorf("value %q -> %q is infinite", p.Labels[i], p.Labels[j])
			}
		}
	}
	return nil
}

// heatGrid adapts a square matrix to plotter.GridXYZ with row 0 at the top:
// column c is x = c, matrix row r is y = n-1-r. With selfApart, diagonal
// cells read +Inf, which the heat map draws in its Overflow colour (input
// values are never infinite).
type heatGrid struct {
	v         [][]float64
	selfApart bool
}

func (g heatGrid) Dims() (c, r int) { return len(g.v), len(g.v) }
func (g heatGrid) Z(c, r int) float64 {
	i := len(g.v) - 1 - r
	if g.selfApart && i == c && !math.IsNaN(g.v[i][c]) {
		return math.Inf(1)
	}
	return g.v[i][c]
}
func (g heatGrid) X(c int) float64 { return float64(c) }
func (g heatGrid) Y(r int) float64 { return float64(r) }

// selfColor fills the diagonal cells, which are off the colour scale.
func selfColor() color.RGBA { return color.RGBA{0xF2, 0xE8, 0xD5, 0xFF} }

// heatPalette is a sequential light-to-dark blue ramp, interpolated between
// three anchor colours in sRGB.
type heatPalette []color.Color

// Colors implements palette.Palette.
func (h heatPalette) Colors() []color.Color { return h }

func newHeatPalette(n int) heatPalette {
	anchors := [...][3]float64{{0xEF, 0xF6, 0xFC}, {0x4A, 0x98, 0xC9}, {0x08, 0x30, 0x6B}}
	out := make(heatPalette, n)
	for i := range out {
		t := float64(i) / float64(n-1) * float64(len(anchors)-1)
		k := min(int(t), len(anchors)-2)
		f := t - float64(k)
		var c [3]uint8
		for ch := range c {
			c[ch] = uint8(math.Round(anchors[k][ch]*(1-f) + anchors[k+1][ch]*f))
		}
		out[i] = color.RGBA{c[0], c[1], c[2], 0xFF}
	}
	return out
}

// swatch is a legend thumbnail: a filled box of one colour.
type swatch struct{ c color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.c, []vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y},
		{X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y},
	})
}

// heatRange returns the colour range of the finite values (off the
// diagonal when offDiag): min and max, widened when they are equal and 0..1
// when there are none.
func heatRange(values [][]float64, offDiag bool) (lo, hi float64, anyNaN bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for i, r := range values {
		for j, v := range r {
			if offDiag && i == j {
				continue
			}
			if math.IsNaN(v) {
				anyNaN = true
				continue
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	switch {
	case lo > hi:
		return 0, 1, anyNaN
	case lo == hi:
		return lo - 0.5, hi + 0.5, anyNaN
	}
	return lo, hi, anyNaN
}

// offDiagonal reports whether the matrix has a finite value off the
// diagonal, so that the colour scale can leave the diagonal out.
func (p HeatMapPlot) offDiagonal() bool {
	for i, r := range p.Values {
		for j, v := range r {
			if i != j && !math.IsNaN(v) {
				return true
			}
		}
	}
	return false
}

// rowSum returns the sum of row i's finite off-diagonal values and whether
// it has any.
func (p HeatMapPlot) rowSum(i int) (float64, bool) {
	if !strings.HasSuffix(p.unit(), "/s") {
		return 0, false // only rates add up: a sum of latencies means nothing
	}
	sum, any := 0.0, false
	for j, v := range p.Values[i] {
		if j != i && !math.IsNaN(v) {
			sum, any = sum+v, true
		}
	}
	return sum, any
}

func (p HeatMapPlot) build(colors *palette) (*figure, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	n := len(p.Labels)
	cell := min(max(4*vg.Inch/vg.Length(n), 0.25*vg.Inch), 0.7*vg.Inch)
	rowAxis, colAxis := p.axes()
	f := &figure{
		plot:   newPlot(p.Title, colAxis, rowAxis, false, false),
		width:  vg.Length(n)*cell + 2.4*vg.Inch,
		height: vg.Length(n)*cell + 1.3*vg.Inch,
		pal:    colors,
	}
	pl := f.plot
	pal := newHeatPalette(16)
	selfApart := p.offDiagonal()
	lo, hi, anyNaN := heatRange(p.Values, selfApart)
	hm := plotter.NewHeatMap(heatGrid{v: p.Values, selfApart: selfApart}, pal)
	hm.Min, hm.Max = lo, hi
	hm.NaN = naColor()
	hm.Overflow = selfColor()
	pl.Add(hm)
	var hxy plotter.XYs
	var htext []string
	unit := p.unit()
	for i, r := range p.Values {
		for j, v := range r {
			hxy = append(hxy, plotter.XY{X: float64(j), Y: float64(n - 1 - i)})
			htext = append(htext, p.Labels[i]+" → "+p.Labels[j]+": "+fmtNum(v)+" "+unit)
		}
	}
	f.addHoverCells(hxy, htext, 1, 1)

	if n <= heatAnnotateLimit {
		size := vg.Length(9)
		if n > 8 {
			size = 7
		}
		var xys plotter.XYs
		var texts []string
		var styles []color.Color
		for i, r := range p.Values {
			for j, v := range r {
				xys = append(xys, plotter.XY{X: float64(j), Y: float64(n - 1 - i)})
				texts = append(texts, fmtCell(v))
				c := color.Color(color.Black)
				if !math.IsNaN(v) && !(selfApart && i == j) && luminance(heatColor(pal, lo, hi, v)) < 0.5 {
					c = color.White
				}
				styles = append(styles, c)
			}
		}
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
		if err != nil {
			return nil, err
		}
		for k := range lb.TextStyle {
			lb.TextStyle[k].Font = sans(size, false)
			lb.TextStyle[k].Color = styles[k]
			lb.TextStyle[k].XAlign = draw.XCenter
			lb.TextStyle[k].YAlign = draw.YCenter
		}
		pl.Add(lb)
	}

	// Row sums in a column right of the matrix.
	var sxy plotter.XYs
	var stext []string
	for i := range p.Values {
		if sum, ok := p.rowSum(i); ok {
			sxy = append(sxy, plotter.XY{X: float64(n) - 0.35, Y: float64(n - 1 - i)})
			stext = append(stext, fmtCell(sum))
		}
	}
	if len(sxy) > 0 {
		sxy = append(sxy, plotter.XY{X: float64(n) - 0.35, Y: float64(n) - 0.2})
		stext = append(stext, "row sum")
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: sxy, Labels: stext})
		if err != nil {
			return nil, err
		}
		for k := range lb.TextStyle {
			lb.TextStyle[k].Font = sans(8, k == len(stext)-1)
			lb.TextStyle[k].XAlign = draw.XLeft
			lb.TextStyle[k].YAlign = draw.YCenter
		}
		pl.Add(lb)
	}

	rev := make([]string, n)
	for i, l := range p.Labels {
		rev[n-1-i] = l
	}
	pl.NominalY(rev...)
	f.height += categoryAxis(pl, p.Labels, cell)
	pl.X.Min, pl.X.Max = -0.5, float64(n)-0.5
	if len(sxy) > 0 {
		pl.X.Max = float64(n) + 0.6 // room for the row sums
	}
	pl.Y.Min, pl.Y.Max = -0.5, float64(n)-0.5
	if len(sxy) > 0 {
		pl.Y.Max = float64(n) + 0.1 // room for the "row sum" heading
		f.height += cell * 0.6
	}

	if !math.IsNaN(p.minValue()) {
		f.addLegend("low: "+fmtNum(lo)+" "+unit, swatch{pal[0]})
		f.addLegend("high: "+fmtNum(hi)+" "+unit, swatch{pal[len(pal)-1]})
	}
	if selfApart {
		f.addLegend("diagonal (to itself): not on the colour scale", swatch{selfColor()})
	}
	if anyNaN {
		f.addLegend("N/A", swatch{naColor()})
	}
	return f, nil
}

// minValue and maxValue return the extreme finite values, NaN when none.
func (p HeatMapPlot) minValue() float64 { return p.extreme(math.Min) }
func (p HeatMapPlot) maxValue() float64 { return p.extreme(math.Max) }

func (p HeatMapPlot) extreme(pick func(a, b float64) float64) float64 {
	out := math.NaN()
	for _, r := range p.Values {
		for _, v := range r {
			switch {
			case math.IsNaN(v):
			case math.IsNaN(out):
				out = v
			default:
				out = pick(out, v)
			}
		}
	}
	return out
}

// heatColor returns the palette colour plotter.HeatMap gives v in [lo, hi].
func heatColor(pal heatPalette, lo, hi, v float64) color.Color {
	ps := float64(len(pal)-1) / (hi - lo)
	return pal[int((v-lo)*ps+0.5)]
}

// DataTable returns the matrix: one row per source with one column per
// destination, "N/A" for NaN.
func (p HeatMapPlot) DataTable() Table {
	row, col := p.axes()
	t := Table{Columns: []string{row + ` \ ` + col}}
	t.Columns = append(t.Columns, p.Labels...)
	sums := strings.HasSuffix(p.unit(), "/s")
	if sums {
		t.Columns = append(t.Columns, "row sum")
	}
	for i, r := range p.Values {
		label := ""
		if i < len(p.Labels) {
			label = p.Labels[i]
		}
		cells := []string{label}
		for _, v := range r {
			if math.IsNaN(v) {
				cells = append(cells, "N/A")
			} else {
				cells = append(cells, fmtNum(v))
			}
		}
		sum := "–"
		if i < len(p.Labels) && len(r) == len(p.Labels) {
			if s, ok := p.rowSum(i); ok {
				sum = fmtNum(s)
			}
		}
		if sums {
			cells = append(cells, sum)
		}
		t.Rows = append(t.Rows, cells)
	}
	note := "Values in " + p.unit() + "; N/A: no value."
	if sums {
		note += " Row sum: the row's values off the diagonal."
	}
	t.Notes = append(t.Notes, note)
	return t
}
