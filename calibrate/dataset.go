package calibrate

import (
	"errors"
	"fmt"
	"math"
	"path"
	"strings"

	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
)

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
		if row.Size <= 0 || !row.OOP.Valid || !(row.OOP.TimeUs > 0) || math.IsInf(row.OOP.TimeUs, 0) || row.OOP.BusBW > maxPlausibleBusBW || row.OOP.Wrong > 0 {
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
	// A run that names no count (Ranks 0: no device lines, no stated
	// count, bandwidths that fit several) is taken as the cluster's.
	if r.Ranks != 0 && r.Ranks != cl.NumRanks() {
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
	perNode := hostsPerNode(cl)
	if perNode <= 1 {
		if h := len(r.Hosts); h > 1 && h != cl.NumNodes() {
			return fmt.Errorf("calibrate: %s: node count: the run spans %d hosts, the cluster has %d nodes: %w", where, h, cl.NumNodes(), ErrMismatch)
		}
	} else if err := checkHosts(r, where, cl, perNode); err != nil {
		return err
	}
	// NCCL counts the hosts of a multi-host NVLink domain, or the domain
	// as one node (MNNVL): either agrees with the cluster.
	if log != nil && log.Nodes > 0 && log.Ranks == r.Ranks && log.Nodes != cl.NumNodes() && log.Nodes != perNode*cl.NumNodes() {
		return fmt.Errorf("calibrate: %s: node count: the NCCL log says nNodes %d, the cluster has %d nodes: %w", where, log.Nodes, cl.NumNodes(), ErrMismatch)
	}
	return nil
}

// hostsPerNode is the number of hosts (operating-system instances) behind
// the GPUs of one node of cl: 1 for a server, more for a node that is an
// NVLink domain of several hosts (GB200 NVL72: 18 trays of 4 GPUs, two
// Grace sockets each, NodeSpec.SocketsPerHost). Only the hosts of the GPUs
// the cluster uses count (--gpus-per-node).
func hostsPerNode(cl *model.Cluster) int {
	per := cl.Spec.Node.SocketsPerHost
	if per <= 0 || len(cl.Nodes) == 0 {
		return 1
	}
	hosts := map[int]bool{}
	for _, g := range cl.Nodes[0].GPUs {
		hosts[cl.Topo.Elem(g).Socket/per] = true
	}
	return max(1, len(hosts))
}

// checkHosts compares the hosts of a run with a cluster whose nodes span
// perNode hosts each: the run spans one host (a single-process run that
// names no other), or every host of the cluster with the same number of
// ranks on each.
func checkHosts(r *ingest.Run, where string, cl *model.Cluster, perNode int) error {
	h, want := len(r.Hosts), perNode*cl.NumNodes()
	if h <= 1 {
		return nil
	}
	if h != want {
		return fmt.Errorf("calibrate: %s: host count: the run spans %d hosts, the cluster has %d (%d node(s) x %d hosts of %d GPUs): %w",
			where, h, want, cl.NumNodes(), perNode, cl.GPUsPerNode()/perNode, ErrMismatch)
	}
	if len(r.Devices) != r.Ranks || cl.GPUsPerNode()%perNode != 0 {
		return nil
	}
	per := map[string]int{}
	for _, d := range r.Devices {
		per[d.Host]++
	}
	g := cl.GPUsPerNode() / perNode
	for _, host := range r.Hosts {
		if per[host] != g {
			return fmt.Errorf("calibrate: %s: ranks per host: host %s runs %d ranks, the cluster's hosts have %d GPUs each (%d node(s) x %d hosts): %w",
				where, host, per[host], g, cl.NumNodes(), perNode, ErrMismatch)
		}
	}
	return nil
}

// runSeries is what the nccl-tests runs of one artifact give for a cluster.
type runSeries struct {
	// series holds one series per usable run, in file order; runs[i] is
	// the run behind series[i].
	series []Series
	runs   []*ingest.Run
	// notes name runs measured at another node count than the cluster's
	// (inferred from their rank count), rows that were not used and runs
	// without a usable row.
	notes []string
	// partial are the errors of runs on fewer GPUs than one node holds,
	// set aside: the caller skips them with a note when another run is
	// used, and refuses the measurements otherwise.
	partial []error
}

// errPartialNode marks a run on fewer ranks than one node's GPUs.
var errPartialNode = errors.New("fewer ranks than one node's GPUs")

// specForRanks returns the cluster a run of ranks was measured on: spec
// itself when the rank counts agree, else spec with the node count the
// rank count implies (ranks / GPUs per node). Ranks that do not fill whole
// nodes are an error wrapping ErrMismatch.
func specForRanks(r *ingest.Run, file string, cl *model.Cluster, spec model.ClusterSpec) (model.ClusterSpec, *model.Cluster, string, error) {
	if r.Ranks == cl.NumRanks() {
		return spec, cl, "", nil
	}
	where := fmt.Sprintf("%s:%d (%s)", file, r.Line, runLabel(r))
	if r.Ranks == 0 {
		// No device lines, no stated count, and bandwidths that fit more
		// than one count (ingest.Run.Ranks): the cluster's is taken, and
		// said, rather than the run refused for a count it never gave.
		return spec, cl, fmt.Sprintf("%s: the run names no rank count and its bandwidths fit several; taken as the cluster's %d ranks", where, cl.NumRanks()), nil
	}
	G := cl.GPUsPerNode()
	if r.Ranks < G {
		return spec, nil, "", fmt.Errorf("calibrate: %s: rank count: the run has %d ranks, the cluster has %d (%d node(s) x %d GPUs): a run on fewer GPUs than one node: %w (%w)", where, r.Ranks, cl.NumRanks(), cl.NumNodes(), G, ErrMismatch, errPartialNode)
	}
	if G <= 0 || r.Ranks%G != 0 {
		return spec, nil, "", fmt.Errorf("calibrate: %s: rank count: the run has %d ranks, the cluster has %d (%d node(s) x %d GPUs), and %d ranks do not fill whole nodes of %d GPUs: %w",
			where, r.Ranks, cl.NumRanks(), cl.NumNodes(), G, r.Ranks, G, ErrMismatch)
	}
	s := spec
	s.Nodes = r.Ranks / G
	c, err := s.Build()
	if err != nil {
		return spec, nil, "", fmt.Errorf("calibrate: %s: %d nodes (from %d ranks of %d GPUs per node): %w", where, s.Nodes, r.Ranks, G, err)
	}
	note := fmt.Sprintf("%s: %d ranks = %d nodes x %d GPUs: modelled at %d nodes (the cluster's node count is %d)", where, r.Ranks, s.Nodes, G, s.Nodes, cl.NumNodes())
	return s, c, note, nil
}

// maxPlausibleBusBW bounds a plausible busbw in GB/s: more than ten times
// the fastest per-GPU interconnect of any catalogued part (NVLink5, 900
// GB/s each way) is a misprint or a broken timer.
const maxPlausibleBusBW = 9000

// parseNotes are what the parser of a said about its lines (a row refused
// or left out of fits, and why), as "file:line: message", and the set of
// lines they name.
func parseNotes(a *ingest.Artifact) ([]string, map[int]bool) {
	var notes []string
	lines := map[int]bool{}
	base := path.Base(a.File)
	for _, n := range a.Notes {
		if n.Line > 0 {
			notes = append(notes, fmt.Sprintf("%s:%d: %s", base, n.Line, n.Message))
			lines[n.Line] = true
		} else {
			notes = append(notes, fmt.Sprintf("%s: %s", base, n.Message))
		}
	}
	return notes, lines
}

// rowNotes names the rows of a run that SeriesFromRun does not use, except
// those on a line the parser already gave a reason for (noted).
func rowNotes(r *ingest.Run, file string, noted map[int]bool) []string {
	var notes []string
	base := path.Base(file)
	for _, row := range r.Rows {
		if noted[row.Line] {
			continue
		}
		at := fmt.Sprintf("%s:%d", base, row.Line)
		switch {
		case row.Size <= 0:
			notes = append(notes, fmt.Sprintf("%s: size %d is not positive, row not used", at, row.Size))
		case !row.OOP.Valid:
			notes = append(notes, fmt.Sprintf("%s: size %d has no out-of-place result, row not used", at, row.Size))
		case !(row.OOP.TimeUs > 0) || math.IsInf(row.OOP.TimeUs, 0):
			notes = append(notes, fmt.Sprintf("%s: size %d: time %g us is not a positive finite time, row not used", at, row.Size, row.OOP.TimeUs))
		case row.OOP.BusBW > maxPlausibleBusBW:
			notes = append(notes, fmt.Sprintf("%s: size %d: busbw %g GB/s is beyond any interconnect (> %d), row not used", at, row.Size, row.OOP.BusBW, maxPlausibleBusBW))
		case row.OOP.Wrong > 0:
			notes = append(notes, fmt.Sprintf("%s: size %d: nccl-tests counted %d wrong elements out of place, so its time is not a valid measurement; row not used", at, row.Size, row.OOP.Wrong))
		}
	}
	return notes
}

// seriesOfRuns turns the nccl-tests runs of a into series: each on cl
// (built from spec), or, when its rank count differs, on spec at the node
// count the rank count implies. Ranks that do not fill whole nodes, or any
// other CheckRun mismatch, are the error.
func seriesOfRuns(a *ingest.Artifact, cl *model.Cluster, spec model.ClusterSpec) (runSeries, error) {
	var rs runSeries
	var noted map[int]bool
	rs.notes, noted = parseNotes(a)
	for _, r := range a.Runs {
		rspec, rcl, note, err := specForRanks(r, a.File, cl, spec)
		if errors.Is(err, errPartialNode) {
			rs.partial = append(rs.partial, err)
			continue
		}
		if err != nil {
			return runSeries{}, err
		}
		if err := CheckRun(r, a.Log, a.File, rcl); err != nil {
			return runSeries{}, err
		}
		if err := checkRepeats(r, a.File); err != nil {
			return runSeries{}, err
		}
		if note != "" {
			rs.notes = append(rs.notes, note)
		}
		rs.notes = append(rs.notes, rowNotes(r, a.File, noted)...)
		s := SeriesFromRun(r, a.File, rspec)
		if s.Ranks == 0 {
			s.Ranks = rcl.NumRanks() // a run naming no count is the cluster's (specForRanks)
		}
		switch len(s.Points) {
		case 0:
			rs.notes = append(rs.notes, fmt.Sprintf("%s: no out-of-place row with a positive time", s.Name))
			continue
		case 1:
			rs.notes = append(rs.notes, fmt.Sprintf("%s: a single usable row: it weighs as one point", s.Name))
		}
		rs.series = append(rs.series, s)
		rs.runs = append(rs.runs, r)
	}
	return rs, nil
}

// ErrRepeatedSize is wrapped by the error that refuses a results table in
// which one size (same datatype, redop and root) appears twice apart from
// nccl-tests' own rounding: two runs pasted together, whose rows cannot
// be told apart.
var ErrRepeatedSize = errors.New("a size appears twice in one results table")

// checkRepeats refuses a run with a repeated size (see ingest.RepeatedSize);
// a repeat nccl-tests' rounding explains is kept (the parser notes it).
func checkRepeats(r *ingest.Run, file string) error {
	for _, d := range r.RepeatedSizes() {
		if d.Rounded {
			continue
		}
		return fmt.Errorf("calibrate: %s:%d: size %d appears twice in the table at lines %d and %d (%s, table at line %d): two runs pasted together? give each run its own table: %w",
			file, d.Line, d.Size, d.First, d.Line, runLabel(r), r.Line, ErrRepeatedSize)
	}
	return nil
}

// VersionNote says when the NCCL version the measured files state is one
// collsim does not model (newer than its newest release, or not a 2.x
// version), and which release the cluster spec models instead; "" when
// the version is modelled or no file states one. It looks where the
// command line's choice of the measured version does: each file's runs,
// then its log.
func VersionNote(arts []*ingest.Artifact, spec model.ClusterSpec) string {
	v, where := "", ""
	for _, a := range arts {
		if a == nil {
			continue
		}
		for _, r := range a.Runs {
			if r.NCCLVersion != "" {
				v, where = r.NCCLVersion, fmt.Sprintf("%s:%d", path.Base(a.File), r.Line)
				if a.Log != nil && a.Log.Version == v && a.Log.Lines["version"] > 0 {
					where = fmt.Sprintf("%s:%d", path.Base(a.File), a.Log.Lines["version"])
				}
				break
			}
		}
		if v == "" && a.Log != nil && a.Log.Version != "" {
			v, where = a.Log.Version, path.Base(a.File)
			if n := a.Log.Lines["version"]; n > 0 {
				where = fmt.Sprintf("%s:%d", where, n)
			}
		}
		if v != "" {
			break
		}
	}
	if v == "" {
		return ""
	}
	newest := model.Newest()
	var major, minor int
	n, _ := fmt.Sscanf(v, "%d.%d", &major, &minor)
	used, err := model.ParseVersion(spec.NCCLVersion)
	if err != nil {
		used = newest
	}
	if used.Major == newest.Major && used.Minor > newest.Minor {
		used = newest // a later 2.x behaves as the newest release modelled
	}
	switch {
	case n == 2 && (major > newest.Major || (major == newest.Major && minor > newest.Minor)):
		return fmt.Sprintf("%s: the measured run states NCCL %s, newer than any release collsim models (the newest is %s): modelled as NCCL %s, whose defaults and tuning may differ from %s's (--nccl-version chooses the release)", where, v, newest, used, v)
	case n != 2 || major != newest.Major:
		return fmt.Sprintf("%s: the measured run states NCCL %q, not a release collsim models (2.x): modelled as NCCL %s (--nccl-version chooses the release)", where, v, used)
	}
	return ""
}

// skippedNotes turns the errors of runs that were set aside into notes.
func skippedNotes(errs []error) []string {
	var notes []string
	for _, e := range errs {
		notes = append(notes, "skipped: "+strings.TrimPrefix(e.Error(), "calibrate: "))
	}
	return notes
}

// BuildDataset collects the measurements of arts that can calibrate the
// cluster spec describes: nccl-tests runs (any collective and sizes),
// GPU-GPU and host-GPU bandwidth matrices, and perftest bandwidths. A run
// of another rank count is modelled at the node count it implies (ranks /
// GPUs per node, with a note), so runs at several scales fit together;
// ranks that do not fill whole nodes, a GPU model that differs, or a
// dataset with nothing usable, is an error (wrapping ErrMismatch for
// mismatches). Rows not used get a note each.
func BuildDataset(arts []*ingest.Artifact, spec model.ClusterSpec) (*Dataset, error) {
	cl, err := spec.Build()
	if err != nil {
		return nil, fmt.Errorf("calibrate: cluster: %w", err)
	}
	ds := &Dataset{}
	if n := VersionNote(arts, spec); n != "" {
		ds.Notes = append(ds.Notes, n)
	}
	var partial []error
	for _, a := range arts {
		if a == nil {
			continue
		}
		src := FitSource{File: a.File, Kind: string(a.Kind)}
		rs, err := seriesOfRuns(a, cl, spec)
		if err != nil {
			return nil, err
		}
		ds.Notes = append(ds.Notes, rs.notes...)
		partial = append(partial, rs.partial...)
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
	if len(partial) > 0 {
		if len(ds.Series) == 0 {
			return nil, partial[0]
		}
		ds.Notes = append(ds.Notes, skippedNotes(partial)...)
	}
	if ds.Points() == 0 {
		return nil, noUsableRows(fmt.Sprintf("no measurement to fit in %d file(s): give nccl-tests results, bandwidth matrices or perftest output", len(arts)), len(arts), ds.Notes)
	}
	return ds, nil
}

// noUsableRows is the error of a dataset or validation whose files (files
// of them) left nothing to use: what when they gave no notes, else the
// notes (why each row or file was left out), so that nccl-tests results whose
// every row is implausible are not taken for a file of something else.
func noUsableRows(what string, files int, notes []string) error {
	if len(notes) == 0 {
		return fmt.Errorf("calibrate: %s", what)
	}
	return fmt.Errorf("calibrate: nothing usable in %d file(s): %s", files, strings.Join(notes, "; "))
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
		case strings.Contains(m.Title, "another NUMA node"):
			notes = append(notes, fmt.Sprintf("%s: %q: copies from another NUMA node cross the CPUs' link, not only the GPU's PCIe: not fitted", base, m.Title))
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
		what := p.Test
		if p.Bidirectional {
			// Both directions at once, summed: a full-duplex port carries
			// half of it each way.
			best /= 2
			what += " (bidirectional, half of the two directions' sum)"
		}
		line := float64(nic.Speed.LineGBps())
		if best/8 > line*1.02 {
			notes = append(notes, fmt.Sprintf("%s: %s measured %.1f GB/s, above the %.1f GB/s line rate of the cluster's NIC: not fitted (another NIC speed, or a sum over ports or directions?)", base, what, best/8, line))
			continue
		}
		obs = append(obs, LinkObs{Term: "net.eff." + string(nic.Kind), LineGBps: line, MeasuredGBps: best / 8,
			Source: fmt.Sprintf("%s: %s", base, what)})
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
