package study

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

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
	// Workers bounds the designs modelled at once (0: GOMAXPROCS). The
	// results do not depend on it.
	Workers int
	// Shard and Shards select the Shard-th (1-based) of Shards contiguous
	// slices of the grid order (0, 0: the whole grid). A slice's result
	// is Partial: no Pareto frontier or recommendation until MergeSweep
	// joins every slice.
	Shard, Shards int
	// Progress, when not nil, is called with the designs done so far and
	// the total after each design, from one goroutine at a time.
	Progress func(done, total int)
}

// InputError is a sweep input that cannot be used (a price list missing
// an item a design uses); the command line exits 2 on it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// SweepDesign is one design of a sweep with its cost and results: plain
// data (no environment is kept, so a sweep's memory grows by a few KB per
// design), serialisable so that slices of a sweep can be joined.
type SweepDesign struct {
	Index       int      `json:"index"`
	Name        string   `json:"name"`
	Values      []string `json:"values"`
	Description string   `json:"description"`
	Nodes       int      `json:"nodes"`
	GPUs        int      `json:"gpus"`
	Cost        Cost     `json:"cost"`
	// TimeUs and BusBW are a collective's prediction; StepMs, ExposedMs,
	// ComputeMs, TokensPerSec and MFU a workload's step.
	TimeUs       float64 `json:"time_us"`
	BusBW        float64 `json:"busbw"`
	StepMs       float64 `json:"step_ms"`
	ExposedMs    float64 `json:"exposed_ms"`
	ComputeMs    float64 `json:"compute_ms"`
	TokensPerSec float64 `json:"tokens_per_s"`
	MFU          float64 `json:"mfu"`
	// Throughput is the metric's throughput (busbw, tokens/s, ...).
	Throughput float64 `json:"throughput"`
	// Eff is the scaling efficiency (workload: against one GPU's rate;
	// collective: against the same design on two nodes); EffOK is false
	// where undefined.
	Eff             float64 `json:"eff"`
	EffOK           bool    `json:"eff_ok"`
	BottleneckClass string  `json:"bottleneck_class"`
	// Limit names the bottleneck (a link, or for a workload what limits
	// the step and why).
	Limit string `json:"bottleneck"`
	// Refused says why a workload cannot run on the design (does not fit,
	// parallelism does not divide); such a design has no throughput.
	Refused string `json:"refused,omitempty"`
	// PowerKW is the cluster's power from the price list (0 without one).
	PowerKW float64 `json:"power_kw"`
	// Pareto marks the frontier (set when the whole grid is known).
	Pareto bool `json:"-"`
}

// CostPer is the cost per unit of throughput (NaN without throughput).
func (d *SweepDesign) CostPer() float64 {
	if d.Throughput <= 0 {
		return math.NaN()
	}
	return d.Cost.TotalUSD / d.Throughput
}

// USDPerMTokens is the cost of a million tokens: the design's total cost
// (hardware and energy over years) over the tokens it trains in that
// time; NaN without tokens/s or a period.
func (d *SweepDesign) USDPerMTokens(years float64) float64 {
	if d.TokensPerSec <= 0 || years <= 0 {
		return math.NaN()
	}
	return d.Cost.TotalUSD / (d.TokensPerSec * years * 8760 * 3600) * 1e6
}

// JoulesPerToken is the energy of one token at the cluster's power (NaN
// without power or tokens/s).
func (d *SweepDesign) JoulesPerToken() float64 {
	if d.TokensPerSec <= 0 || d.PowerKW <= 0 {
		return math.NaN()
	}
	return d.PowerKW * 1000 / d.TokensPerSec
}

// Bottleneck returns the design's bottleneck as a point's fields (the
// workload argument is kept for callers that pass the metric's kind).
func (d *SweepDesign) Bottleneck(bool) sim.Point {
	return sim.Point{BottleneckClass: d.BottleneckClass, Bottleneck: d.Limit}
}

// SweepResult is a sweep, priced, modelled and judged.
type SweepResult struct {
	Sweep   *scenarios.Sweep
	Prices  *scenarios.PriceCatalog
	Engine  sim.EngineKind
	Request sim.Request
	Params  sim.Params
	Within  float64
	// Designs are in grid order (only the slice's, when Partial).
	Designs []*SweepDesign
	// Total is the grid's size; Shard/Shards the slice modelled (0, 0:
	// all); Partial is true for a slice.
	Total, Shard, Shards int
	Partial              bool
	// Unit names the throughput ("GB/s busbw", "samples/s").
	Unit string
	// NCCLVersion is the NCCL release the model followed.
	NCCLVersion string
	// Best is the design with the highest throughput, Pick the cheapest
	// within the tolerance of it, Value the lowest cost per throughput
	// (nil when no design has throughput). Ties go to the cheaper, then
	// the earlier design.
	Best, Pick, Value *SweepDesign
}

// ShardRange is the 0-based half-open range [lo, hi) of the grid that
// slice i (1-based) of n takes: contiguous, sizes differing by at most
// one, in grid order.
func ShardRange(total, i, n int) (lo, hi int) {
	return (i - 1) * total / n, i * total / n
}

// Sweep prices every design (of the slice), then models the metric on
// each (and on the reference of its scaling efficiency) in parallel,
// marks the Pareto frontier and picks the recommendation unless the
// result is a slice. A design that cannot be priced is an InputError
// naming it; one that cannot be built is an error naming it.
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
	total := s.Size()
	if total == 0 || total > scenarios.MaxDesigns {
		return nil, fmt.Errorf("%s: the grid has %d designs (1..%d)", s.File, total, scenarios.MaxDesigns)
	}
	lo, hi := 0, total
	if o.Shards != 0 || o.Shard != 0 {
		if o.Shards < 1 || o.Shard < 1 || o.Shard > o.Shards {
			return nil, &InputError{fmt.Errorf("sweep: shard %d/%d: want I/N with 1 <= I <= N", o.Shard, o.Shards)}
		}
		if o.Shards > total {
			return nil, &InputError{fmt.Errorf("sweep: %d shards for %d designs: some would be empty", o.Shards, total)}
		}
		lo, hi = ShardRange(total, o.Shard, o.Shards)
	}
	res := &SweepResult{Sweep: s, Prices: cat, Engine: o.Engine, Params: o.Params, Within: within, Request: sim.Request{Engine: o.Engine},
		Total: total, Shard: o.Shard, Shards: o.Shards, Partial: o.Shards > 0}
	m := s.Metric
	if m.Workload == nil {
		es, ok := model.DatatypeSize(m.Datatype)
		if !ok {
			return nil, fmt.Errorf("%s: metric.datatype: unknown %q (known: int8, half, bfloat16, float, int32, double, int64, ...)", m.DatatypeAt, m.Datatype)
		}
		res.Request = sim.Request{Coll: m.Coll, Sizes: []model.Bytes{m.Size}, ElemSize: es, Engine: o.Engine, Algo: m.Algo, Proto: m.Proto}
		res.Unit = "GB/s busbw"
	} else {
		res.Unit = ThroughputUnit(m.Workload)
	}
	name := func(d scenarios.Design) string { return fmt.Sprintf("sweep: design %d (%s)", d.Index, d.Name) }
	res.Designs = make([]*SweepDesign, hi-lo)
	var done atomic.Int64
	var mu sync.Mutex
	var version string
	err := forEachN(ctx, hi-lo, o.Workers, func(k int) error {
		d, err := s.Design(lo + k)
		if err != nil {
			return err
		}
		cost, err := Price(cat, d.Spec)
		if err != nil {
			return &InputError{fmt.Errorf("%s: %w", name(d), err)}
		}
		sd, ver, err := modelDesign(ctx, d, cost, cat, o.Params, res.Request, m.Workload)
		if err != nil {
			return fmt.Errorf("%s: %w", name(d), err)
		}
		if k == 0 {
			version = ver
		}
		if m.Workload == nil {
			if err := collectiveEfficiency(ctx, sd, d.Spec, o.Params, res.Request); err != nil {
				return fmt.Errorf("%s: %w", name(d), err)
			}
		}
		res.Designs[k] = sd
		if o.Progress != nil {
			n := int(done.Add(1))
			mu.Lock()
			o.Progress(n, hi-lo)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.NCCLVersion = version
	if !res.Partial {
		res.Finish()
	}
	return res, nil
}

// modelDesign models one design and keeps only its results.
func modelDesign(ctx context.Context, d scenarios.Design, cost Cost, cat *scenarios.PriceCatalog, params sim.Params, req sim.Request, w *scenarios.Workload) (*SweepDesign, string, error) {
	sd := &SweepDesign{Index: d.Index, Name: d.Name, Values: d.Values, Description: scenarios.Describe(d.Spec), Nodes: d.Spec.Nodes, Cost: cost}
	gpn := d.Spec.Node.GPUs
	if d.Spec.GPUsPerNode > 0 {
		gpn = d.Spec.GPUsPerNode
	}
	sd.GPUs = gpn * d.Spec.Nodes
	if cat.PowerKW != nil {
		if kw, _, ok := lookupNode(cat.PowerKW, d.Spec.Node.Name); ok {
			sd.PowerKW = kw.Value * float64(d.Spec.Nodes)
		}
	}
	ver, _ := model.ParseVersion(d.Spec.NCCLVersion)
	if w != nil {
		st, err := TrainingStep(ctx, d.Spec, params, w, req.Engine)
		if err != nil {
			if refusable(err) {
				sd.Refused = err.Error()
				return sd, ver.String(), nil
			}
			return nil, "", err
		}
		sd.StepMs, sd.ExposedMs, sd.ComputeMs, sd.TokensPerSec, sd.MFU = st.StepMs, st.ExposedMs, st.ComputeMs, st.TokensPerSec, st.MFU
		sd.Throughput, _ = st.Throughput(w)
		sd.Eff, sd.EffOK = st.Efficiency, true
		sd.BottleneckClass, sd.Limit = st.Dominant().Point.BottleneckClass, st.Breaks
		if st.Bottleneck == "compute" {
			sd.BottleneckClass = "compute"
		}
		return sd, ver.String(), nil
	}
	envr, err := NewEnv(d.Spec, params)
	if err != nil {
		return nil, "", err
	}
	pt, err := envr.Predict(ctx, req, req.Sizes[0])
	if err != nil {
		return nil, "", err
	}
	sd.TimeUs, sd.BusBW, sd.Throughput = pt.TimeUs, pt.BusBW, pt.BusBW
	sd.BottleneckClass, sd.Limit = pt.BottleneckClass, pt.Bottleneck
	return sd, envr.Cluster.Version.String(), nil
}

// collectiveEfficiency sets a collective design's efficiency against the
// same design on two nodes (none for one node).
func collectiveEfficiency(ctx context.Context, sd *SweepDesign, spec model.ClusterSpec, params sim.Params, req sim.Request) error {
	if spec.Nodes < 2 {
		return nil
	}
	if spec.Nodes == 2 {
		sd.Eff, sd.EffOK = 1, sd.BusBW > 0
		return nil
	}
	spec.Nodes = 2
	envr, err := NewEnv(spec, params)
	if err != nil {
		return fmt.Errorf("reference of the scaling efficiency (2 nodes): %w", err)
	}
	pt, err := envr.Predict(ctx, req, req.Sizes[0])
	if err != nil {
		return fmt.Errorf("reference of the scaling efficiency (2 nodes): %w", err)
	}
	if pt.BusBW > 0 {
		sd.Eff, sd.EffOK = sd.BusBW/pt.BusBW, true
	}
	return nil
}

// Finish marks the Pareto frontier of cost against throughput (designs
// without throughput are never on it) and picks the recommendation; Sweep
// calls it for a whole grid, MergeSweep after joining slices.
func (r *SweepResult) Finish() {
	points := make([]DesignPoint, len(r.Designs))
	for i, d := range r.Designs {
		tp := d.Throughput
		if d.Refused != "" || tp <= 0 {
			tp = math.NaN()
		}
		points[i] = DesignPoint{Name: d.Name, Cost: d.Cost.TotalUSD, Throughput: tp}
	}
	for _, d := range r.Designs {
		d.Pareto = false
	}
	for _, i := range ParetoFrontier(points) {
		r.Designs[i].Pareto = true
	}
	r.Partial = false
	r.recommend()
}

// MergeSweep joins the slices of one sweep (each the result of Sweep with
// the same grid and Shards, every Shard once) into the whole grid's
// result, as one run gives it. Slices of different sweeps (fingerprint
// differs), a missing or repeated slice, or a design count that does not
// add up are errors.
func MergeSweep(base *SweepResult, parts []*SweepResult, fingerprints []string) (*SweepResult, error) {
	if len(parts) == 0 {
		return nil, &InputError{errors.New("merge: no slices")}
	}
	n := parts[0].Shards
	seen := make([]bool, n+1)
	for i, p := range parts {
		switch {
		case fingerprints[i] != fingerprints[0]:
			return nil, &InputError{fmt.Errorf("merge: slice %d/%d is of a different sweep (grid, prices or options differ from slice %d/%d)", p.Shard, p.Shards, parts[0].Shard, n)}
		case p.Shards != n:
			return nil, &InputError{fmt.Errorf("merge: slice %d/%d does not belong to a split in %d", p.Shard, p.Shards, n)}
		case p.Shard < 1 || p.Shard > n:
			return nil, &InputError{fmt.Errorf("merge: slice %d/%d is out of range", p.Shard, p.Shards)}
		case seen[p.Shard]:
			return nil, &InputError{fmt.Errorf("merge: slice %d/%d is given twice", p.Shard, n)}
		}
		seen[p.Shard] = true
	}
	var missing []int
	for i := 1; i <= n; i++ {
		if !seen[i] {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		return nil, &InputError{fmt.Errorf("merge: slice(s) %v of %d missing", missing, n)}
	}
	sorted := slices.Clone(parts)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Shard < sorted[j].Shard })
	out := *base
	out.Designs = nil
	for _, p := range sorted {
		lo, hi := ShardRange(p.Total, p.Shard, n)
		if len(p.Designs) != hi-lo || (len(p.Designs) > 0 && p.Designs[0].Index != lo+1) {
			return nil, &InputError{fmt.Errorf("merge: slice %d/%d holds %d designs, want %d from #%d", p.Shard, n, len(p.Designs), hi-lo, lo+1)}
		}
		out.Designs = append(out.Designs, p.Designs...)
	}
	if len(out.Designs) != out.Total {
		return nil, &InputError{fmt.Errorf("merge: the slices hold %d designs of %d", len(out.Designs), out.Total)}
	}
	out.Shard, out.Shards = 0, 0
	out.Finish()
	return &out, nil
}

// recommend picks the fastest design, the cheapest within the tolerance
// of it and the best value. Ties go to the cheaper, then the earlier
// design.
func (r *SweepResult) recommend() {
	r.Best, r.Pick, r.Value = nil, nil, nil
	for _, d := range r.Designs {
		if d.Refused != "" {
			continue
		}
		if r.Best == nil || d.Throughput > r.Best.Throughput || (d.Throughput == r.Best.Throughput && d.Cost.TotalUSD < r.Best.Cost.TotalUSD) {
			r.Best = d
		}
	}
	if r.Best == nil {
		return
	}
	floor := r.Best.Throughput * (1 - r.Within)
	for _, d := range r.Designs {
		if d.Refused != "" {
			continue
		}
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
		if d.Nodes != r.Designs[0].Nodes {
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
