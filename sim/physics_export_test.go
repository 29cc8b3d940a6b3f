package sim

import "github.com/collsim/collsim/model"

// CongestionOf runs the congestion physics on a call made of the given
// concurrent flows (each bytes over its route) whose uncongested time is
// t0, and returns the call's link capacities and notes. Test-only.
func (e *Env) CongestionOf(routes [][]model.LinkID, bytes float64, t0 model.Time) ([]float64, []string) {
	pr := &form{}
	for _, r := range routes {
		pr.demands = append(pr.demands, demand{route: r, bytes: bytes, weight: 1})
	}
	cg := e.physics(pr, t0)
	if cg == nil {
		return e.caps, nil
	}
	return cg.caps, cg.notes
}

// NetRoute exposes the fabric route of a network hop. Test-only.
func (e *Env) NetRoute(x model.ElemID, outNIC int, a model.ElemID, inNIC int) ([]model.LinkID, error) {
	return e.netRoute(x, outNIC, a, inNIC)
}
