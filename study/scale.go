package study

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// MaxScalePoints bounds the node counts of one Scale.
const MaxScalePoints = 64

// DefaultNodeCounts are the node counts Scale models when none are given:
// the powers of two up to maxNodes, and maxNodes itself when it is not
// one. It returns nil when maxNodes is below 1.
func DefaultNodeCounts(maxNodes int) []int {
	var out []int
	for n := 1; n <= maxNodes; n *= 2 {
		out = append(out, n)
	}
	if len(out) > 0 && out[len(out)-1] != maxNodes {
		out = append(out, maxNodes)
	}
	return out
}

// ScaleOptions are one design (Spec; its node count is replaced by each
// of Nodes, or, for a one-node design, its GPUs per node by each of GPUs)
// and what to model on it: the workload, or when it is nil the
// collective of Request at its first size.
type ScaleOptions struct {
	Spec   model.ClusterSpec
	Params sim.Params
	// Nodes are distinct node counts 1..model.MaxRanks, at most
	// MaxScalePoints; they are modelled in increasing order. GPUs, when
	// not empty, are GPU counts of one node instead (Nodes is then
	// ignored).
	Nodes    []int
	GPUs     []int
	Request  sim.Request
	Workload *scenarios.Workload
}

// ScalePoint is one node count of a Scale.
type ScalePoint struct {
	Nodes, GPUsPerNode int
	Modelled
	// Eff is the scaling efficiency; EffOK is false where it is not
	// defined.
	Eff   float64
	EffOK bool
	// Refused, for a workload, says why the point was not modelled (the
	// model does not fit, the parallelism does not divide); empty when it
	// was.
	Refused string
}

// GPUs returns the point's GPU count.
func (p *ScalePoint) GPUs() int { return p.Nodes * p.GPUsPerNode }

// ScaleResult is a Scale: one point per count, in increasing order.
type ScaleResult struct {
	Spec     model.ClusterSpec
	Params   sim.Params
	Request  sim.Request
	Workload *scenarios.Workload
	Points   []*ScalePoint
	// ByGPUs is true when the points vary the GPUs of one node.
	ByGPUs bool
	// Ref is the reference of a collective's efficiency: the smallest
	// multi-node count that runs the same algorithm and protocol with the
	// same bottleneck class as the largest count (a count where the
	// algorithm changes would make every other point read as a loss or a
	// gain that is not scaling); nil for a workload, whose reference is
	// one GPU (RefLabel).
	Ref      *ScalePoint
	RefLabel string
}

// Scale models every count in parallel and the scaling efficiency of
// each: for a workload against one GPU doing the same per-GPU work with
// no communication, for a collective against Ref. For a workload, a
// count that cannot run it (does not fit, parallelism does not divide) is
// kept as Refused; when every count is refused the first refusal is the
// error.
func Scale(ctx context.Context, o ScaleOptions) (*ScaleResult, error) {
	counts := slices.Clone(o.Nodes)
	byGPUs := len(o.GPUs) > 0
	if byGPUs {
		counts = slices.Clone(o.GPUs)
	}
	slices.Sort(counts)
	hi := model.MaxRanks
	if byGPUs {
		hi = o.Spec.Node.GPUs
	}
	switch {
	case len(counts) == 0:
		return nil, fmt.Errorf("scale: no counts")
	case len(counts) > MaxScalePoints:
		return nil, fmt.Errorf("scale: %d counts, more than %d", len(counts), MaxScalePoints)
	case counts[0] < 1 || counts[len(counts)-1] > hi:
		return nil, fmt.Errorf("scale: counts must be within 1..%d", hi)
	case len(slices.Compact(slices.Clone(counts))) != len(counts):
		return nil, fmt.Errorf("scale: a count is listed twice")
	case o.Workload == nil && len(o.Request.Sizes) == 0:
		return nil, fmt.Errorf("scale: no message size")
	}
	w := o.Workload
	res := &ScaleResult{Spec: o.Spec, Params: o.Params, Request: o.Request, Workload: w, ByGPUs: byGPUs}
	pts := make([]*ScalePoint, len(counts))
	err := forEach(ctx, len(counts), func(i int) error {
		s := o.Spec
		if byGPUs {
			s.Nodes, s.GPUsPerNode = 1, counts[i]
		} else {
			s.Nodes = counts[i]
		}
		gpn := s.Node.GPUs
		if s.GPUsPerNode > 0 {
			gpn = s.GPUsPerNode
		}
		p := &ScalePoint{Nodes: s.Nodes, GPUsPerNode: gpn}
		m, err := Model(ctx, s, o.Params, o.Request, w)
		if err != nil {
			if w != nil && refusable(err) {
				p.Refused = err.Error()
				pts[i] = p
				return nil
			}
			return fmt.Errorf("scale: %d %s: %w", counts[i], map[bool]string{true: "GPU(s)", false: "node(s)"}[byGPUs], err)
		}
		p.Modelled = m
		pts[i] = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Points = pts
	if w != nil {
		res.RefLabel = "one GPU doing the same per-GPU work with no communication (the single-GPU rate)"
		ok := false
		for _, p := range pts {
			if p.Refused == "" {
				p.Eff, p.EffOK = p.Efficiency(nil, true)
				ok = true
			}
		}
		if !ok {
			return nil, fmt.Errorf("scale: no count can run the workload: %s", pts[0].Refused)
		}
		return res, nil
	}
	last := pts[len(pts)-1].Point
	for _, p := range pts {
		if p.Nodes >= 2 && p.Point.Choice.Algo == last.Choice.Algo && p.Point.Choice.Proto == last.Choice.Proto && p.Point.BottleneckClass == last.BottleneckClass {
			res.Ref = p
			break
		}
	}
	if res.Ref != nil {
		res.RefLabel = fmt.Sprintf("%d nodes, the smallest multi-node count that runs %s/%s bound by %s like the largest count", res.Ref.Nodes, last.Choice.Algo, last.Choice.Proto, last.BottleneckClass)
		for _, p := range pts {
			if p.Nodes >= 2 {
				p.Eff, p.EffOK = p.Efficiency(&res.Ref.Modelled, false)
			}
		}
	}
	return res, nil
}

// refusable reports whether err is a design the workload cannot run on
// (memory, layout) rather than a failure.
func refusable(err error) bool {
	if errors.Is(err, ErrDoesNotFit) {
		return true
	}
	var le *LayoutError
	return errors.As(err, &le)
}
