package cli

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
	"github.com/urfave/cli/v2"
)

// This file holds what every command's --report shares: the flag, the
// check of its path, the document header (date, version, command line),
// the model assumptions and conversions from calibrate records to report
// blocks. Each command's builder lives in report_<command>.go.

// reportExts are the report file extensions reports.WriteFile knows.
var reportExts = [...]string{".html", ".htm", ".md"}

// reportFlag is the --report option of every command that produces results.
func reportFlag() cli.Flag {
	return &cli.StringFlag{Name: "report", Usage: "also write a report for people to read to `FILE`: .html (one self-contained page) or .md (Markdown, plots as SVG files beside it)"}
}

// reportPath returns the --report path, or "" when none was asked for. An
// unknown extension or a path that cannot be written (see checkOutput) is
// a usage error, found before the command does its work.
func reportPath(c *cli.Context, cmd string) (string, error) {
	p := c.String("report")
	if !c.IsSet("report") {
		return "", nil
	}
	if p == "" {
		return "", badInputf("%s: --report: give a file name ending in %s", cmd, strings.Join(reportExts[:], ", "))
	}
	ext := strings.ToLower(filepath.Ext(p))
	known := false
	for _, k := range reportExts {
		known = known || ext == k
	}
	if !known {
		return "", badInputf("%s: --report %s: unknown report extension %q (known: %s)", cmd, p, ext, strings.Join(reportExts[:], ", "))
	}
	if base := filepath.Base(p); strings.TrimSuffix(base, filepath.Ext(base)) == "" {
		// ".md" alone: a hidden file, and figures named "-fig01-...svg"
		// that command-line tools read as options.
		return "", badInputf("%s: --report %s: give the report a name before its extension (report%s)", cmd, p, ext)
	}
	if err := checkOutput(cmd, "--report", p); err != nil {
		return "", err
	}
	if err := notAnInput(c, cmd, "--report", p); err != nil {
		return "", err
	}
	return p, nil
}

// writeReport writes doc to path (atomically; the format follows the
// extension). A failure leaves no partial file and is returned wrapped
// with the command's name.
func writeReport(cmd, path string, doc *reports.Document) error {
	if err := reports.WriteFile(path, doc); err != nil {
		return fmt.Errorf("%s: --report: %w", cmd, err)
	}
	return nil
}

// newReport starts a report: title, date (e.now), version and the command
// line Main received, with the program's directory dropped from args[0].
func (e *env) newReport(title string) *reports.Document {
	now := time.Now
	if e.now != nil {
		now = e.now
	}
	var line []string
	if len(e.args) > 0 {
		line = append([]string{filepath.Base(e.args[0])}, e.args[1:]...)
	}
	return &reports.Document{Title: title, Date: now(), Version: Version, CommandLine: line}
}

// collectiveTitle is the name NCCL uses for a collective ("AllReduce").
func collectiveTitle(c model.Collective) string {
	switch c {
	case model.AllReduce:
		return "AllReduce"
	case model.AllGather:
		return "AllGather"
	case model.ReduceScatter:
		return "ReduceScatter"
	case model.Broadcast:
		return "Broadcast"
	case model.Reduce:
		return "Reduce"
	case model.AlltoAll:
		return "AlltoAll"
	case model.SendRecv:
		return "SendRecv"
	}
	return c.String()
}

// gbps formats a bandwidth in GB/s with three significant digits at most
// ("23.7 GB/s", "232 GB/s", "0.96 GB/s").
func gbps(v float64) string { return sig3(v) + " GB/s" }

// sig3 formats v with about three significant digits, without exponent
// for ordinary magnitudes.
func sig3(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "n/a"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

// clusterFiles are the files and options behind a cluster, for the inputs
// of a report.
type clusterFiles struct {
	Cluster, Topo, Profile string
	Set                    []string
	NCCLVersion            string
}

// clusterFilesFrom reads the cluster options of c.
func clusterFilesFrom(c *cli.Context) clusterFiles {
	return clusterFiles{Cluster: c.String("cluster"), Topo: c.String("topo"), Profile: c.String("profile"),
		Set: c.StringSlice("set"), NCCLVersion: c.String("nccl-version")}
}

// clusterInputs lists the cluster a model ran on: what it is and the files
// it came from.
func clusterInputs(cl *model.Cluster, f clusterFiles) []reports.KV {
	ci := clusterInfo(&sim.Env{Cluster: cl}) // clusterInfo reads only the cluster
	kv := []reports.KV{{Key: "cluster", Value: ci.Description}}
	if ci.Name != "" && ci.Name != ci.Node {
		kv = append(kv, reports.KV{Key: "cluster name", Value: ci.Name})
	}
	kv = append(kv,
		reports.KV{Key: "node", Value: fmt.Sprintf("%s: %d x %s per node", ci.nodeLabel("custom node"), ci.GPUsPerNode, ci.GPU)},
		reports.KV{Key: "nodes", Value: strconv.Itoa(ci.Nodes)},
		reports.KV{Key: "NICs per node", Value: ci.NICs},
		reports.KV{Key: "fabric", Value: ci.Fabric},
	)
	if ci.Run != "" {
		kv = append(kv, reports.KV{Key: "run mode", Value: ci.Run})
	}
	if len(ci.Env) > 0 {
		var s []string
		for _, k := range sortedKeys(ci.Env) {
			s = append(s, k+"="+ci.Env[k])
		}
		kv = append(kv, reports.KV{Key: "NCCL environment", Value: strings.Join(s, " ")})
	}
	for _, x := range []struct{ k, v string }{
		{"cluster file", f.Cluster}, {"topology file", f.Topo}, {"calibration profile", f.Profile},
	} {
		if x.v != "" {
			kv = append(kv, reports.KV{Key: x.k, Value: x.v})
		}
	}
	return kv
}

// forcedInputs lists the algorithm and protocol a request forces (none
// when NCCL chooses), for the inputs of a report.
func forcedInputs(req sim.Request) []reports.KV {
	var kv []reports.KV
	if req.Algo != nil {
		kv = append(kv, reports.KV{Key: "algorithm (forced)", Value: req.Algo.String()})
	}
	if req.Proto != nil {
		kv = append(kv, reports.KV{Key: "protocol (forced)", Value: req.Proto.String()})
	}
	return kv
}

// linkUtils are a prediction's link utilisations, busiest first, for a
// LinkUtilPlot (each clamped to 0..1).
func linkUtils(pt sim.Point) []reports.LinkUtil {
	links := make([]reports.LinkUtil, 0, len(pt.Utilisation))
	for _, u := range pt.Utilisation {
		links = append(links, reports.LinkUtil{Name: u.Link, Utilization: math.Max(0, math.Min(1, u.Busy))})
	}
	return links
}

// choiceLabel is NCCL's choice for a table cell: "ring/simple/16"
// (algorithm, protocol, channels).
func choiceLabel(c model.Choice) string {
	return fmt.Sprintf("%s/%s/%d", c.Algo, c.Proto, c.Channels)
}

// termAssumptions turns the sourced terms of a workload or a price
// catalog into report assumptions, in order.
func termAssumptions(ts []scenarios.Term) []reports.Assumption {
	var as []reports.Assumption
	for _, t := range ts {
		as = append(as, reports.Assumption{Term: t.Name, Value: t.Value, Source: t.Source})
	}
	return as
}

// fmtTerm formats a term's value with its unit.
func fmtTerm(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'g', 4, 64)
	switch unit {
	case "", "fraction":
		return s
	case "us":
		return s + " us"
	}
	return s + " " + unit
}

// versionSource says where the NCCL version a cluster models comes from.
func versionSource(spec model.ClusterSpec, ncclVersionFlag string) string {
	switch {
	case ncclVersionFlag != "":
		return "--nccl-version"
	case spec.NCCLVersion != "":
		return "the cluster description (nccl_version)"
	}
	return "the newest release collsim models (default)"
}

// modelAssumptions lists what a model's numbers rest on: the NCCL release
// whose behaviour is modelled (omitted when version is empty), the engine,
// nccl-tests' definitions and every sim.Params term with its value and
// source. The source of a term in override replaces the default one; a
// term whose value differs from the default is otherwise attributed to
// the calibration profile (named when profile is not empty).
func modelAssumptions(params sim.Params, version, versionFrom string, engine sim.EngineKind, profile string, override map[string]string) []reports.Assumption {
	engDoc := "discrete-event, flow-level simulation of NCCL's schedule; links shared max-min fairly"
	if engine == sim.EngineAnalytic {
		engDoc = "closed form of NCCL's schedule: latency + size / bandwidth of the most loaded link"
	}
	var as []reports.Assumption
	if version != "" {
		as = append(as, reports.Assumption{Term: "NCCL version modelled", Value: version,
			Source: versionFrom + "; defaults, algorithm and protocol choice as NCCL " + version + " makes them (src/graph, tuning.cc)"})
	}
	as = append(as,
		reports.Assumption{Term: "engine", Value: string(engine), Source: engDoc},
		reports.Assumption{Term: "bus bandwidth", Value: "algbw x nccl-tests factor", Source: "nccl-tests doc/PERFORMANCE.md: 2(n-1)/n for AllReduce, (n-1)/n for AllGather, ReduceScatter and AlltoAll, 1 otherwise; 1 GB/s = 1e9 B/s"},
	)
	def := sim.DefaultParams()
	defTerms := def.Terms()
	for i, t := range params.Terms() {
		src := t.Source.String()
		d := *defTerms[i].Value
		switch o, ok := override[t.Name]; {
		case ok:
			src = o
		case *t.Value != d:
			who := "calibration profile"
			if profile != "" {
				who += " " + profile
			}
			src = fmt.Sprintf("%s (default %s: %s)", who, fmtTerm(d, t.Unit), src)
		}
		as = append(as, reports.Assumption{Term: t.Name + ": " + t.Doc, Value: fmtTerm(*t.Value, t.Unit), Source: src})
	}
	return append(as, reports.Assumption{Term: "per-channel ceilings", Value: "LL 10-20, LL128 20-40, Simple 24-70 GB/s by GPU architecture",
		Source: "NCCL's perChMaxRingLL128Bw and perChMaxTreeBw (tuning.cc); one channel is one CTA"})
}

// findingSeverity maps a calibrate finding severity to a report one.
func findingSeverity(s string) reports.Severity {
	switch s {
	case ingest.SevError:
		return reports.SeverityCritical
	case ingest.SevWarning:
		return reports.SeverityWarning
	}
	return reports.SeverityInfo
}

// findingFixes are the actions docs/inspect.md's findings suggest, by code.
var findingFixes = map[string]string{
	ingest.FindWrongResults:        "Treat the run as invalid: check the GPUs for ECC and Xid errors (nvidia-smi -q -d ECC, dmesg) and that every node runs the same NCCL and driver.",
	ingest.FindSHMInsteadOfP2P:     "Enable GPU peer-to-peer: check that NCCL_P2P_DISABLE and NCCL_P2P_LEVEL are not set, that ACS/IOMMU do not block P2P on the GPUs' PCIe switches, and that the GPUs support P2P.",
	ingest.FindSocketNotIB:         "Make the IB/RoCE devices visible to NCCL: rdma-core and libibverbs installed, NCCL_IB_DISABLE unset, NCCL_IB_HCA naming the right devices, ports Active in ibstat.",
	ingest.FindNoGDR:               "Enable GPUDirect RDMA: load nvidia-peermem (or use DMA-BUF), check NCCL_NET_GDR_LEVEL, and that GPUs and NICs share a PCIe switch.",
	ingest.FindGDRLevelRaised:      "Compare with NCCL_NET_GDR_LEVEL unset: GPUDirect RDMA through the CPU root complex is often slower than staging through host memory.",
	ingest.FindNetIntraNode:        "Let ranks on the same host use P2P or SHM: check NCCL_P2P_DISABLE, NCCL_SHM_DISABLE and that the ranks see each other as local (same hostname, shared /dev/shm).",
	ingest.FindFewerNICs:           "Let NCCL use every NIC: check NCCL_IB_HCA, the channel limits (NCCL_MIN/MAX_NCHANNELS) and that every port is Active.",
	ingest.FindNoNVLS:              "Check that the NVSwitch fabric manager runs and multicast is supported (nvidia-smi -q, Fabric section) and that NCCL_NVLS_ENABLE is not 0.",
	ingest.FindTopoFallback:        "Check the topology (nvidia-smi topo -m) for missing NVLinks or NICs far from GPUs, and any NCCL_TOPO_FILE in use.",
	ingest.FindNCCLWarning:         "Read the WARN line: it names the component that failed.",
	ingest.FindBandwidthCliff:      "Find what changes at that size: NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING shows the algorithm and protocol chosen; compare runs with NCCL_ALGO/NCCL_PROTO forced.",
	ingest.FindNICPlateau:          "If fewer NICs than installed carry the traffic, check NCCL_IB_HCA and the port states; if all of them do, the NICs are the limit.",
	ingest.FindLowNetBW:            "Measure the NICs alone between the nodes (ib_write_bw from perftest); check each NIC's link rate and PCIe width, and GPUDirect RDMA.",
	ingest.FindP2PUnavailable:      "Check the BIOS (ACS, IOMMU) and the driver; GeForce GPUs refuse P2P over PCIe.",
	ingest.FindNICFarFromGPU:       "Place NICs under the same PCIe switch as GPUs; otherwise compare NCCL_NET_GDR_LEVEL=SYS (GPUDirect RDMA across the root complex) with staging.",
	ingest.FindHWBenchProbeFailed:  "Read the probe's error, fix it and rerun that probe alone (collsim hwbench --probes NAME).",
	ingest.FindHWBenchProbeSkipped: "Install the library the probe needs (see the evidence) if its measurements matter.",
}

// reportFindings converts calibrate findings, each evidence prefixed with
// where it was seen (prefix, then the line); warnings and errors carry the
// suggested fix for their code.
func reportFindings(prefix string, fs []ingest.Finding) reports.Findings {
	out := make(reports.Findings, 0, len(fs))
	for _, f := range fs {
		where := prefix
		if f.Line > 0 {
			if where != "" {
				where += ":"
			}
			where += strconv.Itoa(f.Line)
		}
		ev := f.Evidence
		switch {
		case where != "" && ev != "":
			ev = where + ": " + ev
		case where != "":
			ev = where
		}
		title := f.Message
		if f.Code != "" {
			title += " (" + f.Code + ")"
		}
		fix := ""
		if sev := findingSeverity(f.Severity); sev > reports.SeverityInfo {
			fix = findingFixes[f.Code]
		}
		out = append(out, reports.Finding{Severity: findingSeverity(f.Severity), Title: title, Evidence: ev, Fix: fix})
	}
	return out
}

// runSeries returns the busbw points of an nccl-tests run: out-of-place
// and, when the run has them, in-place results. Rows without a positive
// size or a valid result, and repeated sizes, are left out.
func runSeries(r *ingest.Run) []reports.BWSeries {
	pick := func(res func(ingest.Row) ingest.Result) []reports.BWPoint {
		var pts []reports.BWPoint
		seen := map[int64]bool{}
		for _, row := range r.Rows {
			x := res(row)
			if row.Size <= 0 || seen[row.Size] || !x.Valid || math.IsNaN(x.BusBW) || math.IsInf(x.BusBW, 0) || x.BusBW < 0 {
				continue
			}
			seen[row.Size] = true
			pts = append(pts, reports.BWPoint{Size: model.Bytes(row.Size), BusBW: model.GBps(x.BusBW)})
		}
		return pts
	}
	var out []reports.BWSeries
	if p := pick(func(r ingest.Row) ingest.Result { return r.OOP }); len(p) > 0 {
		out = append(out, reports.BWSeries{Name: "out-of-place", Style: reports.StyleLinePoints, Points: p})
	}
	if p := pick(func(r ingest.Row) ingest.Result { return r.IP }); len(p) > 0 {
		out = append(out, reports.BWSeries{Name: "in-place", Style: reports.StyleDashed, Points: p})
	}
	return out
}

// curvePoints turns predicted points into plot points: busbw and time per
// size, skipping empty sizes and sizes already seen (a step factor below 2
// can round several requested sizes to the same printed size).
func curvePoints(pts []sim.Point) ([]reports.BWPoint, []reports.TimePoint) {
	var bw []reports.BWPoint
	var tm []reports.TimePoint
	seen := map[model.Bytes]bool{}
	for _, pt := range pts {
		if pt.Size <= 0 || seen[pt.Size] {
			continue
		}
		seen[pt.Size] = true
		bw = append(bw, reports.BWPoint{Size: pt.Size, BusBW: model.GBps(pt.BusBW)})
		if t := model.Time(math.Round(pt.TimeUs * float64(model.Microsecond))); t > 0 {
			tm = append(tm, reports.TimePoint{Size: pt.Size, Time: t})
		}
	}
	return bw, tm
}
