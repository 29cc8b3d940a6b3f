package sim

import (
	"context"

	"github.com/collsim/collsim/model"
)

// UplinkBytes returns, for each GPU of node 0, the bytes the call puts on
// the GPU's outgoing links (NVLink and PCIe out of the GPU), from the DES
// schedule of every unit and node (Schedule.LinkLoad). Test-only: it lets the external tests check an
// algorithm's traffic against its formula.
func (e *Env) UplinkBytes(ctx context.Context, coll model.Collective, algo string, size model.Bytes) []float64 {
	var ap *model.Algo
	if algo != "" {
		if a, err := model.ParseAlgo(algo); err == nil {
			ap = &a
		}
	}
	if ap == nil && (coll == model.AlltoAll || coll == model.SendRecv) {
		d := model.AlgoDirect
		ap = &d
	}
	ch, err := e.Tuner.Select(coll, size, ap, nil)
	if err != nil {
		return nil
	}
	pr, err := e.program(Call{Coll: coll, Bytes: size, Choice: ch}, true, desOpts{full: true})
	if err != nil {
		return nil
	}
	load := pr.sched.LinkLoad(len(e.caps))
	t := e.Cluster.Topo
	gpus := e.Cluster.Nodes[0].GPUs
	idx := map[model.ElemID]int{}
	for i, g := range gpus {
		idx[g] = i
	}
	out := make([]float64, len(gpus))
	eff := 1.0
	if ch.Proto != model.ProtoSimple {
		eff = model.ProtoPayload(ch.Proto)
	}
	for l := range t.Links {
		if i, ok := idx[t.Links[l].From]; ok {
			out[i] += load[l] * eff
		}
	}
	return out
}

// Loads returns, per link, the bytes the DES schedule of every unit and
// node puts on it (Schedule.LinkLoad, symmetry reductions off) and the
// bytes the analytic engine's traffic matrix puts on it. Test-only.
func (e *Env) Loads(coll model.Collective, algo model.Algo, size model.Bytes) (des, an []float64, err error) {
	ch, err := e.Tuner.Select(coll, size, &algo, nil)
	if err != nil {
		return nil, nil, err
	}
	call := Call{Coll: coll, Bytes: size, Choice: ch}
	pr, err := e.program(call, true, desOpts{full: true})
	if err != nil {
		return nil, nil, err
	}
	f, err := e.closedForm(call)
	if err != nil {
		return nil, nil, err
	}
	_, an, _ = e.analytic(f, 0)
	return pr.sched.LinkLoad(len(e.caps)), an, nil
}

// VirtualLinkClasses returns the latency class routeClass gives a route of
// each virtual link alone, and the name linkClassName gives it, in link
// order: the fabric's bundles first, then the cross-socket P2P links.
func (e *Env) VirtualLinkClasses() (classes []model.LatClass, names []string) {
	for id := len(e.Cluster.Topo.Links); id < len(e.caps); id++ {
		classes = append(classes, e.routeClass([]model.LinkID{model.LinkID(id)}))
		names = append(names, e.linkClassName(model.LinkID(id)))
	}
	return classes, names
}

// ops returns every op of s, as added. Test-only.
func (s *Schedule) ops() []Op {
	out := make([]Op, s.Len())
	for i := range out {
		out[i] = s.Op(i)
	}
	return out
}

// editOp returns a copy of s with op i changed by f. Test-only.
func (s *Schedule) editOp(i int, f func(*Op)) *Schedule {
	ops := s.ops()
	f(&ops[i])
	return NewSchedule(ops...)
}

// Reserved returns the ops and dependency entries the builder reserved
// (and the memory estimate counted) for the DES schedule of one call with
// every unit built, and those the schedule holds beyond its base op.
// Test-only.
func (e *Env) Reserved(coll model.Collective, algo model.Algo, size model.Bytes, proto *model.Proto) (reserved, built [2]int64, err error) {
	ch, err := e.Tuner.Select(coll, size, &algo, proto)
	if err != nil {
		return reserved, built, err
	}
	pr, err := e.program(Call{Coll: coll, Bytes: size, Choice: ch}, true, desOpts{full: true})
	if err != nil {
		return reserved, built, err
	}
	return pr.reserved, [2]int64{int64(pr.sched.Len() - 1), int64(pr.sched.depCount())}, nil
}
