package calibrate

import (
	"testing"

	"gonum.org/v1/gonum/stat"
)

// TestQuantileOf holds quantileOf to linear interpolation between order
// statistics at q*(n-1) (Hyndman and Fan type 7), and records why it is not
// gonum/stat's Quantile: neither of gonum's kinds computes that.
func TestQuantileOf(t *testing.T) {
	tests := []struct {
		v    []float64
		q    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]float64{7}, 0.9, 7},
		{[]float64{4, 1, 3, 2}, 0.5, 2.5},
		{[]float64{4, 1, 3, 2}, 0.9, 3.7},
		{[]float64{4, 1, 3, 2}, 0, 1},
		{[]float64{4, 1, 3, 2}, 1, 4},
		{[]float64{10, 20, 30, 40, 50}, 0.5, 30},
		{[]float64{10, 20, 30, 40, 50}, 0.9, 46},
	}
	for _, tc := range tests {
		in := append([]float64(nil), tc.v...)
		if got := quantileOf(tc.v, tc.q); got != tc.want {
			t.Errorf("quantileOf(%v, %g) = %g, want %g", tc.v, tc.q, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.v[i] {
				t.Errorf("quantileOf sorted its input %v", in)
			}
		}
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("Median = %g, want 2.5", got)
	}
	sorted := []float64{1, 2, 3, 4}
	for _, kind := range []stat.CumulantKind{stat.LinInterp, stat.Empirical} {
		if g := stat.Quantile(0.5, kind, sorted, nil); g == quantileOf(sorted, 0.5) {
			t.Errorf("stat.Quantile(0.5, %v) = %g equals quantileOf: the fit could use gonum/stat", kind, g)
		}
	}
}
