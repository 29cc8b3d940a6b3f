package study

import (
	"context"
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
// of Nodes) and what to model on it: the workload, or when it is nil the
// collective of Request at its first size.
type ScaleOptions struct {
	Spec   model.ClusterSpec
	Params sim.Params
	// Nodes are distinct node counts 1..model.MaxRanks, at most
	// MaxScalePoints; they are modelled in increasing order.
	Nodes    []int
	Request  sim.Request
	Workload *scenarios.Workload
}

// ScalePoint is one node count of a Scale.
type ScalePoint struct {
	Nodes int
	Modelled
	// Eff is the scaling efficiency; EffOK is false where it is not
	// defined (a single node, for a collective).
	Eff   float64
	EffOK bool
}

// GPUs returns the point's GPU count.
func (p *ScalePoint) GPUs() int { return p.Env.Cluster.NumRanks() }

// ScaleResult is a Scale: one point per node count, in increasing order.
type ScaleResult struct {
	Spec     model.ClusterSpec
	Params   sim.Params
	Request  sim.Request
	Workload *scenarios.Workload
	Points   []*ScalePoint
	// Ref is the reference of the efficiency: the smallest multi-node
	// point for a collective, one node for a workload (modelled even when
	// 1 is not among the counts); nil when there is none.
	Ref *ScalePoint
}

// Scale models every node count (and, for a workload, one node as the
// reference) in parallel, and the scaling efficiency of each against the
// reference.
func Scale(ctx context.Context, o ScaleOptions) (*ScaleResult, error) {
	nodes := slices.Clone(o.Nodes)
	slices.Sort(nodes)
	switch {
	case len(nodes) == 0:
		return nil, fmt.Errorf("scale: no node counts")
	case len(nodes) > MaxScalePoints:
		return nil, fmt.Errorf("scale: %d node counts, more than %d", len(nodes), MaxScalePoints)
	case nodes[0] < 1 || nodes[len(nodes)-1] > model.MaxRanks:
		return nil, fmt.Errorf("scale: node counts must be within 1..%d", model.MaxRanks)
	case len(slices.Compact(slices.Clone(nodes))) != len(nodes):
		return nil, fmt.Errorf("scale: a node count is listed twice")
	case o.Workload == nil && len(o.Request.Sizes) == 0:
		return nil, fmt.Errorf("scale: no message size")
	}
	w := o.Workload
	res := &ScaleResult{Spec: o.Spec, Params: o.Params, Request: o.Request, Workload: w}
	counts := nodes
	if w != nil && counts[0] != 1 {
		counts = append([]int{1}, counts...)
	}
	pts := make([]*ScalePoint, len(counts))
	err := forEach(ctx, len(counts), func(i int) error {
		s := o.Spec
		s.Nodes = counts[i]
		m, err := Model(ctx, s, o.Params, o.Request, w)
		if err != nil {
			return fmt.Errorf("scale: %d node(s): %w", counts[i], err)
		}
		pts[i] = &ScalePoint{Nodes: counts[i], Modelled: m}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if w != nil {
		res.Ref = pts[0]
		if nodes[0] != 1 {
			pts = pts[1:]
		}
	} else {
		for _, p := range pts {
			if p.Nodes >= 2 {
				res.Ref = p
				break
			}
		}
	}
	for _, p := range pts {
		if w != nil || (res.Ref != nil && p.Nodes >= 2) {
			p.Eff, p.EffOK = p.Efficiency(&res.Ref.Modelled, w != nil)
		}
	}
	res.Points = pts
	return res, nil
}
