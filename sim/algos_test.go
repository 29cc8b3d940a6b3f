package sim

import (
	"testing"

	"github.com/collsim/collsim/model"
)

// TestAlgorithmTable: at most one algorithm builds each (algorithm,
// collective) pair, and every pair of the modelled algorithms has one.
func TestAlgorithmTable(t *testing.T) {
	for a := model.Algo(0); a < model.NumAlgos; a++ {
		for coll := model.Collective(0); coll < model.NumCollectives; coll++ {
			var names []string
			for _, al := range algorithms {
				if al.applies(a, coll) {
					names = append(names, al.name())
				}
			}
			if len(names) > 1 {
				t.Errorf("%s %s: built by %v", a, coll, names)
			}
			modelled := a == model.AlgoRing || a == model.AlgoTree || a == model.AlgoNVLS || a == model.AlgoNVLSTree || a == model.AlgoDirect
			if modelled && len(names) == 0 {
				t.Errorf("%s %s: no algorithm builds it", a, coll)
			}
		}
	}
}

// TestMinCeiling: the tighter ceiling wins with its tag, a zero rate is no
// ceiling, and a tie keeps the first (the route's own ceiling over the
// CTA's).
func TestMinCeiling(t *testing.T) {
	host := ceiling{rate: 2e-3, kind: ceilHostRead}
	cta := ceiling{rate: 5e-3, kind: ceilChannel}
	tests := []struct{ a, b, want ceiling }{
		{host, cta, host},
		{cta, host, host},
		{ceiling{}, cta, cta},
		{cta, ceiling{}, cta},
		{host, ceiling{rate: 2e-3, kind: ceilChannel}, host},
	}
	for _, tc := range tests {
		if got := minCeiling(tc.a, tc.b); got != tc.want {
			t.Errorf("minCeiling(%+v, %+v) = %+v, want %+v", tc.a, tc.b, got, tc.want)
		}
	}
}
