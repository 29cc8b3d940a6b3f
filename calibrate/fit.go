package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strings"

	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
	yaml "go.yaml.in/yaml/v3"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// ErrNotConverged is wrapped by Fit's error when the optimiser stops
// without converging (evaluation budget spent, or no progress possible).
var ErrNotConverged = errors.New("fit did not converge")

// ErrMismatch is wrapped by the errors that refuse measurements which do
// not come from the cluster given (rank count, GPU model, node size).
var ErrMismatch = errors.New("measurements do not match the cluster")

// MeasuredPoint is one size of a measured curve (out-of-place results).
type MeasuredPoint struct {
	// Size is nccl-tests' size column in bytes.
	Size int64
	// TimeUs is the measured time of one call in µs; BusBW the busbw in GB/s.
	TimeUs, BusBW float64
	// Line is the 1-based line of the row in its file (0 when unknown).
	Line int
}

// Series is one measured curve: a collective over several sizes on one
// cluster. It is what fits and validations consume.
type Series struct {
	// Name labels the series in output ("file.txt:12 all_reduce_perf").
	Name string
	// File and Line locate the results table.
	File string
	Line int
	// Spec is the cluster the curve was measured on.
	Spec model.ClusterSpec
	// Coll is the collective measured.
	Coll model.Collective
	// ElemSize is the datatype size in bytes (4 for float).
	ElemSize int
	// Ranks is the communicator size the file states.
	Ranks int
	// Points are the measured sizes, in file order.
	Points []MeasuredPoint
}

// LinkObs is a bandwidth measured on one link class by a non-NCCL tool
// (p2pBandwidthLatencyTest, nvbandwidth, perftest): it observes one
// efficiency term directly, predicted as LineGBps times the term's value.
type LinkObs struct {
	// Term is the sim.Params term it observes ("pcie.eff.4").
	Term string
	// LineGBps is the link's line rate per direction; MeasuredGBps the
	// measured figure (median over the GPU pairs or rows it summarises).
	LineGBps, MeasuredGBps float64
	// Source names the file and matrix or test.
	Source string
}

// Dataset is everything usable for a fit, read from artifacts and checked
// against one cluster.
type Dataset struct {
	// Series are the nccl-tests runs; Links the bandwidth-tool figures.
	Series []Series
	Links  []LinkObs
	// Sources describe each file's contribution (written to profiles).
	Sources []FitSource
	// Notes say what was read but not used, and why.
	Notes []string
}

// Points returns the number of measured points (series points plus link
// observations).
func (d *Dataset) Points() int {
	n := len(d.Links)
	for _, s := range d.Series {
		n += len(s.Points)
	}
	return n
}

// SeriesFromRun turns a results table into a series on spec: out-of-place
// rows with a positive size and time. file labels it.
func SeriesFromRun(r *ingest.Run, file string, spec model.ClusterSpec) Series {
	s := Series{Name: fmt.Sprintf("%s:%d %s", path.Base(file), r.Line, runLabel(r)), File: file, Line: r.Line,
		Spec: spec, Coll: r.Collective, ElemSize: r.DTypeSize, Ranks: r.Ranks}
	if s.ElemSize <= 0 {
		s.ElemSize = 4
	}
	for _, row := range r.Rows {
		if row.Size <= 0 || !row.OOP.Valid || !(row.OOP.TimeUs > 0) || math.IsInf(row.OOP.TimeUs, 0) {
			continue
		}
		s.Points = append(s.Points, MeasuredPoint{Size: row.Size, TimeUs: row.OOP.TimeUs, BusBW: row.OOP.BusBW, Line: row.Line})
	}
	return s
}

func runLabel(r *ingest.Run) string {
	if r.Binary != "" {
		return r.Binary
	}
	return r.Collective.TestName() + "_perf"
}

// CheckRun refuses a results table that cannot come from cluster cl: a
// different rank count, a different GPU model on the device lines, or more
// hosts than the cluster has nodes. The error wraps ErrMismatch and says
// which fact differs.
func CheckRun(r *ingest.Run, log *ingest.NCCLLog, file string, cl *model.Cluster) error {
	where := fmt.Sprintf("%s:%d (%s)", file, r.Line, runLabel(r))
	if r.Ranks != cl.NumRanks() {
		return fmt.Errorf("calibrate: %s: rank count: the run has %d ranks, the cluster has %d (%d node(s) x %d GPUs): %w",
			where, r.Ranks, cl.NumRanks(), cl.NumNodes(), cl.GPUsPerNode(), ErrMismatch)
	}
	want := cl.GPUModel()
	for _, d := range r.Devices {
		g, ok := model.MatchGPU(d.Name)
		if ok && g.Name != want.Name {
			return fmt.Errorf("calibrate: %s: GPU type: rank %d runs on %q (%s), the cluster has %s: %w",
				where, d.Rank, d.Name, g.Name, want.Name, ErrMismatch)
		}
	}
	if h := len(r.Hosts); h > 1 && h != cl.NumNodes() {
		return fmt.Errorf("calibrate: %s: node count: the run spans %d hosts, the cluster has %d nodes: %w", where, h, cl.NumNodes(), ErrMismatch)
	}
	if log != nil && log.Nodes > 0 && log.Ranks == r.Ranks && log.Nodes != cl.NumNodes() {
		return fmt.Errorf("calibrate: %s: node count: the NCCL log says nNodes %d, the cluster has %d nodes: %w", where, log.Nodes, cl.NumNodes(), ErrMismatch)
	}
	return nil
}

// runSeries is what the nccl-tests runs of one artifact give for a cluster.
type runSeries struct {
	// series holds one series per usable run, in file order; runs[i] is
	// the run behind series[i].
	series []Series
	runs   []*ingest.Run
	// rankErrs are the CheckRun errors of runs set aside because their rank
	// count differs from the cluster's (see skippedNotes).
	rankErrs []error
	// notes name runs without a usable row.
	notes []string
}

// seriesOfRuns turns the nccl-tests runs of a into series measured on cl
// (built from spec). A run of another rank count is set aside in rankErrs,
// for the caller to skip with a note or refuse when nothing else matches;
// any other CheckRun mismatch is returned as the error.
func seriesOfRuns(a *ingest.Artifact, cl *model.Cluster, spec model.ClusterSpec) (runSeries, error) {
	var rs runSeries
	for _, r := range a.Runs {
		if err := CheckRun(r, a.Log, a.File, cl); err != nil {
			if strings.Contains(err.Error(), "rank count") {
				rs.rankErrs = append(rs.rankErrs, err)
				continue
			}
			return runSeries{}, err
		}
		s := SeriesFromRun(r, a.File, spec)
		if len(s.Points) == 0 {
			rs.notes = append(rs.notes, fmt.Sprintf("%s: no out-of-place row with a positive time", s.Name))
			continue
		}
		rs.series = append(rs.series, s)
		rs.runs = append(rs.runs, r)
	}
	return rs, nil
}

// skippedNotes turns the rank-count errors of runs that were skipped into
// notes ("skipped: file:12 (all_reduce_perf): rank count: ...").
func skippedNotes(rankErrs []error) []string {
	var notes []string
	for _, e := range rankErrs {
		notes = append(notes, "skipped: "+strings.TrimPrefix(e.Error(), "calibrate: "))
	}
	return notes
}

// BuildDataset collects the measurements of arts that can calibrate the
// cluster spec describes: nccl-tests runs (any collective and sizes),
// GPU-GPU and host-GPU bandwidth matrices, and perftest bandwidths. A run
// whose rank count differs is skipped (with a note) only when another run
// matches; a GPU model that differs, or a dataset with nothing usable, is
// an error (wrapping ErrMismatch for mismatches).
func BuildDataset(arts []*ingest.Artifact, spec model.ClusterSpec) (*Dataset, error) {
	cl, err := spec.Build()
	if err != nil {
		return nil, fmt.Errorf("calibrate: cluster: %w", err)
	}
	ds := &Dataset{}
	var rankErrs []error
	for _, a := range arts {
		if a == nil {
			continue
		}
		src := FitSource{File: a.File, Kind: string(a.Kind)}
		rs, err := seriesOfRuns(a, cl, spec)
		if err != nil {
			return nil, err
		}
		rankErrs = append(rankErrs, rs.rankErrs...)
		ds.Notes = append(ds.Notes, rs.notes...)
		ds.Series = append(ds.Series, rs.series...)
		for i, s := range rs.series {
			src.Points += len(s.Points)
			src.Collective = joinUnique(src.Collective, rs.runs[i].CollectiveName)
			src.Ranks = rs.runs[i].Ranks
		}
		obs, notes, err := linkObservations(a, cl)
		if err != nil {
			return nil, err
		}
		ds.Links = append(ds.Links, obs...)
		ds.Notes = append(ds.Notes, notes...)
		src.Points += len(obs)
		if len(a.Runs) == 0 && len(obs) == 0 {
			ds.Notes = append(ds.Notes, fmt.Sprintf("%s: a %s file holds no measurement to fit (used as evidence only)", path.Base(a.File), a.Kind))
		}
		ds.Sources = append(ds.Sources, src)
	}
	if len(rankErrs) > 0 {
		if len(ds.Series) == 0 {
			return nil, rankErrs[0]
		}
		ds.Notes = append(ds.Notes, skippedNotes(rankErrs)...)
	}
	if ds.Points() == 0 {
		return nil, fmt.Errorf("calibrate: no measurement to fit in %d file(s): give nccl-tests results, bandwidth matrices or perftest output", len(arts))
	}
	return ds, nil
}

func joinUnique(list, s string) string {
	for _, x := range strings.Split(list, ",") {
		if x == s {
			return list
		}
	}
	if list == "" {
		return s
	}
	return list + "," + s
}

// linkObservations turns bandwidth matrices and perftest results into link
// observations on cl's first node.
func linkObservations(a *ingest.Artifact, cl *model.Cluster) ([]LinkObs, []string, error) {
	var obs []LinkObs
	var notes []string
	base := path.Base(a.File)
	gpu := cl.GPUModel()
	G := cl.GPUsPerNode()
	var res *model.Resolution
	for _, m := range a.Matrices {
		if !strings.HasPrefix(m.Metric, "bandwidth") {
			continue
		}
		if m.Metric != "bandwidth-uni" {
			notes = append(notes, fmt.Sprintf("%s: %q: bidirectional figures are not fitted", base, m.Title))
			continue
		}
		switch {
		case m.P2P != nil && !*m.P2P:
			notes = append(notes, fmt.Sprintf("%s: %q: copies staged through host memory are not fitted", base, m.Title))
		case strings.Contains(strings.ToLower(m.Title), "pageable"):
			notes = append(notes, fmt.Sprintf("%s: %q: pageable-memory copies are not fitted (pinned ones are)", base, m.Title))
		case m.Path == "h2d" || m.Path == "d2h":
			if len(m.Cols) > G && len(m.Rows) > G {
				return nil, nil, fmt.Errorf("calibrate: %s: %q has %d GPUs, the cluster's nodes have %d: %w", base, m.Title, max(len(m.Cols), len(m.Rows)), G, ErrMismatch)
			}
			line, _, err := model.PCIeBandwidth(gpu.PCIeGen, gpu.PCIeWidth)
			if err != nil {
				continue
			}
			if v, ok := matrixMedian(m, false); ok {
				obs = append(obs, LinkObs{Term: fmt.Sprintf("pcie.eff.%d", gpu.PCIeGen), LineGBps: float64(line), MeasuredGBps: v,
					Source: fmt.Sprintf("%s: %s", base, m.Title)})
			}
		case (m.Path == "d2d" || (m.Path == "" && m.P2P != nil && *m.P2P)) && (len(m.Rows) != len(m.Cols) || len(m.Rows) < 2):
			notes = append(notes, fmt.Sprintf("%s: %q: not a GPU-to-GPU matrix (copies within a GPU), not fitted", base, m.Title))
		case m.Path == "d2d" || (m.Path == "" && m.P2P != nil && *m.P2P):
			if len(m.Rows) > G || len(m.Cols) > G {
				return nil, nil, fmt.Errorf("calibrate: %s: %q has %d GPUs, the cluster's nodes have %d: %w", base, m.Title, max(len(m.Cols), len(m.Rows)), G, ErrMismatch)
			}
			if res == nil {
				var err error
				if res, err = cl.Resolve(); err != nil {
					return nil, nil, fmt.Errorf("calibrate: %w", err)
				}
			}
			o, note := pairObservation(m, cl, res, base)
			if note != "" {
				notes = append(notes, note)
			}
			if o != nil {
				obs = append(obs, *o)
			}
		default:
			notes = append(notes, fmt.Sprintf("%s: %q: copies staged through host memory are not fitted", base, m.Title))
		}
	}
	for _, p := range a.Perftest {
		if !strings.HasSuffix(p.Test, "_bw") {
			continue
		}
		if len(cl.Nodes[0].NICs) == 0 {
			return nil, nil, fmt.Errorf("calibrate: %s: %s measured a NIC, the cluster has none: %w", base, p.Test, ErrMismatch)
		}
		nic := cl.Topo.Elem(cl.Nodes[0].NICs[0]).NIC
		best := 0.0
		for _, r := range p.Rows {
			v := r.AvgGbs
			if v <= 0 {
				v = r.PeakGbs
			}
			best = math.Max(best, v)
		}
		if best <= 0 {
			continue
		}
		obs = append(obs, LinkObs{Term: "net.eff." + string(nic.Kind), LineGBps: float64(nic.Speed.LineGBps()), MeasuredGBps: best / 8,
			Source: fmt.Sprintf("%s: %s", base, p.Test)})
	}
	return obs, notes, nil
}

// pairObservation summarises the GPU pairs of a GPU-to-GPU matrix that
// use P2P in the model: the median measured bandwidth against the line
// rate of the pairs' route.
func pairObservation(m *ingest.Matrix, cl *model.Cluster, res *model.Resolution, base string) (*LinkObs, string) {
	gpus := cl.Nodes[0].GPUs
	t := cl.Topo
	var vals []float64
	term, line := "", 0.0
	for i := range m.Values {
		for j, v := range m.Values[i] {
			if i == j || i >= len(gpus) || j >= len(gpus) || math.IsNaN(v) || v <= 0 {
				continue
			}
			p := res.GPU(gpus[i], gpus[j])
			if p == nil || p.Transport != model.TransportP2P {
				return nil, fmt.Sprintf("%s: %q: the model has no P2P between GPU%d and GPU%d, not fitted", base, m.Title, i, j)
			}
			lr, tm := math.Inf(1), ""
			for _, l := range p.Route {
				lk := &t.Links[l]
				if float64(lk.BW) < lr {
					lr = float64(lk.BW)
					switch lk.Kind {
					case model.LinkNVLink:
						tm = fmt.Sprintf("nvlink.eff.%d", cl.GPUModel().NVLinkGen)
					case model.LinkPCIe:
						tm = fmt.Sprintf("pcie.eff.%d", cl.GPUModel().PCIeGen)
					default:
						tm = ""
					}
				}
			}
			if tm == "" || math.IsInf(lr, 1) {
				continue
			}
			if term == "" {
				term, line = tm, lr
			}
			if tm == term && lr == line {
				vals = append(vals, v)
			}
		}
	}
	if len(vals) == 0 {
		return nil, ""
	}
	return &LinkObs{Term: term, LineGBps: line, MeasuredGBps: Median(vals), Source: fmt.Sprintf("%s: %s", base, m.Title)}, ""
}

// matrixMedian returns the median finite positive value of a matrix,
// diagonal included or not.
func matrixMedian(m *ingest.Matrix, skipDiag bool) (float64, bool) {
	var v []float64
	for i, row := range m.Values {
		for j, x := range row {
			if (skipDiag && i == j) || math.IsNaN(x) || x <= 0 {
				continue
			}
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return 0, false
	}
	return Median(v), true
}

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
	// point off by more than about 5% counts linearly, not quadratically.
	Scale float64
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
// observations: least squares on log(time) with a soft-L1 robust loss,
// minimised with gonum/optimize's Nelder-Mead in a logistic transform of
// each term's [Lo, Hi] bounds. Terms the data cannot determine are held
// at their base value and reported. Uncertainties come from the
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
	res := &FitResult{Engine: opt.Engine}
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
	// The objective is sum rho(r_i/Scale) + sum prior_j^2 with the soft-L1
	// loss rho(z) = 2(sqrt(1+z^2)-1). gonum/optimize's Newton method
	// minimises it with the Gauss-Newton Hessian J^T W J (W the IRLS
	// weights of the loss) and backtracking line searches: a
	// Levenberg-Marquardt iteration (Newton adds tau*I until the Hessian is
	// positive definite).
	gn := &gaussNewton{fp: fp, useLink: useLink, scale: opt.Scale, n: len(chosen),
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
	stderr, err := covariance(fp, &q, useLink, rf, opt.Scale, chosenTerms(chosen, func(c cand) (string, float64, float64) { return c.name, c.lo, c.hi }))
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
			Converged: r.Converged, Iterations: r.Iterations, Engine: string(r.Engine), Evaluations: r.Evaluations}}
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

// boundedTerm is a term being fitted: its name and bounds.
type boundedTerm struct {
	name   string
	lo, hi float64
}

func chosenTerms[T any](list []T, f func(T) (string, float64, float64)) []boundedTerm {
	out := make([]boundedTerm, len(list))
	for i, x := range list {
		out[i].name, out[i].lo, out[i].hi = f(x)
	}
	return out
}

// covariance returns each term's standard error at q: the covariance is
// s^2 (J^T W J)^-1, J the Jacobian of the log-time residuals by central
// differences, W the soft-L1 loss's IRLS weights and s^2 the weighted
// residual variance. Columns are scaled to d r / d log(v) before the
// inversion for conditioning. A term's error is NaN when the data leave no
// degrees of freedom or the matrix is singular.
func covariance(fp *fitProblem, q *sim.Params, useLink []bool, rf []float64, scale float64, terms []boundedTerm) ([]float64, error) {
	n := len(terms)
	stderr := make([]float64, n)
	for j := range stderr {
		stderr[j] = math.NaN()
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
	var s2 float64
	for i, ri := range rf {
		w := 1 / math.Sqrt(1+(ri/scale)*(ri/scale))
		s2 += w * ri * ri
		sw := math.Sqrt(w)
		for j := 0; j < n; j++ {
			J.Set(i, j, J.At(i, j)*sw)
		}
	}
	s2 /= float64(dof)
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
	jtj.SymOuterK(1, sub.T())
	var cov mat.Dense
	err := cov.Inverse(&jtj)
	var cond mat.Condition
	if err != nil && !(errors.As(err, &cond) && float64(cond) < 1e14) {
		return stderr, nil
	}
	for k, j := range keep {
		if d := cov.At(k, k) * s2; d >= 0 {
			stderr[j] = math.Sqrt(d) * vals[j]
		}
	}
	return stderr, nil
}

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
			Converger:         &optimize.FunctionConverge{Absolute: 1e-6, Relative: 1e-5, Iterations: 3},
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
	n       int
	resid   func(x []float64) (data, prior []float64, err error)
	err     error
	// iterations counts Newton major iterations over restarts.
	iterations int

	jx       []float64   // point of the cached Jacobian
	jr, jp   []float64   // residuals there
	jd, jpri [][]float64 // d residual / d x_j, by column
}

// jacStep is the forward-difference step in transformed coordinates.
const jacStep = 1e-3

func (g *gaussNewton) loss(r, pri []float64) float64 {
	var f float64
	for _, ri := range r {
		z := ri / g.scale
		f += 2 * (math.Sqrt(1+z*z) - 1)
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
			z := ri / g.scale
			s += 2 * z / math.Sqrt(1+z*z) * g.jd[j][i] / g.scale
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
		z := ri / g.scale
		w[i] = 2 / math.Sqrt(1+z*z) / (g.scale * g.scale)
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
