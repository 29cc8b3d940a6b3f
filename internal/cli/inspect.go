package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/urfave/cli/v2"
)

func inspectCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "say what measurement files are and what they show (nccl-tests, NCCL logs, topologies, bandwidth tests)",
		ArgsUsage: "FILE...",
		Description: "Detects each file's format from its content and prints its kind, the hardware it names, the sizes and\n" +
			"peak busbw of nccl-tests tables, and findings (transport fallbacks, missing GPUDirect RDMA or NVLS,\n" +
			"bandwidth cliffs, validation errors) with the lines that show them. --format json prints the parsed\n" +
			"records. Exit status 2 when a file cannot be read or nothing in it is recognised.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "table", Usage: "output format: table or json"},
			reportFlag(),
		},
		Action: func(c *cli.Context) error {
			format := c.String("format")
			if format != "table" && format != "json" {
				return badInputf("inspect: --format %q: want table or json", format)
			}
			if c.Args().Len() == 0 {
				return badInputf("inspect: give at least one file")
			}
			rpath, err := reportPath(c, "inspect")
			if err != nil {
				return err
			}
			return runInspect(e, c.Args().Slice(), format, rpath)
		},
	}
}

// inspectError is a file that could not be inspected, for JSON output.
type inspectError struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// runInspect prints what each file is and, when rpath is not empty, writes
// the report there. Files that cannot be read are reported after the
// others (and in the report); the error names them.
func runInspect(e *env, files []string, format, rpath string) error {
	var arts []*ingest.Artifact
	var errs []inspectError
	var firstErr error
	for i, f := range files {
		a, err := e.parseInput("inspect", f, i+1, len(files))
		if err != nil {
			errs = append(errs, inspectError{File: f, Error: err.Error()})
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		arts = append(arts, a)
	}
	ingest.CrossCheck(arts)
	switch format {
	case "json":
		doc := struct {
			Artifacts []*ingest.Artifact `json:"artifacts"`
			Errors    []inspectError     `json:"errors,omitempty"`
		}{Artifacts: arts, Errors: errs}
		if doc.Artifacts == nil {
			doc.Artifacts = []*ingest.Artifact{}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("inspect: %w", err)
		}
	default:
		for i, a := range arts {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			if err := printArtifact(e.stdout, a); err != nil {
				return fmt.Errorf("inspect: %w", err)
			}
		}
	}
	if rpath != "" {
		doc, err := inspectReport(e, arts, errs)
		if err == nil {
			err = writeReport("inspect", rpath, doc)
		}
		if err != nil {
			for _, x := range errs {
				fmt.Fprintf(e.stderr, "collsim: inspect: %s\n", x.Error)
			}
			return err
		}
	}
	switch {
	case len(errs) == 0:
		return nil
	case len(errs) == 1:
		return badInput(fmt.Errorf("inspect: %w", firstErr))
	}
	for _, x := range errs[:len(errs)-1] {
		fmt.Fprintf(e.stderr, "collsim: inspect: %s\n", x.Error)
	}
	return badInput(fmt.Errorf("inspect: %s (%d of %d files could not be inspected)", errs[len(errs)-1].Error, len(errs), len(files)))
}

// printArtifact writes the table view of one artifact.
func printArtifact(w io.Writer, a *ingest.Artifact) error {
	fmt.Fprintf(w, "== %s: %s\n", a.File, kindTitle(a.Kind))
	switch a.Kind {
	case ingest.KindNCCLTests, ingest.KindNCCLTestsJSON:
		printRunsHardware(w, a)
		printLog(w, a.Log)
		if err := printRuns(w, a.Runs); err != nil {
			return err
		}
	case ingest.KindNCCLLog:
		printLog(w, a.Log)
	case ingest.KindTopoMatrix, ingest.KindTopoXML:
		printTopo(w, a.Topo)
	case ingest.KindGraphXML:
		printGraph(w, a.Graph)
	case ingest.KindP2PBandwidth, ingest.KindNVBandwidth:
		if g := a.Machine["gpus"]; g != "" {
			fmt.Fprintf(w, "gpus:     %s\n", g)
		}
		if err := printMatrices(w, a.Matrices); err != nil {
			return err
		}
	case ingest.KindPerftest:
		if err := printPerftest(w, a.Perftest); err != nil {
			return err
		}
	case ingest.KindIBStat:
		if err := printPorts(w, a.Ports); err != nil {
			return err
		}
	case ingest.KindSummary:
		if err := printFigures(w, a.Figures); err != nil {
			return err
		}
	case ingest.KindHWBench:
		// A hwbench report holds what the other kinds hold, probe by
		// probe: each part is printed as its own kind prints it.
		if a.Topo != nil {
			printTopo(w, a.Topo)
		}
		if len(a.Runs) > 0 {
			printRunsHardware(w, a)
			printLog(w, a.Log)
			if err := printRuns(w, a.Runs); err != nil {
				return err
			}
		}
		if len(a.Matrices) > 0 {
			if err := printMatrices(w, a.Matrices); err != nil {
				return err
			}
		}
		if len(a.Perftest) > 0 {
			if err := printPerftest(w, a.Perftest); err != nil {
				return err
			}
		}
		if len(a.Ports) > 0 {
			if err := printPorts(w, a.Ports); err != nil {
				return err
			}
		}
	}
	printFindings(w, a.Findings)
	for i, n := range a.Notes {
		if i == 5 {
			fmt.Fprintf(w, "  ... %d more notes (see --format json)\n", len(a.Notes)-5)
			break
		}
		fmt.Fprintf(w, "note:     %s\n", n)
	}
	if n := len(a.Skipped); n > 0 {
		fmt.Fprintf(w, "skipped:  %d lines\n", n)
		for i, s := range a.Skipped {
			if i == 5 {
				fmt.Fprintf(w, "  ... %d more (see --format json)\n", n-5)
				break
			}
			if s.Line > 0 {
				fmt.Fprintf(w, "  line %d: %s", s.Line, s.Reason)
			} else {
				fmt.Fprintf(w, "  %s", s.Reason)
			}
			if s.Text != "" {
				fmt.Fprintf(w, ": %q", clipText(s.Text, 80))
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}

func kindTitle(k ingest.Kind) string {
	switch k {
	case ingest.KindNCCLTests:
		return "nccl-tests output"
	case ingest.KindNCCLTestsJSON:
		return "nccl-tests JSON (-J)"
	case ingest.KindNCCLLog:
		return "NCCL_DEBUG=INFO log"
	case ingest.KindTopoMatrix:
		return "nvidia-smi topo -m"
	case ingest.KindTopoXML:
		return "NCCL topology XML"
	case ingest.KindGraphXML:
		return "NCCL graph file (NCCL_GRAPH_FILE / NCCL_GRAPH_DUMP_FILE)"
	case ingest.KindP2PBandwidth:
		return "p2pBandwidthLatencyTest"
	case ingest.KindNVBandwidth:
		return "nvbandwidth"
	case ingest.KindPerftest:
		return "perftest"
	case ingest.KindIBStat:
		return "ibstat/ibstatus"
	case ingest.KindSummary:
		return "published statements (free text)"
	}
	return string(k)
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// runsHardware summarises what the nccl-tests runs of a file say about the
// machine: the largest rank count, the hosts of the device lines in order of
// first appearance, and the GPUs of the first run that lists devices as
// "8x NVIDIA H100 80GB HBM3", one entry per model in order of appearance.
func runsHardware(runs []*ingest.Run) (ranks int, hosts, gpus []string) {
	seenHost := map[string]bool{}
	count := map[string]int{}
	var order []string
	for _, r := range runs {
		ranks = max(ranks, r.Ranks)
		for _, h := range r.Hosts {
			if !seenHost[h] {
				seenHost[h] = true
				hosts = append(hosts, h)
			}
		}
		if len(count) == 0 {
			for _, d := range r.Devices {
				if count[d.Name] == 0 {
					order = append(order, d.Name)
				}
				count[d.Name]++
			}
		}
	}
	for _, n := range order {
		gpus = append(gpus, fmt.Sprintf("%dx %s", count[n], n))
	}
	return ranks, hosts, gpus
}

// printRunsHardware summarises ranks, hosts and GPU names over all runs.
func printRunsHardware(w io.Writer, a *ingest.Artifact) {
	ranks, hostList, gpus := runsHardware(a.Runs)
	var parts []string
	if ranks > 0 {
		parts = append(parts, fmt.Sprintf("%d ranks", ranks))
	}
	if len(hostList) > 0 {
		hl := hostList
		if len(hl) > 4 {
			hl = append(append([]string(nil), hl[:4]...), "...")
		}
		parts = append(parts, fmt.Sprintf("device lines on %d host(s) (%s)", len(hostList), strings.Join(hl, ", ")))
	} else if a.Log != nil && a.Log.Nodes > 0 {
		parts = append(parts, fmt.Sprintf("%d nodes", a.Log.Nodes))
	}
	if len(gpus) > 0 {
		parts = append(parts, strings.Join(gpus, ", "))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "hardware: %s\n", strings.Join(parts, ", "))
	}
}

func printLog(w io.Writer, l *ingest.NCCLLog) {
	if l == nil {
		return
	}
	var parts []string
	if l.Version != "" {
		parts = append(parts, "NCCL "+l.Version)
	}
	if l.Ranks > 0 {
		s := fmt.Sprintf("%d ranks", l.Ranks)
		if l.Nodes > 0 {
			s += fmt.Sprintf(" on %d nodes", l.Nodes)
		}
		parts = append(parts, s)
	}
	if l.Network != "" {
		parts = append(parts, "network "+l.Network)
	}
	if len(l.HCAs) > 0 {
		parts = append(parts, "NICs "+hcaNames(l.HCAs))
	}
	if l.Channels > 0 {
		parts = append(parts, fmt.Sprintf("%d channels", l.Channels))
	}
	if l.GDR != nil {
		parts = append(parts, "GDR "+gdrWord(l))
	}
	if l.NVLSAvailable != nil {
		parts = append(parts, "NVLS "+availability(*l.NVLSAvailable))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "nccl:     %s\n", strings.Join(parts, ", "))
	}
	if len(l.Connections) > 0 {
		fmt.Fprintf(w, "links:    %s\n", connectionCounts(l.Connections))
	}
	if len(l.Env) > 0 {
		fmt.Fprintf(w, "env:      %s\n", envString(l.Env))
	}
}

// hcaNames lists the NICs an NCCL log names, each with its link layer when
// stated: "mlx5_0/IB mlx5_1/IB".
func hcaNames(hcas []ingest.HCA) string {
	var h []string
	for _, x := range hcas {
		if x.LinkLayer != "" {
			h = append(h, x.Name+"/"+x.LinkLayer)
		} else {
			h = append(h, x.Name)
		}
	}
	return strings.Join(h, " ")
}

// availability is "available" or "not available".
func availability(b bool) string {
	if b {
		return "available"
	}
	return "not available"
}

// connectionCounts counts NCCL's per-channel transport lines by kind:
// "NET/IB/GDRDMA x16, P2P/CUMEM x48".
func connectionCounts(cs []ingest.Connection) string {
	count := map[string]int{}
	for _, c := range cs {
		k := c.Transport
		switch c.Transport {
		case "P2P", "SHM":
			k += "/" + strings.SplitN(c.Detail, "/", 2)[0]
		case "NET":
			k += "/" + c.Net
			if c.GDR {
				k += "/GDRDMA"
			}
		}
		count[k]++
	}
	var s []string
	for _, k := range sortedKeys(count) {
		s = append(s, fmt.Sprintf("%s x%d", k, count[k]))
	}
	return strings.Join(s, ", ")
}

// envString lists NCCL's environment as KEY=value pairs sorted by key,
// clipped to 200 bytes.
func envString(env map[string]string) string {
	var s []string
	for _, k := range sortedKeys(env) {
		s = append(s, k+"="+env[k])
	}
	return clipText(strings.Join(s, " "), 200)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func fmtBytes(n int64) string { return model.FormatBytes(model.Bytes(n)) }

func fmtGB(v float64) string { return fmt.Sprintf("%.2f", v) }

func printRuns(w io.Writer, runs []*ingest.Run) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tLINE\tCOLLECTIVE\tDTYPE\tRANKS\tROWS\tSIZES\tPEAK BUSBW (GB/s)\tAT\tAVG BUSBW")
	for i, r := range runs {
		lo, hi, peak, at := runExtent(r)
		name := r.CollectiveName
		if r.Params["collective"] != "" {
			name += "?"
		}
		ranks := "?"
		if r.Ranks > 0 {
			ranks = fmt.Sprint(r.Ranks)
		}
		avg := "-"
		if r.AvgBusBW > 0 {
			avg = fmt.Sprintf("%g", r.AvgBusBW)
		}
		peakS, atS := "-", "-"
		if peak >= 0 {
			peakS, atS = fmtGB(peak), fmtBytes(at)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%d\t%s - %s\t%s\t%s\t%s\n", i+1, r.Line, name, r.DType, ranks, len(r.Rows), fmtBytes(lo), fmtBytes(hi), peakS, atS, avg)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range runs {
		if r.Params["collective"] != "" {
			fmt.Fprintln(w, "(? = collective inferred from the columns: the file does not name the test binary)")
			break
		}
	}
	return nil
}

// runExtent returns the smallest and largest message size of a run's rows
// (math.MaxInt64 and -1 when it has none) and the highest valid
// out-of-place busbw with its size (-1 and 0 when there is none).
func runExtent(r *ingest.Run) (lo, hi int64, peak float64, at int64) {
	lo, hi = int64(math.MaxInt64), int64(-1)
	peak = -1.0
	for _, row := range r.Rows {
		lo, hi = min(lo, row.Size), max(hi, row.Size)
		if row.OOP.Valid && row.OOP.BusBW > peak {
			peak, at = row.OOP.BusBW, row.Size
		}
	}
	return lo, hi, peak, at
}

func printTopo(w io.Writer, t *ingest.TopoInfo) {
	if t == nil {
		return
	}
	n := t.Node
	fmt.Fprintf(w, "gpus:     %d, %s\n", n.GPUs, nodeGPU(n))
	nv := nvlinkSummary(n.NVLink)
	if n.NVLink.Kind == "pairs" && len(n.NVLink.Pairs) > 0 {
		nv += fmt.Sprintf(" (NV%d", n.NVLink.Pairs[0][2])
		for _, p := range n.NVLink.Pairs[1:] {
			if p[2] != n.NVLink.Pairs[0][2] {
				nv += " and others"
				break
			}
		}
		nv += ")"
	}
	fmt.Fprintf(w, "nvlink:   %s\n", nv)
	hbs := 0
	for _, s := range n.Sockets {
		hbs += len(s.HostBridges)
	}
	fmt.Fprintf(w, "pcie:     %d socket(s)/NUMA domain(s), %d host bridge(s)\n", len(n.Sockets), hbs)
	for si, s := range n.Sockets {
		fmt.Fprintf(w, "  socket %d: %s\n", si, strings.Join(hostBridgeStrings(s), "  "))
	}
	if n.NICs.Count > 0 {
		var names []string
		for i := 0; i < n.NICs.Count && i < len(t.Labels)-n.GPUs; i++ {
			l := t.Labels[n.GPUs+i]
			if d := t.NICNames[l]; d != "" && d != l {
				l += "=" + d
			}
			names = append(names, l)
		}
		fmt.Fprintf(w, "nics:     %d (%s), %s\n", n.NICs.Count, strings.Join(names, " "), nicSpeed(t))
	}
	if len(t.NUMA) > 0 {
		fmt.Fprintf(w, "numa:     %s\n", strings.Trim(fmt.Sprint(t.NUMA), "[]"))
	}
	for _, note := range t.Notes {
		fmt.Fprintf(w, "note:     %s\n", note)
	}
}

// printGraph describes an NCCL graph file: each graph's pattern, channel
// count, speeds and path types, and every channel's GPU order and NICs.
func printGraph(w io.Writer, g *model.ChannelGraph) {
	if g == nil {
		return
	}
	for _, gr := range g.Graphs {
		fmt.Fprintf(w, "graph %d:  %s, %d channel(s), %g GB/s intra (%s), %g GB/s inter (%s)\n", gr.ID, model.PatternName(gr.Pattern),
			len(gr.Channels), gr.SpeedIntra, orDash(gr.TypeIntra), gr.SpeedInter, orDash(gr.TypeInter))
		for ci, ch := range gr.Channels {
			var p []string
			if ch.NetIn >= 0 {
				p = append(p, fmt.Sprintf("NET%d", ch.NetIn))
			}
			for _, d := range ch.GPUs {
				p = append(p, fmt.Sprintf("GPU%d", d))
			}
			if ch.NetOut >= 0 {
				p = append(p, fmt.Sprintf("NET%d", ch.NetOut))
			}
			fmt.Fprintf(w, "  channel %d: %s\n", ci, strings.Join(p, " -> "))
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// nodeGPU is the GPU model of a topology's node, or a note that the file
// does not state it.
func nodeGPU(n model.NodeSpec) string {
	if n.GPU == "" {
		return "model not stated (give one with --gpu)"
	}
	return n.GPU
}

// nvlinkSummary describes an NVLink fabric read from a topology:
// "NVSwitch, 18 links per GPU", "direct links between 4 GPU pairs", or the
// kind as recorded for other kinds.
func nvlinkSummary(nv model.NVLinkSpec) string {
	switch nv.Kind {
	case "nvswitch":
		return fmt.Sprintf("NVSwitch, %d links per GPU", nv.Links)
	case "pairs":
		return fmt.Sprintf("direct links between %d GPU pairs", len(nv.Pairs))
	case "":
		return "not stated (NCCL detects NVLinks at run time; collsim infers them from --gpu)"
	}
	return nv.Kind
}

// nicSpeed is the NIC speed a topology states, or a note that it does not.
func nicSpeed(t *ingest.TopoInfo) string {
	if t.NICSpeed == "" {
		return "speed not stated"
	}
	return t.NICSpeed
}

// hostBridgeStrings prints each host bridge subtree of a socket (see
// bridgeString).
func hostBridgeStrings(s model.SocketSpec) []string {
	var parts []string
	for _, hb := range s.HostBridges {
		parts = append(parts, bridgeString(hb))
	}
	return parts
}

// bridgeString prints a host bridge subtree: hb[GPU0 sw[GPU1 NIC0]].
func bridgeString(b model.BridgeSpec) string {
	return "hb[" + bridgeBody(b) + "]"
}

func bridgeBody(b model.BridgeSpec) string {
	var p []string
	for _, g := range b.GPUs {
		p = append(p, fmt.Sprintf("GPU%d", g))
	}
	for _, n := range b.NICs {
		p = append(p, fmt.Sprintf("NIC%d", n))
	}
	for _, s := range b.Switches {
		p = append(p, "sw["+bridgeBody(s)+"]")
	}
	return strings.Join(p, " ")
}

func printMatrices(w io.Writer, ms []*ingest.Matrix) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MATRIX\tMETRIC\tP2P\tSIZE\tOFF-DIAGONAL MIN / MEDIAN / MAX")
	for _, m := range ms {
		var vals []float64
		for i, row := range m.Values {
			for j, v := range row {
				square := len(m.Rows) == len(m.Cols)
				if (!square || i != j) && !math.IsNaN(v) {
					vals = append(vals, v)
				}
			}
		}
		stat := "-"
		if len(vals) > 0 {
			sort.Float64s(vals)
			stat = strings.TrimSpace(fmt.Sprintf("%g / %g / %g %s", vals[0], vals[len(vals)/2], vals[len(vals)-1], m.Unit))
		}
		p2p := "-"
		if m.P2P != nil {
			p2p = map[bool]string{true: "on", false: "off"}[*m.P2P]
		}
		metric := m.Metric
		if m.Path != "" {
			metric += " " + m.Path
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%dx%d\t%s\n", clipText(m.Title, 70), metric, p2p, len(m.Rows), len(m.Cols), stat)
	}
	return tw.Flush()
}

func printPerftest(w io.Writer, ps []*ingest.PerftestResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TEST\tDEVICE\tLINK\tMTU\tROWS\tSIZES\tPEAK")
	for _, p := range ps {
		lo, hi := int64(math.MaxInt64), int64(-1)
		best, at, lat := 0.0, int64(0), math.Inf(1)
		for _, r := range p.Rows {
			lo, hi = min(lo, r.Bytes), max(hi, r.Bytes)
			if r.AvgGbs > best {
				best, at = r.AvgGbs, r.Bytes
			}
			if r.LatTypUs > 0 && r.LatTypUs < lat {
				lat, at = r.LatTypUs, r.Bytes
			}
		}
		peak := "-"
		switch {
		case best > 0:
			peak = fmt.Sprintf("%.2f Gb/s average at %s", best, fmtBytes(at))
		case !math.IsInf(lat, 1):
			peak = fmt.Sprintf("%.2f us typical at %s", lat, fmtBytes(at))
		}
		test := p.Test
		if p.Bidirectional {
			test += " -b"
			if best > 0 {
				peak += " (both directions summed)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s - %s\t%s\n", test, p.Device, p.LinkType, p.MTU, len(p.Rows), fmtBytes(lo), fmtBytes(hi), peak)
	}
	return tw.Flush()
}

func printPorts(w io.Writer, ports []ingest.IBPort) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tDEVICE\tPORT\tSTATE\tPHYSICAL\tRATE (Gb/s)\tLINK LAYER")
	for i, p := range ports {
		dev, ll := p.Device, p.LinkLayer
		if dev == "" {
			dev = "-"
		}
		if ll == "" {
			ll = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%d\t%s\n", i+1, dev, p.Port, p.State, p.Physical, p.RateGbps, ll)
	}
	return tw.Flush()
}

func printFigures(w io.Writer, fs []ingest.Figure) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LINE\tFIGURE\tGB/s\tSOURCE\tCONTEXT")
	for _, f := range fs {
		src := f.Section
		if i := strings.Index(src, " ("); i > 0 {
			src = src[:i]
		}
		fmt.Fprintf(tw, "%d\t%g %s\t%g\t%s\t%s\n", f.Line, f.Value, f.Unit, f.GBps, src, clipText(f.Context, 60))
	}
	return tw.Flush()
}

func printFindings(w io.Writer, fs []ingest.Finding) {
	if len(fs) == 0 {
		fmt.Fprintln(w, "findings: none")
		return
	}
	fmt.Fprintf(w, "findings: %d\n", len(fs))
	for _, f := range fs {
		loc := ""
		if f.Line > 0 {
			loc = fmt.Sprintf(" line %d", f.Line)
		}
		fmt.Fprintf(w, "  %-7s %s%s: %s\n", f.Severity, f.Code, loc, f.Message)
		if f.Evidence != "" {
			fmt.Fprintf(w, "          evidence: %s\n", f.Evidence)
		}
	}
}

// gdrWord says whether an NCCL log's network connections use GPUDirect
// RDMA: yes, no, or on receives only (NCCL's GDR read policy).
func gdrWord(l *ingest.NCCLLog) string {
	if !*l.GDR && l.GDRReceivesOnly() {
		return "on receives (sends staged: GDR reads off)"
	}
	return yesNo(*l.GDR)
}
