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
