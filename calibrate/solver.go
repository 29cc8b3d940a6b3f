package calibrate

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/collsim/collsim/sim"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// The solver: small vector helpers, the quantiles the fit and validate
// report, the covariance of the fitted terms, and the Gauss-Newton
// minimisation on gonum/optimize.
//
// quantileOf is the linear interpolation between order statistics at
// q*(n-1) (Hyndman and Fan type 7, the default of R and numpy), so the
// median of an even count is the mean of the middle two. gonum/stat's
// Quantile does not compute this: stat.LinInterp interpolates at q*n
// (type 4) and stat.Empirical returns an order statistic (type 1); for
// {1, 2, 3, 4} both give a median of 2, not 2.5. Switching would change
// the medians and p90s that fit, validate and accuracy report, so the
// helper stays (TestQuantileOf holds the definition and the difference).
//
// The minimiser is gonum/optimize's Newton method and, at kinks, its
// Nelder-Mead; only the objective's derivatives are computed here: the
// forward-difference Jacobian of the residuals and the Gauss-Newton
// Hessian J'J built from it. gonum/optimize has no least-squares method
// that takes residuals, and its Newton needs a Hessian; any other
// Hessian (BFGS's, or differences of the gradient) changes the iterates
// and so the fitted values that profiles and golden files record, so the
// Gauss-Newton Hessian stays.

func norm2(v []float64) float64 { return math.Sqrt(dot(v, v)) }

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func rms(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return math.Sqrt(dot(v, v) / float64(len(v)))
}

// medianAbsBW converts log-time residuals to busbw errors (measured time
// over model time, minus one) and returns their median magnitude.
func medianAbsBW(r []float64) float64 {
	if len(r) == 0 {
		return 0
	}
	a := make([]float64, len(r))
	for i, x := range r {
		a[i] = math.Abs(math.Exp(-x) - 1)
	}
	return Median(a)
}

// Median returns the median of v (the mean of the middle two for even
// lengths; v is not modified); 0 for empty v.
func Median(v []float64) float64 { return quantileOf(v, 0.5) }

// quantileOf returns the q-quantile of v by linear interpolation between
// order statistics; 0 for empty v.
func quantileOf(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	i := int(math.Floor(pos))
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	f := pos - float64(i)
	return s[i]*(1-f) + s[i+1]*f
}

// boundedTerm is a term being fitted: its name, bounds and prior.
type boundedTerm struct {
	name   string
	lo, hi float64
	prior  termPrior
}

// covariance returns each term's standard error at q from the posterior
// covariance (J^T W J / s^2 + P)^-1: J the Jacobian of the log-time
// residuals by central differences, W the point weights pw
// (fitProblem.pointWeights) times the robust loss's IRLS weights, s^2 the
// weighted residual variance over the points' degrees of freedom and P the
// precision of the terms' priors.
// Columns are scaled to d r / d log(v) for conditioning. A term's error is
// NaN when the data leave no degrees of freedom or the matrix is singular.
func covariance(fp *fitProblem, q *sim.Params, useLink []bool, pw []float64, scale float64, rl Loss, terms []boundedTerm) ([]float64, error) {
	n := len(terms)
	stderr := make([]float64, n)
	for j := range stderr {
		stderr[j] = math.NaN()
	}
	rf, err := fp.residuals(q, useLink)
	if err != nil {
		return nil, err
	}
	dof := len(rf) - n
	if dof <= 0 {
		return stderr, nil
	}
	J := mat.NewDense(len(rf), n, nil)
	vals := make([]float64, n)
	for j, t := range terms {
		v, _ := q.Get(t.name)
		vals[j] = math.Max(math.Abs(v), 1e-12)
		h := 1e-3 * math.Max(math.Abs(v), (t.hi-t.lo)*1e-3)
		lo, hi := math.Max(v-h, t.lo), math.Min(v+h, t.hi)
		qa, qb := *q, *q
		_ = qa.Set(t.name, lo)
		_ = qb.Set(t.name, hi)
		ra, err := fp.residuals(&qa, useLink)
		if err != nil {
			return nil, err
		}
		rb, err := fp.residuals(&qb, useLink)
		if err != nil {
			return nil, err
		}
		for i := range rf {
			J.Set(i, j, (rb[i]-ra[i])/(hi-lo)*vals[j])
		}
	}
	var s2, wsum float64
	for i, ri := range rf {
		w := pw[i] * rl.weight(ri/scale) / 2
		wsum += pw[i]
		s2 += w * ri * ri
		sw := math.Sqrt(w)
		for j := 0; j < n; j++ {
			J.Set(i, j, J.At(i, j)*sw)
		}
	}
	// The weighted variance over the points' degrees of freedom, in the
	// weights' units (their sum stands for the count of points).
	s2 /= wsum * float64(dof) / float64(len(rf))
	if s2 <= 0 {
		s2 = 1e-12
	}
	// Terms whose column vanished at the optimum (a kink moved the point
	// out of their reach) get no error; the others are inverted together.
	var keep []int
	for j := 0; j < n; j++ {
		if mat.Norm(J.ColView(j), 2) > 1e-12 {
			keep = append(keep, j)
		}
	}
	if len(keep) == 0 {
		return stderr, nil
	}
	sub := mat.NewDense(len(rf), len(keep), nil)
	for k, j := range keep {
		sub.SetCol(k, mat.Col(nil, j, J))
	}
	var jtj mat.SymDense
	jtj.SymOuterK(1/s2, sub.T())
	for k, j := range keep {
		// The prior's precision in d log(v) units: 1/sd^2 on a log scale,
		// (v/sd)^2 on the term's own.
		pr := terms[j].prior
		prec := 1 / (pr.SD * pr.SD)
		if pr.Absolute {
			prec = vals[j] * vals[j] / (pr.SD * pr.SD)
		}
		jtj.SetSym(k, k, jtj.At(k, k)+prec)
	}
	var cov mat.Dense
	err = cov.Inverse(&jtj)
	var cond mat.Condition
	if err != nil && !(errors.As(err, &cond) && float64(cond) < 1e14) {
		return stderr, nil
	}
	for k, j := range keep {
		if d := cov.At(k, k); d >= 0 {
			stderr[j] = math.Sqrt(d) * vals[j]
		}
	}
	return stderr, nil
}

// newtonRelTol is the relative decrease of the objective below which
// three Newton iterations in a row count as converged. The Gauss-Newton
// Hessian of the Cauchy loss overstates the curvature of points beyond one
// scale, so near the optimum Newton creeps by about 1e-5 of the objective
// per iteration with parameters moving in the fourth digit; 1e-4 stops
// there instead of spending the evaluation budget.
const newtonRelTol = 1e-4

// converged reports whether an optimiser status means convergence.
func converged(s optimize.Status) bool {
	switch s {
	case optimize.Success, optimize.FunctionConvergence, optimize.FunctionThreshold, optimize.GradientThreshold,
		optimize.StepConvergence, optimize.MethodConverge:
		return true
	}
	return false
}

// minimise runs gonum/optimize's Newton method with the Gauss-Newton
// Hessian from x0. The model is piecewise smooth (NCCL's choices and
// max() of link loads make kinks), so a line search can fail at a kink:
// there a short Nelder-Mead run (also gonum/optimize) checks the point;
// if it cannot improve the objective the fit has
// converged (less than 0.1% relative), otherwise Newton restarts from
// the better point. maxEvals
// bounds model evaluations overall.
func (g *gaussNewton) minimise(x0 []float64, maxEvals int) (*optimize.Result, error) {
	start := g.fp.evals
	left := func() int { return maxEvals - (g.fp.evals - start) }
	x := x0
	var last *optimize.Result
	for round := 0; round < 5; round++ {
		if left() <= 0 {
			break
		}
		settings := &optimize.Settings{
			FuncEvaluations:   max(left()/(g.n+1), 1),
			MajorIterations:   100,
			GradientThreshold: 1e-6,
			Converger:         &optimize.FunctionConverge{Absolute: 1e-6, Relative: newtonRelTol, Iterations: 3},
		}
		prob := optimize.Problem{Func: g.f, Grad: g.grad, Hess: g.hess}
		out, err := optimize.Minimize(prob, x, settings, &optimize.Newton{Linesearcher: &optimize.Backtracking{}})
		if g.err != nil || out == nil {
			return out, err
		}
		g.iterations += out.MajorIterations
		last = out
		if err == nil && converged(out.Status) {
			return out, nil
		}
		if (out.Status == optimize.FunctionEvaluationLimit || out.Status == optimize.IterationLimit) && left() > 0 {
			// The round used its share of the evaluations, not the fit's:
			// go on from where it stopped.
			x = out.X
			continue
		}
		if out.Status != optimize.Failure || left() <= 0 {
			return out, fmt.Errorf("%s", out.Status)
		}
		// Line search failure: check the point without derivatives.
		budget := min(left(), 40*(g.n+1))
		nm, nerr := optimize.Minimize(optimize.Problem{Func: g.f}, out.X, &optimize.Settings{
			FuncEvaluations: budget,
			Converger:       &optimize.FunctionConverge{Absolute: 1e-6, Relative: 1e-5, Iterations: 10 * g.n},
		}, &optimize.NelderMead{SimplexSize: 0.05})
		if g.err != nil || nm == nil {
			return out, nerr
		}
		if nm.F >= out.F-(1e-3*math.Abs(out.F)+1e-9) {
			out.Status = optimize.StepConvergence
			return out, nil
		}
		x = nm.X
		last = nm
	}
	if last == nil {
		return nil, errors.New("no evaluation left")
	}
	return last, fmt.Errorf("%s after %d restarts", last.Status, 5)
}

// gaussNewton evaluates the robust objective, its gradient and its
// Gauss-Newton Hessian in the transformed coordinates, sharing one
// finite-difference Jacobian between the gradient and Hessian calls at a
// point.
type gaussNewton struct {
	fp      *fitProblem
	useLink []bool
	scale   float64
	rl      Loss
	n       int
	// w weighs each residual's loss (fitProblem.pointWeights).
	w     []float64
	resid func(x []float64) (data, prior []float64, err error)
	err   error
	// iterations counts Newton major iterations over restarts.
	iterations int

	jx       []float64   // point of the cached Jacobian
	jr, jp   []float64   // residuals there
	jd, jpri [][]float64 // d residual / d x_j, by column
}

// jacStep is the forward-difference step in transformed coordinates.
const jacStep = 1e-3

// Loss is the robust loss rho(z) a fit applies to each residual z in
// units of FitOptions.Scale. Every loss is z^2 for small z, so a point
// within about one scale counts as in least squares; they differ in how
// much a far point still pulls.
type Loss string

const (
	// LossCauchy is rho(z) = log(1+z^2), the negative log-likelihood of a
	// Student-t (one degree of freedom): a point's pull, psi(z) =
	// 2z/(1+z^2), is largest at one scale and falls off beyond, so points
	// the model's structure cannot reach (a ramp it gets 40% wrong) stop
	// dragging the terms that the rest of the points determine. Many
	// points that agree still move a term however far they start.
	LossCauchy Loss = "cauchy"
	// LossSoftL1 is rho(z) = 2(sqrt(1+z^2)-1): a far point pulls with a
	// constant force, so a group of points the model cannot describe
	// moves terms by as much as it likes. Fits before the Cauchy default
	// used it.
	LossSoftL1 Loss = "soft-l1"
)

// Losses lists the losses Fit accepts.
func Losses() []Loss { return []Loss{LossCauchy, LossSoftL1} }

func (l Loss) rho(z float64) float64 {
	if l == LossSoftL1 {
		return 2 * (math.Sqrt(1+z*z) - 1)
	}
	return math.Log1p(z * z)
}

// psi is d rho / d z.
func (l Loss) psi(z float64) float64 {
	if l == LossSoftL1 {
		return 2 * z / math.Sqrt(1+z*z)
	}
	return 2 * z / (1 + z*z)
}

// weight is psi(z)/z, the iteratively reweighted least-squares weight of
// a residual (2 at z = 0).
func (l Loss) weight(z float64) float64 {
	if l == LossSoftL1 {
		return 2 / math.Sqrt(1+z*z)
	}
	return 2 / (1 + z*z)
}

func (g *gaussNewton) loss(r, pri []float64) float64 {
	var f float64
	for i, ri := range r {
		f += g.w[i] * g.rl.rho(ri/g.scale)
	}
	for _, p := range pri {
		f += p * p
	}
	return f
}

func (g *gaussNewton) f(x []float64) float64 {
	if g.err != nil {
		return math.Inf(1)
	}
	r, pri, err := g.resid(x)
	if err != nil {
		g.err = err
		return math.Inf(1)
	}
	return g.loss(r, pri)
}

// jacobian fills the cache at x.
func (g *gaussNewton) jacobian(x []float64) bool {
	if g.err != nil {
		return false
	}
	if g.jx != nil && equalVec(g.jx, x) {
		return true
	}
	r, pri, err := g.resid(x)
	if err != nil {
		g.err = err
		return false
	}
	g.jx, g.jr, g.jp = append([]float64(nil), x...), r, pri
	g.jd, g.jpri = make([][]float64, g.n), make([][]float64, g.n)
	xx := append([]float64(nil), x...)
	for j := 0; j < g.n; j++ {
		xx[j] = x[j] + jacStep
		rj, pj, err := g.resid(xx)
		xx[j] = x[j]
		if err != nil {
			g.err = err
			return false
		}
		g.jd[j], g.jpri[j] = make([]float64, len(r)), make([]float64, len(pri))
		for i := range r {
			g.jd[j][i] = (rj[i] - r[i]) / jacStep
		}
		for i := range pri {
			g.jpri[j][i] = (pj[i] - pri[i]) / jacStep
		}
	}
	return true
}

func (g *gaussNewton) grad(grad, x []float64) {
	if !g.jacobian(x) {
		for j := range grad {
			grad[j] = 0
		}
		return
	}
	for j := 0; j < g.n; j++ {
		var s float64
		for i, ri := range g.jr {
			s += g.w[i] * g.rl.psi(ri/g.scale) * g.jd[j][i] / g.scale
		}
		for i, p := range g.jp {
			s += 2 * p * g.jpri[j][i]
		}
		grad[j] = s
	}
}

func (g *gaussNewton) hess(h *mat.SymDense, x []float64) {
	if !g.jacobian(x) {
		for i := 0; i < g.n; i++ {
			for j := i; j < g.n; j++ {
				v := 0.0
				if i == j {
					v = 1
				}
				h.SetSym(i, j, v)
			}
		}
		return
	}
	w := make([]float64, len(g.jr))
	for i, ri := range g.jr {
		w[i] = g.w[i] * g.rl.weight(ri/g.scale) / (g.scale * g.scale)
	}
	for a := 0; a < g.n; a++ {
		for b := a; b < g.n; b++ {
			var s float64
			for i := range g.jr {
				s += w[i] * g.jd[a][i] * g.jd[b][i]
			}
			for i := range g.jp {
				s += 2 * g.jpri[a][i] * g.jpri[b][i]
			}
			h.SetSym(a, b, s)
		}
	}
}

func equalVec(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
