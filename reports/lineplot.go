package reports

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

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

// addLines draws each series (its points sorted by key) on f, series i in
// colour i, and returns the range of the drawn coordinates over all points.
func addLines[K cmp.Ordered, P linePoint[K], S lineSeries[K, P]](f *figure, series []S) (xlo, xhi, ylo, yhi float64, err error) {
	xlo, xhi, ylo, yhi = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, s := range series {
		pts := sortedByX[K](s.pts())
		xys := make(plotter.XYs, len(pts))
		for j, pt := range pts {
			xys[j] = pt.xy()
			xlo, xhi = math.Min(xlo, xys[j].X), math.Max(xhi, xys[j].X)
			ylo, yhi = math.Min(ylo, xys[j].Y), math.Max(yhi, xys[j].Y)
		}
		name, style := s.header()
		if err := f.addSeries(i, name, style, xys); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	return xlo, xhi, ylo, yhi, nil
}

// log2Axis makes a a log2 axis enclosing [lo, hi] at powers of two, with
// ticks labelled by label.
func log2Axis(a *plot.Axis, lo, hi float64, label func(float64) string) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = log2Ticks(label)
	a.Min, a.Max = log2Range(lo, hi)
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
