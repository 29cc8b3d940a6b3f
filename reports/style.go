package reports

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// This file holds what keeps the plots of one report consistent and
// legible: one colour per meaning, wrapped titles, thinned category labels,
// padded ranges, money ticks, suspect points and hover values.

// palette gives every meaning one series colour (and marker) within a
// report. A meaning is a series name with a leading "model " dropped, so
// "model before" in a line plot and "before" in a bar plot share a colour;
// "model" (any "model (engine)") is always the first colour and "measured"
// the second. Other meanings take the next free colour in order of first
// appearance. The zero value is not usable; use newPalette.
type palette struct {
	index map[string]int
	next  int
}

// Indices of the fixed meanings in the series colours.
const (
	colorModel    = 0
	colorMeasured = 1
	firstFree     = 2
)

func newPalette() *palette {
	return &palette{index: map[string]int{"model": colorModel, "measured": colorMeasured}, next: firstFree}
}

// meaning returns the key a series name is coloured by.
func meaning(name string) string {
	k := strings.ToLower(strings.TrimSpace(name))
	if rest, ok := strings.CutPrefix(k, "model "); ok {
		if strings.HasPrefix(rest, "(") {
			return "model"
		}
		return rest
	}
	return k
}

// of returns the colour index of a series name.
func (p *palette) of(name string) int {
	k := meaning(name)
	if i, ok := p.index[k]; ok {
		return i
	}
	i := p.next
	p.next++
	p.index[k] = i
	return i
}

// wrapText breaks s at spaces into lines no wider than width in style st.
// A single word wider than width stays on its own line.
func wrapText(st text.Style, s string, width vg.Length) string {
	if st.Width(s) <= width {
		return s
	}
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		switch try := cur + " " + w; {
		case cur == "":
			cur = w
		case st.Width(try) <= width:
			cur = try
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return strings.Join(lines, "\n")
}

// maxCategoryLabel is the longest category label drawn in full; longer
// ones are cut with an ellipsis (the data table has them whole).
const maxCategoryLabel = 24

// clipLabel shortens a category label to maxCategoryLabel runes.
func clipLabel(s string) string {
	r := []rune(s)
	if len(r) <= maxCategoryLabel {
		return s
	}
	return string(r[:maxCategoryLabel-1]) + "…"
}

// categoryAxis puts labels on the nominal x axis of pl at 0..n-1, each slot
// wide, so that they never overlap: straight when the widest fits its slot,
// slanted when it does not, and, when even slanted labels would touch,
// only every k-th label (unlabelled ticks keep the others' places). It
// returns the height the slanted labels take, 0 when they are straight,
// so that the figure can grow by it instead of squashing the data.
func categoryAxis(pl *plot.Plot, labels []string, slot vg.Length) vg.Length {
	shown := make([]string, len(labels))
	widest := vg.Length(0)
	for i, l := range labels {
		shown[i] = clipLabel(l)
		widest = max(widest, pl.X.Tick.Label.Width(shown[i]))
	}
	pl.NominalX(shown...)
	if widest <= slot*0.95 {
		return 0
	}
	angle := math.Pi / 6
	if widest*vg.Length(math.Cos(angle)) > vg.Points(60)+slot/2 {
		// A long label slanted at 30 degrees would run off the left edge.
		angle = math.Pi / 3
	}
	pl.X.Tick.Label.Rotation = angle
	pl.X.Tick.Label.XAlign = draw.XRight // right end at the tick
	pl.X.Tick.Label.YAlign = -0.5
	// Slanted labels are a line height apart measured across the slant.
	need := pl.X.Tick.Label.Height("Ag") * 1.15 / vg.Length(math.Sin(angle))
	step := 1
	if slot < need {
		step = int(math.Ceil(float64(need / slot)))
	}
	tall := widest * vg.Length(math.Sin(angle))
	if step == 1 {
		return tall
	}
	ticks := make(plot.ConstantTicks, len(shown))
	for i, l := range shown {
		ticks[i] = plot.Tick{Value: float64(i)}
		if i%step == 0 {
			ticks[i].Label = l
		}
	}
	pl.X.Tick.Marker = ticks
	return tall
}

// padLinear widens [lo, hi] by frac of its span on each side (by frac of
// the magnitude, or 1, when the span is 0).
func padLinear(lo, hi, frac float64) (float64, float64) {
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi), 1)
	}
	return lo - span*frac, hi + span*frac
}

// padLog widens [lo, hi] (both positive) by frac of its span in log space
// on each side, so that end points do not sit on the frame.
func padLog(lo, hi, frac float64) (float64, float64) {
	a, b := math.Log(lo), math.Log(hi)
	span := b - a
	if span == 0 {
		span = math.Log(2)
	}
	return math.Exp(a - span*frac), math.Exp(b + span*frac)
}

// currencySymbol returns "$" for a label whose unit, in parentheses, is
// USD or $, "€" for EUR or €, and "" for anything else ("thousand USD"
// is not a money unit: its values are not in the currency).
func currencySymbol(label string) string {
	i := strings.LastIndex(label, "(")
	if i < 0 || !strings.HasSuffix(strings.TrimSpace(label), ")") {
		return ""
	}
	switch strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(label[i+1:]), ")")) {
	case "USD", "$", "US$":
		return "$"
	case "EUR", "€":
		return "€"
	}
	return ""
}

// moneyLabel prints an amount the way people read budgets: $950, $12K,
// $4.6M, $1.2B (two significant digits below ten of a unit, else whole).
func moneyLabel(sym string, v float64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	unit, div := "", 1.0
	switch {
	case v >= 1e9:
		unit, div = "B", 1e9
	case v >= 1e6:
		unit, div = "M", 1e6
	case v >= 1e3:
		unit, div = "K", 1e3
	}
	x := v / div
	prec := 0
	if x < 10 && unit != "" && x != math.Trunc(x) {
		prec = 1
	}
	return sign + sym + strconv.FormatFloat(x, 'f', prec, 64) + unit
}

// moneyTicks returns a linear ticker whose labels are money amounts.
func moneyTicks(sym string) plot.Ticker {
	lin := linearTicks("")
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		ticks := lin.Ticks(min, max)
		for i := range ticks {
			if ticks[i].Label != "" {
				ticks[i].Label = moneyLabel(sym, ticks[i].Value)
			}
		}
		return ticks
	})
}

// valueTicks returns money ticks for a money label, plain ones otherwise.
func valueTicks(label string) plot.Ticker {
	if sym := currencySymbol(label); sym != "" {
		return moneyTicks(sym)
	}
	return linearTicks("")
}

// fmtValue formats a value for a label or hover text: money for a money
// label, fmtNum otherwise.
func fmtValue(label string, v float64) string {
	if sym := currencySymbol(label); sym != "" && finite(v) {
		return moneyLabel(sym, v)
	}
	return fmtNum(v)
}

// suspectFactor is how far above the median of its neighbours a point must
// be to be flagged as a glitch: a robust rule that one bad sample (a timer
// hiccup, a printed 0.00 recomputed) cannot hide behind, since the median
// ignores it.
const suspectFactor = 5

// suspects returns, for ys in x order, which points are more than
// suspectFactor times the median of their up to two neighbours on each
// side (at least two neighbours, median positive).
func suspects(ys []float64) []bool {
	out := make([]bool, len(ys))
	for i, y := range ys {
		var nb []float64
		for j := max(0, i-2); j <= min(len(ys)-1, i+2); j++ {
			if j != i {
				nb = append(nb, ys[j])
			}
		}
		if len(nb) < 2 {
			continue
		}
		slices.Sort(nb)
		med := nb[len(nb)/2]
		if len(nb)%2 == 0 {
			med = (nb[len(nb)/2-1] + nb[len(nb)/2]) / 2
		}
		out[i] = med > 0 && y > suspectFactor*med
	}
	return out
}

// hoverMark is a value shown when the pointer rests on a spot of a figure:
// a transparent shape with an SVG <title>, in canvas coordinates (points,
// y up, as vgsvg draws).
type hoverMark struct {
	x, y, w, h vg.Length // a circle of radius w when h is 0, else a w x h box centred on (x, y)
	text       string
}

// hoverLayer is a plotter that draws nothing and records where its points
// land, so that figure.svg can add hover values there.
type hoverLayer struct {
	fig  *figure
	pts  plotter.XYs
	text []string
	// w, h give each mark's size in data units when box is true (a cell),
	// else w is a radius in points.
	box  bool
	w, h float64
}

// Plot implements plot.Plotter.
func (l *hoverLayer) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, pt := range l.pts {
		x, y := trX(pt.X), trY(pt.Y)
		if !c.Contains(vg.Point{X: x, Y: y}) {
			continue
		}
		m := hoverMark{x: x, y: y, w: vg.Length(l.w), text: l.text[i]}
		if l.box {
			m.w = trX(pt.X+l.w/2) - trX(pt.X-l.w/2)
			m.h = trY(pt.Y+l.h/2) - trY(pt.Y-l.h/2)
		}
		l.fig.hover = append(l.fig.hover, m)
	}
}

// addHover records hover values at data points (circles of radius r).
func (f *figure) addHover(pts plotter.XYs, texts []string, r float64) {
	f.plot.Add(&hoverLayer{fig: f, pts: pts, text: texts, w: r})
}

// addHoverCells records hover values over w x h boxes (data units)
// centred on pts.
func (f *figure) addHoverCells(pts plotter.XYs, texts []string, w, h float64) {
	f.plot.Add(&hoverLayer{fig: f, pts: pts, text: texts, box: true, w: w, h: h})
}

// hoverSVG returns the hover marks as SVG elements for vgsvg's flipped
// group: invisible shapes that still catch the pointer, each with a
// <title> the browser shows as a tooltip. No script is involved.
func hoverSVG(marks []hoverMark) []byte {
	if len(marks) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString(`<g class="hover" style="fill:#000;fill-opacity:0;stroke:none">` + "\n")
	for _, m := range marks {
		t := html.EscapeString(m.text)
		if m.h == 0 {
			fmt.Fprintf(&b, `<circle cx="%.5g" cy="%.5g" r="%.3g"><title>%s</title></circle>`+"\n", float64(m.x), float64(m.y), float64(m.w), t)
			continue
		}
		w, h := math.Abs(float64(m.w)), math.Abs(float64(m.h))
		fmt.Fprintf(&b, `<rect x="%.5g" y="%.5g" width="%.5g" height="%.5g"><title>%s</title></rect>`+"\n", float64(m.x)-w/2, float64(m.y)-h/2, w, h, t)
	}
	b.WriteString("</g>\n")
	return b.Bytes()
}

// injectHover puts the hover group inside vgsvg's outermost group (which
// flips y), just before it closes.
func injectHover(svg []byte, marks []hoverMark) ([]byte, error) {
	h := hoverSVG(marks)
	if h == nil {
		return svg, nil
	}
	end := bytes.LastIndex(svg, []byte("</g>\n</svg>"))
	if end < 0 {
		return nil, fmt.Errorf("reports: unexpected SVG trailer from vgsvg")
	}
	out := make([]byte, 0, len(svg)+len(h))
	out = append(out, svg[:end]...)
	out = append(out, h...)
	return append(out, svg[end:]...), nil
}
