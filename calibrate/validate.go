package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
)

// Size regimes of a measured curve. Errors are summarised per regime
// because the model's latency and bandwidth terms are separate.
const (
	// RegimeLatency is sizes below LatencyMax.
	RegimeLatency = "latency"
	// RegimeBandwidth is sizes of at least BandwidthMin.
	RegimeBandwidth = "bandwidth"
	// RegimeMid stands in for the bandwidth regime on runs that stop below
	// BandwidthMin (the ABCI runs end at 32 MiB): their sizes of at least
	// MidMin. It is reported as such, never merged with RegimeBandwidth.
	RegimeMid = "mid"
	// RegimeOther is everything between (not summarised).
	RegimeOther = "other"
)

// Regime bounds in bytes.
const (
	LatencyMax   = 64 << 10
	BandwidthMin = 64 << 20
	MidMin       = 8 << 20
)

// RegimeOf classifies a size; hasBW says whether the curve reaches
// BandwidthMin (otherwise its sizes >= MidMin are RegimeMid).
func RegimeOf(size int64, hasBW bool) string {
	switch {
	case size < LatencyMax:
		return RegimeLatency
	case size >= BandwidthMin:
		return RegimeBandwidth
	case !hasBW && size >= MidMin:
		return RegimeMid
	}
	return RegimeOther
}

// GateRegime returns the regime whose points decide pass/fail for a curve
// of the given sizes: RegimeBandwidth when it reaches BandwidthMin, else
// RegimeMid when it reaches MidMin, else "" (no point can decide).
func GateRegime(sizes []int64) string {
	mid := false
	for _, s := range sizes {
		if s >= BandwidthMin {
			return RegimeBandwidth
		}
		if s >= MidMin {
			mid = true
		}
	}
	if mid {
		return RegimeMid
	}
	return ""
}

// PointCheck compares one measured size with the model.
type PointCheck struct {
	// Size is nccl-tests' size column in bytes.
	Size int64 `json:"size_bytes"`
	// Line is the row's line in the measured file.
	Line int `json:"line,omitempty"`
	// MeasuredTimeUs and ModelTimeUs are the times of one call in µs.
	MeasuredTimeUs float64 `json:"measured_time_us"`
	ModelTimeUs    float64 `json:"model_time_us"`
	// MeasuredBusBW is recomputed from the measured time (size x busbw
	// factor / time), which equals the printed busbw to its precision and
	// stays meaningful where nccl-tests prints 0.00.
	// ModelBusBW is the model's busbw in GB/s.
	MeasuredBusBW float64 `json:"measured_busbw_gbps"`
	ModelBusBW    float64 `json:"model_busbw_gbps"`
	// Ratio is model busbw / measured busbw (= measured time / model
	// time); Error is Ratio-1, the model's relative busbw error.
	Ratio float64 `json:"ratio"`
	Error float64 `json:"error"`
	// Regime is RegimeLatency, RegimeBandwidth, RegimeMid or RegimeOther.
	Regime string `json:"regime"`
	// Pass is |Error| <= the tolerance.
	Pass bool `json:"pass"`
	// Algo, Proto and Channels are the model's NCCL choice; Bottleneck
	// its most loaded link and BottleneckClass that link's class.
	Algo            string `json:"algo"`
	Proto           string `json:"proto"`
	Channels        int    `json:"channels"`
	Bottleneck      string `json:"bottleneck,omitempty"`
	BottleneckClass string `json:"bottleneck_class,omitempty"`
}

// RegimeStats summarises the errors of one regime.
type RegimeStats struct {
	// Regime names the regime; Points counts its sizes.
	Regime string `json:"regime"`
	Points int    `json:"points"`
	// MedianAbs and P90Abs are the median and 90th percentile of |Error|;
	// Worst is the signed Error of largest magnitude; MedianSigned the
	// median signed Error (negative: the model is slower than measured).
	MedianAbs    float64 `json:"median_abs_error"`
	P90Abs       float64 `json:"p90_abs_error"`
	Worst        float64 `json:"worst_error"`
	MedianSigned float64 `json:"median_error"`
}

// Stats summarises errors (model/measured - 1) of one regime.
func Stats(regime string, errs []float64) RegimeStats {
	st := RegimeStats{Regime: regime, Points: len(errs)}
	if len(errs) == 0 {
		return st
	}
	abs := make([]float64, len(errs))
	for i, e := range errs {
		abs[i] = math.Abs(e)
		if abs[i] > math.Abs(st.Worst) {
			st.Worst = e
		}
	}
	st.MedianAbs = quantileOf(abs, 0.5)
	st.P90Abs = quantileOf(abs, 0.9)
	st.MedianSigned = quantileOf(errs, 0.5)
	return st
}

// SeriesCheck is the validation of one measured curve.
type SeriesCheck struct {
	// Series is the series' name; File and Line locate its table.
	Series string `json:"series"`
	File   string `json:"file"`
	Line   int    `json:"line"`
	// Collective is the nccl-tests stem ("all_reduce"); Ranks the rank count.
	Collective string `json:"collective"`
	Ranks      int    `json:"ranks"`
	// Points compare every measured size.
	Points []PointCheck `json:"points"`
	// Regimes holds latency, then bandwidth or mid, statistics.
	Regimes []RegimeStats `json:"regimes"`
	// Gate is the regime whose points decide Pass ("bandwidth", or "mid"
	// for curves that stop below 64 MiB); Failures counts its points
	// outside the tolerance.
	Gate     string `json:"gate"`
	Failures int    `json:"failures"`
	// Pass is true when no gate point is outside the tolerance.
	Pass bool `json:"pass"`
}

// Regime returns the statistics of one regime (zero Points when absent).
func (s *SeriesCheck) Regime(name string) RegimeStats {
	for _, r := range s.Regimes {
		if r.Regime == name {
			return r
		}
	}
	return RegimeStats{Regime: name}
}

// CheckSeries predicts every measured size of s on env and compares.
func CheckSeries(ctx context.Context, env *sim.Env, s Series, engine sim.EngineKind, tolerance float64) (*SeriesCheck, error) {
	pts, err := predictSeries(ctx, env, s, engine)
	if err != nil {
		return nil, err
	}
	sizes := make([]int64, len(s.Points))
	for i, p := range s.Points {
		sizes[i] = p.Size
	}
	gate := GateRegime(sizes)
	hasBW := gate == RegimeBandwidth
	sc := &SeriesCheck{Series: s.Name, File: s.File, Line: s.Line, Collective: s.Coll.TestName(), Ranks: env.Cluster.NumRanks(), Gate: gate, Pass: true}
	byRegime := map[string][]float64{}
	factor := s.Coll.BusBWFactor(env.Cluster.NumRanks())
	for i, m := range s.Points {
		pt := pts[i]
		pc := PointCheck{Size: m.Size, Line: m.Line, MeasuredTimeUs: m.TimeUs, ModelTimeUs: pt.TimeUs, ModelBusBW: pt.BusBW,
			Regime: RegimeOf(m.Size, hasBW), Algo: pt.Choice.Algo.String(), Proto: pt.Choice.Proto.String(), Channels: pt.Choice.Channels,
			Bottleneck: pt.Bottleneck, BottleneckClass: pt.BottleneckClass}
		pc.MeasuredBusBW = float64(m.Size) / (m.TimeUs * 1e3) * factor
		if pt.TimeUs > 0 {
			pc.Ratio = m.TimeUs / pt.TimeUs
			pc.Error = pc.Ratio - 1
		}
		pc.Pass = math.Abs(pc.Error) <= tolerance
		if pc.Regime == gate && !pc.Pass {
			sc.Failures++
			sc.Pass = false
		}
		byRegime[pc.Regime] = append(byRegime[pc.Regime], pc.Error)
		sc.Points = append(sc.Points, pc)
	}
	for _, r := range []string{RegimeLatency, RegimeBandwidth, RegimeMid} {
		if len(byRegime[r]) > 0 {
			sc.Regimes = append(sc.Regimes, Stats(r, byRegime[r]))
		}
	}
	return sc, nil
}

// ValidateOptions control Validate.
type ValidateOptions struct {
	// Tolerance is the largest |model/measured busbw - 1| a gate point may
	// have (default 0.10).
	Tolerance float64
	// Engine times the model (default analytic; des for the discrete-event
	// simulator).
	Engine sim.EngineKind
	// Log is an optional NCCL_DEBUG=INFO artifact from the same run
	// (validate --log); its findings join the evidence.
	Log *ingest.Artifact
	// Profile names the calibration profile applied to the parameters, for
	// the report.
	Profile string
}

// Validation is the result of validating measurements against the model
// of a healthy cluster.
type Validation struct {
	// Cluster describes the expected (healthy) cluster.
	Cluster string `json:"cluster"`
	// Engine timed the model; Tolerance is the gate's |error| limit;
	// Profile the calibration profile applied, if any.
	Engine    string  `json:"engine"`
	Tolerance float64 `json:"tolerance"`
	Profile   string  `json:"profile,omitempty"`
	// Series are the validated runs.
	Series []*SeriesCheck `json:"series"`
	// Diagnoses are the likely causes of the gap, best explanation first.
	Diagnoses []Diagnosis `json:"diagnoses"`
	// Findings are what the measured files (and --log) show by themselves.
	Findings []ingest.Finding `json:"findings,omitempty"`
	// Notes say what was skipped and why.
	Notes []string `json:"notes,omitempty"`
	// Pass is true when every gate point of every series is within the
	// tolerance.
	Pass bool `json:"pass"`
}

// ErrNoGate is wrapped by Validate's error when no measured size is large
// enough (>= MidMin) to judge bandwidth.
var ErrNoGate = errors.New("no size of at least 8 MiB to judge bandwidth")

// Validate compares the nccl-tests runs of arts with the model of spec
// (the cluster as it should be) using params, and diagnoses the gap.
// Measurements that do not match the cluster are refused (errors wrap
// ErrMismatch); a run of another rank count is skipped when another run
// matches.
func Validate(ctx context.Context, arts []*ingest.Artifact, spec model.ClusterSpec, params sim.Params, opt ValidateOptions) (*Validation, error) {
	if opt.Tolerance <= 0 {
		opt.Tolerance = 0.10
	}
	if opt.Engine == "" {
		opt.Engine = sim.EngineAnalytic
	}
	cl, err := spec.Build()
	if err != nil {
		return nil, fmt.Errorf("calibrate: cluster: %w", err)
	}
	env, err := sim.NewEnv(cl, params)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	v := &Validation{Cluster: DescribeCluster(cl), Engine: string(opt.Engine), Tolerance: opt.Tolerance, Profile: opt.Profile, Pass: true}
	if n := VersionNote(arts, spec); n != "" {
		v.Notes = append(v.Notes, n)
	}
	var series []Series
	var partial []error
	var logs []*ingest.NCCLLog
	for _, a := range arts {
		if a == nil {
			continue
		}
		if len(a.Runs) == 0 {
			v.Notes = append(v.Notes, fmt.Sprintf("%s: a %s file has no nccl-tests results; used as evidence only", path.Base(a.File), a.Kind))
		}
		rs, err := seriesOfRuns(a, cl, spec)
		if err != nil {
			return nil, err
		}
		v.Notes = append(v.Notes, rs.notes...)
		partial = append(partial, rs.partial...)
		series = append(series, rs.series...)
		v.Findings = append(v.Findings, prefixFindings(a)...)
		if a.Log != nil {
			logs = append(logs, a.Log)
		}
	}
	if opt.Log != nil {
		logNotes, _ := parseNotes(opt.Log)
		v.Notes = append(v.Notes, logNotes...)
		v.Findings = append(v.Findings, prefixFindings(opt.Log)...)
		if opt.Log.Log != nil {
			logs = append(logs, opt.Log.Log)
		}
	}
	if n := networkMismatch(logs, env); n != "" {
		v.Notes = append(v.Notes, n)
	}
	if len(series) == 0 {
		if len(partial) > 0 {
			return nil, partial[0]
		}
		return nil, noUsableRows(fmt.Sprintf("no nccl-tests results in %d measured file(s)", len(arts)), len(arts), v.Notes)
	}
	v.Notes = append(v.Notes, skippedNotes(partial)...)
	if err := checkLogRun(opt.Log, series); err != nil {
		return nil, err
	}
	var gated []Series
	var modelled []Series
	for _, s := range series {
		senv := env
		if s.Spec.Nodes != spec.Nodes {
			// A run at another scale (seriesOfRuns inferred its node count).
			scl, err := s.Spec.Build()
			if err != nil {
				return nil, fmt.Errorf("calibrate: %s: %w", s.Name, err)
			}
			if senv, err = sim.NewEnv(scl, params); err != nil {
				return nil, fmt.Errorf("calibrate: %s: %w", s.Name, err)
			}
		}
		sc, err := CheckSeries(ctx, senv, s, opt.Engine, opt.Tolerance)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("calibrate: %w", ctx.Err())
			}
			v.Notes = append(v.Notes, "not validated: the model cannot predict it: "+strings.TrimPrefix(err.Error(), "calibrate: "))
			continue
		}
		v.Series = append(v.Series, sc)
		modelled = append(modelled, s)
		if sc.Gate == "" {
			v.Notes = append(v.Notes, fmt.Sprintf("%s: no size of at least 8 MiB, so no bandwidth verdict (latency regime reported only)", s.Name))
			continue
		}
		gated = append(gated, s)
		if sc.Gate == RegimeMid {
			v.Notes = append(v.Notes, fmt.Sprintf("%s: no size of at least 64 MiB; the sizes of at least 8 MiB (\"mid\" regime) decide pass/fail instead", s.Name))
		}
		if !sc.Pass {
			v.Pass = false
		}
	}
	if len(v.Series) == 0 {
		return nil, fmt.Errorf("calibrate: the model cannot predict any measured run: %s", strings.Join(v.Notes, "; "))
	}
	if v.Cluster, err = DescribeScales(spec, modelled); err != nil {
		return nil, err
	}
	if len(gated) == 0 {
		return nil, fmt.Errorf("calibrate: %s: %w", series[0].Name, ErrNoGate)
	}
	diags, err := Diagnose(ctx, DiagnoseInput{Spec: spec, Params: params, Series: gated, Checks: v.Series, Findings: v.Findings,
		Logs: logs, Tolerance: opt.Tolerance})
	if err != nil {
		return nil, err
	}
	if d := wrongResults(arts); d != nil {
		// Whatever the times say, a run whose data came out wrong does
		// not pass: its rows with wrong elements are left out above, and
		// the cause leads.
		v.Pass = false
		diags = append([]Diagnosis{*d}, diags...)
	}
	v.Diagnoses = diags
	return v, nil
}

// wrongResults is the diagnosis of measured runs in which nccl-tests
// counted wrong result elements (#wrong > 0 on a row, or out-of-bounds
// values in its summary), nil when none did.
func wrongResults(arts []*ingest.Artifact) *Diagnosis {
	var ev []string
	for _, a := range arts {
		if a == nil {
			continue
		}
		base := path.Base(a.File)
		for _, r := range a.Runs {
			var rows []string
			for _, row := range r.Rows {
				if row.OOP.Wrong > 0 || row.IP.Wrong > 0 {
					rows = append(rows, fmt.Sprintf("%s:%d: size %d: #wrong %d out of place, %d in place", base, row.Line, row.Size, max(row.OOP.Wrong, 0), max(row.IP.Wrong, 0)))
				}
			}
			if len(rows) == 0 && r.OutOfBounds > 0 {
				rows = append(rows, fmt.Sprintf("%s:%d %s: the summary counts %d out-of-bounds values", base, r.Line, runLabel(r), r.OutOfBounds))
			}
			ev = append(ev, rows...)
		}
	}
	if len(ev) == 0 {
		return nil
	}
	info := diagTexts[DiagWrong]
	return &Diagnosis{Code: DiagWrong, Title: info.title, Severity: "error", Evidence: ev, Fix: info.fix, Residual: -1, Baseline: -1, FromFiles: true}
}

// checkLogRun refuses a --log artifact that is not of the measured runs:
// no communicator it states has the rank count of a measured run (or, of
// that rank count, the run's node count). A log without comm lines cannot
// be checked and is used as given.
func checkLogRun(log *ingest.Artifact, series []Series) error {
	if log == nil || log.Log == nil || len(log.Log.Comms) == 0 {
		return nil
	}
	base := path.Base(log.File)
	for _, s := range series {
		for _, c := range log.Log.Comms {
			if c.Ranks == s.Ranks && (c.Nodes == 0 || s.Spec.Nodes == 0 || c.Nodes == s.Spec.Nodes) {
				return nil
			}
		}
	}
	c, s := log.Log.Comms[0], series[0]
	for _, c := range log.Log.Comms {
		if c.Ranks == s.Ranks {
			return fmt.Errorf("calibrate: --log %s:%d: the NCCL log's communicator of %d ranks spans %d nodes, the measured run %s has %d ranks on %d nodes: a log of another run would mislead the diagnosis; give the NCCL_DEBUG=INFO log of the measured run, or leave out --log: %w",
				base, c.Line, c.Ranks, c.Nodes, s.Name, s.Ranks, s.Spec.Nodes, ErrMismatch)
		}
	}
	return fmt.Errorf("calibrate: --log %s:%d: the NCCL log's communicator has %d ranks (nRanks %d), the measured run %s has %d: a log of another run would mislead the diagnosis; give the NCCL_DEBUG=INFO log of the measured run, or leave out --log: %w",
		base, c.Line, c.Ranks, c.Ranks, s.Name, s.Ranks, ErrMismatch)
}

// DescribeScales describes spec as the series were modelled on it, each
// at its own node count (inferred from its rank count where it differs
// from spec's): DescribeCluster's line for one count, else the largest
// with every count named.
func DescribeScales(spec model.ClusterSpec, series []Series) (string, error) {
	scales := map[int]*model.Cluster{}
	for _, s := range series {
		n := spec.Nodes
		if s.Spec.Nodes > 0 {
			n = s.Spec.Nodes
		}
		if scales[n] != nil {
			continue
		}
		sp := spec
		sp.Nodes = n
		cl, err := sp.Build()
		if err != nil {
			return "", fmt.Errorf("calibrate: cluster at %d nodes: %w", n, err)
		}
		scales[n] = cl
	}
	if len(scales) == 0 {
		cl, err := spec.Build()
		if err != nil {
			return "", fmt.Errorf("calibrate: cluster: %w", err)
		}
		return DescribeCluster(cl), nil
	}
	var ns []int
	for n := range scales {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	d := DescribeCluster(scales[ns[len(ns)-1]])
	if len(ns) > 1 {
		words := make([]string, len(ns))
		for i, n := range ns {
			words[i] = strconv.Itoa(n)
		}
		d += "; the runs modelled at " + strings.Join(words, ", ") + " nodes"
	}
	return d, nil
}

// prefixFindings returns a's findings with the file name in the evidence.
func prefixFindings(a *ingest.Artifact) []ingest.Finding {
	out := make([]ingest.Finding, len(a.Findings))
	for i, f := range a.Findings {
		f.Evidence = strings.TrimSpace(fmt.Sprintf("%s:%d: %s", path.Base(a.File), f.Line, f.Evidence))
		out[i] = f
	}
	return out
}

// DescribeCluster summarises a cluster in one line: nodes, node template,
// GPUs, NICs, the NCCL version modelled and the NCCL variables set.
func DescribeCluster(cl *model.Cluster) string {
	s := cl.Spec
	name := s.Node.Name
	if name == "" {
		name = "custom node"
	}
	nics := "no NIC"
	if s.Node.NICs.Count > 0 {
		nics = fmt.Sprintf("%dx %s %s", s.Node.NICs.Count, s.Node.NICs.Speed, s.Node.NICs.Kind)
	}
	out := fmt.Sprintf("%d x %s (%dx %s, %s), NCCL %s model", cl.NumNodes(), name, cl.GPUsPerNode(), cl.GPUModel().Name, nics, cl.Version)
	if env := cl.Knobs.SortedEnv(); len(env) > 0 {
		out += " with " + strings.Join(env, " ")
	}
	return out
}

// netFamily names a network as NCCL logs it ("Using network X", NET/X),
// with the names one plugin has had folded together: aws-ofi-nccl logged
// "AWS Libfabric" up to 1.11 and "Libfabric" since; "OFI" on some builds.
func netFamily(n string) string {
	switch u := strings.ToLower(strings.TrimSpace(n)); u {
	case "aws libfabric", "libfabric", "ofi":
		return "libfabric"
	default:
		return u
	}
}

// networkMismatch says when the NCCL logs name another network than the
// modelled cluster runs (sockets modelled, AWS Libfabric logged): the
// healthy model then describes another cluster, and neither the gate nor a
// fit on it means what it says. Socket in the log where the model has
// RDMA is a diagnosis of its own (socket-instead-of-ib), not a mismatch of
// the model.
func networkMismatch(logs []*ingest.NCCLLog, env *sim.Env) string {
	if env.Cluster.NumNodes() < 2 || env.Res.Net == "" {
		return ""
	}
	model := netFamily(env.Res.Net)
	for _, l := range logs {
		if l == nil || l.Network == "" {
			continue
		}
		logged := netFamily(l.Network)
		if logged == model || logged == "socket" {
			continue
		}
		return fmt.Sprintf("the NCCL log says the run used network %s, the cluster is modelled with NET/%s: describe the NICs and stack the log names (--nics KIND, --net-stack) before reading the verdict or calibrating", l.Network, env.Res.Net)
	}
	return ""
}
