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
	"gonum.org/v1/gonum/mat"
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
	// RunScale is the scale, in log-time units, of the error that all
	// sizes of one run in one regime share (the model's structure for that
	// collective and regime, not noise): such a block of points counts as
	// one observation of its common error with this uncertainty added,
	// plus one observation per point of how the points differ from each
	// other (see groupsOf). Default: equal to Scale. Negative: 0, every
	// point independent.
	RunScale float64
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

// ChangeText is the change as a person reads it: relative ("+3.4%"), or,
// for a term whose default is 0 (a latency the model adds nothing for
// unless fitted), the shift in the term's unit ("+2.339", beside the
// unit), where a relative change means nothing.
func (t FittedTerm) ChangeText() string {
	if t.Default == 0 {
		return fmt.Sprintf("%+.4g", t.Value)
	}
	return fmt.Sprintf("%+.1f%%", t.Change()*100)
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
	// ReportedOnly are the Source of each link observation that was read
	// but not fitted (the nccl-tests runs determine its term).
	ReportedOnly []string
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
func Objective(loss Loss, scale, runScale float64) string {
	return fmt.Sprintf("%s loss on log(model/measured time), scale %g, each point weighed as one of a run's regime sharing an error of scale %g; Cauchy prior on each term centred on its default, width by its unit and source (cited fractions 0.05, latencies 0.5, other 0.15 in log units; assumed 0.15, 1, 0.5); second start from the data's own optimum", loss, scale, runScale)
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
	// groups are the series points (indices into the residuals) of one
	// series in one regime; scale and runScale set how they are weighed
	// (see pointWeights).
	groups          [][]int
	scale, runScale float64
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
		at := map[string]int{}
		for _, p := range s.Points {
			r := fitRegime(p.Size)
			g, ok := at[r]
			if !ok {
				g = len(fp.groups)
				at[r] = g
				fp.groups = append(fp.groups, nil)
			}
			fp.groups[g] = append(fp.groups[g], fp.nPoints)
			fp.nPoints++
		}
	}
	return fp, nil
}

// fitRegime is the regime a point is grouped in: latency below
// LatencyMax, bandwidth from BandwidthMin, mid (the ramp) between.
func fitRegime(size int64) string {
	switch {
	case size < LatencyMax:
		return RegimeLatency
	case size >= BandwidthMin:
		return RegimeBandwidth
	}
	return RegimeMid
}

// pointWeights returns the weight of each residual (series points, then
// the link observations in use) in the loss. The sizes of one run in one
// regime share most of their error: where the model's structure misses a
// collective (its algorithm, a ramp) every size shows it, so 30 sizes 7%
// off are not 30 independent pieces of evidence against a term that other
// runs need. With an error common to a group of n points of scale t (the
// run scale) on top of each point's own of scale s (the scale), the
// points are correlated by c = t^2/(t^2+s^2), and the group carries the
// information of n/(1+(n-1)c) independent points (Kish's effective sample
// size); each of its points weighs that over n. With t = s a group weighs
// at most 2 points however many sizes it has, so latency points (often a
// dozen sizes) do not outvote the bandwidth ones (a handful), and a run
// that disagrees with the others as a whole moves shared terms as about
// one observation; with t = 0 every point weighs 1. Each point keeps its
// own robust loss, so one wild size still loses its pull. Link
// observations weigh 1.
func (fp *fitProblem) pointWeights(nLinks int) []float64 {
	w := make([]float64, fp.nPoints+nLinks)
	for i := range w {
		w[i] = 1
	}
	t2, s2 := fp.runScale*fp.runScale, fp.scale*fp.scale
	c := 0.0
	if t2+s2 > 0 {
		c = t2 / (t2 + s2)
	}
	for _, g := range fp.groups {
		n := float64(len(g))
		for _, i := range g {
			w[i] = 1 / (1 + (n-1)*c)
		}
	}
	return w
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

// minSensitivity: a link observation of a term is only reported, not
// fitted, when a 1% change in the term moves the series' log-time
// residuals by a norm of at least minSensitivity % (the series then
// determine it); a --terms fit refuses to run with fewer points than
// terms this sensitive. minShare: a term is fitted only when the
// measurements remove at least this share of its prior variance, the
// other fitted terms being free too (see Fit). Below it a fit would move
// the term by less than a fifth of what the measurements alone say, so
// holding it at its default loses next to nothing and says so.
const (
	minSensitivity = 0.05
	minShare       = 0.2
)

// Fit fits the free parameters of the model to the series and link
// observations: the maximum of the posterior of the terms given the
// measurements. The likelihood is a robust one of log(time)
// (FitOptions.Loss, by default the Cauchy loss at a 5% scale) in which
// the sizes of one run in one regime (latency, mid, bandwidth) count as
// one observation of their common error plus their differences (see
// pointWeights, FitOptions.RunScale); the prior keeps each term near its
// base value with a width from its unit and source (see priorOf), a
// Cauchy so that runs agreeing on a far value still move it there. It is
// minimised with gonum/optimize's Newton method on the Gauss-Newton
// Hessian in a logistic transform of each term's [Lo, Hi] bounds.
// FitResult.Objective says which. Terms of which the measurements would
// remove less than minShare of the prior's variance are held at their
// base value and reported.
//
// Why the Cauchy loss: where the model's structure misses a whole regime
// (a ramp 20-60% too fast at 64 KiB-256 MiB is common in the corpus), the
// soft-L1 loss lets those points pull a bandwidth term with a constant
// force each, and the many ramp sizes outvote the few asymptotic ones
// that determine it: fits moved network and NVLink efficiencies by 5-25%
// and made calibrated bandwidth worse than uncalibrated. Under the
// Cauchy loss a point's pull peaks at one scale and falls off beyond, so
// the points a term can reach determine it, while a block of points that
// agree (latency 20% off at every small size) still moves its terms.
//
// Why the prior and the run groups: fitted on other collectives of the
// same cluster, calibration made the bandwidth regime worse than the
// uncalibrated model (4.6% against 4.0% median over the corpus' cases).
// Terms that the measurements fix only in combination traded against
// each other without limit (pcie.eff.3 +21% against shm.eff.lockstep
// -22% on the RTX 2080 Ti runs, which the AlltoAll, using pcie.eff.3
// alone, paid with a 15% error); latency terms soaked up a ramp the model
// misses (+400-800% on the 2x p4d run) and pulled the bandwidth terms with
// them; and 30 sizes of one run whose collective the model gets 7% wrong
// moved a shared efficiency as 30 independent witnesses would. Uncertainties come from the
// posterior covariance (J^T W J / s^2 + P)^-1 at the optimum (P the
// prior's precision). It fails with an error wrapping ErrNotConverged
// when the optimiser stops early.
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
	switch {
	case opt.RunScale == 0:
		opt.RunScale = opt.Scale
	case opt.RunScale < 0:
		opt.RunScale = 0
	}
	res := &FitResult{Engine: opt.Engine, Objective: Objective(opt.Loss, opt.Scale, opt.RunScale)}
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
	fp.scale, fp.runScale = opt.Scale, opt.RunScale
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
		prior      termPrior
		col        []float64 // d r / d log(v), series rows then link rows
		norm       float64
		seriesNorm float64
		u          []float64 // sqrt(weight) d r / d prior z, over the scale
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
		c := cand{name: t.Name, lo: t.Lo, hi: t.Hi, v0: *t.Value, prior: priorOf(t)}
		col, at, err := fp.sensitivity(&p, t.Name, c.v0, t.Lo, t.Hi)
		if err != nil {
			return nil, err
		}
		c.col = col
		c.norm = norm2(col)
		c.seriesNorm = norm2(col[:fp.nPoints])
		c.u = []float64{c.prior.perLog(at)}
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
				res.ReportedOnly = append(res.ReportedOnly, o.Source)
				res.Notes = append(res.Notes, fmt.Sprintf("%s (%.3g GB/s) is reported, not fitted: the nccl-tests runs determine %s", o.Source, o.MeasuredGBps, o.Term))
			}
		}
	}
	nUsed := 0
	for _, u := range useLink {
		if u {
			nUsed++
		}
	}
	weights := fp.pointWeights(nUsed)
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
		k := cands[i].u[0] / opt.Scale
		cands[i].u = make([]float64, len(cands[i].col))
		for j, x := range cands[i].col {
			cands[i].u[j] = x * k * math.Sqrt(weights[j])
		}
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
	untouched := 0
	defer func() {
		if untouched > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%d other terms do not affect these measurements and keep their values", untouched))
		}
	}()
	// Which terms the measurements determine: with U the weighted
	// sensitivities to each term's prior coordinate (over the scale), the
	// posterior covariance of those coordinates is (U'U + I)^-1 near the
	// start, and 1 - its diagonal is the share of each term's prior
	// uncertainty that the measurements remove, the other terms being
	// fitted too. A term is fitted only when that share is at least
	// minShare. The term with the smallest share is held and the rest
	// re-examined until every one left passes (holding a term can make
	// its partner determinable). Terms the measurements fix only in
	// combination are fitted together when each passes: the prior then
	// splits the combination by the terms' widths instead of leaving it
	// to whichever term was examined first.
	var live []cand
	for _, c := range cands {
		if c.norm < 1e-4 {
			untouched++
			continue
		}
		// A term at a bound of its range that the measurements push
		// further out cannot move: hold it rather than fit it there.
		span := c.hi - c.lo
		if atLo, atHi := c.v0 <= c.lo+1e-9*span, c.v0 >= c.hi-1e-9*span; atLo || atHi {
			var g float64 // d loss / d log(v)
			for i, x := range c.col {
				g += weights[i] * opt.Loss.psi(r0[i]/opt.Scale) * x / opt.Scale
			}
			if (atLo && g >= 0) || (atHi && g <= 0) {
				side := "lower"
				if atHi {
					side = "upper"
				}
				res.Held = append(res.Held, HeldTerm{c.name, c.v0, fmt.Sprintf("at its %s bound, and the measurements would move it further out", side)})
				continue
			}
		}
		live = append(live, c)
	}
	cols := func(cs []cand) [][]float64 {
		out := make([][]float64, len(cs))
		for i, c := range cs {
			out[i] = c.u
		}
		return out
	}
	type heldShare struct {
		c     cand
		share float64
	}
	var lowShare []heldShare
	for len(live) > 0 {
		share := determinedShares(cols(live))
		worst := 0
		for i := range live {
			if share[i] < share[worst] {
				worst = i
			}
		}
		if share[worst] >= minShare {
			break
		}
		lowShare = append(lowShare, heldShare{live[worst], share[worst]})
		live = append(append([]cand(nil), live[:worst]...), live[worst+1:]...)
	}
	// Each held term is said to be inseparable from the fitted term whose
	// effect on these measurements is most like its own.
	for _, h := range lowShare {
		res.Held = append(res.Held, HeldTerm{h.c.name, h.c.v0, heldReason(h.c.u, h.share, h.c.prior, func() (string, bool) {
			best, bestCos := "", 0.0
			for _, o := range live {
				if cs := math.Abs(dot(h.c.u, o.u)) / (norm2(h.c.u)*norm2(o.u) + 1e-300); cs > bestCos {
					best, bestCos = o.name, cs
				}
			}
			return best, best != ""
		})})
	}
	maxTerms := max(1, len(r0)/2)
	var chosen []cand
	for _, c := range live {
		if len(chosen) >= maxTerms {
			res.Held = append(res.Held, HeldTerm{c.name, c.v0, fmt.Sprintf("too few points (%d) for more than %d terms", len(r0), maxTerms)})
			continue
		}
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
	priorWeight := 1.0
	gn := &gaussNewton{fp: fp, useLink: useLink, scale: opt.Scale, rl: opt.Loss, n: len(chosen), w: weights,
		resid: func(x []float64) ([]float64, []float64, error) {
			q := p
			setAll(&q, x)
			r, err := fp.residuals(&q, useLink)
			if err != nil {
				return nil, nil, err
			}
			pri := make([]float64, len(chosen))
			for i, c := range chosen {
				pri[i] = priorWeight * c.prior.resid(fromU(c, x[i]))
			}
			return r, pri, nil
		}}
	evals0 := fp.evals
	out, err := gn.minimise(x0, opt.MaxEvals)
	if gn.err != nil {
		return nil, gn.err
	}
	// Under the Cauchy loss points far from the model pull little, so
	// the objective can have a second basin far from the defaults where
	// runs that agree put a term (the ABCI runs' network rate), out of a
	// descent's reach from the defaults. A second start from where the
	// data alone lead (the same fit with the prior at a hundredth of its
	// weight) finds it; the start whose optimum has the lower objective
	// is kept.
	if out != nil && err == nil && converged(out.Status) {
		priorWeight = 0.01
		gn.jx = nil
		wout, werr := gn.minimise(x0, opt.MaxEvals-(fp.evals-evals0))
		priorWeight = 1
		gn.jx = nil
		if gn.err != nil {
			return nil, gn.err
		}
		if wout != nil && werr == nil && opt.MaxEvals > fp.evals-evals0 {
			out2, err2 := gn.minimise(wout.X, opt.MaxEvals-(fp.evals-evals0))
			if gn.err != nil {
				return nil, gn.err
			}
			if out2 != nil && err2 == nil && converged(out2.Status) && out2.F < out.F-1e-9 {
				out = out2
			}
		}
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
	terms0 := make([]boundedTerm, len(chosen))
	for i, c := range chosen {
		terms0[i] = boundedTerm{name: c.name, lo: c.lo, hi: c.hi, prior: c.prior}
	}
	stderr, err := covariance(fp, &q, useLink, weights, opt.Scale, opt.Loss, terms0)
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
// differences of +-10% (one-sided at a bound), and the value it was taken
// at (a term at 0 is differentiated at a small positive value).
func (fp *fitProblem) sensitivity(p *sim.Params, name string, v, lo, hi float64) ([]float64, float64, error) {
	if v <= 0 {
		v = math.Max(lo, 1e-3*(hi-lo))
	}
	a, b := math.Max(v*math.Exp(-0.1), lo), math.Min(v*math.Exp(0.1), hi)
	if a <= 0 || b <= a {
		return make([]float64, fp.nPoints+len(fp.links)), v, nil
	}
	qa, qb := *p, *p
	_ = qa.Set(name, a)
	_ = qb.Set(name, b)
	ra, err := fp.residuals(&qa, nil)
	if err != nil {
		return nil, 0, err
	}
	rb, err := fp.residuals(&qb, nil)
	if err != nil {
		return nil, 0, err
	}
	d := math.Log(b / a)
	out := make([]float64, len(ra))
	for i := range ra {
		out[i] = (rb[i] - ra[i]) / d
	}
	return out, v, nil
}

// determinedShares returns, for sensitivity columns u (each term's
// weighted residuals per unit of its prior coordinate, over the scale),
// the share of each term's prior variance the measurements remove when
// all are fitted together: 1 - diag((U'U + I)^-1).
func determinedShares(u [][]float64) []float64 {
	n := len(u)
	h := mat.NewSymDense(n, nil)
	for a := 0; a < n; a++ {
		for b := a; b < n; b++ {
			v := dot(u[a], u[b])
			if a == b {
				v++
			}
			h.SetSym(a, b, v)
		}
	}
	out := make([]float64, n)
	var ch mat.Cholesky
	if !ch.Factorize(h) {
		return out
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return out
	}
	for j := range out {
		out[j] = math.Min(math.Max(1-inv.At(j, j), 0), 1)
	}
	return out
}

// heldReason says why a term whose share of determination is share is
// held: the measurements barely depend on it (alone they would not remove
// minShare of its prior variance), or they determine it only together with
// another term (partner gives the one whose effect is most like it).
func heldReason(u []float64, share float64, pr termPrior, partner func() (string, bool)) string {
	a := dot(u, u)
	width := fmt.Sprintf("±%.2g in log units", pr.SD)
	if pr.Absolute {
		width = fmt.Sprintf("±%.2g", pr.SD)
	}
	if alone := a / (1 + a); alone < minShare {
		return fmt.Sprintf("the measurements barely depend on it (alone they would remove %.0f%% of its prior variance, %s)", 100*alone, width)
	}
	if name, ok := partner(); ok {
		return fmt.Sprintf("not separable from %s in these measurements (with both fitted they would remove only %.0f%% of its prior variance)", name, 100*share)
	}
	return fmt.Sprintf("the measurements determine it less well than its source (prior %s)", width)
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
