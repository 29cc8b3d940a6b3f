package study

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/collsim/collsim/sim"
	"gonum.org/v1/gonum/stat"
)

// RankCheckResult compares the analytic ranking of a sweep with the
// DES's on a sample: Spearman's rank correlation over N designs.
type RankCheckResult struct {
	N       int
	Rho     float64
	Indices []int
}

// RankCheck models n designs of res (evenly spread over the grid; those
// with throughput) again with the discrete-event engine and returns
// Spearman's rho between the two engines' throughputs: 1 when they rank
// the designs alike. res must be a whole analytic sweep run with o.
func RankCheck(ctx context.Context, o SweepOptions, res *SweepResult, n int) (RankCheckResult, error) {
	var pool []*SweepDesign
	for _, d := range res.Designs {
		if d.Refused == "" && d.Throughput > 0 {
			pool = append(pool, d)
		}
	}
	if len(pool) < 3 {
		return RankCheckResult{}, fmt.Errorf("rank check: %d designs with throughput, need 3", len(pool))
	}
	n = min(n, len(pool))
	sample := make([]*SweepDesign, n)
	for i := range sample {
		sample[i] = pool[i*len(pool)/n]
	}
	req := res.Request
	req.Engine = sim.EngineDES
	des := make([]float64, n)
	ana := make([]float64, n)
	err := forEachN(ctx, n, o.Workers, func(i int) error {
		d, err := o.Sweep.Design(sample[i].Index - 1)
		if err != nil {
			return err
		}
		sd, _, err := modelDesign(ctx, d, sample[i].Cost, o.Prices, o.Params, req, o.Sweep.Metric.Workload)
		if err != nil {
			return fmt.Errorf("rank check: design %d: %w", d.Index, err)
		}
		des[i], ana[i] = sd.Throughput, sample[i].Throughput
		return nil
	})
	if err != nil {
		return RankCheckResult{}, err
	}
	out := RankCheckResult{N: n, Rho: Spearman(ana, des)}
	for _, d := range sample {
		out.Indices = append(out.Indices, d.Index)
	}
	return out, nil
}

// Spearman is Spearman's rank correlation of x and y: the Pearson
// correlation (gonum stat.Correlation) of their ranks, ties given their
// mean rank. NaN when either has no spread.
func Spearman(x, y []float64) float64 {
	rx, ry := ranks(x), ranks(y)
	r := stat.Correlation(rx, ry, nil)
	if math.IsInf(r, 0) {
		return math.NaN()
	}
	return r
}

func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	out := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			out[idx[k]] = mean
		}
		i = j + 1
	}
	return out
}
