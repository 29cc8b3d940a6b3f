package study

import (
	"context"
	"fmt"
	"sort"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
)

// Limits and judgement of Compare.
const (
	// MaxCompareDesigns bounds the designs of one comparison.
	MaxCompareDesigns = 16
	// LargeFrom is where the bandwidth regime starts: Compare judges the
	// faster design on the sizes from here up (64 MiB, the regime
	// docs/calibrate.md scores bandwidth on).
	LargeFrom = 64 * model.MiB
	// TieWithin is the one tie rule of every comparison's output (badge,
	// summary, stdout): a design whose mean large-size busbw is within 2%
	// of the fastest's ties with it. Assumption: nccl-tests busbw varies
	// by about 1-2% from run to run on one cluster, so a smaller predicted
	// gap would not show as a ranking on the machines.
	TieWithin = 0.02
)

// CompareDesign is one cluster of a comparison, resolved.
type CompareDesign struct {
	Name   string
	Spec   model.ClusterSpec
	Params sim.Params
}

// CompareOptions are the designs to compare (1..MaxCompareDesigns; the
// first is the reference of the ratios) and the sweep to predict on each.
type CompareOptions struct {
	Designs []CompareDesign
	Request sim.Request
}

// CompareDesignResult is one design with its environment and one point per
// requested size.
type CompareDesignResult struct {
	CompareDesign
	Env    *sim.Env
	Points []sim.Point
}

// CompareResult is a comparison: the request and every design's results,
// in the order given.
type CompareResult struct {
	Request sim.Request
	Designs []*CompareDesignResult
}

// Compare builds every design and predicts the request on each, in
// parallel; the first failing design (in order) names itself in the error.
func Compare(ctx context.Context, o CompareOptions) (*CompareResult, error) {
	switch {
	case len(o.Designs) == 0:
		return nil, fmt.Errorf("compare: no designs")
	case len(o.Designs) > MaxCompareDesigns:
		return nil, fmt.Errorf("compare: %d designs is more than %d; split the comparison", len(o.Designs), MaxCompareDesigns)
	case len(o.Request.Sizes) == 0:
		return nil, fmt.Errorf("compare: no sizes to predict")
	}
	res := &CompareResult{Request: o.Request, Designs: make([]*CompareDesignResult, len(o.Designs))}
	err := forEach(ctx, len(o.Designs), func(i int) error {
		d := o.Designs[i]
		envr, err := NewEnv(d.Spec, d.Params)
		if err != nil {
			return fmt.Errorf("compare: design %q: %w", d.Name, err)
		}
		pts, err := envr.Sweep(ctx, o.Request)
		if err != nil {
			return fmt.Errorf("compare: design %q: %w", d.Name, err)
		}
		res.Designs[i] = &CompareDesignResult{CompareDesign: d, Env: envr, Points: pts}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Large returns the indices of the sizes Compare judges designs on: those
// of at least LargeFrom, or the largest alone when none is.
func (r *CompareResult) Large() []int {
	var out []int
	for i, s := range r.Request.Sizes {
		if s >= LargeFrom {
			out = append(out, i)
		}
	}
	if len(out) == 0 && len(r.Request.Sizes) > 0 {
		out = []int{len(r.Request.Sizes) - 1}
	}
	return out
}

// MeanLarge is a design's mean busbw over the large sizes.
func (r *CompareResult) MeanLarge(d *CompareDesignResult) float64 {
	idx := r.Large()
	var s float64
	for _, i := range idx {
		s += d.Points[i].BusBW
	}
	return s / float64(max(len(idx), 1))
}

// Ranking returns the designs by mean large-size busbw, fastest first
// (ties in the given order).
func (r *CompareResult) Ranking() []*CompareDesignResult {
	out := append([]*CompareDesignResult(nil), r.Designs...)
	sort.SliceStable(out, func(i, j int) bool { return r.MeanLarge(out[i]) > r.MeanLarge(out[j]) })
	return out
}

// Fraction is d's mean large-size busbw relative to the fastest design's;
// tie reports whether it is within TieWithin of it.
func (r *CompareResult) Fraction(d *CompareDesignResult) (f float64, tie bool) {
	f = r.MeanLarge(d) / r.MeanLarge(r.Ranking()[0])
	return f, f >= 1-TieWithin
}

// AllTie reports whether every design ties with the fastest (TieWithin):
// then no design is "faster" anywhere in the output.
func (r *CompareResult) AllTie() bool {
	for _, d := range r.Designs {
		if _, tie := r.Fraction(d); !tie {
			return false
		}
	}
	return true
}

// TieRule states the tie rule for outputs.
func TieRule() string {
	return fmt.Sprintf("designs within %g%% of the fastest mean busbw at the large sizes are a tie", 100*TieWithin)
}

// Ratio is busbw of design d at size i relative to the first design; ok
// is false when the first design's busbw is not positive.
func (r *CompareResult) Ratio(d *CompareDesignResult, i int) (float64, bool) {
	ref := r.Designs[0].Points[i].BusBW
	if ref <= 0 {
		return 0, false
	}
	return d.Points[i].BusBW / ref, true
}
