package cli

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/sim"
)

// predictInputs are the options of a predict run that its report lists
// besides the cluster and the request.
type predictInputs struct {
	files clusterFiles
	// sizes is the size option as given ("-b 8 -e 8G -f 2").
	sizes string
}

// predictReport builds the report of a predict run: a summary derived from
// the results (peak busbw, the bottleneck link class, the transports and,
// for a network-bound multi-node cluster, what one node alone reaches),
// busbw and time against size, the utilisation of the busiest links at the
// largest size, and the full results table.
func predictReport(ctx context.Context, e *env, p *prediction, in predictInputs) (*reports.Document, error) {
	if len(p.pts) == 0 {
		return nil, fmt.Errorf("predict: --report: no results to report")
	}
	envr, c := p.env, p.env.Cluster
	ci := clusterInfo(envr)
	coll := collectiveTitle(p.req.Coll)
	node := ci.nodeLabel(ci.GPU + " node")
	where := fmt.Sprintf("%d x %s", ci.Nodes, node)
	title := coll + " on " + where + ": prediction"
	if ci.Name != "" && ci.Name != ci.Node {
		title = coll + " on " + ci.Name + " (" + where + "): prediction"
	}
	doc := e.newReport(title)
	doc.Subtitle = fmt.Sprintf("collsim model of nccl-tests %s_perf on %d ranks (%s engine)", p.req.Coll.TestName(), c.NumRanks(), p.req.Engine)

	peak, last := p.pts[0], p.pts[len(p.pts)-1]
	for _, pt := range p.pts {
		if pt.BusBW > peak.BusBW {
			peak = pt
		}
	}
	ts := envr.Res.Summarize(envr.Tuner.Graphs.Ring)
	var one *sim.Point
	if ci.Nodes > 1 && (last.BottleneckClass == "NIC" || last.BottleneckClass == "fabric") {
		one = oneNodePoint(ctx, envr, p.req)
	}
	doc.Summary = predictSummary(p, ci, ts, peak, last, one)
	doc.Verdict = &reports.Verdict{Status: reports.StatusInfo, Label: fmt.Sprintf("prediction: peak %s busbw at %s", gbps(peak.BusBW), model.FormatBytes(peak.Size))}
	switch {
	case latencyBound(last):
		doc.Verdict.Label += "; latency-bound at " + model.FormatBytes(last.Size)
	case last.BottleneckClass != "":
		doc.Verdict.Label += "; bottleneck: " + last.BottleneckClass
	}

	doc.Inputs = clusterInputs(c, in.files)
	doc.Inputs = append(doc.Inputs,
		reports.KV{Key: "collective", Value: fmt.Sprintf("%s (nccl-tests %s_perf), %s, %d ranks", coll, p.req.Coll.TestName(), p.dtype, c.NumRanks())},
		reports.KV{Key: "sizes", Value: fmt.Sprintf("%s: %d sizes from %s to %s", in.sizes, len(p.pts), model.FormatBytes(p.pts[0].Size), model.FormatBytes(last.Size))},
		reports.KV{Key: "engine", Value: string(p.req.Engine)},
	)
	doc.Inputs = append(doc.Inputs, forcedInputs(p.req)...)
	doc.Assumptions, doc.OtherAssumptions = splitAssumptions(modelAssumptions(envr.Params(), c.Version.String(), versionSource(c.Spec, in.files.NCCLVersion), p.req.Engine, in.files.Profile, nil), []*model.Cluster{c}, nil)

	bw, tm := curvePoints(p.pts)
	marks, switchText := choiceSwitches(p.pts)
	series := "model (" + string(p.req.Engine) + ")"
	if len(bw) > 0 {
		doc.Sections = append(doc.Sections, reports.Section{Title: "Bus bandwidth", Blocks: []reports.Block{
			reports.Paragraph{Text: "Predicted bus bandwidth (busbw, as nccl-tests computes it) for each message size. Small messages are latency-bound; the plateau on the right is what the slowest link of the schedule allows." + switchText},
			reports.BusBWPlot{Title: coll + " busbw, " + where, Caption: fmt.Sprintf("collsim %s engine; %s.", p.req.Engine, strings.TrimSuffix(ts.String(), ".")),
				Series: []reports.BWSeries{{Name: series, Style: reports.StyleLine, Points: bw}}, Marks: marks},
		}})
	}
	if len(tm) > 0 {
		doc.Sections = append(doc.Sections, reports.Section{Title: "Time per call", Blocks: []reports.Block{
			reports.Paragraph{Text: "Predicted time of one call: flat where the fixed latency dominates, rising with the size once bandwidth does." + timeStepText(p.pts)},
			reports.TimePlot{Title: coll + " time, " + where, Series: []reports.TimeSeries{{Name: series, Style: reports.StyleLine, Points: tm}}, Marks: marks},
		}})
	}
	bs := bottleneckSection(p, last, one)
	bs.Blocks = append(bs.Blocks, topologyPicture("Topology of "+where, "at "+model.FormatBytes(last.Size), c, &last))
	doc.Sections = append(doc.Sections, bs)
	doc.Sections = append(doc.Sections, reports.Section{Title: "Results", Blocks: resultsBlocks(p)})
	return doc, nil
}

// oneNodePoint predicts the largest requested size on one node of the same
// cluster with the analytic engine: what the node's own links allow. Any
// failure leaves the comparison out (nil).
func oneNodePoint(ctx context.Context, envr *sim.Env, req sim.Request) *sim.Point {
	spec := envr.Cluster.Spec
	spec.Nodes = 1
	cl, err := spec.Build()
	if err != nil {
		return nil
	}
	e1, err := sim.NewEnv(cl, envr.Params())
	if err != nil {
		return nil
	}
	r := req
	r.Engine = sim.EngineAnalytic
	pt, err := e1.Predict(ctx, r, req.Sizes[len(req.Sizes)-1])
	if err != nil || pt.BusBW <= 0 {
		return nil
	}
	return &pt
}

// topologyPicture draws cluster c with the bottleneck of pt (nil for
// none) highlighted when it is a link of c; the title then ends in
// " with the bottleneck " + at (at: "at 1G", "" for nothing). A bottleneck
// that is no link (a per-channel ceiling) is named in the caption.
func topologyPicture(title, at string, c *model.Cluster, pt *sim.Point) reports.TopologyPlot {
	tp := reports.TopologyPlot{Title: title, Cluster: c, Utilization: math.NaN(),
		Caption: "The cluster as the model built it. Hover over a part for its name; the red link is the bottleneck."}
	if pt != nil && isLink(c, pt.Bottleneck) {
		tp.Bottleneck, tp.Class = pt.Bottleneck, pt.BottleneckClass
		if len(pt.Utilisation) > 0 && pt.Utilisation[0].Link == pt.Bottleneck {
			tp.Utilization = math.Min(pt.Utilisation[0].Busy, 1)
		}
		if at != "" {
			tp.Title += " with the bottleneck " + at
		}
		return tp
	}
	tp.Caption = "The cluster as the model built it. Hover over a part for its name."
	if pt != nil && pt.Bottleneck != "" {
		tp.Caption += " No link is the bottleneck: " + withThe(strings.TrimSuffix(pt.Bottleneck, ".")) + " is."
	}
	return tp
}

// isLink reports whether name is a link of c as the simulator names links
// ("node0/nic0->fabric/switch").
func isLink(c *model.Cluster, name string) bool {
	a, b, ok := strings.Cut(name, "->")
	if !ok {
		return false
	}
	var fa, fb bool
	for _, e := range c.Topo.Elements {
		fa = fa || e.Name == a
		fb = fb || e.Name == b
	}
	return fa && fb
}

// latencyBound reports whether a point's time is mostly latency: its
// busiest link is busy for less than half the call, so the latency term
// (the time that link waits) exceeds the bandwidth term (the time it
// moves data). Per-channel ceilings are a bandwidth limit, not latency.
func latencyBound(pt sim.Point) bool {
	return pt.BottleneckClass != "channel ceiling" && busiest(pt) < 0.5
}

// rowBottleneck says what limits one row of the results table: the
// bottleneck class and link, or "latency-bound" with the busiest link.
func rowBottleneck(pt sim.Point) string {
	switch {
	case pt.BottleneckClass == "":
		return ""
	case latencyBound(pt):
		return fmt.Sprintf("latency-bound (busiest: %s %s, %.0f%% busy)", pt.BottleneckClass, pt.Bottleneck, 100*busiest(pt))
	}
	return pt.BottleneckClass + ": " + pt.Bottleneck
}

// choiceName is NCCL's choice as the curves label it: "ring/simple".
func choiceName(c model.Choice) string { return c.Algo.String() + "/" + c.Proto.String() }

// choiceSwitches returns a mark at every size where NCCL's algorithm or
// protocol differs from the size before, and a sentence explaining them
// ("" when the choice never changes).
func choiceSwitches(pts []sim.Point) ([]reports.SizeMark, string) {
	var marks []reports.SizeMark
	var parts []string
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1].Choice, pts[i].Choice
		if a.Algo == b.Algo && a.Proto == b.Proto || pts[i].Size == pts[i-1].Size {
			continue
		}
		marks = append(marks, reports.SizeMark{Size: pts[i].Size, Label: choiceName(b)})
		parts = append(parts, fmt.Sprintf("%s to %s at %s", choiceName(a), choiceName(b), model.FormatBytes(pts[i].Size)))
	}
	if len(marks) == 0 {
		return nil, ""
	}
	return marks, " Dotted vertical lines mark where NCCL's tuner changes algorithm or protocol (" + strings.Join(parts, "; ") +
		"): it picks the choice its cost model predicts fastest for each size, so the curve moves from one choice's curve to the other's there."
}

// timeStepText explains every size whose predicted time is below the
// smaller size's before it: NCCL switched to a faster choice there.
func timeStepText(pts []sim.Point) string {
	var parts []string
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if b.Size > a.Size && b.TimeUs < a.TimeUs {
			why := "the same choice (" + choiceName(b.Choice) + ") gets more channels or a shorter pipeline"
			if a.Choice.Algo != b.Choice.Algo || a.Choice.Proto != b.Choice.Proto {
				why = "NCCL switches from " + choiceName(a.Choice) + " to " + choiceName(b.Choice)
			} else if a.Choice.Channels != b.Choice.Channels {
				why = fmt.Sprintf("NCCL runs %s on %d channels instead of %d", choiceName(b.Choice), b.Choice.Channels, a.Choice.Channels)
			}
			parts = append(parts, fmt.Sprintf("%s takes %s us against %s us for %s: %s", model.FormatBytes(b.Size), fmtF(b.TimeUs, 0), fmtF(a.TimeUs, 0), model.FormatBytes(a.Size), why))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " The time steps back where a larger size is faster: " + strings.Join(parts, "; ") + "."
}

// busiest returns the utilisation of a point's bottleneck link (0 if none).
func busiest(pt sim.Point) float64 {
	if len(pt.Utilisation) == 0 {
		return 0
	}
	return pt.Utilisation[0].Busy
}

// limitPhrase names what limits a point: "the NICs (2x100G-roce per node;
// node0/nic0->fabric/switch 100% busy)".
func limitPhrase(pt sim.Point, ci clusterJSON) string {
	what := map[string]string{
		"NIC":              "the NICs (" + ci.NICs + " per node",
		"fabric":           "the fabric between the nodes (" + ci.Fabric,
		"NVLink":           "NVLink (" + ci.GPU,
		"PCIe":             "PCIe (",
		"inter-socket":     "the link between the CPU sockets (",
		"host memory":      "host memory (",
		"cross-socket P2P": "device-to-device traffic across the CPU sockets (",
	}[pt.BottleneckClass]
	if pt.BottleneckClass == "channel ceiling" {
		return withThe(pt.Bottleneck)
	}
	if what == "" {
		what = pt.BottleneckClass + " ("
	}
	if !strings.HasSuffix(what, "(") {
		what += "; "
	}
	return fmt.Sprintf("%s%s %.0f%% busy)", what, pt.Bottleneck, 100*busiest(pt))
}

// predictSummary writes the executive summary from the results.
func predictSummary(p *prediction, ci clusterJSON, ts model.TransportSummary, peak, last sim.Point, one *sim.Point) string {
	coll := collectiveTitle(p.req.Coll)
	var b strings.Builder
	fmt.Fprintf(&b, "On %d x %s (%d GPUs), %s reaches %s busbw", ci.Nodes, ci.Node, p.env.Cluster.NumRanks(), coll, gbps(peak.BusBW))
	if ci.Node == "" {
		b.Reset()
		fmt.Fprintf(&b, "On %d node(s) of %d x %s (%d GPUs), %s reaches %s busbw", ci.Nodes, ci.GPUsPerNode, ci.GPU, p.env.Cluster.NumRanks(), coll, gbps(peak.BusBW))
	}
	fmt.Fprintf(&b, " at %s", model.FormatBytes(peak.Size))
	at := ""
	if last.Size != peak.Size {
		at = fmt.Sprintf("; at %s, the largest size, it is", model.FormatBytes(last.Size))
	}
	switch {
	case last.Bottleneck == "":
		b.WriteString(".")
	case busiest(last) < 0.5 && last.BottleneckClass != "channel ceiling":
		fmt.Fprintf(&b, "; at %s no link is saturated (busiest: %s, %.0f%% busy), so latency and per-channel limits set the time.", model.FormatBytes(last.Size), last.Bottleneck, 100*busiest(last))
	default:
		fmt.Fprintf(&b, "%s, limited by %s.", at, limitPhrase(last, ci))
	}
	if one != nil {
		fmt.Fprintf(&b, " Inside one node the same %s reaches %s (bound by %s), so the network delivers %s%% of what a node can do.",
			coll, gbps(one.BusBW), one.BottleneckClass, sig3(100*last.BusBW/one.BusBW))
	}
	fmt.Fprintf(&b, " Transports: %s.", ts.String())
	if len(ts.Reasons) > 0 {
		fmt.Fprintf(&b, " Why: %s.", strings.Join(ts.Reasons, "; "))
	}
	if r := recommendation(last, ci, ts); r != "" {
		b.WriteString(" " + r)
	}
	return b.String()
}

// recommendation says what would raise busbw, from the bottleneck class and
// the transports.
func recommendation(last sim.Point, ci clusterJSON, ts model.TransportSummary) string {
	if last.BottleneckClass == "channel ceiling" {
		switch {
		case strings.Contains(last.Bottleneck, "host-memory"):
			return "Each channel reads from host memory because P2P or GPUDirect RDMA is off: enabling them would help most."
		case strings.Contains(last.Bottleneck, "Socket"):
			return "NCCL moves each channel through one TCP stream: RDMA NICs (InfiniBand or RoCE) would help most; more channels or socket threads (NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD) somewhat."
		}
		return "Each channel (one CTA) copies at its ceiling: more channels (NCCL_MIN_NCHANNELS) would help until a link saturates."
	}
	if last.Bottleneck == "" || busiest(last) < 0.5 {
		return "Larger messages, or fewer calls, would use the links better."
	}
	switch last.BottleneckClass {
	case "NIC":
		switch {
		case ts.NICsInstalled > 0 && ts.NICsUsed < ts.NICsInstalled:
			return fmt.Sprintf("Only %d of the %d NICs per node carry traffic: letting NCCL use all of them (NCCL_IB_HCA, channel count) would help first.", ts.NICsUsed, ts.NICsInstalled)
		case ts.Net != "" && ts.Net != "Socket" && !ts.GDR:
			return "GPUDirect RDMA is off, so network traffic is staged through host memory: enabling it would help, then more or faster NICs."
		case ts.Net == "Socket":
			return "NCCL uses TCP sockets: RDMA NICs (InfiniBand or RoCE) would help most."
		}
		return fmt.Sprintf("More or faster NICs than %s per node would help.", ci.NICs)
	case "fabric":
		return "The fabric between the nodes is the limit: a less oversubscribed fabric, or placing the job under fewer leaf switches, would help."
	case "NVLink":
		if last.Choice.Algo == model.AlgoNVLS || last.Choice.Algo == model.AlgoNVLSTree {
			return "NVLS already reduces in the NVSwitch: this is the node's NVLink limit, which only a faster NVLink generation would raise."
		}
		return "The collective runs at the GPUs' NVLink limit; only a faster NVLink generation, or NVLS on GPUs and switches that support it, would raise it."
	case "PCIe":
		return "PCIe is the limit: NVLink-connected GPUs, or GPUs and NICs under the same PCIe switch, would help."
	case "host memory", "inter-socket", "cross-socket P2P":
		return "Traffic is staged through host memory or crosses the CPU sockets: enabling GPU peer-to-peer and GPUDirect RDMA, or keeping GPUs and their NICs on one socket, would help."
	}
	return ""
}

// bottleneckSection shows the busiest links at the largest size and, when
// computed, what one node alone reaches.
func bottleneckSection(p *prediction, last sim.Point, one *sim.Point) reports.Section {
	s := reports.Section{Title: "Bottleneck"}
	s.Blocks = append(s.Blocks, reports.Paragraph{Text: p.summary})
	if len(last.Utilisation) > 0 {
		firstIs := "the first is the bottleneck"
		if last.BottleneckClass == "channel ceiling" {
			firstIs = "no link is the bottleneck: " + withThe(last.Bottleneck) + " is"
		}
		s.Blocks = append(s.Blocks, reports.LinkUtilPlot{
			Title:   "Busiest links at " + model.FormatBytes(last.Size),
			Caption: fmt.Sprintf("Share of the call time each link is busy at %s, the largest size (%s/%s on %d channels); %s.", model.FormatBytes(last.Size), last.Choice.Algo, last.Choice.Proto, last.Choice.Channels, firstIs),
			Links:   linkUtils(last),
		})
	} else {
		s.Blocks = append(s.Blocks, reports.Paragraph{Text: "The model reports no link load at the largest size."})
	}
	if one != nil {
		s.Blocks = append(s.Blocks, reports.Table{
			Caption: "Whole cluster against one node at " + model.FormatBytes(last.Size),
			Columns: []string{"scope", "busbw (GB/s)", "bound by", "bottleneck link", "engine"},
			Rows: [][]string{
				{fmt.Sprintf("%d nodes", p.env.Cluster.NumNodes()), fmtF(last.BusBW, 2), last.BottleneckClass, last.Bottleneck, string(p.req.Engine)},
				{"one node", fmtF(one.BusBW, 2), one.BottleneckClass, one.Bottleneck, string(sim.EngineAnalytic)},
			},
		})
	}
	return s
}

// resultsBlocks is the nccl-tests-style results table with NCCL's choice
// and the bottleneck per size.
func resultsBlocks(p *prediction) []reports.Block {
	t := reports.Table{
		Caption: "Predicted results, one row per size (nccl-tests columns, then NCCL's choice)",
		Columns: []string{"size", "size (B)", "count", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "algo", "proto", "channels", "NCCL model (us)", "bottleneck"},
	}
	seen := map[string]bool{}
	for _, pt := range p.pts {
		bn := rowBottleneck(pt)
		t.Rows = append(t.Rows, []string{model.FormatBytes(pt.Size), strconv.FormatInt(int64(pt.Size), 10), strconv.FormatInt(pt.Count, 10),
			fmtF(pt.TimeUs, 2), fmtF(pt.AlgBW, 2), fmtF(pt.BusBW, 2), pt.Choice.Algo.String(), pt.Choice.Proto.String(),
			strconv.Itoa(pt.Choice.Channels), fmtF(pt.Choice.NCCLTimeUs, 2), bn})
		if pt.Note != "" && !seen[pt.Note] {
			seen[pt.Note] = true
			t.Notes = append(t.Notes, fmt.Sprintf("From %s: %s.", model.FormatBytes(pt.Size), strings.TrimSuffix(pt.Note, ".")))
		}
	}
	t.Notes = append(t.Notes, fmt.Sprintf("Average busbw: %s GB/s.", fmtF(avgBusBW(p.pts), 2)),
		"Latency-bound: the busiest link is busy for less than half of the call, so fixed and per-step latency, not bandwidth, set the time.")
	return []reports.Block{t}
}

// fmtF formats v with prec decimals.
func fmtF(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// splitAssumptions moves the model terms that cannot affect a cluster's
// results (another NVLink or PCIe generation, NIC kind or GPU architecture
// than the cluster has, network terms on one node) out of the main list.
// A term a profile changed from its default (its source then says
// "(default ...)"), and the terms named in always, stay in the main list.
// With several clusters (the designs of a comparison) a term stays when it
// applies to any of them.
func splitAssumptions(as []reports.Assumption, cs []*model.Cluster, always map[string]bool) (keep, other []reports.Assumption) {
	var tests []func(string) bool
	for _, c := range cs {
		tests = append(tests, termApplies(c))
	}
	applies := func(name string) bool {
		for _, t := range tests {
			if t(name) {
				return true
			}
		}
		return len(tests) == 0
	}
	for _, a := range as {
		name, _, ok := strings.Cut(a.Term, ":")
		if !ok || always[name] || strings.Contains(a.Source, "(default ") || applies(name) {
			keep = append(keep, a)
			continue
		}
		other = append(other, a)
	}
	return keep, other
}

// termApplies returns whether a sim.Params term (by name) can affect a
// prediction on c, from what c contains: the NVLink generation, PCIe
// generations, NIC kinds and GPU architecture, NVSwitches with multicast,
// the socket count and whether there is a network at all.
func termApplies(c *model.Cluster) func(name string) bool {
	nvlink, pcie, nics := map[int]bool{}, map[int]bool{}, map[string]bool{}
	arch := map[model.Arch]bool{}
	multicast, nvlinks := false, false
	sockets := 0
	for _, e := range c.Topo.Elements {
		switch {
		case e.GPU != nil:
			nvlink[e.GPU.NVLinkGen] = true
			pcie[e.GPU.PCIeGen] = true
			arch[e.GPU.Arch] = true
		case e.NIC != nil:
			nics[string(e.NIC.Kind)] = true
			pcie[e.NIC.Speed.PCIeGen] = true
		case e.Kind == model.KindNVSwitch && e.Multicast:
			multicast = true
		case e.Kind == model.KindCPU && e.Node == 0:
			sockets++
		}
	}
	for _, l := range c.Topo.Links {
		if l.Kind == model.LinkNVLink {
			nvlinks = true
			break
		}
	}
	net := c.NumNodes() > 1
	// The network stack of the NICs (its own stack.<name>.* terms apply
	// only to it) and NCCL's tree-hop table (lat.tree.net.*, before 2.18).
	stack := ""
	if k := c.Fabric; k != nil && net {
		if st, err := model.ResolveStack(c.Spec.Node.NICs.Stack, k.LinkLayer); err == nil {
			stack = string(st)
		}
	}
	treeNet := sim.TreeNetLatApplies(c)
	// NCCL's tuning column of the GPU (tuning.cc: Turing and Ada use the
	// Volta and Ampere columns), named as the chan.cap terms name it.
	column := [...]string{model.ArchVolta: "volta", model.ArchAmpere: "ampere", model.ArchHopper: "hopper", model.ArchBlackwell: "blackwell"}[model.ArchIndex(c.GPUModel().SM)]
	return func(name string) bool {
		parts := strings.Split(name, ".")
		switch {
		case len(parts) == 3 && parts[0] == "nvlink" && parts[1] == "eff":
			g, err := strconv.Atoi(parts[2])
			return err != nil || nvlinks && nvlink[g]
		case len(parts) == 3 && parts[0] == "pcie" && parts[1] == "eff":
			g, err := strconv.Atoi(parts[2])
			return err != nil || pcie[g]
		case len(parts) == 3 && (parts[0] == "net" && parts[1] == "eff" || parts[0] == "lat" && parts[1] == "net"):
			return net && nics[parts[2]]
		case name == "socket.gbps":
			return net && nics[string(model.NICTCP)]
		case parts[0] == "nvls":
			if !multicast {
				return false
			}
			switch parts[len(parts)-1] { // nvls.eff.*, nvls.reduce.*
			case "hopper":
				return arch[model.Hopper]
			case "blackwell":
				return arch[model.Blackwell]
			}
			return true
		case len(parts) == 4 && parts[0] == "lat" && parts[1] == "step" && parts[2] == "net":
			return net
		case len(parts) == 4 && parts[0] == "lat" && parts[1] == "step" && parts[2] == "nvlink":
			return nvlinks
		case name == "smp.eff", name == "p2p.xsocket.gbps":
			return sockets > 1
		case parts[0] == "stack" && len(parts) > 2:
			return parts[1] == stack
		case parts[0] == "dcqcn", parts[0] == "roce", name == "hdr.roce.bytes":
			// RoCE's congestion control, retransmission and headers.
			return net && nics[string(model.NICRoCE)]
		case len(parts) == 4 && parts[0] == "lat" && parts[1] == "tree" && parts[2] == "net":
			return treeNet
		case len(parts) == 4 && parts[0] == "chan" && parts[1] == "cap":
			return parts[3] == column
		}
		return true
	}
}

// withThe puts "the" before a ceiling's label unless it starts with one
// ("the scatter or gather warps ..." read "the the scatter").
func withThe(s string) string {
	if strings.HasPrefix(strings.ToLower(s), "the ") {
		return s
	}
	return "the " + s
}
