package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"regexp"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/collsim/collsim/model"
)

// figure is a built gonum plot plus a legend drawn in a strip under it, so
// the legend never hides data.
type figure struct {
	plot *plot.Plot
	// legend entries, drawn in order, in up to two columns.
	legend []legendEntry
	// width and height of the plot area, without the legend strip.
	width, height vg.Length
	// pal colours the series by meaning; hover collects the values shown
	// under the pointer, filled in while drawing.
	pal   *palette
	hover []hoverMark
}

type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// Figure geometry and text sizes, in points.
const (
	figWidth      = 7.5 * vg.Inch
	figHeight     = 4.2 * vg.Inch
	titleSize     = 12
	labelSize     = 10
	tickSize      = 9
	legendSize    = 9
	legendRowH    = vg.Length(14)
	legendMargin  = vg.Length(8)
	legendIndent  = vg.Length(40)
	maxLegendCols = 2
)

// seriesColor returns series colour i (see palette for which meaning
// gets which): the Okabe-Ito colour-blind safe set without yellow (too pale
// on white), cycled; orange comes last because the link utilisation bars
// use warm colours for load.
func seriesColor(i int) color.RGBA {
	colors := [...]color.RGBA{
		{0x00, 0x72, 0xB2, 0xFF}, // blue: model
		{0xD5, 0x5E, 0x00, 0xFF}, // vermillion: measured
		{0x00, 0x9E, 0x73, 0xFF}, // bluish green
		{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
		{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
		{0x00, 0x00, 0x00, 0xFF}, // black
		{0xE6, 0x9F, 0x00, 0xFF}, // orange
	}
	return colors[i%len(colors)]
}

// seriesGlyph returns the marker shape of series i, cycled.
func seriesGlyph(i int) draw.GlyphDrawer {
	shapes := [...]draw.GlyphDrawer{
		draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{},
		draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}, draw.PyramidGlyph{},
	}
	return shapes[i%len(shapes)]
}

// Fixed colours: grid lines, points off the Pareto frontier, N/A cells.
func gridColor() color.RGBA { return color.RGBA{0xDD, 0xDD, 0xDD, 0xFF} }
func greyColor() color.RGBA { return color.RGBA{0x99, 0x99, 0x99, 0xFF} }
func naColor() color.RGBA   { return color.RGBA{0xE6, 0xE6, 0xE6, 0xFF} }

// sans returns the Liberation Sans face of the given size (in points).
func sans(size vg.Length, bold bool) font.Font {
	f := font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
	if bold {
		f.Weight = xfont.WeightBold
	}
	return f
}

// newPlot returns a plot with collsim's house look: sans-serif text, a light
// grid (vertical lines at the x ticks when gridX, horizontal at the y ticks
// when gridY) and the given title and axis labels.
func newPlot(title, xLabel, yLabel string, gridX, gridY bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(titleSize, true)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Label.TextStyle.Font = sans(labelSize, false)
	p.Y.Label.TextStyle.Font = sans(labelSize, false)
	p.X.Tick.Label.Font = sans(tickSize, false)
	p.Y.Tick.Label.Font = sans(tickSize, false)
	g := plotter.NewGrid()
	g.Vertical = draw.LineStyle{Color: gridColor(), Width: vg.Points(0.5)}
	g.Horizontal = g.Vertical
	if !gridX {
		g.Vertical.Color = nil
	}
	if !gridY {
		g.Horizontal.Color = nil
	}
	p.Add(g)
	return p
}

// newFigure returns a figure of the standard size (figWidth by figHeight)
// holding newPlot(title, xLabel, yLabel, gridX, gridY), coloured by pal (a
// fresh palette when nil).
func newFigure(pal *palette, title, xLabel, yLabel string, gridX, gridY bool) *figure {
	if pal == nil {
		pal = newPalette()
	}
	return &figure{plot: newPlot(title, xLabel, yLabel, gridX, gridY), width: figWidth, height: figHeight, pal: pal}
}

// addLegend appends a legend entry showing name next to thumbs.
func (f *figure) addLegend(name string, thumbs ...plot.Thumbnailer) {
	f.legend = append(f.legend, legendEntry{name: name, thumbs: thumbs})
}

// lineStyle returns the line style of series i drawn in style s.
func lineStyle(i int, s SeriesStyle) draw.LineStyle {
	ls := draw.LineStyle{Color: seriesColor(i), Width: vg.Points(1.5)}
	if s == StyleDashed {
		ls.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return ls
}

// glyphStyle returns the marker style of series i.
func glyphStyle(i int) draw.GlyphStyle {
	return draw.GlyphStyle{Color: seriesColor(i), Radius: vg.Points(2.5), Shape: seriesGlyph(i)}
}

// addSeries adds one XY series to f in style s, with legend entry name.
// xys must be sorted by X.
func (f *figure) addSeries(i int, name string, s SeriesStyle, xys plotter.XYs) error {
	var thumbs []plot.Thumbnailer
	if s != StylePoints {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.LineStyle = lineStyle(i, s)
		f.plot.Add(l)
		thumbs = append(thumbs, l)
	}
	if s == StyleLinePoints || s == StylePoints {
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		sc.GlyphStyle = glyphStyle(i)
		f.plot.Add(sc)
		thumbs = append(thumbs, sc)
	}
	f.addLegend(name, thumbs...)
	return nil
}

// legendCols returns how many columns the legend strip uses.
func (f *figure) legendCols() int {
	if len(f.legend) > 3 {
		return maxLegendCols
	}
	return 1
}

// legendHeight returns the height of the strip under the plot that holds
// the legend, 0 when there is no legend.
func (f *figure) legendHeight() vg.Length {
	if len(f.legend) == 0 {
		return 0
	}
	cols := f.legendCols()
	rows := (len(f.legend) + cols - 1) / cols
	return vg.Length(rows)*legendRowH + legendMargin
}

// size returns the full canvas size.
func (f *figure) size() (w, h vg.Length) {
	return f.width, f.height + f.legendHeight()
}

// draw draws the plot and its legend strip on c.
func (f *figure) draw(c vg.CanvasSizer) {
	dc := draw.New(c)
	lh := f.legendHeight()
	_, h := f.size()
	// A white background under the legend strip too, so the figure reads
	// on dark pages (GitHub dark mode shows SVGs on a dark background).
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	// A long title wraps instead of running off both ends.
	f.plot.Title.Text = wrapText(f.plot.Title.TextStyle, f.plot.Title.Text, f.width-vg.Points(24))
	// A small margin keeps the title's and the y label's glyph boxes
	// inside the picture.
	f.plot.Draw(draw.Crop(dc, vg.Points(4), -vg.Points(4), lh, -vg.Points(5)))
	if lh == 0 {
		return
	}
	cols := f.legendCols()
	rows := (len(f.legend) + cols - 1) / cols
	colW := (f.width - legendIndent) / vg.Length(cols)
	for col := range cols {
		l := plot.NewLegend()
		l.TextStyle.Font = sans(legendSize, false)
		l.Top, l.Left = true, true
		l.Padding = legendRowH - vg.Points(legendSize*1.15)
		for r := range rows {
			if k := col*rows + r; k < len(f.legend) {
				l.Add(f.legend[k].name, f.legend[k].thumbs...)
			}
		}
		left := legendIndent + vg.Length(col)*colW
		right := f.width - left - colW
		l.Draw(draw.Crop(dc, left, -right, legendMargin/2, lh-h))
	}
}

// svg renders f as a standalone SVG document whose text falls back to
// generic font families. A panic inside gonum/plot becomes an error.
func (f *figure) svg() (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("drawing failed: %v", r)
		}
	}()
	w, h := f.size()
	c := vgsvg.New(w, h)
	f.hover = f.hover[:0]
	f.draw(c)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return injectHover(fixSVGFonts(buf.Bytes()), f.hover)
}

var fontFamilyRE = regexp.MustCompile(`font-family:([^;"']+);`)

// fixSVGFonts rewrites vgsvg's bare "font-family:Liberation Sans;" into a
// stack that ends in a generic family, so that viewers without the
// Liberation fonts fall back to a metric-compatible or generic face instead
// of their default serif. vgsvg embeds no fonts and no URLs unless asked.
func fixSVGFonts(svg []byte) []byte {
	return fontFamilyRE.ReplaceAllFunc(svg, func(m []byte) []byte {
		name := string(fontFamilyRE.FindSubmatch(m)[1])
		stack := "Arial,Helvetica,sans-serif"
		switch {
		case strings.Contains(name, "Serif"):
			stack = "'Times New Roman',Times,serif"
		case strings.Contains(name, "Mono"):
			stack = "'Courier New',Courier,monospace"
		}
		return []byte("font-family:'" + name + "'," + stack + ";")
	})
}

var svgHeaderRE = regexp.MustCompile(`^<svg width="([0-9.e+-]+)pt" height="[0-9.e+-]+pt" viewBox="([0-9. e+-]+)"\s+xmlns="http://www\.w3\.org/2000/svg"\s+xmlns:xlink="http://www\.w3\.org/1999/xlink">`)

// inlineSVG turns a standalone SVG document from svg into an element for
// inline use in HTML: no XML prolog or comment, no namespace URLs (the HTML
// parser supplies them), a viewBox and no fixed size so CSS can scale it
// down to a phone's width, a maximum width of 1.45 times its natural size
// (1pt = 4/3 CSS px) so small figures do not balloon on wide screens, and an
// accessible label. A standard figure (7.5 in) so fills up to about 1040 CSS px.
func inlineSVG(svg []byte, label string) (string, error) {
	s := string(svg)
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", fmt.Errorf("reports: SVG output has no <svg> element")
	}
	s = s[i:]
	m := svgHeaderRE.FindStringSubmatchIndex(s)
	if m == nil {
		return "", fmt.Errorf("reports: unexpected SVG header from vgsvg: %.120q", s)
	}
	w, err := strconv.ParseFloat(s[m[2]:m[3]], 64)
	if err != nil {
		return "", fmt.Errorf("reports: SVG width %q: %w", s[m[2]:m[3]], err)
	}
	head := fmt.Sprintf(`<svg class="plot" viewBox="%s" style="max-width:%dpx" role="img" aria-label="%s">`,
		s[m[4]:m[5]], int(math.Round(w*4/3*1.45)), htmlAttrEscape(label))
	return head + strings.TrimRight(s[m[1]:], "\n"), nil
}

// htmlAttrEscape escapes s for a double-quoted HTML attribute.
func htmlAttrEscape(s string) string {
	return strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;", `"`, "&#34;", `'`, "&#39;").Replace(s)
}

// log2Range returns axis limits that enclose [lo, hi] at powers of two.
func log2Range(lo, hi float64) (min, max float64) {
	min = math.Exp2(math.Floor(math.Log2(lo) + 1e-9))
	max = math.Exp2(math.Ceil(math.Log2(hi) - 1e-9))
	if min == max {
		min, max = min/2, max*2
	}
	return min, max
}

// log10Range returns axis limits that enclose [lo, hi] at powers of ten.
func log10Range(lo, hi float64) (min, max float64) {
	min = math.Pow(10, math.Floor(math.Log10(lo)+1e-9))
	max = math.Pow(10, math.Ceil(math.Log10(hi)-1e-9))
	if min == max {
		min, max = min/10, max*10
	}
	return min, max
}

// log2Ticks returns a ticker for a log2 axis: labelled major ticks at powers
// of two whose exponent is a multiple of a step chosen so that at most 8
// labels show, and unlabelled minor ticks at the other powers of two.
func log2Ticks(label func(v float64) string) plot.Ticker {
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		if !(min > 0) || !(max >= min) || math.IsInf(max, 0) {
			return nil
		}
		lo := int(math.Ceil(math.Log2(min) - 1e-9))
		hi := int(math.Floor(math.Log2(max) + 1e-9))
		if hi < lo {
			return nil
		}
		step := 1
		for _, s := range []int{1, 2, 3, 4, 5, 6, 8, 10, 12, 16} {
			step = s
			if floorDiv(hi, s)-ceilDiv(lo, s)+1 <= 8 {
				break
			}
		}
		minor := hi-lo <= 64
		var ticks []plot.Tick
		for e := lo; e <= hi; e++ {
			v := math.Exp2(float64(e))
			switch {
			case e%step == 0:
				ticks = append(ticks, plot.Tick{Value: v, Label: label(v)})
			case minor:
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
		return ticks
	})
}

// timeTicks returns a ticker for a log10 time axis in microseconds:
// labelled decades ("100ns", "1us", "1ms") and unlabelled 2..9 minor ticks.
func timeTicks() plot.Ticker {
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		if !(min > 0) || !(max >= min) || math.IsInf(max, 0) {
			return nil
		}
		lo := int(math.Floor(math.Log10(min) + 1e-9))
		hi := int(math.Ceil(math.Log10(max) - 1e-9))
		step := 1
		if hi-lo > 8 {
			step = (hi - lo + 7) / 8
		}
		var ticks []plot.Tick
		for e := lo; e <= hi; e++ {
			v := math.Pow(10, float64(e))
			if floorMod(e, step) == 0 {
				ticks = append(ticks, plot.Tick{Value: v, Label: model.Micros(v).String()})
			}
			if hi-lo <= 6 && e < hi {
				for k := 2; k <= 9; k++ {
					ticks = append(ticks, plot.Tick{Value: v * float64(k)})
				}
			}
		}
		return ticks
	})
}

// linearTicks returns a ticker for a linear axis: labelled ticks at a
// "nice" step (1, 2, 2.5 or 5 times a power of ten) giving at most 7
// labels, each label followed by suffix, and a minor tick between each pair.
func linearTicks(suffix string) plot.Ticker {
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		if !finite(min) || !finite(max) || !(max > min) {
			return []plot.Tick{{Value: min, Label: strconv.FormatFloat(min, 'g', 4, 64) + suffix}}
		}
		span := max - min
		mag := math.Pow(10, math.Floor(math.Log10(span/6)))
		step, decimals := 10*mag, 0
		for _, m := range []float64{1, 2, 2.5, 5, 10} {
			if span/(m*mag) <= 6 {
				step = m * mag
				break
			}
		}
		if d := -math.Floor(math.Log10(step) + 1e-9); d > 0 {
			decimals = int(d)
		}
		if r := step / math.Pow(10, math.Floor(math.Log10(step)+1e-9)); math.Abs(r-2.5) < 1e-9 {
			decimals++
		}
		var ticks []plot.Tick
		for k := math.Ceil(min/step - 1e-9); k*step <= max+step*1e-9; k++ {
			v := k * step
			label := strconv.FormatFloat(v, 'f', decimals, 64)
			if k == 0 {
				v, label = 0, "0"
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label + suffix})
			if h := v + step/2; h < max {
				ticks = append(ticks, plot.Tick{Value: h})
			}
		}
		if first := math.Ceil(min/step-1e-9)*step - step/2; first > min {
			ticks = append(ticks, plot.Tick{Value: first})
		}
		return ticks
	})
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int) int { return -floorDiv(-a, b) }

func floorMod(a, b int) int { return a - floorDiv(a, b)*b }

// sizeLabel labels a message size the nccl-tests way: 8B, 64K, 1M, 16G.
func sizeLabel(v float64) string { return model.FormatBytes(model.Bytes(math.Round(v))) }

// countLabel labels a GPU count.
func countLabel(v float64) string { return fmt.Sprintf("%d", int64(math.Round(v))) }

// luminance returns the relative luminance of c in [0, 1] (sRGB weights,
// without gamma: good enough to pick black or white text).
func luminance(c color.Color) float64 {
	r, g, b, _ := c.RGBA()
	return (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 0xFFFF
}
