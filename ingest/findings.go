package ingest

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/collsim/collsim/model"
)

// DefaultCliffThreshold is the relative busbw drop between consecutive
// sizes of at least CliffMinSize that counts as a bandwidth cliff.
const (
	DefaultCliffThreshold = 0.25
	CliffMinSize          = 1 << 20
	// plateauMinSize is the smallest size whose busbw counts as a plateau.
	plateauMinSize = 64 << 20
)

// slowestIBGBps is one EDR 4x port (100 Gb/s), the slowest InfiniBand rate
// in current use (nccl-facts §3.3, §8), in GB/s.
const slowestIBGBps = 12.5

var sevRank = map[string]int{SevError: 0, SevWarning: 1, SevInfo: 2}

// addFindings adds the findings every artifact kind gets after parsing and
// sorts them by severity, then line.
func addFindings(a *Artifact) {
	if a.Log != nil {
		a.Findings = append(a.Findings, logFindings(a)...)
	}
	for _, r := range a.Runs {
		a.Findings = append(a.Findings, wrongFindings(r)...)
		a.Findings = append(a.Findings, BandwidthCliffs(r, DefaultCliffThreshold)...)
	}
	if len(a.Runs) > 0 {
		a.Findings = append(a.Findings, suspectedNoP2P(a)...)
		a.Findings = append(a.Findings, lowNetFindings(a)...)
	}
	sortFindings(a.Findings)
}

func sortFindings(f []Finding) {
	sort.SliceStable(f, func(i, j int) bool {
		if sevRank[f[i].Severity] != sevRank[f[j].Severity] {
			return sevRank[f[i].Severity] < sevRank[f[j].Severity]
		}
		return f[i].Line < f[j].Line
	})
}

func wrongFindings(r *Run) []Finding {
	for _, row := range r.Rows {
		if row.OOP.Wrong > 0 || row.IP.Wrong > 0 {
			return []Finding{{Code: FindWrongResults, Severity: SevError,
				Message:  fmt.Sprintf("%s: nccl-tests counted wrong result elements (data corruption or a broken transport)", runName(r)),
				Evidence: fmt.Sprintf("size %d: out-of-place #wrong %d, in-place #wrong %d", row.Size, row.OOP.Wrong, row.IP.Wrong), Line: row.Line}}
		}
	}
	return nil
}

func runName(r *Run) string {
	if r.Binary != "" {
		return fmt.Sprintf("%s (line %d)", r.Binary, r.Line)
	}
	return fmt.Sprintf("%s (line %d)", r.CollectiveName, r.Line)
}

// BandwidthCliffs reports out-of-place busbw drops of more than threshold
// (a fraction, 0.25 for 25%) between consecutive rows that are both at least
// CliffMinSize bytes. At most five drops are reported per run.
func BandwidthCliffs(r *Run, threshold float64) []Finding {
	var out []Finding
	var prev *Row
	for i := range r.Rows {
		row := &r.Rows[i]
		if row.Size < CliffMinSize || !row.OOP.Valid {
			continue
		}
		if prev != nil && prev.OOP.BusBW > 0.05 && row.Size > prev.Size {
			drop := (prev.OOP.BusBW - row.OOP.BusBW) / prev.OOP.BusBW
			if drop > threshold {
				out = append(out, Finding{Code: FindBandwidthCliff, Severity: SevWarning,
					Message: fmt.Sprintf("%s: out-of-place busbw falls by %.0f%% from one size to the next (a protocol or algorithm switch, contention, or a noisy node)", runName(r), drop*100),
					Evidence: fmt.Sprintf("%s GB/s at %s (line %d) -> %s GB/s at %s", fmtG(prev.OOP.BusBW), model.FormatBytes(model.Bytes(prev.Size)), prev.Line,
						fmtG(row.OOP.BusBW), model.FormatBytes(model.Bytes(row.Size))),
					Line: row.Line})
				if len(out) == 5 {
					break
				}
			}
		}
		prev = row
	}
	return out
}

// plateau returns the largest out-of-place busbw among rows of at least
// plateauMinSize bytes, and its row; ok is false when the run has none.
func plateau(r *Run) (bw float64, row Row, ok bool) {
	for _, rw := range r.Rows {
		if rw.Size >= plateauMinSize && rw.OOP.Valid && rw.OOP.BusBW > bw {
			bw, row, ok = rw.OOP.BusBW, rw, true
		}
	}
	return
}

// multiNode reports whether a run spans hosts (device lines or the log).
func multiNode(r *Run, log *NCCLLog) bool {
	if len(r.Hosts) > 1 {
		return true
	}
	return log != nil && log.Nodes > 1
}

// NICPlateau compares a run's busbw plateau with nics NICs of gbps Gb/s
// each per node: a plateau that matches k < nics NICs (within 20%) means
// only k carry the traffic; one below 70% of a single NIC means the network
// path is degraded; one that matches all of them is noted as NIC-bound.
// source names where the NIC facts come from. It returns nil for
// single-node runs, runs without sizes of 64 MiB or more, or a plateau
// above the NIC total (Tree and NVLS can exceed it).
func NICPlateau(r *Run, log *NCCLLog, nics int, gbps float64, source string) *Finding {
	if nics <= 0 || gbps <= 0 || !multiNode(r, log) {
		return nil
	}
	bw, row, ok := plateau(r)
	if !ok {
		return nil
	}
	per := gbps / 8
	k := bw / per
	k0 := math.Round(k)
	ev := fmt.Sprintf("peak out-of-place busbw %s GB/s at %s (line %d); %d NICs of %s Gb/s (%s GB/s each) per node from %s",
		fmtG(bw), model.FormatBytes(model.Bytes(row.Size)), row.Line, nics, fmtG(gbps), fmtG(per), source)
	switch {
	case k < 0.7:
		return &Finding{Code: FindLowNetBW, Severity: SevWarning, Line: row.Line, Evidence: ev,
			Message: fmt.Sprintf("%s: the plateau is %.0f%% of a single NIC's line rate: the network path is degraded (no GPUDirect RDMA, GPU and NIC on different sockets, PCIe or link problems)", runName(r), k*100)}
	case k0 >= 1 && math.Abs(k-k0) <= 0.2*k0 && int(k0) < nics:
		return &Finding{Code: FindNICPlateau, Severity: SevWarning, Line: row.Line, Evidence: ev,
			Message: fmt.Sprintf("%s: the plateau matches %d of the %d NICs per node: only %d carry the traffic (NCCL_IB_HCA, rail wiring, or NICs far from the GPUs)", runName(r), int(k0), nics, int(k0))}
	case int(k0) == nics && math.Abs(k-k0) <= 0.2*k0:
		return &Finding{Code: FindNICPlateau, Severity: SevInfo, Line: row.Line, Evidence: ev,
			Message: fmt.Sprintf("%s: the plateau matches all %d NICs per node: the run is network-bound", runName(r), nics)}
	}
	return nil
}

// CrossCheck adds findings that need facts from more than one file: the
// NIC count and speed of an ibstat/ibstatus artifact applied to the
// multi-node nccl-tests runs of the others (see NICPlateau). Since files
// given together need not come from the same machines, an ibstat listing is
// applied only to runs whose NCCL log lists matching NICs: the same device
// names, or (for an excerpt without names) as many InfiniBand HCAs as the
// listing has active ports at its top rate.
func CrossCheck(arts []*Artifact) {
	for _, ib := range arts {
		if ib == nil || ib.Kind != KindIBStat {
			continue
		}
		nics, gbps := activeNICs(ib.Ports)
		if nics == 0 {
			continue
		}
		for _, a := range arts {
			if a == nil || (a.Kind != KindNCCLTests && a.Kind != KindNCCLTestsJSON) || a.Log == nil || !sameNICs(ib.Ports, gbps, a.Log.HCAs) {
				continue
			}
			for _, r := range a.Runs {
				if f := NICPlateau(r, a.Log, nics, float64(gbps), filepath.Base(ib.File)); f != nil {
					a.Findings = append(a.Findings, *f)
				}
			}
			sortFindings(a.Findings)
		}
	}
}

// sameNICs reports whether the active top-rate ports of an ibstat listing
// are the HCAs an NCCL log lists.
func sameNICs(ports []IBPort, gbps int, hcas []HCA) bool {
	names := map[string]bool{}
	ib := 0
	for _, h := range hcas {
		names[h.Name] = true
		if h.LinkLayer == "IB" {
			ib++
		}
	}
	n, named := 0, true
	for _, p := range ports {
		if !strings.EqualFold(p.State, "Active") || p.RateGbps != gbps {
			continue
		}
		n++
		if p.Device == "" {
			named = false
		} else if !names[p.Device] {
			return false
		}
	}
	if named {
		return n > 0
	}
	return n > 0 && ib == n
}

// activeNICs returns the number of active ports at the most common of the
// highest rates, and that rate (Gb/s).
func activeNICs(ports []IBPort) (int, int) {
	count := map[int]int{}
	best := 0
	for _, p := range ports {
		if !strings.EqualFold(p.State, "Active") || p.RateGbps <= 0 {
			continue
		}
		count[p.RateGbps]++
		best = max(best, p.RateGbps)
	}
	return count[best], best
}

// lowNetFindings flags an InfiniBand run whose plateau is below what even
// one EDR port carries: the network path is degraded whatever the NIC speed.
func lowNetFindings(a *Artifact) []Finding {
	l := a.Log
	if l == nil || !usesIB(l) {
		return nil
	}
	var out []Finding
	for _, r := range a.Runs {
		if !multiNode(r, l) {
			continue
		}
		bw, row, ok := plateau(r)
		if !ok || bw >= 0.6*slowestIBGBps {
			continue
		}
		out = append(out, Finding{Code: FindLowNetBW, Severity: SevWarning, Line: row.Line,
			Message:  fmt.Sprintf("%s: over InfiniBand the busbw plateau is below 60%% of what one EDR (100 Gb/s, %s GB/s) port carries: the network path is degraded (GPUDirect RDMA across sockets, no GDR, or link problems)", runName(r), fmtG(slowestIBGBps)),
			Evidence: fmt.Sprintf("peak out-of-place busbw %s GB/s at %s", fmtG(bw), model.FormatBytes(model.Bytes(row.Size)))})
	}
	return out
}

// usesIB reports whether the log's NET connections run over InfiniBand
// link-layer HCAs.
func usesIB(l *NCCLLog) bool {
	layer := map[int]string{}
	for _, h := range l.HCAs {
		layer[h.Index] = h.LinkLayer
	}
	used := false
	for _, c := range l.Connections {
		if c.Transport != "NET" || c.Net == "Socket" || c.SameHost {
			continue
		}
		d, ok := c.NetDevice()
		if !ok || layer[d] != "IB" {
			return false
		}
		used = true
	}
	return used
}

// suspectedNoP2P flags single-host runs whose bandwidth is far below PCIe
// when the log (if any) shows no P2P transport: the signature of GPUs that
// cannot reach each other directly.
func suspectedNoP2P(a *Artifact) []Finding {
	if a.Log != nil {
		for _, c := range a.Log.Connections {
			if c.Transport == "P2P" || c.Transport == "SHM" {
				return nil // the log says what is used
			}
		}
	}
	var ev []string
	line := 0
	var gen model.PCIeGen
	var gpu model.GPUModel
	for _, r := range a.Runs {
		// Only runs whose device lines list every rank on one host.
		if len(r.Hosts) != 1 || r.Ranks < 2 || len(r.Devices) != r.Ranks || multiNode(r, a.Log) {
			continue
		}
		switch r.Collective {
		case model.AllReduce, model.AllGather, model.ReduceScatter, model.AlltoAll:
		default:
			continue
		}
		g, ok := model.MatchGPU(r.Devices[0].Name)
		if !ok {
			continue
		}
		pg, err := model.LookupPCIe(g.PCIeGen)
		if err != nil {
			continue
		}
		bw, row, ok := plateau(r)
		if !ok || bw >= 0.5*float64(pg.NCCLX16GBps) {
			continue
		}
		gen, gpu = pg, g
		if line == 0 {
			line = row.Line
		}
		ev = append(ev, fmt.Sprintf("%s %s GB/s (line %d)", r.CollectiveName, fmtG(bw), row.Line))
	}
	if len(ev) == 0 {
		return nil
	}
	return []Finding{{Code: FindP2PUnavailable, Severity: SevWarning, Line: line,
		Message: fmt.Sprintf("all ranks run on one host, yet busbw stays under half of what PCIe Gen%d x16 carries (%s GB/s in NCCL's model) for %s GPUs: GPU-to-GPU traffic most likely goes through host memory because peer-to-peer access is unavailable (check nvidia-smi topo -p2p r or p2pBandwidthLatencyTest)",
			gen.Gen, fmtG(float64(gen.NCCLX16GBps)), gpu.Name),
		Evidence: "peak out-of-place busbw: " + strings.Join(ev, ", ")}}
}

// logFindings reads the NCCL log for transport fallbacks.
func logFindings(a *Artifact) []Finding {
	l := a.Log
	var out []Finding
	firstConn := func(pred func(c Connection) bool) (Connection, int) {
		n := 0
		var first Connection
		for _, c := range l.Connections {
			if pred(c) {
				if n == 0 {
					first = c
				}
				n++
			}
		}
		return first, n
	}
	connText := func(c Connection) string {
		dir := ""
		if c.Dir != "" {
			dir = " [" + c.Dir + "]"
		}
		d := c.Detail
		if d != "" {
			d = "/" + d
		}
		return fmt.Sprintf("Channel %02d : %d -> %d%s via %s%s", c.Channel, c.From, c.To, dir, c.Transport, d)
	}
	envNote := func(keys ...string) string {
		var s []string
		for _, k := range keys {
			v, ok := l.Env[k]
			if !ok || (strings.HasSuffix(k, "_DISABLE") && (v == "0" || strings.EqualFold(v, "false"))) {
				continue // a switch explicitly left on is no explanation
			}
			s = append(s, k+"="+v)
		}
		if len(s) == 0 {
			return ""
		}
		return " (" + strings.Join(s, ", ") + " set)"
	}
	if c, n := firstConn(func(c Connection) bool { return c.Transport == "SHM" }); n > 0 {
		out = append(out, Finding{Code: FindSHMInsteadOfP2P, Severity: SevWarning, Line: c.Line,
			Message:  "GPUs on the same host exchange data through host shared memory (SHM) instead of P2P" + envNote("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL") + ": P2P is disabled, unsupported (consumer GPUs, containers, IOMMU/ACS) or the GPUs are PHB/SYS apart",
			Evidence: fmt.Sprintf("%s (%d SHM connection lines)", connText(c), n)})
	}
	sockConn, nSock := firstConn(func(c Connection) bool { return c.Transport == "NET" && c.Net == "Socket" })
	netUsed := nSock > 0 || l.Nodes > 1
	if nSock > 0 || (netUsed && (l.Network == "Socket" || l.NoIBDevice)) {
		f := Finding{Code: FindSocketNotIB, Severity: SevWarning,
			Message: "NCCL sends inter-node traffic over its TCP socket transport instead of InfiniBand/RoCE" + envNote("NCCL_IB_DISABLE", "NCCL_NET") + ": expect a small fraction of the NIC's rate"}
		switch {
		case l.Network == "Socket":
			f.Line, f.Evidence = l.Lines["network"], "Using network Socket"
		case l.NoIBDevice:
			f.Line, f.Evidence = l.Lines["no_ib_device"], "NET/IB : No device found"
		default:
			f.Line, f.Evidence = sockConn.Line, connText(sockConn)
		}
		if nSock > 0 && f.Evidence != connText(sockConn) {
			f.Evidence += fmt.Sprintf("; %s (%d socket connection lines)", connText(sockConn), nSock)
		}
		out = append(out, f)
	}
	isNet := func(c Connection) bool { return c.Transport == "NET" && c.Net != "Socket" }
	if c, n := firstConn(func(c Connection) bool { return isNet(c) && !c.GDR }); n > 0 && l.GDRReceivesOnly() {
		rc, nr := firstConn(func(c Connection) bool { return isNet(c) && c.GDR })
		out = append(out, Finding{Code: FindGDRReadOff, Severity: SevInfo, Line: c.Line,
			Message: "receives use GPUDirect RDMA and sends are staged through host memory: NCCL's default GDR read policy (off on GPUs before Ampere without an NVLink peer, NCCL_NET_GDR_READ), not a missing GPUDirect RDMA path" +
				envNote("NCCL_NET_GDR_READ"),
			Evidence: fmt.Sprintf("%s (%d send lines without GDRDMA); %s (%d lines with GDRDMA)", connText(c), n, connText(rc), nr)})
	} else if n > 0 {
		ev := fmt.Sprintf("%s (%d NET connection lines without GDRDMA)", connText(c), n)
		if l.RingGDR != nil && !*l.RingGDR {
			ev += fmt.Sprintf("; line %d: Connected all rings ... GDR 0", l.Lines["ring_gdr"])
		}
		out = append(out, Finding{Code: FindNoGDR, Severity: SevWarning, Line: c.Line,
			Message:  "network transfers do not use GPUDirect RDMA: data is staged through host memory (nvidia-peermem or dma-buf missing, NCCL_NET_GDR_LEVEL below the GPU-NIC path type, or GDR disabled)" + envNote("NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ"),
			Evidence: ev})
	} else if _, nNet := firstConn(isNet); nNet == 0 && l.RingGDR != nil && !*l.RingGDR && l.Nodes > 1 && l.Network != "Socket" {
		out = append(out, Finding{Code: FindNoGDR, Severity: SevWarning, Line: l.Lines["ring_gdr"],
			Message:  "NCCL reports that rings do not use GPUDirect RDMA across nodes",
			Evidence: "Connected all rings, use ring PXN ... GDR 0"})
	}
	if v, ok := l.Env["NCCL_NET_GDR_LEVEL"]; ok && l.GDR != nil && *l.GDR {
		if lv, err := model.ParsePathLevel(v); err == nil && lv >= model.PathPHB {
			out = append(out, Finding{Code: FindGDRLevelRaised, Severity: SevWarning, Line: l.Lines["env:NCCL_NET_GDR_LEVEL"],
				Message:  fmt.Sprintf("NCCL_NET_GDR_LEVEL=%s lets GPUDirect RDMA cross the CPU (the default stops at PXB): when GPU and NIC sit under different host bridges or sockets, RDMA through the CPU root complex is often much slower than staging through host memory", v),
				Evidence: "NCCL_NET_GDR_LEVEL set by environment to " + v})
		}
	}
	if c, n := firstConn(func(c Connection) bool { return isNet(c) && c.SameHost }); n > 0 {
		out = append(out, Finding{Code: FindNetIntraNode, Severity: SevWarning, Line: c.Line,
			Message:  "GPUs on the same host talk through the network (NET) instead of P2P or SHM" + envNote("NCCL_SHM_DISABLE", "NCCL_P2P_DISABLE") + ": P2P and SHM are off or the NIC path looked faster",
			Evidence: fmt.Sprintf("%s (%d intra-node NET connection lines)", connText(c), n)})
	}
	if f := fewerNICs(l); f != nil {
		out = append(out, *f)
	}
	if f := nvlsFinding(a); f != nil {
		out = append(out, *f)
	}
	for i, fb := range l.Fallbacks {
		if i == 0 {
			out = append(out, Finding{Code: FindTopoFallback, Severity: SevWarning, Line: refLine(fb),
				Message:  "NCCL's topology search found no path for a pattern and fell back to a simple order (one channel at low bandwidth): the topology (or NCCL_TOPO_FILE) is unusual or misdetected",
				Evidence: fmt.Sprintf("%s (%d such lines)", refText(fb), len(l.Fallbacks))})
		}
	}
	for i, w := range l.Warnings {
		if i == 5 {
			out = append(out, Finding{Code: FindNCCLWarning, Severity: SevWarning, Message: fmt.Sprintf("%d more distinct NCCL WARN lines", len(l.Warnings)-5)})
			break
		}
		out = append(out, Finding{Code: FindNCCLWarning, Severity: SevWarning, Line: refLine(w), Message: "NCCL printed a warning", Evidence: refText(w)})
	}
	return out
}

// refLine and refText split a "line N: text" list entry.
func refLine(s string) int {
	var n int
	fmt.Sscanf(s, "line %d:", &n)
	return n
}

func refText(s string) string {
	if _, t, ok := strings.Cut(s, ": "); ok && strings.HasPrefix(s, "line ") {
		return t
	}
	return s
}

// fewerNICs compares the HCAs NCCL listed with the NET devices its channels
// use, among HCAs of the link layers in use (a slower management port of
// another link layer is rightly left out).
func fewerNICs(l *NCCLLog) *Finding {
	if len(l.HCAs) < 2 {
		return nil
	}
	layer := map[int]string{}
	for _, h := range l.HCAs {
		layer[h.Index] = h.LinkLayer
	}
	used := map[int]bool{}
	layers := map[string]bool{}
	line := 0
	for _, c := range l.Connections {
		if c.Transport != "NET" || c.Net == "Socket" {
			continue
		}
		d, ok := c.NetDevice()
		if !ok {
			continue
		}
		ll, known := layer[d]
		if !known {
			return nil // device numbering does not match the HCA list
		}
		used[d], layers[ll] = true, true
		if line == 0 {
			line = c.Line
		}
	}
	if len(used) == 0 {
		return nil
	}
	var cands, unused []string
	for _, h := range l.HCAs {
		if !layers[h.LinkLayer] {
			continue
		}
		cands = append(cands, h.Name)
		if !used[h.Index] {
			unused = append(unused, h.Name)
		}
	}
	if len(unused) == 0 || (l.LocalRanks > 0 && l.LocalRanks < len(cands)) {
		return nil
	}
	return &Finding{Code: FindFewerNICs, Severity: SevWarning, Line: line,
		Message:  fmt.Sprintf("NCCL lists %d usable NICs but its channels use only %d: %s carry no traffic (NCCL_IB_HCA, NIC-GPU distance, or channel count)", len(cands), len(used), strings.Join(unused, ", ")),
		Evidence: fmt.Sprintf("line %d lists the HCAs; NET devices in use: %s", l.Lines["hcas"], intSet(used))}
}

func intSet(m map[int]bool) string {
	var k []int
	for v := range m {
		k = append(k, v)
	}
	sort.Ints(k)
	s := make([]string, len(k))
	for i, v := range k {
		s[i] = itoa(v)
	}
	return strings.Join(s, ", ")
}

// nvlsFinding: NVLS unavailable or 0 NVLS channels matters on Hopper or
// newer GPUs behind an NVSwitch (8 GPUs per node on HGX boards); on 4-GPU
// NVLink-mesh boards it is expected and only noted.
func nvlsFinding(a *Artifact) *Finding {
	l := a.Log
	off := l.NVLSAvailable != nil && !*l.NVLSAvailable
	zero := strings.Contains(l.ChannelSummary, "nvls channels") && l.NVLSChannels == 0
	if !off && !zero {
		return nil
	}
	var gpu model.GPUModel
	found := false
	local := l.LocalRanks
	for _, r := range a.Runs {
		for _, d := range r.Devices {
			if g, ok := model.MatchGPU(d.Name); ok {
				gpu, found = g, true
			}
		}
		if n := len(r.Devices); n > 0 && len(r.Hosts) > 0 && local == 0 {
			local = n / len(r.Hosts)
		}
	}
	if !found || (gpu.Arch != model.Hopper && gpu.Arch != model.Blackwell) || gpu.NVLinkBridgeOnly || (local > 0 && local < 2) {
		return nil // NVLS needs NVLink-connected GPUs on the node
	}
	line, ev := l.Lines["nvls"], "NVLS multicast support is not available"
	if !off {
		line, ev = l.Lines["channel_summary"], l.ChannelSummary
	}
	if v, ok := l.Env["NCCL_NVLS_ENABLE"]; ok && v == "0" {
		return &Finding{Code: FindNoNVLS, Severity: SevInfo, Line: line, Evidence: ev, Message: "NVLS (NVLink SHARP) is off because NCCL_NVLS_ENABLE=0"}
	}
	if local >= 8 {
		return &Finding{Code: FindNoNVLS, Severity: SevWarning, Line: line, Evidence: ev,
			Message: fmt.Sprintf("NVLS (NVLink SHARP) is not used although %d %s GPUs per node sit on an NVSwitch: AllReduce loses its fastest algorithm (fabric manager, driver, or CUDA/NCCL versions)", local, gpu.Name)}
	}
	return &Finding{Code: FindNoNVLS, Severity: SevInfo, Line: line, Evidence: ev,
		Message: fmt.Sprintf("NVLS (NVLink SHARP) is not available, as expected with %d GPUs per node on an NVLink mesh without NVSwitch", max(local, 1))}
}
