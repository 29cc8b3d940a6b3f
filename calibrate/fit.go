package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
	yaml "go.yaml.in/yaml/v3"
)

// ErrNotConverged is wrapped by Fit's error when the optimiser stops
// without converging (evaluation budget spent, or no progress possible).
var ErrNotConverged = errors.New("fit did not converge")

// FitOptions control Fit. The zero value fits automatically chosen terms
// with the analytic engine.
type FitOptions struct {
	// Terms restricts the candidate terms: names ("net.eff.ib") or
	// patterns with a trailing "*" ("lat.*"). Empty: every term that
	// applies to the clusters.
	Terms []string
	// Engine times predictions inside the fit loop (default analytic, the
	// closed form of the same model, ~100x faster than the DES).
	Engine sim.EngineKind
	// MaxEvals bounds model evaluations of the optimiser (default 3000).
	// A fit that reaches it without converging fails with ErrNotConverged.
	MaxEvals int
	// Scale is the robust loss scale in log-time units (default 0.05): a
	// point within about 5% counts as in least squares.
	Scale float64
	// Loss is the robust loss (default LossCauchy: a point off by much
	// more than Scale loses its pull; LossSoftL1: it pulls linearly).
	Loss Loss
}

// FittedTerm is one fitted parameter.
type FittedTerm struct {
	// Name, Unit and Doc are the sim.Params term's.
	Name, Unit, Doc string
	// Default is the uncalibrated value; Value the fitted one; StdErr its
	// 1-sigma uncertainty from the covariance at the optimum (NaN when the
	// data leave no degrees of freedom).
	Default, Value, StdErr float64
	// AtBound is "lower" or "upper" when the fit ran into the term's
	// bound (the model cannot match the data with a sensible value: look
	// for a structural cause), empty otherwise.
	AtBound string
}

// Change is the relative move from the default ((Value-Default)/Default).
func (t FittedTerm) Change() float64 {
	if t.Default == 0 {
		return 0
	}
	return (t.Value - t.Default) / t.Default
}

// HeldTerm is a term kept at its current value, with why.
type HeldTerm struct {
	// Name is the term; Value the value it keeps.
	Name  string
	Value float64
	// Reason says why the data could not determine it.
	Reason string
}

// FitResult is the outcome of Fit.
type FitResult struct {
	// Params are the base parameters with the fitted terms set.
	Params sim.Params
	// Fitted are the terms the fit moved, by name.
	Fitted []FittedTerm
	// Held are applicable terms the data could not determine.
	Held []HeldTerm
	// Notes say what was left out of the fit and why.
	Notes []string
	// Points counts residuals (series points plus link observations used).
	Points int
	// RMSLogBefore / RMSLogAfter are the root-mean-square of
	// log(model time / measured time) before and after the fit;
	// MedianAbsBefore/After the median |model busbw / measured busbw - 1|.
	RMSLogBefore, RMSLogAfter       float64
	MedianAbsBefore, MedianAbsAfter float64
	// Converged is true for every FitResult Fit returns (a fit that does
	// not converge is an error); Status is gonum/optimize's final status.
	Converged bool
	Status    string
	// Evaluations counts model evaluations; Iterations the optimiser's
	// major iterations.
	Evaluations, Iterations int
	// Engine timed the predictions in the fit loop.
	Engine sim.EngineKind
	// Objective says what was minimised: the loss, its scale and the
	// prior (see Objective).
	Objective string
}

// Objective describes what Fit minimises with these options, as the
// calibrate output and profiles record it.
func Objective(loss Loss, scale float64) string {
	return fmt.Sprintf("%s loss on log(model/measured time), scale %g; log-normal prior on each fitted term centred on its default, width %g in log units", loss, scale, priorSigma)
}

// fitProblem holds the built clusters and data of one fit.
type fitProblem struct {
	ctx      context.Context
	engine   sim.EngineKind
	clusters []*model.Cluster
	series   []Series
	clOf     []int // series -> cluster index
	links    []LinkObs
	nPoints  int // series points
	err      error
	evals    int
}

func newFitProblem(ctx context.Context, series []Series, links []LinkObs, engine sim.EngineKind) (*fitProblem, error) {
	fp := &fitProblem{ctx: ctx, engine: engine, series: series, links: links}
	keys := map[string]int{}
	for _, s := range series {
		b, err := yaml.Marshal(s.Spec)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		k := string(b)
		i, ok := keys[k]
		if !ok {
			cl, err := s.Spec.Build()
			if err != nil {
				return nil, fmt.Errorf("calibrate: %s: cluster: %w", s.Name, err)
			}
			if s.Ranks > 0 && s.Ranks != cl.NumRanks() {
				return nil, fmt.Errorf("calibrate: %s: rank count: the run has %d ranks, its cluster has %d: %w", s.Name, s.Ranks, cl.NumRanks(), ErrMismatch)
			}
			i = len(fp.clusters)
			keys[k] = i
			fp.clusters = append(fp.clusters, cl)
		}
		fp.clOf = append(fp.clOf, i)
		fp.nPoints += len(s.Points)
	}
	return fp, nil
}

// predictTimes returns the modelled time of every series point in µs, in
// series order.
func (fp *fitProblem) predictTimes(p sim.Params) ([]float64, error) {
	fp.evals++
	out := make([]float64, 0, fp.nPoints)
	envs := make([]*sim.Env, len(fp.clusters))
	for si, s := range fp.series {
		ci := fp.clOf[si]
		if envs[ci] == nil {
			e, err := sim.NewEnv(fp.clusters[ci], p)
			if err != nil {
				return nil, fmt.Errorf("calibrate: %w", err)
			}
			envs[ci] = e
		}
		pts, err := predictSeries(fp.ctx, envs[ci], s, fp.engine)
		if err != nil {
			return nil, err
		}
		for _, pt := range pts {
			out = append(out, pt.TimeUs)
		}
	}
	return out, nil
}

// predictSeries predicts every measured size of s on env.
func predictSeries(ctx context.Context, env *sim.Env, s Series, engine sim.EngineKind) ([]sim.Point, error) {
	sizes := make([]model.Bytes, len(s.Points))
	for i, p := range s.Points {
		sizes[i] = model.Bytes(p.Size)
	}
	pts, err := env.Sweep(ctx, sim.Request{Coll: s.Coll, Sizes: sizes, ElemSize: s.ElemSize, Engine: engine})
	if err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", s.Name, err)
	}
	return pts, nil
}

// PredictTimes predicts the times (µs) of a series on its own cluster with params.
func PredictTimes(ctx context.Context, s Series, p sim.Params, engine sim.EngineKind) ([]float64, error) {
	cl, err := s.Spec.Build()
	if err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", s.Name, err)
	}
	env, err := sim.NewEnv(cl, p)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", s.Name, err)
	}
	pts, err := predictSeries(ctx, env, s, engine)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(pts))
	for i, pt := range pts {
		out[i] = pt.TimeUs
	}
	return out, nil
}

// residuals returns log(model/measured) for every series point, then every
// link observation in use.
func (fp *fitProblem) residuals(p *sim.Params, useLink []bool) ([]float64, error) {
	times, err := fp.predictTimes(*p)
	if err != nil {
		return nil, err
	}
	r := make([]float64, 0, len(times)+len(fp.links))
	k := 0
	for _, s := range fp.series {
		for _, pt := range s.Points {
			r = append(r, math.Log(math.Max(times[k], 1e-6)/pt.TimeUs))
			k++
		}
	}
	for i, o := range fp.links {
		if useLink != nil && !useLink[i] {
			continue
		}
		v, _ := p.Get(o.Term)
		// A link observation is a bandwidth; log(time) residuals have the
		// opposite sign of log(bandwidth) ones.
		r = append(r, -math.Log(math.Max(o.LineGBps*v, 1e-9)/o.MeasuredGBps))
	}
	return r, nil
}

// termApplies reports whether a term can influence predictions on the
// clusters (or observations) of the problem.
func (fp *fitProblem) termApplies(name string) bool {
	for _, o := range fp.links {
		if o.Term == name {
			return true
		}
	}
	for _, cl := range fp.clusters {
		g := cl.GPUModel()
		multi := cl.NumNodes() > 1
		switch {
		case strings.HasPrefix(name, "nvlink.eff."):
			if name == fmt.Sprintf("nvlink.eff.%d", g.NVLinkGen) && cl.Spec.Node.NVLink.Kind != "none" && cl.Spec.Node.NVLink.Kind != "" && cl.GPUsPerNode() > 1 {
				return true
			}
		case strings.HasPrefix(name, "pcie.eff."):
			gens := map[int]bool{g.PCIeGen: true}
			for _, ne := range cl.Nodes[:1] {
				for _, n := range ne.NICs {
					gens[cl.Topo.Elem(n).NIC.Speed.PCIeGen] = true
				}
			}
			for gen := range gens {
				if name == fmt.Sprintf("pcie.eff.%d", gen) {
					return true
				}
			}
		case strings.HasPrefix(name, "net.eff."):
			if multi && len(cl.Nodes[0].NICs) > 0 && name == "net.eff."+string(cl.Topo.Elem(cl.Nodes[0].NICs[0]).NIC.Kind) {
				return true
			}
		case strings.HasPrefix(name, "nvls."):
			if cl.Nodes[0].NVSwitch != model.None && cl.Topo.Elem(cl.Nodes[0].NVSwitch).Multicast &&
				((strings.HasSuffix(name, "hopper") && g.Arch == model.Hopper) || (strings.HasSuffix(name, "blackwell") && g.Arch == model.Blackwell) || name == "nvls.lat.us") {
				return true
			}
		case strings.HasPrefix(name, "lat.step.net."):
			if multi {
				return true
			}
		case name == "launch.single.us":
			if cl.Spec.Run.SerialLaunches(cl.GPUsPerNode()) > 1 {
				return true
			}
		case name == "vm.lat.us":
			if cl.Spec.Run.VM {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// matchTerm reports whether name matches one of the patterns.
func matchTerm(name string, patterns []string) bool {
	for _, p := range patterns {
		if q, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, q) {
			return true
		}
		if p == name {
			return true
		}
	}
	return false
}

// Identifiability thresholds: a term is fitted only when a 1% change in it
// moves the log-time residuals by a norm of at least minSensitivity % (so
// a term that sets whole points counts, one that nudges many by 0.1% does
// not), and when at least minUnique of that effect cannot be produced by
// the terms already chosen (Gram-Schmidt on the sensitivity columns).
const (
	minSensitivity = 0.05
	minUnique      = 0.25
	// priorSigma is the width, in log units, of a weak prior that keeps
	// each fitted term near its default when the data barely constrain it
	// (a factor e^3 = 20 either way costs as much as one point off by one
	// Scale); it only matters along directions the data leave flat.
	priorSigma = 3.0
)

// Fit fits the free parameters of the model to the series and link
// observations: a robust fit of log(time) (FitOptions.Loss, by default
// the Cauchy loss at a 5% scale) with a weak log-normal prior on each
// term at its base value (width priorSigma), minimised with
// gonum/optimize's Newton method on the Gauss-Newton Hessian in a
// logistic transform of each term's [Lo, Hi] bounds. FitResult.Objective
// says which. Terms the data cannot determine are held at their base
// value and reported.
//
// Why the Cauchy loss: where the model's structure misses a whole regime
// (a ramp 20-60% too fast at 64 KiB-256 MiB is common in the corpus), the
// soft-L1 loss lets those points pull a bandwidth term with a constant
// force each, and the many ramp sizes outvote the few asymptotic ones
// that determine it: fits moved network and NVLink efficiencies by 5-25%
// and made calibrated bandwidth worse than uncalibrated. Under the
// Cauchy loss a point's pull peaks at one scale and falls off beyond, so
// the points a term can reach determine it, while a block of points that
// agree (latency 20% off at every small size) still moves its terms. Uncertainties come from the
// covariance s^2 (J^T W J)^-1 at the optimum. It fails with an error
// wrapping ErrNotConverged when the optimiser stops early.
func Fit(ctx context.Context, series []Series, links []LinkObs, base sim.Params, opt FitOptions) (*FitResult, error) {
	if opt.Engine == "" {
		opt.Engine = sim.EngineAnalytic
	}
	if opt.MaxEvals <= 0 {
		opt.MaxEvals = 3000
	}
	if opt.Scale <= 0 {
		opt.Scale = 0.05
	}
	switch opt.Loss {
	case "":
		opt.Loss = LossCauchy
	case LossCauchy, LossSoftL1:
	default:
		return nil, fmt.Errorf("calibrate: loss %q: want one of %v", opt.Loss, Losses())
	}
	for _, pat := range opt.Terms {
		found := false
		for _, t := range base.Terms() {
			if matchTerm(t.Name, []string{pat}) {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("calibrate: --terms: %q matches no model term (see collsim calibrate --list-terms)", pat)
		}
	}
	res := &FitResult{Engine: opt.Engine, Objective: Objective(opt.Loss, opt.Scale)}
	// Series the model cannot predict (an unsupported collective on this
	// cluster) are left out and said so.
	var usable []Series
	for _, s := range series {
		if _, err := PredictTimes(ctx, s, base, opt.Engine); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("calibrate: %w", ctx.Err())
			}
			if errors.Is(err, ErrMismatch) {
				return nil, err
			}
			res.Notes = append(res.Notes, "not fitted: the model cannot predict it: "+strings.TrimPrefix(err.Error(), "calibrate: "))
			continue
		}
		usable = append(usable, s)
	}
	fp, err := newFitProblem(ctx, usable, links, opt.Engine)
	if err != nil {
		return nil, err
	}
	if fp.nPoints+len(links) == 0 {
		return nil, errors.New("calibrate: nothing to fit")
	}
	p := base
	r0, err := fp.residuals(&p, nil)
	if err != nil {
		return nil, err
	}
	// Candidate terms and their sensitivity columns at the start.
	type cand struct {
		name       string
		lo, hi     float64
		v0         float64
		col        []float64 // d r / d log(v), series rows then link rows
		norm       float64
		seriesNorm float64
	}
	var cands []cand
	for _, t := range p.Terms() {
		if len(opt.Terms) > 0 && !matchTerm(t.Name, opt.Terms) {
			continue
		}
		if t.OnRequest && len(opt.Terms) == 0 {
			continue
		}
		if !fp.termApplies(t.Name) {
			continue
		}
		c := cand{name: t.Name, lo: t.Lo, hi: t.Hi, v0: *t.Value}
		col, err := fp.sensitivity(&p, t.Name, c.v0, t.Lo, t.Hi)
		if err != nil {
			return nil, err
		}
		c.col = col
		c.norm = norm2(col)
		c.seriesNorm = norm2(col[:fp.nPoints])
		cands = append(cands, c)
	}
	// Link observations of terms the series determine are not used: the
	// tools measure copy-engine or verbs bandwidth, NCCL's kernels do less.
	useLink := make([]bool, len(links))
	for i, o := range links {
		useLink[i] = true
		for _, c := range cands {
			if c.name == o.Term && c.seriesNorm >= minSensitivity {
				useLink[i] = false
				res.Notes = append(res.Notes, fmt.Sprintf("%s (%.3g GB/s) is reported, not fitted: the nccl-tests runs determine %s", o.Source, o.MeasuredGBps, o.Term))
			}
		}
	}
	rowUsed := func(col []float64) []float64 {
		out := append([]float64(nil), col[:fp.nPoints]...)
		for i := range links {
			if useLink[i] {
				out = append(out, col[fp.nPoints+i])
			}
		}
		return out
	}
	for i := range cands {
		cands[i].col = rowUsed(cands[i].col)
		cands[i].norm = norm2(cands[i].col)
	}
	r0 = rowUsed(r0)
	if len(opt.Terms) > 0 {
		// Refuse, rather than hold silently, terms the user named that the
		// points affect but cannot all determine.
		affected := 0
		for _, c := range cands {
			if c.norm >= minSensitivity {
				affected++
			}
		}
		if len(r0) < affected {
			return nil, fmt.Errorf("calibrate: %d measured points cannot determine the %d terms --terms names that affect them: give more sizes or name fewer terms", len(r0), affected)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].norm > cands[j].norm })
	var chosen []cand
	var basis [][]float64
	untouched := 0
	defer func() {
		if untouched > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%d other terms do not affect these measurements and keep their values", untouched))
		}
	}()
	maxTerms := max(1, len(r0)/2)
	for _, c := range cands {
		switch {
		case c.norm < 1e-4:
			untouched++
			continue
		case c.norm < minSensitivity:
			res.Held = append(res.Held, HeldTerm{c.name, c.v0, fmt.Sprintf("the measurements barely depend on it (sensitivity %.2g)", c.norm)})
			continue
		case len(chosen) >= maxTerms:
			res.Held = append(res.Held, HeldTerm{c.name, c.v0, fmt.Sprintf("too few points (%d) for more than %d terms", len(r0), maxTerms)})
			continue
		}
		u := append([]float64(nil), c.col...)
		best, bestDot := -1, 0.0
		for bi, b := range basis {
			d := dot(u, b)
			if math.Abs(d) > bestDot {
				best, bestDot = bi, math.Abs(d)
			}
		}
		for _, b := range basis {
			d := dot(u, b)
			for k := range u {
				u[k] -= d * b[k]
			}
		}
		if nu := norm2(u); nu < minUnique*c.norm {
			res.Held = append(res.Held, HeldTerm{c.name, c.v0, fmt.Sprintf("not separable from %s in these measurements", chosen[best].name)})
			continue
		} else {
			for k := range u {
				u[k] /= nu
			}
		}
		basis = append(basis, u)
		chosen = append(chosen, c)
	}
	res.RMSLogBefore = rms(r0)
	res.MedianAbsBefore = medianAbsBW(r0)
	res.Params = p
	if len(chosen) == 0 {
		res.Converged, res.Status = true, "nothing to fit"
		res.RMSLogAfter, res.MedianAbsAfter = res.RMSLogBefore, res.MedianAbsBefore
		res.Points = len(r0)
		return res, nil
	}
	// Transform: v = lo + (hi-lo) * sigmoid(u).
	toU := func(c cand, v float64) float64 {
		f := (v - c.lo) / (c.hi - c.lo)
		f = math.Min(math.Max(f, 1e-6), 1-1e-6)
		return math.Log(f / (1 - f))
	}
	fromU := func(c cand, u float64) float64 { return c.lo + (c.hi-c.lo)/(1+math.Exp(-u)) }
	setAll := func(q *sim.Params, x []float64) {
		for i, c := range chosen {
			_ = q.Set(c.name, fromU(c, x[i]))
		}
	}
	x0 := make([]float64, len(chosen))
	for i, c := range chosen {
		x0[i] = toU(c, c.v0)
	}
	// The objective is sum rho(r_i/Scale) + sum prior_j^2 with rho the
	// robust loss (see Loss). gonum/optimize's Newton method
	// minimises it with the Gauss-Newton Hessian J^T W J (W the IRLS
	// weights of the loss) and backtracking line searches: a
	// Levenberg-Marquardt iteration (Newton adds tau*I until the Hessian is
	// positive definite).
	gn := &gaussNewton{fp: fp, useLink: useLink, scale: opt.Scale, rl: opt.Loss, n: len(chosen),
		resid: func(x []float64) ([]float64, []float64, error) {
			q := p
			setAll(&q, x)
			r, err := fp.residuals(&q, useLink)
			if err != nil {
				return nil, nil, err
			}
			pri := make([]float64, len(chosen))
			for i, c := range chosen {
				if v := fromU(c, x[i]); v > 0 && c.v0 > 0 {
					pri[i] = math.Log(v/c.v0) / priorSigma
				}
			}
			return r, pri, nil
		}}
	evals0 := fp.evals
	out, err := gn.minimise(x0, opt.MaxEvals)
	if gn.err != nil {
		return nil, gn.err
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, fmt.Errorf("calibrate: %w", cerr)
	}
	if out == nil {
		return nil, fmt.Errorf("calibrate: optimiser: %v: %w", err, ErrNotConverged)
	}
	res.Evaluations, res.Iterations = fp.evals-evals0, gn.iterations
	res.Status = out.Status.String()
	res.Converged = err == nil && converged(out.Status)
	if !res.Converged || err != nil || math.IsNaN(out.F) || math.IsInf(out.F, 0) {
		why := out.Status.String()
		if err != nil {
			why = err.Error()
		}
		return nil, fmt.Errorf("calibrate: %d terms, %d points: optimiser stopped after %d evaluations (%s): %w", len(chosen), len(r0), res.Evaluations, why, ErrNotConverged)
	}
	q := p
	setAll(&q, out.X)
	rf, err := fp.residuals(&q, useLink)
	if err != nil {
		return nil, err
	}
	res.Params = q
	res.Points = len(rf)
	res.RMSLogAfter = rms(rf)
	res.MedianAbsAfter = medianAbsBW(rf)
	stderr, err := covariance(fp, &q, useLink, rf, opt.Scale, opt.Loss, chosenTerms(chosen, func(c cand) (string, float64, float64) { return c.name, c.lo, c.hi }))
	if err != nil {
		return nil, err
	}
	terms := q.Terms()
	for j, c := range chosen {
		v, _ := q.Get(c.name)
		ft := FittedTerm{Name: c.name, Default: c.v0, Value: v, StdErr: stderr[j]}
		switch span := c.hi - c.lo; {
		case v <= c.lo+1e-4*span:
			ft.AtBound = "lower"
		case v >= c.hi-1e-4*span:
			ft.AtBound = "upper"
		}
		for _, t := range terms {
			if t.Name == c.name {
				ft.Unit, ft.Doc = t.Unit, t.Doc
			}
		}
		res.Fitted = append(res.Fitted, ft)
	}
	sort.Slice(res.Fitted, func(i, j int) bool { return res.Fitted[i].Name < res.Fitted[j].Name })
	sort.Slice(res.Held, func(i, j int) bool { return res.Held[i].Name < res.Held[j].Name })
	return res, nil
}

// sensitivity returns d residual / d log(value) of one term by central
// differences of +-10% (one-sided at a bound).
func (fp *fitProblem) sensitivity(p *sim.Params, name string, v, lo, hi float64) ([]float64, error) {
	if v <= 0 {
		v = math.Max(lo, 1e-3*(hi-lo))
	}
	a, b := math.Max(v*math.Exp(-0.1), lo), math.Min(v*math.Exp(0.1), hi)
	if a <= 0 || b <= a {
		return make([]float64, fp.nPoints+len(fp.links)), nil
	}
	qa, qb := *p, *p
	_ = qa.Set(name, a)
	_ = qb.Set(name, b)
	ra, err := fp.residuals(&qa, nil)
	if err != nil {
		return nil, err
	}
	rb, err := fp.residuals(&qb, nil)
	if err != nil {
		return nil, err
	}
	d := math.Log(b / a)
	out := make([]float64, len(ra))
	for i := range ra {
		out[i] = (rb[i] - ra[i]) / d
	}
	return out, nil
}

// Profile turns a fit into a calibration profile. cluster describes the
// cluster the measurements came from.
func (r *FitResult) Profile(cluster string, sources []FitSource) *Profile {
	pr := &Profile{Format: ProfileFormat, Cluster: cluster, FittedOn: sources,
		Fit: FitQuality{Points: r.Points, RMSLogBefore: roundTo(r.RMSLogBefore, 5), RMSLogAfter: roundTo(r.RMSLogAfter, 5),
			Converged: r.Converged, Iterations: r.Iterations, Engine: string(r.Engine), Evaluations: r.Evaluations, Objective: r.Objective}}
	for _, t := range r.Fitted {
		se := t.StdErr
		if math.IsNaN(se) || math.IsInf(se, 0) {
			se = -1
		}
		pr.Params = append(pr.Params, FittedParam{Name: t.Name, Value: roundTo(t.Value, 6), Default: t.Default, StdErr: roundTo(se, 6), Unit: t.Unit, AtBound: t.AtBound})
	}
	for _, h := range r.Held {
		pr.Held = append(pr.Held, HeldParam{Name: h.Name, Value: h.Value, Reason: h.Reason})
	}
	return pr
}

func roundTo(v float64, digits int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	m := math.Pow(10, float64(digits)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*m) / m
}
