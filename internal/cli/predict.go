package cli

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/sim"
	"github.com/collsim/collsim/study"
	"github.com/urfave/cli/v2"
)

// sizeFlags are nccl-tests' size options.
func sizeFlags(minDefault, maxDefault string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "minbytes", Aliases: []string{"b"}, Value: minDefault, Usage: "smallest size (K/M/G suffixes, 1024-based)"},
		&cli.StringFlag{Name: "maxbytes", Aliases: []string{"e"}, Value: maxDefault, Usage: "largest size"},
		&cli.StringFlag{Name: "stepfactor", Aliases: []string{"f"}, Value: "2", Usage: "multiply the size by this `FACTOR` between points (1 = add --stepbytes instead)"},
		&cli.StringFlag{Name: "stepbytes", Aliases: []string{"i"}, Value: "1M", Usage: "add this many `BYTES` between points when -f is 1 (nccl-tests -i)"},
	}
}

// maxSizes bounds how many sizes one sweep may have.
const maxSizes = 4096

// sizeOptions are the size options as given ("-b 8 -e 8G -f 2"), for
// reports.
func sizeOptions(c *cli.Context) string {
	return fmt.Sprintf("-b %s -e %s -f %s", c.String("minbytes"), c.String("maxbytes"), c.String("stepfactor"))
}

// maxSize is the largest size collsim accepts (1 TiB).
const maxSize = model.TiB

// sizes expands -b/-e/-f like nccl-tests.
func sizes(c *cli.Context) ([]model.Bytes, error) {
	lo, err := model.ParseBytes(c.String("minbytes"))
	if err != nil {
		return nil, badInputf("-b/--minbytes: %w", err)
	}
	hi, err := model.ParseBytes(c.String("maxbytes"))
	if err != nil {
		return nil, badInputf("-e/--maxbytes: %w", err)
	}
	f, err := strconv.ParseFloat(c.String("stepfactor"), 64)
	if err != nil || !(f >= 1) || math.IsInf(f, 0) {
		return nil, badInputf("-f/--stepfactor: want a number >= 1, got %q", c.String("stepfactor"))
	}
	switch {
	case lo <= 0:
		return nil, badInputf("-b/--minbytes must be at least 1 byte, got %d", lo)
	case hi > maxSize:
		return nil, badInputf("-e/--maxbytes %s is above the 1T limit", model.FormatBytes(hi))
	case lo > hi:
		return nil, badInputf("-b/--minbytes %s is larger than -e/--maxbytes %s", model.FormatBytes(lo), model.FormatBytes(hi))
	}
	step := model.Bytes(0)
	if f <= 1 {
		// nccl-tests adds -i/--stepbytes when the factor is not above 1.
		if step, err = model.ParseBytes(c.String("stepbytes")); err != nil || step <= 0 {
			return nil, badInputf("-i/--stepbytes: want a positive size, got %q", c.String("stepbytes"))
		}
	}
	var out []model.Bytes
	for s := lo; s <= hi; {
		if len(out) == maxSizes {
			return nil, badInputf("-b %s -e %s gives more than %d sizes; use a larger -f or -i", model.FormatBytes(lo), model.FormatBytes(hi), maxSizes)
		}
		out = append(out, s)
		next := s + step
		if step == 0 {
			// A factor that takes the next size past -e ends the sweep
			// (converted, a product beyond int64 would wrap).
			x := math.Ceil(float64(s) * f)
			if x > float64(hi) {
				break
			}
			next = model.Bytes(x)
		}
		if next <= s {
			next = s + 1
		}
		s = next
	}
	return out, nil
}

// predictFlags are predict's options besides the cluster: the sizes, the
// request, --format and --report. compare takes the same, applied to every
// design.
func predictFlags() []cli.Flag {
	return append(sizeFlags("8", "8G"),
		collectiveFlag(),
		algoFlag(),
		protoFlag(),
		engineFlag(sim.EngineDES),
		formatFlag(),
		datatypeFlag(),
		reportFlag(),
		&cli.StringFlag{Name: "max-memory", Usage: "memory `BYTES` the DES may use (K/M/G suffixes; default 8G): a call beyond it is refused before it is built; the runs in flight at once (--jobs; with --seeds, every seed's) share it, each reserving twice its estimate (the Go heap's headroom) and waiting until that fits beside the others, so large runs go one at a time"},
		&cli.Int64Flag{Name: "max-events", Usage: "engine `EVENTS` one DES call may process (default 2e9)"},
		jobsFlag(),
	)
}

// jobsFlag is --jobs, read by requestBase.
func jobsFlag() cli.Flag {
	return &cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "run `N` sizes of the sweep at once, and with --seeds N runs of the seeds' sweeps (default: every core, GOMAXPROCS; 1: one after another); the results and the order of the rows are the same for every N"}
}

// seedsFlag is predict's --seeds.
func seedsFlag() cli.Flag {
	return &cli.IntFlag{Name: "seeds", Value: 1, Usage: "run `K` seeds of the fabric's randomness (--seed, --seed+1, ...), --jobs at once, and report the expected (mean time) and the worst case per size"}
}

func predictCommand(e *env) *cli.Command {
	flags := append(append(append(clusterFlags(), predictFlags()...), traceFlags()...), seedsFlag())
	return &cli.Command{
		Name:      "predict",
		Usage:     "predict nccl-tests results for a cluster",
		UsageText: "collsim predict [--node NAME --nodes N --nics 8x400G-ib | --cluster FILE] [-b 8 -e 8G -f 2] [--collective allreduce] [--format table|json|csv]",
		Flags:     flags,
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return badInputf("predict takes no arguments, got %q", c.Args().First())
			}
			req, format, rpath, err := predictOptions(c, "predict")
			if err != nil {
				return err
			}
			trace, err := traceOptions(c, req)
			if err != nil {
				return err
			}
			if trace != nil {
				if err := distinctOutputs("predict", [2]string{"--report", rpath}, [2]string{"--trace", trace.path}); err != nil {
					return err
				}
			}
			var out *prediction
			var envr *sim.Env
			if k := c.Int("seeds"); k == 1 {
				// One seed: rows print as their sizes finish.
				if envr, err = buildEnv(c); err != nil {
					return err
				}
				prof, err := profileInfo(c.String("profile"), envr.Cluster)
				if err != nil {
					return err
				}
				if out, err = streamPrediction(c.Context, e, envr, req, c.String("datatype"), format, prof); err != nil {
					return budgetInput(err)
				}
			} else {
				// Several seeds: every seed's sweep runs before the
				// expected and worst rows can be printed.
				var pts []sim.Point
				var worst []seededPoint
				if envr, pts, worst, err = seededSweep(c, req); err != nil {
					return budgetInput(err)
				}
				out = newPrediction(envr, req, pts, c.String("datatype"))
				out.worst, out.seeds = worst, k
				if out.profile, err = profileInfo(c.String("profile"), envr.Cluster); err != nil {
					return err
				}
				if format != "json" {
					if err := out.writeRows(e.stdout, format); err != nil {
						return err
					}
				}
			}
			if trace != nil {
				info, err := writeTrace(c, envr, req, trace)
				if err != nil {
					return err
				}
				sampled := ""
				if info.Every > 1 {
					sampled = fmt.Sprintf(", every %d-th op (sampled)", info.Every)
				}
				fmt.Fprintf(e.stderr, "collsim: trace of %s written to %s: %d slices%s, %d counter samples\n", model.FormatBytes(trace.size), trace.path, info.Slices, sampled, info.Counters)
			}
			report := func() (*reports.Document, error) {
				return predictReport(c.Context, e, out, predictInputs{files: clusterFilesFrom(c), sizes: sizeOptions(c)})
			}
			if format == "json" {
				return printResult(e, out, format, "predict", rpath, report)
			}
			if format == "table" {
				out.writeTableFooter(e.stdout)
			}
			if rpath == "" {
				return nil
			}
			doc, err := report()
			if err != nil {
				return err
			}
			return writeReport("predict", rpath, doc)
		},
	}
}

// streamPrediction predicts every size of req, --jobs sizes at once. For
// the table and CSV formats it prints each row as soon as its size and
// every size before it are done, in sweep order (the header with the first
// row; the caller prints the table's footer), so a long sweep shows its
// results as they come; on a terminal it shows "size k/N" on stderr for
// the first size not printed yet. Interrupted (ctx cancelled), it returns
// an error that says how many sizes finished.
func streamPrediction(ctx context.Context, e *env, envr *sim.Env, req sim.Request, dtype, format string, prof *profileJSON) (*prediction, error) {
	if req.ElemSize <= 0 {
		req.ElemSize = 4
	}
	p := &prediction{env: envr, req: req, dtype: strings.ToLower(dtype), profile: prof}
	cw := csv.NewWriter(e.stdout)
	prog := e.progress("predict")
	n := len(req.Sizes)
	if ctx.Err() != nil {
		return nil, interruptedf("predict: interrupted after 0 of %d sizes", n)
	}
	if n > 0 {
		prog.show("size %d/%d (%s)", 1, n, model.FormatBytes(req.Sizes[0]))
	}
	err := envr.SweepEach(ctx, req, func(k int, pt sim.Point) error {
		prog.clear()
		// The header waits for the first row, so that a request the
		// model refuses at once prints only its error.
		first := len(p.pts) == 0
		p.pts = append(p.pts, pt)
		switch format {
		case "table":
			if first {
				p.writeTableHeader(e.stdout)
			}
			p.writeTableRow(e.stdout, pt)
		case "csv":
			if first {
				p.writeCSVHeader(cw)
			}
			p.writeCSVRow(cw, pt)
			cw.Flush()
			if err := cw.Error(); err != nil {
				return err
			}
		}
		if k+1 < n {
			prog.show("size %d/%d (%s)", k+2, n, model.FormatBytes(req.Sizes[k+1]))
		}
		return nil
	})
	prog.clear()
	if err != nil {
		if ctx.Err() != nil {
			return nil, interruptedf("predict: interrupted after %d of %d sizes", len(p.pts), n)
		}
		return nil, err
	}
	if len(p.pts) == 0 {
		// No size at all: the empty table still has its header.
		switch format {
		case "table":
			p.writeTableHeader(e.stdout)
		case "csv":
			p.writeCSVHeader(cw)
			cw.Flush()
		}
	}
	p.summary = transportSummary(envr, p.pts)
	return p, nil
}

// predictOptions reads the options predict and compare share (predictFlags),
// checked in the order a user sees errors: the request, --format, --report.
func predictOptions(c *cli.Context, cmd string) (req sim.Request, format, report string, err error) {
	if req, err = requestFrom(c); err != nil {
		return req, "", "", err
	}
	if format, err = outputFormat(c); err != nil {
		return req, "", "", err
	}
	report, err = reportPath(c, cmd)
	return req, format, report, err
}

func requestFrom(c *cli.Context) (sim.Request, error) {
	req, err := requestBase(c)
	if err != nil {
		return req, err
	}
	if req.Sizes, err = sizes(c); err != nil {
		return req, err
	}
	return req, nil
}

// collectiveFlag is --collective (-c), read by requestBase.
func collectiveFlag() cli.Flag {
	return &cli.StringFlag{Name: "collective", Aliases: []string{"c"}, Value: "allreduce", Usage: "allreduce|allgather|reducescatter|broadcast|reduce|alltoall|sendrecv"}
}

// algoFlag is --algo, read by requestBase.
func algoFlag() cli.Flag {
	return &cli.StringFlag{Name: "algo", Usage: "force an algorithm (ring, tree, nvls, nvlstree, direct) like NCCL_ALGO"}
}

// protoFlag is --proto, read by requestBase.
func protoFlag() cli.Flag {
	return &cli.StringFlag{Name: "proto", Usage: "force a protocol (ll, ll128, simple) like NCCL_PROTO"}
}

// datatypeFlag is --datatype (-d), read by requestBase.
func datatypeFlag() cli.Flag {
	return &cli.StringFlag{Name: "datatype", Aliases: []string{"d"}, Value: "float", Usage: "element type (float, half, bfloat16, double, int8, ...)"}
}

// engineFlag is --engine, read by requestBase, with def (sim.EngineDES or sim.EngineAnalytic)
// as its default, which the help names first.
func engineFlag(def sim.EngineKind) cli.Flag {
	if def == sim.EngineAnalytic {
		return &cli.StringFlag{Name: "engine", Value: "analytic", Usage: "analytic (fast, default) or des (discrete-event simulation)"}
	}
	return &cli.StringFlag{Name: "engine", Value: "des", Usage: "des (discrete-event simulation) or analytic"}
}

// requestBase reads the request options other than the sizes:
// --collective, --datatype, --engine, --algo and --proto.
func requestBase(c *cli.Context) (sim.Request, error) {
	var req sim.Request
	coll, err := model.ParseCollective(c.String("collective"))
	if err != nil {
		return req, badInputf("--collective: %w", err)
	}
	req.Coll = coll
	sz, ok := model.DatatypeSize(c.String("datatype"))
	if !ok {
		return req, badInputf("--datatype: unknown %q (known: int8, half, bfloat16, float, int32, double, int64, ...)", c.String("datatype"))
	}
	req.ElemSize = sz
	if req.Engine, err = sim.ParseEngine(c.String("engine")); err != nil {
		return req, badInputf("--engine: %w", err)
	}
	if m := c.String("max-memory"); m != "" {
		b, err := model.ParseBytes(m)
		if err != nil || b <= 0 {
			return req, badInputf("--max-memory: want a positive size such as 16G, got %q", m)
		}
		req.Budget.MaxMemory = int64(b)
	}
	if c.IsSet("jobs") {
		if req.Workers = c.Int("jobs"); req.Workers < 1 {
			return req, badInputf("--jobs: want 1 or more sizes at once, got %d", req.Workers)
		}
	}
	if c.IsSet("max-events") {
		if req.Budget.MaxEvents = c.Int64("max-events"); req.Budget.MaxEvents <= 0 {
			return req, badInputf("--max-events: want a positive count, got %d", req.Budget.MaxEvents)
		}
	}
	if a := c.String("algo"); a != "" {
		algo, err := model.ParseAlgo(a)
		if err != nil {
			return req, badInputf("--algo: %w", err)
		}
		req.Algo = &algo
	}
	if p := c.String("proto"); p != "" {
		proto, err := model.ParseProto(p)
		if err != nil {
			return req, badInputf("--proto: %w", err)
		}
		req.Proto = &proto
	}
	return req, nil
}

// prediction is a predict run ready to print.
type prediction struct {
	env     *sim.Env
	req     sim.Request
	pts     []sim.Point
	dtype   string
	summary string
	// worst is, with --seeds K > 1, the slowest seed's point per size (pts
	// then hold the expected: the mean time over the seeds).
	worst []seededPoint
	seeds int
	// profile is the --profile the parameters came from, nil without.
	profile *profileJSON
}

// seededPoint is one seed's result for a size.
type seededPoint struct {
	sim.Point
	Seed uint64
}

// seededSweep runs the request for --seeds K seeds from --seed: with K = 1
// the plain sweep; otherwise every seed's sweep, the expected point per
// size (mean time; bandwidths from it) and the worst seed's point. The
// seeds' sweeps run at once on the --jobs slots and the --max-memory budget
// they share (sim.SweepGroup), at most one seed per slot building its Env
// at a time; the expected and worst points are combined in seed order, so
// the output is the same for every --jobs.
func seededSweep(c *cli.Context, req sim.Request) (*sim.Env, []sim.Point, []seededPoint, error) {
	k := c.Int("seeds")
	if k < 1 || k > 1000 {
		return nil, nil, nil, badInputf("--seeds must be in 1..1000, got %d", k)
	}
	spec, err := clusterSpec(c)
	if err != nil {
		return nil, nil, nil, err
	}
	group := sim.NewSweepGroup(req.Workers, req.Budget.MaxMemory)
	req.Group = group
	seed0 := c.Uint64("seed")
	var first *sim.Env // the first seed's, kept for the output
	pts := make([][]sim.Point, k)
	// The error is the lowest failing seed's, as in a run one seed after
	// another; a failure cancels the seeds above it that are running.
	err = study.ForEach(c.Context, k, group.Workers(), func(ctx context.Context, i int) error {
		sp := spec
		sp.Seed = seed0 + uint64(i)
		envr, err := envFromSpec(c, sp)
		if err != nil {
			return err
		}
		if i == 0 {
			first = envr
		}
		pts[i], err = envr.Sweep(ctx, req)
		return err
	})
	if err != nil {
		return nil, nil, nil, err
	}
	mean := pts[0]
	if k == 1 {
		return first, mean, nil, nil
	}
	worst := make([]seededPoint, len(mean))
	for j, p := range mean {
		worst[j] = seededPoint{p, seed0}
	}
	for i := 1; i < k; i++ {
		seed := seed0 + uint64(i)
		for j, p := range pts[i] {
			mean[j].TimeUs += p.TimeUs
			if p.TimeUs > worst[j].TimeUs {
				worst[j] = seededPoint{p, seed}
			}
		}
	}
	for j := range mean {
		t0 := worst[j].Point
		m := mean[j].TimeUs / float64(k)
		// Bandwidths scale inversely with time at a fixed size.
		scale := t0.TimeUs / m
		mean[j].TimeUs, mean[j].AlgBW, mean[j].BusBW = m, t0.AlgBW*scale, t0.BusBW*scale
	}
	return first, mean, worst, nil
}

func newPrediction(e *sim.Env, req sim.Request, pts []sim.Point, dtype string) *prediction {
	p := &prediction{env: e, req: req, pts: pts, dtype: strings.ToLower(dtype)}
	p.summary = transportSummary(e, pts)
	return p
}

// clusterJSON is the "cluster" object of predict's JSON.
type clusterJSON struct {
	Name        string            `json:"name,omitempty"`
	Description string            `json:"description"`
	Node        string            `json:"node"`
	Nodes       int               `json:"nodes"`
	GPUsPerNode int               `json:"gpus_per_node"`
	GPU         string            `json:"gpu"`
	NICs        string            `json:"nics"`
	Fabric      string            `json:"fabric"`
	Env         map[string]string `json:"env,omitempty"`
	NCCLVersion string            `json:"nccl_version"`
	// Run is the run mode ("single-process", "process-per-gpu, vm"), empty
	// for the default (a process per GPU on bare metal).
	Run string `json:"run,omitempty"`
}

// nodeLabel is the node template's name, or fallback for a node built
// without one (from --gpu or --topo).
func (ci clusterJSON) nodeLabel(fallback string) string {
	if ci.Node == "" {
		return fallback
	}
	return ci.Node
}

func clusterInfo(e *sim.Env) clusterJSON {
	c := e.Cluster
	s := c.Spec
	nics := "none"
	if s.Node.NICs.Count > 0 {
		nics = fmt.Sprintf("%dx%s-%s", s.Node.NICs.Count, s.Node.NICs.Speed, s.Node.NICs.Kind)
	}
	fabric := s.Fabric.Kind
	if fabric == "" {
		fabric = "single-switch"
	}
	return clusterJSON{
		Name: s.Name, Description: c.Topo.Describe(), Node: s.Node.Name, Nodes: c.NumNodes(),
		GPUsPerNode: c.GPUsPerNode(), GPU: c.GPUModel().Name, NICs: nics, Fabric: fabric,
		Env: c.Knobs.Raw, NCCLVersion: c.Version.String(), Run: runWords(s.Run),
	}
}

// runWords is a run mode as output prints it, "" for the default (a
// process per GPU on bare metal, named or not).
func runWords(r model.RunSpec) string {
	if m, err := r.Mode(); err == nil && m == model.LaunchProcessPerGPU && !r.VM {
		return ""
	}
	return r.String()
}

// resultJSON is one row of predict's JSON.
type resultJSON struct {
	SizeBytes  int64   `json:"size_bytes"`
	Count      int64   `json:"count"`
	TimeUs     float64 `json:"time_us"`
	AlgBW      float64 `json:"algbw_gbps"`
	BusBW      float64 `json:"busbw_gbps"`
	Algo       string  `json:"algo"`
	Proto      string  `json:"proto"`
	Channels   int     `json:"channels"`
	NCCLTimeUs float64 `json:"nccl_model_time_us"`
	Bottleneck string  `json:"bottleneck,omitempty"`
	// Engine is the engine that timed the row: "des" or "analytic".
	Engine string `json:"engine"`
	Note   string `json:"note,omitempty"`
	// Worst is the slowest seed's result with --seeds K > 1 (the row's
	// time and bandwidths are then the expected over the seeds).
	Worst *worstJSON `json:"worst,omitempty"`
}

// worstJSON is the slowest seed's result for one size.
type worstJSON struct {
	Seed       uint64  `json:"seed"`
	TimeUs     float64 `json:"time_us"`
	BusBW      float64 `json:"busbw_gbps"`
	Bottleneck string  `json:"bottleneck,omitempty"`
}

// pointJSON is pt as a row of the JSON results (times and bandwidths
// rounded to 3 decimals).
func pointJSON(pt sim.Point) resultJSON {
	return resultJSON{
		SizeBytes: int64(pt.Size), Count: pt.Count, TimeUs: round(pt.TimeUs, 3), AlgBW: round(pt.AlgBW, 3), BusBW: round(pt.BusBW, 3),
		Algo: pt.Choice.Algo.String(), Proto: pt.Choice.Proto.String(), Channels: pt.Choice.Channels,
		NCCLTimeUs: round(pt.Choice.NCCLTimeUs, 3), Bottleneck: pt.Bottleneck, Engine: string(pt.Engine), Note: pt.Note,
	}
}

func (p *prediction) writeJSON(w io.Writer) error {
	type doc struct {
		Cluster    clusterJSON  `json:"cluster"`
		Collective string       `json:"collective"`
		Ranks      int          `json:"ranks"`
		Engine     string       `json:"engine"`
		Datatype   string       `json:"datatype"`
		Summary    string       `json:"summary"`
		Results    []resultJSON `json:"results"`
		AvgBusBW   float64      `json:"avg_busbw_gbps"`
		Seeds      int          `json:"seeds,omitempty"`
		Profile    *profileJSON `json:"profile,omitempty"`
	}
	d := doc{Cluster: clusterInfo(p.env), Collective: p.req.Coll.String(), Ranks: p.env.Cluster.NumRanks(),
		Engine: string(p.req.Engine), Datatype: p.dtype, Summary: p.summary, Results: []resultJSON{}, Profile: p.profile}
	for i, pt := range p.pts {
		r := pointJSON(pt)
		if p.worst != nil {
			w := p.worst[i]
			r.Worst = &worstJSON{Seed: w.Seed, TimeUs: round(w.TimeUs, 3), BusBW: round(w.BusBW, 3), Bottleneck: w.Bottleneck}
		}
		d.Results = append(d.Results, r)
	}
	d.AvgBusBW = round(avgBusBW(p.pts), 3)
	if p.worst != nil {
		d.Seeds = p.seeds
	}
	return writeJSONDoc(w, d)
}

func round(v float64, digits int) float64 {
	m := math.Pow(10, float64(digits))
	return math.Round(v*m) / m
}

func avgBusBW(pts []sim.Point) float64 {
	if len(pts) == 0 {
		return 0
	}
	var s float64
	for _, p := range pts {
		s += p.BusBW
	}
	return s / float64(len(pts))
}

func (p *prediction) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	p.writeCSVHeader(cw)
	for _, pt := range p.pts {
		p.writeCSVRow(cw, pt)
	}
	cw.Flush()
	return cw.Error()
}

func (p *prediction) writeCSVHeader(cw *csv.Writer) {
	_ = cw.Write([]string{"size_bytes", "count", "type", "redop", "root", "time_us", "algbw_gbps", "busbw_gbps", "algo", "proto", "channels", "bottleneck"})
}

func (p *prediction) writeCSVRow(cw *csv.Writer, pt sim.Point) {
	redop, root := p.redopRoot()
	_ = cw.Write([]string{
		strconv.FormatInt(int64(pt.Size), 10), strconv.FormatInt(pt.Count, 10), p.dtype, redop, strconv.Itoa(root),
		fmtF(pt.TimeUs, 3), fmtF(pt.AlgBW, 3), fmtF(pt.BusBW, 3),
		pt.Choice.Algo.String(), pt.Choice.Proto.String(), strconv.Itoa(pt.Choice.Channels), pt.Bottleneck,
	})
}

func (p *prediction) redopRoot() (string, int) {
	redop, root := "none", -1
	if p.req.Coll.HasRedop() {
		redop = "sum"
	}
	if p.req.Coll.HasRoot() {
		root = 0
	}
	return redop, root
}

// ncclNum formats a value the way nccl-tests does for a field of the given
// width: 2 decimals, then 1, then 0, then %.1e, whichever fits.
func ncclNum(v float64, width int) string {
	for _, prec := range []int{2, 1, 0} {
		s := strconv.FormatFloat(v, 'f', prec, 64)
		if len(s) <= width {
			return fmt.Sprintf("%*s", width, s)
		}
	}
	return fmt.Sprintf("%*.1e", width, v)
}

// writeRows writes the header and every row of the table (its footer is
// the caller's) or the whole CSV, for a prediction made before printing.
func (p *prediction) writeRows(w io.Writer, format string) error {
	if format == "csv" {
		return p.writeCSV(w)
	}
	p.writeTableHeader(w)
	for _, pt := range p.pts {
		p.writeTableRow(w, pt)
	}
	return nil
}

func (p *prediction) writeTable(w io.Writer) error {
	p.writeTableHeader(w)
	for _, pt := range p.pts {
		p.writeTableRow(w, pt)
	}
	p.writeTableFooter(w)
	return nil
}

// writeTableHeader writes the table's comment lines and column heads.
func (p *prediction) writeTableHeader(w io.Writer) {
	c := p.env.Cluster
	ci := clusterInfo(p.env)
	fmt.Fprintf(w, "# collsim %s prediction (engine %s): %s_perf, %d ranks\n", Version, p.req.Engine, p.req.Coll.TestName(), c.NumRanks())
	fmt.Fprintf(w, "# Cluster: %s; %d node(s) x %d %s, NICs %s, fabric %s, NCCL %s model\n", ci.Description, ci.Nodes, ci.GPUsPerNode, ci.GPU, ci.NICs, ci.Fabric, ci.NCCLVersion)
	if len(c.Knobs.Raw) > 0 {
		var kv []string
		for _, k := range sortedKeys(c.Knobs.Raw) {
			kv = append(kv, k+"="+c.Knobs.Raw[k])
		}
		fmt.Fprintf(w, "# Environment: %s\n", strings.Join(kv, " "))
	}
	if ci.Run != "" {
		fmt.Fprintf(w, "# Run: %s\n", ci.Run)
	}
	if p.profile != nil {
		writeComments(w, 100, p.profile.line())
	}
	fmt.Fprintln(w, "#")
	fmt.Fprintf(w, "#%71s%s\n", "", "predicted")
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %-6s  %-6s  %8s  %s\n", "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "algo", "proto", "channels", "engine")
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)")
}

// writeTableRow writes one size's row.
func (p *prediction) writeTableRow(w io.Writer, pt sim.Point) {
	redop, root := p.redopRoot()
	fmt.Fprintf(w, "%12d  %12d  %8s  %6s  %6d  %s  %s  %s  %-6s  %-6s  %8d  %s\n",
		pt.Size, pt.Count, p.dtype, redop, root,
		ncclNum(pt.TimeUs, 7), ncclNum(pt.AlgBW, 6), ncclNum(pt.BusBW, 6),
		pt.Choice.Algo, pt.Choice.Proto, pt.Choice.Channels, pt.Engine)
}

// writeTableFooter writes the average, the transport summary and the notes.
func (p *prediction) writeTableFooter(w io.Writer) {
	fmt.Fprintf(w, "# Avg bus bandwidth    : %g\n", round(avgBusBW(p.pts), 4))
	fmt.Fprintln(w, "#")
	if p.worst != nil {
		fmt.Fprintf(w, "# Over %d seeds (from --seed %d): rows above are the expected (mean time); the worst seed per size:\n", p.seeds, p.env.Cluster.Spec.Seed)
		fmt.Fprintf(w, "# %10s  %7s  %6s  %6s  %s\n", "size(B)", "time", "busbw", "seed", "bottleneck")
		for _, wp := range p.worst {
			fmt.Fprintf(w, "# %10d  %s  %s  %6d  %s\n", wp.Size, ncclNum(wp.TimeUs, 7), ncclNum(wp.BusBW, 6), wp.Seed, wp.Bottleneck)
		}
		fmt.Fprintln(w, "#")
	}
	writeComments(w, 100, p.summary)
	notes := map[string]bool{}
	for _, pt := range p.pts {
		if pt.Note != "" && !notes[pt.Note] {
			notes[pt.Note] = true
			fmt.Fprintf(w, "# Note: %s (from %s)\n", pt.Note, model.FormatBytes(pt.Size))
		}
	}
}

// budgetInput marks an error that refuses a simulation beyond its budget
// (sim.BudgetError) as bad input: the user raises the flag it names.
func budgetInput(err error) error {
	var be *sim.BudgetError
	if errors.As(err, &be) {
		return badInput(err)
	}
	return err
}

func wrap(s string, width int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			out = append(out, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}
