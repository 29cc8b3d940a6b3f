package calibrate

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
	"gonum.org/v1/gonum/stat"
)

// Diagnosis codes: the practitioners' checklist for a cluster that falls
// short of its model. docs/calibrate.md explains each.
const (
	DiagSHM        = "shm-instead-of-p2p"
	DiagSocket     = "socket-instead-of-ib"
	DiagNoGDR      = "no-gpudirect-rdma"
	DiagGDRFar     = "gpu-nic-across-cpu"
	DiagFewerNICs  = "fewer-nics-in-use"
	DiagNoNVLS     = "nvls-not-used"
	DiagRoCEFabric = "roce-fabric"
	DiagPCIeBound  = "pcie-bound"
	DiagSlowRamp   = "slow-ramp"
	DiagNetShort   = "net-below-model-rate"
	DiagWrong      = "wrong-results"
	DiagUnsteady   = "unsteady-measurement"
	DiagBelowModel = "below-model"
	DiagAboveModel = "above-model"
)

// diagInfo is the fixed text of a diagnosis code.
type diagInfo struct{ title, fix string }

var diagTexts = map[string]diagInfo{
	DiagWrong: {"nccl-tests counted wrong results: the run is not a valid measurement",
		"treat the run as invalid and rerun it after checking the GPUs for ECC and Xid errors (nvidia-smi -q -d ECC, dmesg), " +
			"the NICs' error counters, and that every node runs the same NCCL, driver and nccl-tests build; a transport that corrupts data " +
			"(a broken GPUDirect RDMA path, a faulty cable) also shows here"},
	DiagSHM: {"GPUs talk over SHM (host memory) instead of P2P",
		"check nvidia-smi topo -p2p r and p2pBandwidthLatencyTest; unset NCCL_P2P_DISABLE and do not lower NCCL_P2P_LEVEL; " +
			"keep GPUs that talk under one PCIe switch (PIX/PXB), not across host bridges or sockets (PHB/SYS); disable ACS on the " +
			"PCIe switches and use iommu=pt (or IOMMU off); in VMs/containers enable P2P passthrough; GeForce parts cannot do PCIe P2P at all"},
	DiagSocket: {"NCCL uses NET/Socket (TCP) instead of InfiniBand/RoCE",
		"unset NCCL_IB_DISABLE; expose the RDMA devices to the container (/dev/infiniband, the RDMA device plugin, IPC_LOCK); " +
			"check ibv_devinfo and that NCCL_IB_HCA names existing HCAs; on RoCE let NCCL pick the RoCEv2 GID (NCCL >= 2.21) or set " +
			"NCCL_IB_GID_INDEX to the RoCEv2 entry of show_gids"},
	DiagNoGDR: {"No GPUDirect RDMA: network traffic is staged through host memory",
		"load nvidia-peermem (modprobe nvidia_peermem) or enable dma-buf (kernel >= 5.12, NCCL >= 2.13, open GPU driver); " +
			"check that NCCL_NET_GDR_LEVEL is not below the GPU-NIC path type of nvidia-smi topo -m; put each GPU and its NIC under one PCIe switch; " +
			"look for NET/IB ... GDRDMA in an NCCL_DEBUG=INFO log"},
	DiagGDRFar: {"GPU and NIC sit on different CPU sockets or host bridges",
		"use the NIC next to each GPU (rail-aligned NCCL_IB_HCA per rank, or move the card to a slot under the GPU's switch or socket); " +
			"do not force NCCL_NET_GDR_LEVEL=SYS/PHB across sockets: RDMA through the CPU root complex is slow; bind ranks to the GPU's NUMA node"},
	DiagFewerNICs: {"Fewer NICs carry traffic than are installed",
		"check that NCCL_IB_HCA lists every HCA, that ibstat shows each port Active at full rate, that every rail is cabled to the fabric, " +
			"and that NCCL sees a NIC near every GPU (nvidia-smi topo -m); compare NET/IB device numbers in an NCCL_DEBUG=INFO log"},
	DiagNoNVLS: {"NVLS (NVLink SHARP) is not used",
		"leave NCCL_NVLS_ENABLE unset (or 1); run nvidia-fabricmanager; use a driver with CUDA multicast (>= 530) and NCCL >= 2.17; " +
			"in containers and VMs expose multicast/IMEX; look for \"NVLS multicast support is not available\" in the log"},
	DiagRoCEFabric: {"Large-message cliff or jitter consistent with a RoCE fabric problem (MTU mismatch, PFC/ECN misconfiguration)",
		"make the MTU consistent end to end (ibv_devinfo active_mtu 4096; switch ports >= 4200, or 9216 jumbo on the Ethernet side); " +
			"enable PFC on the RoCE traffic class and ECN/DCQCN on NICs and switches (NCCL_IB_TC / NCCL_IB_SL on the lossless class); " +
			"read pause and drop counters (ethtool -S, switch counters) while the test runs"},
	DiagPCIeBound: {"PCIe-bound: GPU or NIC links deliver less than their generation and width",
		"check lspci -vv LnkSta against LnkCap (x16 at the expected Gen) for GPUs, NICs and switch uplinks; reseat cards; check BIOS " +
			"PCIe settings and that GPUs and NICs do not share one switch uplink"},
	DiagSlowRamp: {"Bandwidth as modelled at the largest sizes, more time per call below them",
		"the links deliver their modelled rate, so look at what each call or pipeline step costs: the NCCL and network-plugin " +
			"versions (an older stack pays more per step), the launch mode (one process driving all GPUs, nccl-tests -g N, pays per " +
			"GPU launch), NCCL_PROTO/NCCL_ALGO/NCCL_MIN_NCHANNELS overrides, the CPU and NUMA binding of the ranks (NCCL's proxy " +
			"threads); if the cluster is as it should be, fit the latency terms to it (collsim calibrate --terms 'lat.*')"},
	DiagNetShort: {"The network carries less than the rate the model gives its NICs",
		"over InfiniBand a healthy NIC carries about 0.95 of its line rate through NCCL (12 GB/s per 100G port, 24 per 200G: nccl-tests#119); " +
			"one connection (one channel's QP) may carry less than a port, so raise the connections per NIC (NCCL_MIN_CTAS or " +
			"NCCL_MIN_NCHANNELS, NCCL_IB_QPS_PER_CONNECTION=2-4) and compare; " +
			"measure each NIC pair between two nodes with perftest (ib_write_bw, with --use_cuda for GPUDirect RDMA) and compare; " +
			"check each HCA's PCIe LnkSta against LnkCap, its firmware, the port error counters (perfquery: symbol errors, link " +
			"recoveries, port rcv errors) and whether the nodes' traffic crosses an oversubscribed or busy switch tier (rerun on nodes " +
			"under one leaf switch); if the fabric is as designed, fit net.eff to it (collsim calibrate --terms 'net.eff.*')"},
	DiagUnsteady: {"The measurement is unsteady: its busbw spreads across the gate sizes by more than the tolerance",
		"rerun with more iterations and warm-up (nccl-tests -n 100 -w 20) while nothing else runs on the nodes or shares their links; " +
			"pin the ranks to the GPUs' NUMA nodes; over TCP check the interface (offloads, IRQ affinity, NCCL_SOCKET_NTHREADS and " +
			"NCCL_NSOCKS_PERTHREAD); until it is steady the gate cannot judge the cluster closer than its own spread"},
	DiagBelowModel: {"Measured below the model, no single known cause",
		"check GPU clocks and throttling (nvidia-smi -q -d PERFORMANCE,CLOCK), other jobs on the nodes and the NCCL/driver versions; " +
			"compare with a known-good node; if the cluster is healthy, fit the model to it with collsim calibrate"},
	DiagAboveModel: {"Measured above the model",
		"the model is pessimistic for this cluster: fit it with collsim calibrate --measured FILE -o profile.yaml and pass --profile"},
}

// Diagnosis is one likely cause of a gap between model and measurement,
// with what triggered it and the fix a person would try.
type Diagnosis struct {
	// Code is one of the Diag constants; Title says it in words.
	Code  string `json:"code"`
	Title string `json:"title"`
	// Severity is "error" (explains a failed check), "warning" (the files
	// show it) or "info" (the model expects it, or context).
	Severity string `json:"severity"`
	// Evidence quotes what triggered it: file lines and re-predictions.
	Evidence []string `json:"evidence"`
	// Fix is what a person would try.
	Fix string `json:"fix"`
	// Reproduce is the cluster change that reproduces the measurement in
	// the model ("--set NCCL_NET_GDR_LEVEL=LOC"), empty when none was tried.
	Reproduce string `json:"reproduce,omitempty"`
	// Residual is the median |log(model time / measured time)| over the
	// gate points with Reproduce applied; Baseline the same for the
	// healthy model. -1 when not re-predicted.
	Residual float64 `json:"residual"`
	Baseline float64 `json:"baseline_residual"`
	// Explains is true when the re-prediction matches the measurement far
	// better than the healthy model.
	Explains bool `json:"explains"`
	// FromFiles is true when the measured files or the log name this cause.
	FromFiles bool `json:"from_files"`
}

// DiagnoseInput is what Diagnose needs: the healthy cluster, the gate
// series and their checks, and the evidence the files carry.
type DiagnoseInput struct {
	// Spec and Params are the healthy cluster and the model's parameters.
	Spec   model.ClusterSpec
	Params sim.Params
	// Series are the measured runs that have a gate regime; Checks their
	// point-by-point comparison with the healthy model.
	Series []Series
	Checks []*SeriesCheck
	// Findings and Logs are what the measured files (and --log) show.
	Findings []ingest.Finding
	Logs     []*ingest.NCCLLog
	// Tolerance is the gate's |error| limit (default 0.10).
	Tolerance float64
}

// findingCauses maps file findings to the diagnoses they support.
var findingCauses = map[string]string{
	ingest.FindSHMInsteadOfP2P: DiagSHM,
	ingest.FindP2PUnavailable:  DiagSHM,
	ingest.FindSocketNotIB:     DiagSocket,
	ingest.FindNoGDR:           DiagNoGDR,
	ingest.FindGDRLevelRaised:  DiagGDRFar,
	ingest.FindNICFarFromGPU:   DiagGDRFar,
	ingest.FindFewerNICs:       DiagFewerNICs,
	ingest.FindNoNVLS:          DiagNoNVLS,
	ingest.FindNICPlateau:      DiagFewerNICs, // warning only: the plateau matches fewer NICs than installed
}

// checklistOrder ranks causes that explain a measurement equally well:
// software and driver causes a person can fix first, hardware moves last.
var checklistOrder = []string{DiagSHM, DiagNoGDR, DiagSocket, DiagFewerNICs, DiagNoNVLS, DiagGDRFar, DiagPCIeBound}

func checklistIndex(code string) int {
	for i, c := range checklistOrder {
		if c == code {
			return i
		}
	}
	return len(checklistOrder)
}

// hypothesis is one misconfiguration applied to the healthy cluster.
type hypothesis struct {
	code      string
	reproduce string
	spec      model.ClusterSpec
	params    sim.Params
}

// Explanation thresholds: a hypothesis explains the measurement when its
// median |log error| over the gate points is at most half the healthy
// model's and at most explainMax (about 28%).
const explainMax = 0.25

// pcieGap is the least log shortfall (about 26%) a PCIe-bound explanation
// needs: it halves the PCIe rate, so it cannot be the cause of a shortfall
// just outside the tolerance.
const pcieGap = 0.3

// Diagnose names the likely causes of the gap between the gate points of
// the series and the healthy model: it re-predicts with each
// misconfiguration of the checklist applied (SHM, Socket, no GDR, GPU and
// NIC across the CPU, fewer NICs, no NVLS, slower PCIe), ranks them by how
// well each explains the measurement, and adds the causes the files
// themselves show. Best explanation first.
func Diagnose(ctx context.Context, in DiagnoseInput) ([]Diagnosis, error) {
	if in.Tolerance <= 0 {
		in.Tolerance = 0.10
	}
	in.Spec = LargestScale(in.Spec, in.Series)
	cl, err := in.Spec.Build()
	if err != nil {
		return nil, fmt.Errorf("calibrate: cluster: %w", err)
	}
	res, err := cl.Resolve()
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	gateSeries := gatePoints(in.Series)
	base, meas, err := predictGate(ctx, in.Spec, in.Params, gateSeries)
	if err != nil {
		return nil, err
	}
	r0 := medianAbsLog(flat(base), flat(meas))
	slower := medianLog(flat(meas), flat(base)) // > 0: measured slower than the model
	r0s, slowers := make([]float64, len(base)), make([]float64, len(base))
	for i := range base {
		r0s[i], slowers[i] = medianAbsLog(base[i], meas[i]), medianLog(meas[i], base[i])
	}
	out := map[string]*Diagnosis{}
	get := func(code string) *Diagnosis {
		d, ok := out[code]
		if !ok {
			t := diagTexts[code]
			d = &Diagnosis{Code: code, Title: t.title, Fix: t.fix, Residual: -1, Baseline: roundTo(r0, 4)}
			out[code] = d
		}
		return d
	}
	// Evidence the files carry.
	for _, f := range in.Findings {
		code, ok := findingCauses[f.Code]
		if !ok || f.Severity == ingest.SevInfo {
			continue
		}
		d := get(code)
		d.FromFiles = true
		if ev := f.Message + " [" + f.Evidence + "]"; !hasString(d.Evidence, ev) {
			d.Evidence = append(d.Evidence, ev)
		}
	}
	// What the healthy model itself expects.
	expected := map[string]string{}
	pairs := intraPairs(cl, res, in.Series)
	for _, pr := range pairs {
		if p := res.GPU(pr.a, pr.b); p != nil && p.Transport != model.TransportP2P {
			expected[DiagSHM] = fmt.Sprintf("the healthy model already uses %s between GPU%d and GPU%d, GPUs the measured collective connects (%s)",
				p.Transport, res.LocalIndex(pr.a), res.LocalIndex(pr.b), p.Reason)
			break
		}
	}
	if cl.NumNodes() > 1 && len(res.NICUsable[0]) > 0 {
		if np := res.NetTo(cl.Nodes[0].GPUs[0], res.NICUsable[0][0]); np != nil {
			if np.Socket {
				expected[DiagSocket] = "the healthy model already uses NET/Socket"
			} else if !np.GDR {
				expected[DiagNoGDR] = "the healthy model already stages network traffic in host memory (" + np.Reason + ")"
			}
		}
	}
	// Re-predict under each hypothesis, series by series (a cause can hit
	// one collective and not another); keep the best variant per cause:
	// the one that explains the most series, then the smallest residual.
	type score struct {
		h         hypothesis
		pred      [][]float64
		explained []int
		residual  float64
		baseline  float64
	}
	best := map[string]*score{}
	for _, h := range hypotheses(cl, res, in, pairs) {
		pred, _, err := predictGate(ctx, h.spec, h.params, gateSeries)
		if err != nil {
			continue // the misconfiguration is impossible on this cluster
		}
		sc := &score{h: h, pred: pred}
		var rs, bs []float64
		for i := range pred {
			r := medianAbsLog(pred[i], meas[i])
			gap := in.Tolerance
			if h.code == DiagPCIeBound {
				// Half the PCIe rate should leave the measurement well
				// below the model, not just outside the tolerance.
				gap = math.Max(gap, pcieGap)
			}
			if slowers[i] > gap && r <= 0.5*r0s[i] && r <= explainMax {
				sc.explained = append(sc.explained, i)
				rs, bs = append(rs, r), append(bs, r0s[i])
			}
		}
		if len(rs) > 0 {
			sc.residual, sc.baseline = Median(rs), Median(bs)
		} else {
			sc.residual, sc.baseline = medianAbsLog(flat(pred), flat(meas)), r0
		}
		b, ok := best[h.code]
		if !ok || len(sc.explained) > len(b.explained) || (len(sc.explained) == len(b.explained) && sc.residual < b.residual) {
			best[h.code] = sc
		}
	}
	// The curves that explain each gate series, by name: a measurement a
	// smooth re-prediction follows is steady, however far it is from the
	// healthy model (unsteady).
	alts := map[string][]altCurve{}
	for _, code := range slices.Sorted(maps.Keys(best)) {
		sc := best[code]
		for _, i := range sc.explained {
			scale := map[int64]float64{}
			for k, pt := range gateSeries[i].Points {
				if sc.pred[i][k] > 0 && base[i][k] > 0 {
					scale[pt.Size] = base[i][k] / sc.pred[i][k]
				}
			}
			alts[gateSeries[i].Name] = append(alts[gateSeries[i].Name], altCurve{sc.h.reproduce, scale})
		}
	}
	ruled := ruledOut(in.Logs)
	explainedBy := map[int]bool{}
	codes := make([]string, 0, len(best))
	for code := range best {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	for _, code := range codes {
		sc := best[code]
		if why := ruled[code]; why != "" {
			if d, ok := out[code]; ok {
				d.Evidence = append(d.Evidence, "but the NCCL log rules it out: "+why)
			}
			continue
		}
		if len(sc.explained) == 0 {
			if d, ok := out[code]; ok {
				d.Reproduce, d.Residual = sc.h.reproduce, roundTo(sc.residual, 4)
				d.Evidence = append(d.Evidence, curveText(sc.h.reproduce, sc.pred[0], base[0], meas[0], gateSeries[0], sc.residual, r0, false))
			}
			continue
		}
		d := get(code)
		d.Explains, d.Reproduce, d.Residual, d.Baseline = true, sc.h.reproduce, roundTo(sc.residual, 4), roundTo(sc.baseline, 4)
		var names []string
		for _, i := range sc.explained {
			explainedBy[i] = true
			names = append(names, gateSeries[i].Name)
		}
		i := sc.explained[0]
		d.Evidence = append(d.Evidence, curveText(sc.h.reproduce, sc.pred[i], base[i], meas[i], gateSeries[i], sc.residual, sc.baseline, true))
		if len(gateSeries) > 1 {
			d.Evidence = append(d.Evidence, fmt.Sprintf("reproduces %d of %d measured runs: %s", len(names), len(gateSeries), strings.Join(names, ", ")))
		}
	}
	if d := roceFabric(cl, in); d != nil {
		d.Baseline = roundTo(r0, 4)
		out[DiagRoCEFabric] = d
	} else if d := unsteady(in, alts); d != nil {
		out[DiagUnsteady] = d
	}
	var list []Diagnosis
	anyExplains := false
	// The best residual among explanations the files support, and among all.
	bestFiles, bestAll := math.Inf(1), math.Inf(1)
	for _, d := range out {
		if d.Explains {
			bestAll = math.Min(bestAll, d.Residual)
			if d.FromFiles {
				bestFiles = math.Min(bestFiles, d.Residual)
			}
		}
	}
	// Without file evidence, the leading explanation is the one with the
	// smallest residual, or, among those within 10% of it, the first in
	// checklist order (the more common cause).
	leader := ""
	if math.IsInf(bestFiles, 1) {
		for _, code := range checklistOrder {
			if d, ok := out[code]; ok && d.Explains && d.Residual <= 1.1*bestAll {
				leader = code
				break
			}
		}
	}
	leading := func(d *Diagnosis) bool {
		if d.FromFiles {
			return true
		}
		if math.IsInf(bestFiles, 1) {
			return d.Code == leader
		}
		return d.Residual < 0.9*bestFiles
	}
	for code, d := range out {
		switch {
		case expected[code] != "" && !d.Explains:
			d.Severity = ingest.SevInfo
			d.Evidence = append(d.Evidence, expected[code]+": expected for this hardware, not a fault")
		case d.Explains && leading(d):
			d.Severity = ingest.SevError
			anyExplains = true
		case d.Explains:
			// Another cause explains the curve as well or better, and the
			// files point at that one.
			d.Severity = ingest.SevWarning
			anyExplains = true
			d.Evidence = append(d.Evidence, "an alternative explanation: the curve alone cannot tell it from the causes listed above")
		default:
			d.Severity = ingest.SevWarning
		}
		list = append(list, *d)
	}
	skip := map[string]bool{}
	for i := range explainedBy {
		skip[gateSeries[i].Name] = true
	}
	if d := slowRamp(in.Checks, in.Tolerance, skip); d != nil {
		list = append(list, *d)
	}
	// The difference of two sizes of an unsteady run is its noise, not a
	// rate: netShort judges only steady measurements.
	if _, noisy := out[DiagUnsteady]; !noisy {
		if d := netShort(in.Checks, in.Tolerance, skip); d != nil {
			list = append(list, *d)
		}
	}
	below, above := failingPoints(in.Checks, in.Tolerance, skip)
	if (!anyExplains && slower > in.Tolerance) || below != "" {
		d := get(DiagBelowModel)
		d.Severity = ingest.SevWarning
		if slower > in.Tolerance && !anyExplains {
			d.Evidence = append(d.Evidence, fmt.Sprintf("measured busbw is %.0f%% below the model over the gate points (median); no checklist misconfiguration reproduces it%s",
				(1-math.Exp(-slower))*100, bottleneckNote(in.Checks)))
		}
		if below != "" {
			d.Evidence = append(d.Evidence, "gate points below the model beyond the tolerance, not explained above: "+below)
		}
		list = append(list, *d)
	}
	if slower < -in.Tolerance || above != "" {
		d := get(DiagAboveModel)
		d.Severity = ingest.SevInfo
		if slower < -in.Tolerance {
			d.Evidence = append(d.Evidence, fmt.Sprintf("measured busbw is %.0f%% above the model over the gate points (median)", (math.Exp(-slower)-1)*100))
		}
		if above != "" {
			d.Evidence = append(d.Evidence, "gate points above the model beyond the tolerance: "+above)
		}
		list = append(list, *d)
	}
	rank := func(d Diagnosis) int {
		switch {
		case d.Explains && d.FromFiles:
			return 0
		case d.Explains && d.Severity == ingest.SevError:
			return 1
		case d.Explains:
			return 2
		case d.Severity == ingest.SevWarning && d.Code != DiagBelowModel:
			return 3
		case d.Code == DiagBelowModel:
			return 4
		}
		return 5
	}
	sort.SliceStable(list, func(i, j int) bool {
		ri, rj := rank(list[i]), rank(list[j])
		if ri != rj {
			return ri < rj
		}
		if list[i].Explains && list[i].Residual != list[j].Residual {
			return list[i].Residual < list[j].Residual
		}
		if ci, cj := checklistIndex(list[i].Code), checklistIndex(list[j].Code); ci != cj {
			return ci < cj
		}
		return list[i].Code < list[j].Code
	})
	return list, nil
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ruledOut returns, per diagnosis code, why the NCCL logs contradict it
// (the log shows the transport working as it should), empty when they do
// not.
func ruledOut(logs []*ingest.NCCLLog) map[string]string {
	out := map[string]string{}
	for _, l := range logs {
		if l == nil {
			continue
		}
		var rdma, gdr, p2p, shm bool
		for _, c := range l.Connections {
			switch {
			case c.Transport == "NET" && c.Net != "Socket" && c.Net != "":
				rdma = true
				if c.GDR {
					gdr = true
				}
			case c.Transport == "P2P":
				p2p = true
			case c.Transport == "SHM":
				shm = true
			}
		}
		if rdma || (l.Network != "" && l.Network != "Socket" && !l.NoIBDevice) {
			out[DiagSocket] = fmt.Sprintf("it says \"Using network %s\" and its NET connections are not sockets", l.Network)
		}
		if gdr {
			out[DiagNoGDR] = "its NET connection lines show GDRDMA"
		}
		if p2p && !shm {
			out[DiagSHM] = "its intra-node connection lines use P2P"
		}
		if l.NVLSChannels > 0 {
			out[DiagNoNVLS] = fmt.Sprintf("it reports %d NVLS channels", l.NVLSChannels)
		}
	}
	return out
}

// gatePoints keeps each series' gate-regime points.
func gatePoints(series []Series) []Series {
	var out []Series
	for _, s := range series {
		sizes := make([]int64, len(s.Points))
		for i, p := range s.Points {
			sizes[i] = p.Size
		}
		g := GateRegime(sizes)
		if g == "" {
			continue
		}
		hasBW := g == RegimeBandwidth
		t := s
		t.Points = nil
		for _, p := range s.Points {
			if RegimeOf(p.Size, hasBW) == g {
				t.Points = append(t.Points, p)
			}
		}
		out = append(out, t)
	}
	return out
}

// predictGate predicts the points of series on spec with params (analytic
// engine); it returns model and measured times in µs, per series.
func predictGate(ctx context.Context, spec model.ClusterSpec, params sim.Params, series []Series) (pred, meas [][]float64, err error) {
	envs := map[int]*sim.Env{} // by node count
	for _, s := range series {
		sp := spec
		if s.Spec.Nodes > 0 {
			// The run's own scale (seriesOfRuns inferred it from the rank
			// count); spec's misconfiguration applies at every scale.
			sp.Nodes = s.Spec.Nodes
		}
		env := envs[sp.Nodes]
		if env == nil {
			cl, err := sp.Build()
			if err != nil {
				return nil, nil, fmt.Errorf("calibrate: %w", err)
			}
			if env, err = sim.NewEnv(cl, params); err != nil {
				return nil, nil, fmt.Errorf("calibrate: %w", err)
			}
			envs[sp.Nodes] = env
		}
		pts, err := predictSeries(ctx, env, s, sim.EngineAnalytic)
		if err != nil {
			return nil, nil, err
		}
		p, m := make([]float64, len(s.Points)), make([]float64, len(s.Points))
		for i, pt := range s.Points {
			p[i], m[i] = pts[i].TimeUs, pt.TimeUs
		}
		pred, meas = append(pred, p), append(meas, m)
	}
	return pred, meas, nil
}

// LargestScale is spec at the largest node count among series: the
// cluster a diagnosis reasons about, and the one a report draws. A run's
// node count may be inferred from its rank count (validate --node X
// without --nodes on a 2-node file), and the network's causes (no
// GPUDirect RDMA, sockets, fewer NICs, NICs across the CPU) only exist on
// a cluster of several nodes; each series is still predicted at its own
// scale (predictGate).
func LargestScale(spec model.ClusterSpec, series []Series) model.ClusterSpec {
	for _, s := range series {
		spec.Nodes = max(spec.Nodes, s.Spec.Nodes)
	}
	return spec
}

func flat(v [][]float64) []float64 {
	var out []float64
	for _, x := range v {
		out = append(out, x...)
	}
	return out
}

func medianAbsLog(pred, meas []float64) float64 {
	v := make([]float64, len(pred))
	for i := range pred {
		v[i] = math.Abs(math.Log(math.Max(pred[i], 1e-9) / meas[i]))
	}
	return Median(v)
}

// medianLog is the median of log(a/b).
func medianLog(a, b []float64) float64 {
	v := make([]float64, len(a))
	for i := range a {
		v[i] = math.Log(a[i] / math.Max(b[i], 1e-9))
	}
	return Median(v)
}

// curveText states how a re-prediction compares with the measurement at
// the largest gate size of one series.
func curveText(reproduce string, pred, base, meas []float64, s Series, r, r0 float64, explains bool) string {
	i := 0
	for j := range s.Points {
		if s.Points[j].Size >= s.Points[i].Size {
			i = j
		}
	}
	f := s.Coll.BusBWFactor(s.Ranks)
	bw := func(t float64) float64 { return float64(s.Points[i].Size) / (t * 1e3) * f }
	return fmt.Sprintf("%s: the model with %s %s: %.3g GB/s busbw at %s against %.3g measured and %.3g for the healthy model; median |log error| over the gate points %.3f (healthy model %.3f)",
		s.Name, reproduce, curveVerdict(r, r0, explains), bw(pred[i]), model.FormatBytes(model.Bytes(s.Points[i].Size)), bw(meas[i]), bw(base[i]), r, r0)
}

// sameResidual is the difference of two median |log error|s (0.5%) below
// which a re-prediction fits the measurement as well as the healthy model:
// a judgement, well under the 10% gate and the noise of a steady run.
const sameResidual = 0.005

// curveVerdict says how a re-prediction with residual r fits the
// measurement against the healthy model's r0: a change that fits as well
// as the healthy model does reproduce the measurement, and explains
// nothing the healthy model leaves open.
func curveVerdict(r, r0 float64, explains bool) string {
	switch {
	case explains:
		return "reproduces the measurement"
	case math.Abs(r-r0) <= sameResidual && r0 <= explainMax:
		return "reproduces the measurement only as well as the healthy model does, so it explains no gap"
	case math.Abs(r-r0) <= sameResidual:
		return "is no closer to the measurement than the healthy model"
	case r < r0:
		return "comes closer to the measurement than the healthy model, not enough to explain it"
	}
	return "does not reproduce the measurement"
}

// failingPoints lists the gate points outside the tolerance, split by
// whether the measurement is below (model busbw higher) or above it.
func failingPoints(checks []*SeriesCheck, tol float64, skip map[string]bool) (below, above string) {
	var b, a []string
	for _, c := range checks {
		if skip[c.Series] {
			continue
		}
		for _, p := range c.Points {
			if p.Regime != c.Gate || math.Abs(p.Error) <= tol {
				continue
			}
			txt := fmt.Sprintf("%s: %s %.4g GB/s measured vs %.4g modelled (line %d)", c.Series, model.FormatBytes(model.Bytes(p.Size)), p.MeasuredBusBW, p.ModelBusBW, p.Line)
			if p.Error > 0 {
				b = append(b, txt)
			} else {
				a = append(a, txt)
			}
		}
	}
	short := func(v []string) string {
		if len(v) > 6 {
			return strings.Join(v[:6], "; ") + fmt.Sprintf("; and %d more", len(v)-6)
		}
		return strings.Join(v, "; ")
	}
	return short(b), short(a)
}

// slowRamp names the runs whose largest gate sizes match the model while
// smaller gate sizes are slower beyond the tolerance: the links deliver
// their rate and the shortfall is time per call or per step (the plateau
// is the gate sizes of at least a quarter of the largest, two or more,
// each within the tolerance). The runs it names join skip, so the
// below-model diagnosis does not list their points again.
func slowRamp(checks []*SeriesCheck, tol float64, skip map[string]bool) *Diagnosis {
	d := warning(DiagSlowRamp)
	for _, c := range checks {
		if skip[c.Series] {
			continue
		}
		gate := gateOf(c)
		var top int64
		for _, p := range gate {
			top = max(top, p.Size)
		}
		var plateau, slow []PointCheck
		for _, p := range gate {
			switch {
			case p.Size >= top/4:
				plateau = append(plateau, p)
			case p.Error > tol:
				slow = append(slow, p)
			}
		}
		held := len(plateau) >= 2
		var worst float64
		for _, p := range plateau {
			held = held && math.Abs(p.Error) <= tol
			worst = math.Max(worst, math.Abs(p.Error))
		}
		if !held || len(slow) == 0 {
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range slow {
			x := p.MeasuredTimeUs - p.ModelTimeUs
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		extra := fmt.Sprintf("%.0f-%.0f us", lo, hi)
		if math.Round(lo) == math.Round(hi) {
			extra = fmt.Sprintf("%.0f us", lo)
		}
		w := maxErrorPoint(slow)
		d.Evidence = append(d.Evidence, fmt.Sprintf("%s: at %s the measured busbw is within %.1f%% of the model; at %s the run takes %s more per call than modelled, up to %+.1f%% at %s (line %d)",
			c.Series, sizeSpan(plateau), 100*worst, sizeSpan(slow), extra, 100*w.Error, model.FormatBytes(model.Bytes(w.Size)), w.Line))
		skip[c.Series] = true
	}
	if len(d.Evidence) == 0 {
		return nil
	}
	return d
}

// netShort names the runs whose time grows, between their two largest gate
// sizes, more slowly than the model's where the model is bound by its
// NICs at both sizes with the same algorithm, protocol and channels. The
// difference of two sizes cancels every cost paid once per call (launch,
// per-step latency, the pipeline's fill), so what it measures is the rate
// the bytes move at; a shortfall beyond the tolerance is the network's
// rate, not the ramp. The runs it names join skip.
func netShort(checks []*SeriesCheck, tol float64, skip map[string]bool) *Diagnosis {
	d := warning(DiagNetShort)
	for _, c := range checks {
		if skip[c.Series] {
			continue
		}
		gate := gateOf(c)
		if len(gate) < 2 {
			continue
		}
		sort.SliceStable(gate, func(i, j int) bool { return gate[i].Size < gate[j].Size })
		a, b := gate[len(gate)-2], gate[len(gate)-1]
		if a.Size == b.Size || a.BottleneckClass != "NIC" || b.BottleneckClass != "NIC" ||
			a.Algo != b.Algo || a.Proto != b.Proto || a.Channels != b.Channels {
			continue
		}
		dm, dp := b.MeasuredTimeUs-a.MeasuredTimeUs, b.ModelTimeUs-a.ModelTimeUs
		if dm <= 0 || dp <= 0 {
			continue
		}
		// Busbw of the increment: the bytes added over the time added, in
		// the same units as each row's busbw.
		f := b.MeasuredBusBW * b.MeasuredTimeUs / float64(b.Size)
		rm, rp := f*float64(b.Size-a.Size)/dm, f*float64(b.Size-a.Size)/dp
		if rm >= (1-tol)*rp {
			continue
		}
		d.Evidence = append(d.Evidence, fmt.Sprintf("%s: from %s to %s the measured time grows at %.3g GB/s busbw and the model's at %.3g, with its NICs the bottleneck at both (%s/%s on %d channels): the bytes move at %.0f%% of the rate the model gives the NICs; costs paid once per call cancel in the difference (lines %d-%d)",
			c.Series, model.FormatBytes(model.Bytes(a.Size)), model.FormatBytes(model.Bytes(b.Size)), rm, rp, b.Algo, b.Proto, b.Channels, 100*rm/rp, a.Line, b.Line))
		skip[c.Series] = true
	}
	if len(d.Evidence) == 0 {
		return nil
	}
	return d
}

// warning is a diagnosis of code with its fixed text, severity warning,
// that reproduces nothing (Residual -1).
func warning(code string) *Diagnosis {
	t := diagTexts[code]
	return &Diagnosis{Code: code, Title: t.title, Fix: t.fix, Severity: ingest.SevWarning, Residual: -1}
}

// gateOf is the points of c in its gate regime, in file order.
func gateOf(c *SeriesCheck) []PointCheck {
	var gate []PointCheck
	for _, p := range c.Points {
		if p.Regime == c.Gate {
			gate = append(gate, p)
		}
	}
	return gate
}

func maxErrorPoint(ps []PointCheck) PointCheck {
	best := ps[0]
	for _, p := range ps[1:] {
		if p.Error > best.Error {
			best = p
		}
	}
	return best
}

// sizeSpan is "1G-4G (3 sizes)", or "128M (1 size)", of points in size
// order.
func sizeSpan(ps []PointCheck) string {
	a, b := model.FormatBytes(model.Bytes(ps[0].Size)), model.FormatBytes(model.Bytes(ps[len(ps)-1].Size))
	if len(ps) == 1 {
		return a + " (1 size)"
	}
	return fmt.Sprintf("%s-%s (%d sizes)", a, b, len(ps))
}

func bottleneckNote(checks []*SeriesCheck) string {
	for _, c := range checks {
		for k := len(c.Points) - 1; k >= 0; k-- {
			if p := c.Points[k]; p.Regime == c.Gate && p.BottleneckClass != "" {
				return fmt.Sprintf(" (the model's bottleneck at %s: %s link %s)", model.FormatBytes(model.Bytes(p.Size)), p.BottleneckClass, p.Bottleneck)
			}
		}
	}
	return ""
}

// withEnv returns a copy of spec with NCCL variables added.
func withEnv(spec model.ClusterSpec, kv ...string) model.ClusterSpec {
	out := spec
	out.Env = map[string]string{}
	for k, v := range spec.Env {
		out.Env[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Env[kv[i]] = kv[i+1]
	}
	return out
}

// hypotheses lists the checklist's misconfigurations that apply to cl.
// pairs are the GPU pairs the measured collectives connect (intraPairs):
// SHM instead of P2P is a hypothesis when any of them uses P2P.
func hypotheses(cl *model.Cluster, res *model.Resolution, in DiagnoseInput, pairs []gpuPair) []hypothesis {
	spec, p := in.Spec, in.Params
	var hs []hypothesis
	for _, pr := range pairs {
		if pp := res.GPU(pr.a, pr.b); pp != nil && pp.Transport == model.TransportP2P {
			hs = append(hs, hypothesis{DiagSHM, "--set NCCL_P2P_DISABLE=1", withEnv(spec, "NCCL_P2P_DISABLE", "1"), p})
			break
		}
	}
	multi := cl.NumNodes() > 1 && len(res.NICUsable[0]) > 0
	if multi {
		nic := cl.Topo.Elem(res.NICUsable[0][0]).NIC
		if nic.Kind.RDMA() && !cl.Knobs.IBDisable {
			if nic.Stack.ReadsIBDisable() {
				hs = append(hs, hypothesis{DiagSocket, "--set NCCL_IB_DISABLE=1", withEnv(spec, "NCCL_IB_DISABLE", "1"), p})
			} else {
				// A plugin stack (aws-ofi-nccl) ignores NCCL_IB_DISABLE;
				// NCCL falls back to NET/Socket when the plugin is not
				// loaded: sockets over the same ports.
				s := spec
				s.Node = s.Node.WithNICs(spec.Node.NICs.Count, spec.Node.NICs.Speed, model.NICTCP)
				hs = append(hs, hypothesis{DiagSocket, fmt.Sprintf("--nics %dx%s-tcp (NET/Socket over the same ports: the %s plugin not loaded)", spec.Node.NICs.Count, spec.Node.NICs.Speed, nic.Stack), s, p})
			}
			for _, sp := range []string{"10G", "25G", "100G"} {
				s := withEnv(spec, "NCCL_IB_DISABLE", "1")
				s.Node = s.Node.WithNICs(1, sp, model.NICTCP)
				hs = append(hs, hypothesis{DiagSocket, fmt.Sprintf("--set NCCL_IB_DISABLE=1 --nics 1x%s-tcp (sockets over an Ethernet port)", sp), s, p})
			}
			if np := res.NetTo(cl.Nodes[0].GPUs[0], res.NICUsable[0][0]); np != nil && np.GDR {
				hs = append(hs, hypothesis{DiagNoGDR, "--set NCCL_NET_GDR_LEVEL=LOC", withEnv(spec, "NCCL_NET_GDR_LEVEL", "LOC"), p})
			}
			if far, ok := nicsAcrossSockets(spec.Node); ok {
				s := spec
				s.Node = far
				hs = append(hs, hypothesis{DiagGDRFar, "NICs on the other CPU socket (no GPUDirect RDMA, staged)", s, p})
				hs = append(hs, hypothesis{DiagGDRFar, "NICs on the other CPU socket with --set NCCL_NET_GDR_LEVEL=SYS (RDMA across the CPU)",
					withEnv(s, "NCCL_NET_GDR_LEVEL", "SYS"), p})
			}
			if n := len(res.NICUsable[0]); n > 1 {
				var devs []string
				for k := 1; k < n; k++ {
					devs = append(devs, cl.Topo.Elem(res.NICUsable[0][k-1]).NIC.Device)
					hca := "=" + strings.Join(devs, ",")
					hs = append(hs, hypothesis{DiagFewerNICs, fmt.Sprintf("--set NCCL_IB_HCA=%s (%d of %d NICs)", hca, k, n), withEnv(spec, "NCCL_IB_HCA", hca), p})
				}
			}
		}
	}
	for _, c := range in.Checks {
		nvls := false
		for _, pt := range c.Points {
			// NVLS within a node, NVLSTree across nodes: both need NVLS.
			if pt.Regime == c.Gate && (pt.Algo == model.AlgoNVLS.String() || pt.Algo == model.AlgoNVLSTree.String()) {
				nvls = true
			}
		}
		if nvls {
			hs = append(hs, hypothesis{DiagNoNVLS, "--set NCCL_NVLS_ENABLE=0", withEnv(spec, "NCCL_NVLS_ENABLE", "0"), p})
			break
		}
	}
	slow := p
	for g := range slow.PCIeEff {
		slow.PCIeEff[g] *= 0.5
	}
	if slow.Validate() == nil {
		hs = append(hs, hypothesis{DiagPCIeBound, "half the PCIe bandwidth (links at x8, or one generation down)", spec, slow})
	}
	return hs
}

// gpuPair is two GPUs of node 0 that exchange data.
type gpuPair struct{ a, b model.ElemID }

// intraPairs returns the pairs of node 0's GPUs that the collectives of
// series connect, each once: the neighbours of the ring graph's channels
// (rings and trees follow them; on one node the ring closes, across nodes
// the chain leaves through the network), consecutive local GPUs for
// SendRecv (nccl-tests sends to the next rank) and every pair for AlltoAll.
// A node's pairs differ in transport (P2P under one PCIe switch, SHM
// across host bridges or sockets), so GPU0 and GPU1 alone do not say what
// a collective uses.
func intraPairs(cl *model.Cluster, res *model.Resolution, series []Series) []gpuPair {
	gpus := cl.Nodes[0].GPUs
	if len(gpus) < 2 {
		return nil
	}
	var out []gpuPair
	seen := map[gpuPair]bool{}
	add := func(i, j int) {
		if i == j || i < 0 || j < 0 || i >= len(gpus) || j >= len(gpus) {
			return
		}
		p := gpuPair{gpus[i], gpus[j]}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	ring, all, next := len(series) == 0, false, false
	for _, s := range series {
		switch s.Coll {
		case model.AlltoAll:
			all = true
		case model.SendRecv:
			next = true
		default:
			ring = true
		}
	}
	if ring {
		multi := cl.NumNodes() > 1
		if g := res.SearchGraphs(); g != nil && g.Ring != nil {
			for _, ch := range g.Ring.Channels {
				for i := range ch.GPUs {
					if i+1 == len(ch.GPUs) {
						if !multi {
							add(ch.GPUs[i], ch.GPUs[0])
						}
						break
					}
					add(ch.GPUs[i], ch.GPUs[i+1])
				}
			}
		}
	}
	if next {
		for i := range gpus {
			add(i, (i+1)%len(gpus))
		}
	}
	if all {
		for i := range gpus {
			for j := range gpus {
				add(i, j)
			}
		}
	}
	return out
}

// nicsAcrossSockets moves every NIC slot of a node to one new host bridge
// on the socket after GPU0's, so GPU-NIC paths cross the CPU interconnect.
// ok is false for single-socket nodes.
func nicsAcrossSockets(n model.NodeSpec) (model.NodeSpec, bool) {
	if len(n.Sockets) < 2 {
		return n, false
	}
	slots := n.NICSlots
	if slots == 0 {
		slots = n.NICs.Count
	}
	if slots == 0 {
		return n, false
	}
	gpuSocket := 0
	var strip func(b model.BridgeSpec, si int) model.BridgeSpec
	strip = func(b model.BridgeSpec, si int) model.BridgeSpec {
		out := model.BridgeSpec{GPUs: append([]int(nil), b.GPUs...), Gen: b.Gen, Width: b.Width}
		for _, g := range b.GPUs {
			if g == 0 {
				gpuSocket = si
			}
		}
		for _, sw := range b.Switches {
			out.Switches = append(out.Switches, strip(sw, si))
		}
		return out
	}
	out := n
	out.Sockets = make([]model.SocketSpec, len(n.Sockets))
	for si, so := range n.Sockets {
		for _, hb := range so.HostBridges {
			out.Sockets[si].HostBridges = append(out.Sockets[si].HostBridges, strip(hb, si))
		}
	}
	all := make([]int, slots)
	for i := range all {
		all[i] = i
	}
	far := (gpuSocket + 1) % len(out.Sockets)
	out.Sockets[far].HostBridges = append(out.Sockets[far].HostBridges, model.BridgeSpec{NICs: all})
	return out, true
}

// roceFabric reports jitter or a cliff over the gate points of a RoCE
// cluster: the busbw of consecutive large sizes moves by more than the
// model explains.
func roceFabric(cl *model.Cluster, in DiagnoseInput) *Diagnosis {
	if cl.NumNodes() < 2 || len(cl.Nodes[0].NICs) == 0 || cl.Topo.Elem(cl.Nodes[0].NICs[0]).NIC.Kind != model.NICRoCE {
		return nil
	}
	var ev []string
	for _, c := range in.Checks {
		var ratios []float64
		var prev *PointCheck
		for i := range c.Points {
			p := &c.Points[i]
			if p.Size < ingest.CliffMinSize || p.Ratio <= 0 {
				continue
			}
			if prev != nil && prev.Ratio > 0 {
				if drop := 1 - p.Ratio/prev.Ratio; drop > ingest.DefaultCliffThreshold {
					ev = append(ev, fmt.Sprintf("%s: measured/model busbw falls by %.0f%% from %s to %s (line %d)", c.Series, drop*100,
						model.FormatBytes(model.Bytes(prev.Size)), model.FormatBytes(model.Bytes(p.Size)), p.Line))
				}
			}
			prev = p
			if p.Regime == c.Gate {
				ratios = append(ratios, math.Log(p.Ratio))
			}
		}
		if sd := jitter(ratios); sd > jitterMax {
			ev = append(ev, fmt.Sprintf("%s: busbw jitters by %.0f%% (standard deviation of log(measured/model)) over the %s points", c.Series, sd*100, c.Gate))
		}
	}
	if len(ev) == 0 {
		return nil
	}
	t := diagTexts[DiagRoCEFabric]
	return &Diagnosis{Code: DiagRoCEFabric, Title: t.title, Fix: t.fix, Evidence: ev, Residual: -1, FromFiles: true}
}

// jitterMax is the spread of log(measured/model) over a run's gate points
// beyond which roceFabric reads jitter: 10%, the default tolerance.
const jitterMax = 0.1

// jitter is the sample standard deviation of v, 0 for fewer than 3
// values (too few to call a spread).
func jitter(v []float64) float64 {
	if len(v) < 3 {
		return 0
	}
	return stat.StdDev(v, nil)
}

// reverses reports whether the measured busbw of points, in size order,
// both rises and falls by more than tol (log ratio, between any earlier
// size and a later one): a swing up and down, the run's own unsteadiness.
// A curve that only climbs to its plateau, or only falls, is smooth
// whatever the model says of it: its gap to the model is the model's
// shape (an algorithm or protocol switch, a cause no re-prediction
// modelled), not noise.
func reverses(points []PointCheck, tol float64) bool {
	ps := append([]PointCheck(nil), points...)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Size < ps[j].Size })
	lo, hi := math.Inf(1), math.Inf(-1) // the least and most log busbw so far
	var rise, fall float64
	for _, p := range ps {
		if !(p.MeasuredBusBW > 0) {
			continue
		}
		x := math.Log(p.MeasuredBusBW)
		rise, fall = math.Max(rise, x-lo), math.Max(fall, hi-x)
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return rise > tol && fall > tol
}

// altCurve is a re-prediction that explains a series: scale is, by size,
// the healthy model's time over the re-prediction's, the factor from the
// healthy model's busbw to the re-prediction's.
type altCurve struct {
	reproduce string
	scale     map[int64]float64
}

// unsteady names the runs whose measured busbw spreads over the gate
// points, against the model curve that follows it best, by more than the
// gate's tolerance, and swings up and down by more than it (reverses; on
// RoCE roceFabric says it with the fabric's causes):
// the run's own spread, which no model removes, with its range of busbw
// against the model's. The curves are the healthy model and the
// re-predictions that explain the run (alts, by series name): a smooth
// measurement of a misconfigured cluster is far from the healthy model at
// some sizes and close at others, a spread its cause explains, not noise.
func unsteady(in DiagnoseInput, alts map[string][]altCurve) *Diagnosis {
	var ev []string
	for _, c := range in.Checks {
		var gate []PointCheck
		for _, p := range c.Points {
			if p.Regime == c.Gate && p.Ratio > 0 {
				gate = append(gate, p)
			}
		}
		curves := append([]altCurve{{}}, alts[c.Series]...)
		best, bestSD := -1, math.Inf(1)
		for k, cv := range curves {
			ratios := make([]float64, 0, len(gate))
			for _, p := range gate {
				f := 1.0
				if cv.scale != nil {
					var ok bool
					if f, ok = cv.scale[p.Size]; !ok || !(f > 0) {
						ratios = nil
						break
					}
				}
				ratios = append(ratios, math.Log(p.Ratio*f))
			}
			if ratios == nil && len(gate) > 0 {
				continue
			}
			if sd := jitter(ratios); sd < bestSD {
				best, bestSD = k, sd
			}
		}
		if best < 0 || bestSD <= in.Tolerance || !reverses(gate, in.Tolerance) {
			continue
		}
		cv := curves[best]
		lo, hi, mlo, mhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
		for _, p := range gate {
			m := p.ModelBusBW
			if cv.scale != nil {
				m *= cv.scale[p.Size]
			}
			lo, hi = math.Min(lo, p.MeasuredBusBW), math.Max(hi, p.MeasuredBusBW)
			mlo, mhi = math.Min(mlo, m), math.Max(mhi, m)
		}
		what := "measured/model busbw spreads"
		if cv.reproduce != "" {
			what = fmt.Sprintf("measured busbw spreads against the model with %s, the curve that follows it best,", cv.reproduce)
		}
		ev = append(ev, fmt.Sprintf("%s: over its %d %s points %s by %.0f%% (standard deviation of the log ratio): measured %.3g-%.3g GB/s where the model gives %.3g-%.3g",
			c.Series, len(gate), c.Gate, what, bestSD*100, lo, hi, mlo, mhi))
	}
	if len(ev) == 0 {
		return nil
	}
	t := diagTexts[DiagUnsteady]
	return &Diagnosis{Code: DiagUnsteady, Title: t.title, Fix: t.fix, Evidence: ev, Residual: -1}
}
