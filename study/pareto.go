package study

import (
	"cmp"
	"math"
	"slices"
)

// DesignPoint is one design of a sweep: what it costs and what it delivers.
type DesignPoint struct {
	Name       string
	Cost       float64
	Throughput float64
}

// ParetoFrontier returns the indices of the points that no other point
// dominates, in order of increasing cost (ties: higher throughput first,
// then index). A point dominates another when it costs no more, delivers at
// least as much, and is strictly better in one of the two; so identical
// points are all on the frontier. Points with a NaN or infinite value are
// never on it. It runs in O(n log n) time and does not modify points.
func ParetoFrontier(points []DesignPoint) []int {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	idx := make([]int, 0, len(points))
	for i, p := range points {
		if finite(p.Cost) && finite(p.Throughput) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		pa, pb := points[a], points[b]
		if c := cmp.Compare(pa.Cost, pb.Cost); c != 0 {
			return c
		}
		if c := cmp.Compare(pb.Throughput, pa.Throughput); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	var out []int
	for _, i := range idx {
		p := points[i]
		if len(out) == 0 {
			out = append(out, i)
			continue
		}
		last := points[out[len(out)-1]]
		if p.Throughput > last.Throughput || p.Throughput == last.Throughput && p.Cost == last.Cost {
			out = append(out, i)
		}
	}
	return out
}
