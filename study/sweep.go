package study

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// DefaultWithin is the recommendation's tolerance when neither the options
// nor the sweep give one: the cheapest design within 10% of the best
// throughput.
const DefaultWithin = 0.10

// SweepOptions are a what-if grid and how to judge it.
type SweepOptions struct {
	Sweep  *scenarios.Sweep
	Prices *scenarios.PriceCatalog
	Params sim.Params
	Engine sim.EngineKind
	// Within is the tolerance of the recommendation, in (0, 1); zero takes
	// the sweep's, else DefaultWithin.
	Within float64
}

// SweepDesign is one design of a sweep with its cost and results.
type SweepDesign struct {
	scenarios.Design
	Cost Cost
	Modelled
	// Throughput is the metric's throughput (busbw, samples/s, ...).
	Throughput float64
	// Eff is the scaling efficiency against the same design on one node
	// (workload) or two (collective); EffOK is false where undefined.
	Eff    float64
	EffOK  bool
	Pareto bool
}

// CostPer is the cost per unit of throughput (NaN without throughput).
func (d *SweepDesign) CostPer() float64 {
	if d.Throughput <= 0 {
		return math.NaN()
	}
	return d.Cost.TotalUSD / d.Throughput
}

// SweepResult is a sweep, priced, modelled and judged.
type SweepResult struct {
	Sweep   *scenarios.Sweep
	Prices  *scenarios.PriceCatalog
	Engine  sim.EngineKind
	Request sim.Request
	Params  sim.Params
	Within  float64
	Designs []*SweepDesign
	// Unit names the throughput ("GB/s busbw", "samples/s").
	Unit string
	// Best is the design with the highest throughput, Pick the cheapest
	// within the tolerance of it, Value the lowest cost per throughput
	// (nil when no design has throughput). Ties go to the cheaper, then
	// the earlier design.
	Best, Pick, Value *SweepDesign
}

// Sweep prices every design, then models the metric on each (and on the
// reference of its scaling efficiency) in parallel, marks the Pareto
// frontier of cost against throughput and picks the recommendation. A
// design that cannot be priced or built is an error naming it.
func Sweep(ctx context.Context, o SweepOptions) (*SweepResult, error) {
	s, cat := o.Sweep, o.Prices
	if s == nil || cat == nil {
		return nil, errors.New("sweep: a sweep and a price catalog are needed")
	}
	within := o.Within
	if within == 0 {
		within = s.Within
	}
	if within == 0 {
		within = DefaultWithin
	}
	if within <= 0 || within >= 1 {
		return nil, fmt.Errorf("sweep: within %v is not a fraction between 0 and 1", within)
	}
	ds, err := s.Designs()
	if err != nil {
		return nil, err
	}
	res := &SweepResult{Sweep: s, Prices: cat, Engine: o.Engine, Params: o.Params, Within: within, Request: sim.Request{Engine: o.Engine}}
	m := s.Metric
	if m.Workload == nil {
		es, ok := model.DatatypeSize(m.Datatype)
		if !ok {
			return nil, fmt.Errorf("%s: metric.datatype: unknown %q (known: int8, half, bfloat16, float, int32, double, int64, ...)", m.DatatypeAt, m.Datatype)
		}
		res.Request = sim.Request{Coll: m.Coll, Sizes: []model.Bytes{m.Size}, ElemSize: es, Engine: o.Engine, Algo: m.Algo, Proto: m.Proto}
		res.Unit = "GB/s busbw"
	} else {
		_, res.Unit = m.Workload.Throughput(scenarios.WorkloadStep{})
	}
	name := func(d scenarios.Design) string { return fmt.Sprintf("sweep: design %d (%s)", d.Index, d.Name) }
	for _, d := range ds {
		cost, err := Price(cat, d.Spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name(d), err)
		}
		res.Designs = append(res.Designs, &SweepDesign{Design: d, Cost: cost})
	}
	eval := func(spec model.ClusterSpec) (Modelled, error) {
		return Model(ctx, spec, o.Params, res.Request, m.Workload)
	}
	err = forEach(ctx, len(res.Designs), func(i int) error {
		d := res.Designs[i]
		md, err := eval(d.Spec)
		if err != nil {
			return fmt.Errorf("%s: %w", name(d.Design), err)
		}
		d.Modelled = md
		if m.Workload != nil {
			d.Throughput, _ = m.Workload.Throughput(md.Step.Step)
		} else {
			d.Throughput = md.Point.BusBW
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := res.efficiencies(ctx, eval); err != nil {
		return nil, err
	}
	points := make([]DesignPoint, len(res.Designs))
	for i, d := range res.Designs {
		points[i] = DesignPoint{Name: d.Name, Cost: d.Cost.TotalUSD, Throughput: d.Throughput}
	}
	for _, i := range ParetoFrontier(points) {
		res.Designs[i].Pareto = true
	}
	res.recommend()
	return res, nil
}

// refSpec is the reference of a design's scaling efficiency: the same
// design on one node for a workload, on two for a collective (none for a
// single-node collective).
func (r *SweepResult) refSpec(d *SweepDesign) (model.ClusterSpec, bool) {
	s := d.Spec
	switch {
	case r.Sweep.Metric.Workload != nil:
		s.Nodes = 1
	case s.Nodes < 2:
		return s, false
	default:
		s.Nodes = 2
	}
	return s, true
}

// efficiencies models each distinct reference once and sets every
// design's scaling efficiency against it.
func (r *SweepResult) efficiencies(ctx context.Context, eval func(model.ClusterSpec) (Modelled, error)) error {
	var keys []string
	refs := map[string]model.ClusterSpec{}
	keyOf := make([]string, len(r.Designs))
	for i, d := range r.Designs {
		s, ok := r.refSpec(d)
		if !ok {
			continue
		}
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		k := string(b)
		keyOf[i] = k
		if _, dup := refs[k]; !dup {
			refs[k] = s
			keys = append(keys, k)
		}
	}
	out := make([]Modelled, len(keys))
	err := forEach(ctx, len(keys), func(i int) error {
		m, err := eval(refs[keys[i]])
		if err != nil {
			return fmt.Errorf("sweep: reference of the scaling efficiency (%d node(s)): %w", refs[keys[i]].Nodes, err)
		}
		out[i] = m
		return nil
	})
	if err != nil {
		return err
	}
	at := map[string]Modelled{}
	for i, k := range keys {
		at[k] = out[i]
	}
	for i, d := range r.Designs {
		ref, ok := at[keyOf[i]]
		if keyOf[i] == "" || !ok {
			continue
		}
		d.Eff, d.EffOK = d.Efficiency(&ref, r.Sweep.Metric.Workload != nil)
	}
	return nil
}

// recommend picks the fastest design, the cheapest within the tolerance
// of it and the best value. Ties go to the cheaper, then the earlier
// design.
func (r *SweepResult) recommend() {
	for _, d := range r.Designs {
		if r.Best == nil || d.Throughput > r.Best.Throughput || (d.Throughput == r.Best.Throughput && d.Cost.TotalUSD < r.Best.Cost.TotalUSD) {
			r.Best = d
		}
	}
	if r.Best == nil {
		return
	}
	floor := r.Best.Throughput * (1 - r.Within)
	for _, d := range r.Designs {
		if d.Throughput >= floor && (r.Pick == nil || d.Cost.TotalUSD < r.Pick.Cost.TotalUSD || (d.Cost.TotalUSD == r.Pick.Cost.TotalUSD && d.Throughput > r.Pick.Throughput)) {
			r.Pick = d
		}
		if v := d.CostPer(); !math.IsNaN(v) && (r.Value == nil || v < r.Value.CostPer()) {
			r.Value = d
		}
	}
}

// VariesNodes reports whether the designs differ in node count.
func (r *SweepResult) VariesNodes() bool {
	for _, d := range r.Designs {
		if d.Spec.Nodes != r.Designs[0].Spec.Nodes {
			return true
		}
	}
	return false
}

// ParetoOrder returns the Pareto-optimal designs in order of cost.
func (r *SweepResult) ParetoOrder() []*SweepDesign {
	out := slices.DeleteFunc(slices.Clone(r.Designs), func(d *SweepDesign) bool { return !d.Pareto })
	sort.SliceStable(out, func(i, j int) bool { return out[i].Cost.TotalUSD < out[j].Cost.TotalUSD })
	return out
}
