package study

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// Layout is how a workload's parallelism maps onto a cluster: the degrees
// (DP is what TP x CP x PP leaves of the GPUs), the micro-batches per
// optimizer step and the warnings of a legal but slow placement. Ranks
// are ordered TP fastest, then CP, then DP (EP groups inside DP), then PP,
// as Megatron-LM's default order tp-cp-ep-dp-pp places them; ranks are
// node-major, so TP groups are inside a node when TP <= GPUs per node.
type Layout struct {
	GPUs, GPUsPerNode, Nodes int
	TP, CP, DP, EP, PP       int
	GradAccum                int
	Warnings                 []string
}

// LayoutError is a parallelism that does not fit a cluster (a degree that
// does not divide the GPUs or the batch).
type LayoutError struct{ Msg string }

func (e *LayoutError) Error() string { return e.Msg }

func layoutErr(format string, a ...any) error { return &LayoutError{Msg: fmt.Sprintf(format, a...)} }

// PlanLayout checks that w's parallelism fits the cluster spec describes
// and returns the layout. Errors name the degree that does not divide.
func PlanLayout(w *scenarios.Workload, spec model.ClusterSpec) (Layout, error) {
	gpn := spec.Node.GPUs
	if spec.GPUsPerNode > 0 {
		gpn = spec.GPUsPerNode
	}
	l := Layout{GPUs: gpn * spec.Nodes, GPUsPerNode: gpn, Nodes: spec.Nodes, TP: w.TP, CP: w.CP, EP: w.EP, PP: w.PP}
	mp := w.TP * w.CP * w.PP
	if l.GPUs%mp != 0 {
		return l, layoutErr("parallel: TP %d x CP %d x PP %d = %d does not divide the %d GPUs (%d nodes x %d)", w.TP, w.CP, w.PP, mp, l.GPUs, spec.Nodes, gpn)
	}
	l.DP = l.GPUs / mp
	if l.DP%w.EP != 0 {
		return l, layoutErr("parallel.ep: %d does not divide the data-parallel degree %d (expert groups are carved out of DP)", w.EP, l.DP)
	}
	if w.TP > gpn {
		l.Warnings = append(l.Warnings, fmt.Sprintf("warning: parallel.tp %d is larger than the NVLink domain (%d GPUs per node): TP's per-layer collectives cross the network on the critical path (legal, slow)", w.TP, gpn))
	} else if gpn%w.TP != 0 {
		l.Warnings = append(l.Warnings, fmt.Sprintf("warning: parallel.tp %d does not divide the %d GPUs per node: some TP groups straddle two nodes (legal, slow)", w.TP, gpn))
	}
	l.GradAccum = w.GradAccum
	if w.GlobalBatch > 0 {
		per := l.DP * w.BatchPerGPU
		if w.GlobalBatch%per != 0 {
			return l, layoutErr("batch.global: %d is not a multiple of DP %d x micro-batch %d = %d", w.GlobalBatch, l.DP, w.BatchPerGPU, per)
		}
		l.GradAccum = w.GlobalBatch / per
	}
	if w.PP > 1 && l.GradAccum < w.PP {
		l.Warnings = append(l.Warnings, fmt.Sprintf("warning: %d micro-batch(es) per step for %d pipeline stages: the pipeline never fills (bubble %d/%d of the ideal time)", l.GradAccum, w.PP, w.PP-1, l.GradAccum*w.VirtualStages))
	}
	return l, nil
}

// Memory is one GPU's memory for a workload, in GB (1e9 bytes).
type Memory struct {
	WeightsGB, GradsGB, OptimizerGB, ActivationsGB float64
	NeededGB, AvailableGB                          float64
	GPU                                            string
}

// Fits reports whether the needed memory is within the GPU's.
func (m Memory) Fits() bool { return m.NeededGB <= m.AvailableGB }

// String states the check with its numbers.
func (m Memory) String() string {
	return fmt.Sprintf("needs %.1f GB per GPU (weights %.1f, gradients %.1f, optimizer %.1f, activations %.1f) of the %s's %.0f GB",
		m.NeededGB, m.WeightsGB, m.GradsGB, m.OptimizerGB, m.ActivationsGB, m.GPU, m.AvailableGB)
}

// ErrDoesNotFit is wrapped by the error of a design whose model does not
// fit in GPU memory.
var ErrDoesNotFit = fmt.Errorf("does not fit in GPU memory")

// MemoryCheck computes one GPU's memory: weights, gradients and optimizer
// state of its shard (TP x PP, experts also over EP; ZeRO 1 shards the
// optimizer state over DP, 2 also the gradients, 3 also the weights) and
// the activations of the micro-batches in flight (Korthikanti et al.,
// "Reducing activation recomputation", MLSys'23, eq. 1-4: s*b*h*34 bytes
// per layer, 10 + 24/t with TP, 34/t with sequence parallelism; the 5as/h
// score term is left out because FlashAttention does not store the scores;
// 1F1B keeps PP micro-batches of L/PP layers in flight on the first stage,
// the interleaved schedule 1 + (p-1)/(p*v) times that).
func MemoryCheck(w *scenarios.Workload, l Layout, gpu model.GPUModel) Memory {
	dense := (w.Params - w.ExpertParams) / float64(w.TP*w.PP)
	expert := w.ExpertParams / float64(w.TP*w.PP*w.EP)
	shard := func(stage int, v float64, dp int) float64 {
		if w.Zero >= stage {
			return v / float64(dp)
		}
		return v
	}
	edp := max(l.DP/w.EP, 1)
	m := Memory{GPU: gpu.Name, AvailableGB: float64(gpu.MemGB)}
	m.WeightsGB = (shard(3, dense, l.DP) + shard(3, expert, edp)) * float64(w.WeightBytes) / 1e9
	m.GradsGB = (shard(2, dense, l.DP) + shard(2, expert, edp)) * float64(w.GradBytes) / 1e9
	m.OptimizerGB = (shard(1, dense, l.DP) + shard(1, expert, edp)) * w.OptimizerBytes / 1e9
	if w.Layers > 0 && w.Hidden > 0 && w.SeqLen > 0 && w.BatchPerGPU > 0 {
		sbh := float64(w.SeqLen/w.CP) * float64(w.BatchPerGPU) * float64(w.Hidden)
		t := float64(w.TP)
		per := sbh * 34
		switch {
		case w.TP > 1 && w.SP:
			per = sbh * 34 / t
		case w.TP > 1:
			per = sbh * (10 + 24/t)
		}
		layers := float64(w.Layers) / float64(w.PP)
		inflight := float64(min(w.PP, l.GradAccum))
		if w.PP > 1 && w.VirtualStages > 1 {
			inflight *= 1 + float64(w.PP-1)/float64(w.PP*w.VirtualStages)
		}
		m.ActivationsGB = per * layers * inflight / 1e9
	}
	m.NeededGB = m.WeightsGB + m.GradsGB + m.OptimizerGB + m.ActivationsGB
	return m
}

// CommKind is one kind of collective of a training step on its
// communicator: the prediction of one call, how many a step makes, the
// total and the part of it on the critical path.
type CommKind struct {
	// Kind names it ("DP gradient AllReduce", "TP AllReduce").
	Kind  string
	Coll  model.Collective
	Size  model.Bytes
	Count int64
	// Group describes the communicator ("DP: 4 GPUs, 1 per node on 4
	// nodes, NICs shared by 8 groups").
	Group string
	Point sim.Point
	// TotalMs is Count x the call's time; ExposedMs the part not hidden
	// behind compute.
	TotalMs, ExposedMs float64
}

// StepResult is a workload's optimizer step on one cluster.
type StepResult struct {
	Layout Layout
	Memory Memory
	// ComputeMs is the forward + backward compute of one step on one GPU;
	// BubbleMs the pipeline's idle time; IOMs the exposed input and
	// checkpoint I/O; CommMs every collective's time; ExposedMs the part
	// of it on the critical path.
	ComputeMs, BubbleMs, IOMs, CommMs, ExposedMs float64
	// StepMs = ComputeMs + BubbleMs + ExposedMs + IOMs.
	StepMs float64
	// IO is the input and checkpoint I/O of a step (zero without io).
	IO   IOResult
	Comm []CommKind
	// Samples and tokens per optimizer step (whole cluster).
	Samples, Tokens float64
	// StepsPerSec, SamplesPerSec, TokensPerSec are the cluster's rates.
	StepsPerSec, SamplesPerSec, TokensPerSec float64
	// MFU is the achieved model-FLOPs utilisation (0 without FLOPs: a
	// measured compute time without seq_len).
	MFU float64
	// Efficiency is ComputeMs / StepMs: the rate per GPU against one GPU
	// doing the same per-GPU work with no communication (the single-GPU
	// rate).
	Efficiency float64
	// Bottleneck names what limits the step (the largest exposed part);
	// Breaks says why, with the link.
	Bottleneck, Breaks string
	// CommToCompute is CommMs / ComputeMs, the rule of thumb's ratio.
	CommToCompute float64
}

// Dominant returns the communication kind with the most exposed time
// (the zero CommKind when none has any).
func (r StepResult) Dominant() CommKind {
	var best CommKind
	for _, c := range r.Comm {
		if c.ExposedMs > best.ExposedMs || (best.Kind == "" && c.TotalMs > 0 && c.ExposedMs == best.ExposedMs && c.TotalMs > best.TotalMs) {
			best = c
		}
	}
	return best
}

// ExposedBy returns the exposed milliseconds of each kind, in the order
// of Comm.
func (r StepResult) ExposedBy() map[string]float64 {
	out := map[string]float64{}
	for _, c := range r.Comm {
		out[c.Kind] += c.ExposedMs
	}
	return out
}

// Throughput returns the step's headline rate and its unit: tokens/s
// with seq_len, samples/s with a batch, steps/s otherwise.
func (r StepResult) Throughput(w *scenarios.Workload) (float64, string) {
	return throughputOf(w, r)
}

func throughputOf(w *scenarios.Workload, r StepResult) (float64, string) {
	switch {
	case w.SeqLen > 0:
		return r.TokensPerSec, "tokens/s"
	case w.BatchPerGPU > 0:
		return r.SamplesPerSec, "samples/s"
	}
	return r.StepsPerSec, "steps/s"
}

// ThroughputUnit is the unit Throughput reports for w.
func ThroughputUnit(w *scenarios.Workload) string {
	_, u := throughputOf(w, StepResult{})
	return u
}

// RuleOfThumb is the rule the advice checks: when communication exceeds
// ~30% of compute, a faster interconnect pays; below it, it is cost (a
// rule of practice, stated as such; the model checks it against the
// exposed time, which the rule ignores).
const RuleOfThumb = 0.30

// PaysFrom is where the model says a faster interconnect pays: when the
// exposed communication is at least 10% of the step, so that even an
// infinitely fast network could cut the step by that much (assumption:
// the threshold of a purchase worth considering).
const PaysFrom = 0.10

// Advice states the rule of thumb for a step and the model's verdict on
// it: the ratio of communication to compute, the exposed share of the
// step, and whether the two agree.
func (r StepResult) Advice() string {
	// One decimal: a share printed as 10% must not read as the 10%
	// threshold when it is 9.5%.
	pct := func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
	share := 0.0
	if r.StepMs > 0 {
		share = r.ExposedMs / r.StepMs
	}
	rule := "below the ~30% rule of thumb, which says a faster interconnect is cost"
	if r.CommToCompute > RuleOfThumb {
		rule = "above the ~30% rule of thumb, which says a faster interconnect pays"
	}
	model := fmt.Sprintf("the model exposes %s of the step (%s ms)", pct(share), fmtMsShort(r.ExposedMs))
	pays := share >= PaysFrom
	switch {
	case pays && r.CommToCompute > RuleOfThumb:
		return fmt.Sprintf("communication is %s of compute, %s; %s, so it agrees: a faster interconnect pays", pct(r.CommToCompute), rule, model)
	case !pays && r.CommToCompute <= RuleOfThumb:
		return fmt.Sprintf("communication is %s of compute, %s; %s, so it agrees: a faster interconnect is mostly cost", pct(r.CommToCompute), rule, model)
	case pays:
		return fmt.Sprintf("communication is %s of compute, %s; but %s (under 10%% would be cost), so a faster interconnect pays here", pct(r.CommToCompute), rule, model)
	}
	return fmt.Sprintf("communication is %s of compute, %s; but %s, hidden behind backward, so a faster interconnect is mostly cost here", pct(r.CommToCompute), rule, model)
}

// IOResult is a step's input and checkpoint I/O per node.
type IOResult struct {
	// InputMs is the time to read a step's samples, CheckpointMs one
	// checkpoint's write amortised over CheckpointEvery steps.
	InputMs, CheckpointMs float64
	// Path describes the route and its limit.
	Path string
}

// groupGeom is a communicator's shape: k GPUs in each of n nodes, c such
// groups per node sharing its NICs.
type groupGeom struct{ k, n, c int }

func geometry(size, stride, gpn int) groupGeom {
	switch {
	case size*stride <= gpn:
		return groupGeom{k: size, n: 1, c: 1}
	case stride >= gpn:
		return groupGeom{k: 1, n: size, c: gpn}
	default:
		k := max(gpn/stride, 1)
		return groupGeom{k: k, n: max(size/k, 1), c: gpn / k}
	}
}

// stepper predicts the step's collectives, building each communicator's
// environment once.
type stepper struct {
	ctx    context.Context
	spec   model.ClusterSpec
	node   model.NodeSpec
	gpn    int
	params sim.Params
	engine sim.EngineKind
	envs   map[string]*sim.Env
	points map[string]sim.Point
}

// groupCall predicts one call of coll on the communicator of size ranks
// spaced stride apart. A communicator inside one node is modelled on
// that node's first size GPUs (assumption: the placement's other GPUs
// have the same links, true for NVSwitch nodes). A communicator across
// nodes gets its share of each node's NICs: with c groups per node and
// at least c NICs, NICs/c each; with fewer NICs, one NIC carries c/NICs
// groups, modelled as one group moving c/NICs times the bytes (max-min
// fair sharing gives equal flows on a link equal shares, so the
// bandwidth term is the same; the latency term is paid once, as by
// concurrent groups).
func (s *stepper) groupCall(coll model.Collective, size model.Bytes, ranks, stride, elem int) (sim.Point, string, error) {
	g := geometry(ranks, stride, s.gpn)
	node, err := s.node.WithGPUs(g.k)
	if err != nil {
		return sim.Point{}, "", err
	}
	sub := s.spec
	sub.GPUsPerNode, sub.Nodes = 0, g.n
	scale := 1.0
	desc := fmt.Sprintf("%d GPUs in one node", g.k)
	if g.n > 1 {
		desc = fmt.Sprintf("%d GPU(s) per node on %d nodes", g.k, g.n)
		nics := s.node.NICs.Count
		node = keepNICSlots(node, g.k, s.gpn)
		switch {
		case nics >= g.c:
			node = node.WithNICs(nics/g.c, s.node.NICs.Speed, model.NICKind(s.node.NICs.Kind))
			if g.c > 1 {
				desc += fmt.Sprintf(", %d NIC(s) each (%d groups share a node's %d)", nics/g.c, g.c, nics)
			}
		case nics > 0:
			node = node.WithNICs(1, s.node.NICs.Speed, model.NICKind(s.node.NICs.Kind))
			scale = float64(g.c) / float64(nics)
			desc += fmt.Sprintf(", %d groups share each of the node's %d NIC(s)", g.c/nics, nics)
		}
	}
	sub.Node = node
	key, err := json.Marshal(sub)
	if err != nil {
		return sim.Point{}, "", err
	}
	bytes := model.Bytes(math.Ceil(float64(size)*scale/float64(elem))) * model.Bytes(elem)
	pk := fmt.Sprintf("%s|%d|%d|%d", key, coll, bytes, elem)
	if pt, ok := s.points[pk]; ok {
		return pt, desc, nil
	}
	envr := s.envs[string(key)]
	if envr == nil {
		if envr, err = NewEnv(sub, s.params); err != nil {
			return sim.Point{}, "", err
		}
		s.envs[string(key)] = envr
	}
	req := sim.Request{Coll: coll, ElemSize: elem, Engine: s.engine}
	pt, err := envr.Predict(s.ctx, req, bytes)
	if err != nil {
		return pt, "", fmt.Errorf("%s %s on %s: %w", coll, model.FormatBytes(bytes), desc, err)
	}
	s.points[pk] = pt
	return pt, desc, nil
}

// keepNICSlots returns node with only the NIC slots that serve its first
// k of gpn GPUs (the first slots*k/gpn slots; the templates number slots
// in GPU order), so a communicator of k GPUs per node uses the NICs next
// to them rather than ones across the socket.
func keepNICSlots(node model.NodeSpec, k, gpn int) model.NodeSpec {
	slots := node.NICSlots
	if slots == 0 {
		slots = node.NICs.Count
	}
	keep := max(1, slots*k/gpn)
	if keep >= slots {
		return node
	}
	var trim func(b model.BridgeSpec) model.BridgeSpec
	trim = func(b model.BridgeSpec) model.BridgeSpec {
		out := b
		out.NICs = nil
		for _, n := range b.NICs {
			if n < keep {
				out.NICs = append(out.NICs, n)
			}
		}
		out.Switches = nil
		for _, sw := range b.Switches {
			out.Switches = append(out.Switches, trim(sw))
		}
		return out
	}
	out := node
	out.Sockets = make([]model.SocketSpec, len(node.Sockets))
	for i, so := range node.Sockets {
		out.Sockets[i].HostBridges = make([]model.BridgeSpec, len(so.HostBridges))
		for j, hb := range so.HostBridges {
			out.Sockets[i].HostBridges[j] = trim(hb)
		}
	}
	out.NICSlots = keep
	if out.NICs.Count > keep {
		out.NICs.Count = keep
	}
	return out
}

// TrainingStep models one optimizer step of w on the cluster spec
// describes: the layout, the memory check (a model that does not fit is
// an error wrapping ErrDoesNotFit with the numbers), the compute from
// FLOPs or the measured time, each collective predicted by the simulator
// on its own communicator, the overlap of data-parallel communication
// with backward as a timeline, the pipeline bubble and the I/O. The
// model's terms are StepTerms.
func TrainingStep(ctx context.Context, spec model.ClusterSpec, params sim.Params, w *scenarios.Workload, engine sim.EngineKind) (StepResult, error) {
	var r StepResult
	l, err := PlanLayout(w, spec)
	if err != nil {
		return r, err
	}
	r.Layout = l
	gpu, err := model.LookupGPU(spec.Node.GPU)
	if err != nil {
		return r, err
	}
	r.Memory = MemoryCheck(w, l, gpu)
	if !r.Memory.Fits() {
		return r, fmt.Errorf("%w: %s", ErrDoesNotFit, r.Memory)
	}
	node := spec.Node
	if spec.GPUsPerNode > 0 {
		if node, err = node.WithGPUs(spec.GPUsPerNode); err != nil {
			return r, err
		}
	}
	s := &stepper{ctx: ctx, spec: spec, node: node, gpn: l.GPUsPerNode, params: params, engine: engine, envs: map[string]*sim.Env{}, points: map[string]sim.Point{}}

	mb, ga, v := float64(w.BatchPerGPU), float64(l.GradAccum), float64(w.VirtualStages)
	r.Samples = float64(l.DP) * mb * ga
	r.Tokens = r.Samples * float64(w.SeqLen)
	flops := w.FLOPsPerToken() * r.Tokens / float64(l.GPUs) // per GPU per step
	if w.ComputeMs > 0 {
		r.ComputeMs = w.ComputeMs
	} else {
		peak, _, err := PeakFLOPS(gpu, w.ComputeDtype)
		if err != nil {
			return r, err
		}
		r.ComputeMs = 1000 * flops / (peak * w.MFU)
	}
	tMicro := r.ComputeMs / ga
	if w.PP > 1 {
		r.BubbleMs = float64(w.PP-1) / v * tMicro
	}

	// Activation bytes one micro-batch passes per layer boundary.
	act := model.Bytes(0)
	if w.Hidden > 0 && w.SeqLen > 0 {
		act = model.Bytes(w.BatchPerGPU * (w.SeqLen / w.CP) * w.Hidden * w.WeightBytes)
	}
	layersPerStage := int64(max(w.Layers/w.PP, 1))
	add := func(kind string, coll model.Collective, size model.Bytes, count int64, ranks, stride, elem int, exposedFrac float64) (int, error) {
		if ranks <= 1 || count == 0 || size <= 0 {
			return -1, nil
		}
		pt, desc, err := s.groupCall(coll, size, ranks, stride, elem)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", kind, err)
		}
		ck := CommKind{Kind: kind, Coll: coll, Size: size, Count: count, Group: fmt.Sprintf("%d ranks: %s", ranks, desc), Point: pt}
		ck.TotalMs = pt.TimeUs * float64(count) / 1000
		ck.ExposedMs = ck.TotalMs * exposedFrac
		r.Comm = append(r.Comm, ck)
		return len(r.Comm) - 1, nil
	}
	wb := w.WeightBytes
	// TP: 2 AllReduce forward, 2 backward per layer and micro-batch
	// (Shoeybi et al., Megatron-LM, 2019, section 3), on the critical
	// path; with SP each becomes an AllGather and a ReduceScatter
	// (Korthikanti et al. 2023, section 4.2.2).
	tpCount := 4 * layersPerStage * int64(l.GradAccum)
	if w.SP {
		if _, err := add("TP AllGather (sequence parallel)", model.AllGather, act, tpCount, w.TP, 1, wb, 1); err != nil {
			return r, err
		}
		if _, err := add("TP ReduceScatter (sequence parallel)", model.ReduceScatter, act, tpCount, w.TP, 1, wb, 1); err != nil {
			return r, err
		}
	} else if _, err := add("TP AllReduce", model.AllReduce, act, tpCount, w.TP, 1, wb, 1); err != nil {
		return r, err
	}
	// CP: the keys and values of the whole sequence are gathered per
	// layer forward and their gradients reduce-scattered backward
	// (assumption: counted whole; ring attention hides part of it).
	cpSize := model.Bytes(2*w.BatchPerGPU*w.SeqLen*w.Hidden*wb) / model.Bytes(w.TP)
	cpCount := layersPerStage * int64(l.GradAccum)
	if _, err := add("CP AllGather (keys, values)", model.AllGather, cpSize, cpCount, w.CP, w.TP, wb, 1); err != nil {
		return r, err
	}
	if _, err := add("CP ReduceScatter (key, value gradients)", model.ReduceScatter, cpSize, cpCount, w.CP, w.TP, wb, 1); err != nil {
		return r, err
	}
	// EP: AlltoAll dispatch and combine per MoE layer forward, twice
	// again backward, top_k copies of each token (Lepikhin et al.,
	// GShard, 2020); assumption: every layer is an MoE layer.
	if w.EP > 1 {
		if _, err := add("EP AlltoAll (dispatch, combine)", model.AlltoAll, act*model.Bytes(w.TopK), 4*layersPerStage*int64(l.GradAccum), w.EP, w.TP*w.CP, wb, 1); err != nil {
			return r, err
		}
	}
	// PP: one activation send per stage boundary forward and one gradient
	// send backward per micro-batch and chunk; with TP the scatter/gather
	// optimisation sends 1/TP of it (Narayanan et al., SC'21, section
	// 4.1). Assumption: sends block, so the critical path holds the
	// 2 x (m x v + p - 1) sends of the schedule's slots.
	if w.PP > 1 {
		size := act / model.Bytes(w.TP)
		stride := w.TP * w.CP * l.DP
		count := int64(2 * (l.GradAccum*w.VirtualStages + w.PP - 1))
		if _, err := add("PP send/recv (activations, gradients)", model.SendRecv, size, count, 2, stride, wb, 1); err != nil {
			return r, err
		}
	}
	// DP.
	if err := s.dataParallel(&r, w, l, add, tMicro); err != nil {
		return r, err
	}
	// I/O.
	if w.SampleBytes > 0 || w.CheckpointEvery > 0 {
		r.IO = ioStep(w, l, gpu, r.Samples)
	}
	for _, c := range r.Comm {
		r.CommMs += c.TotalMs
		r.ExposedMs += c.ExposedMs
	}
	busy := r.ComputeMs + r.BubbleMs + r.ExposedMs
	// Input is prefetched by the data loader while the step runs
	// (assumption: PyTorch DataLoader workers); checkpoints block.
	r.IOMs = math.Max(0, r.IO.InputMs-busy) + r.IO.CheckpointMs
	r.StepMs = busy + r.IOMs
	r.StepsPerSec = 1000 / r.StepMs
	r.SamplesPerSec = r.Samples * r.StepsPerSec
	r.TokensPerSec = r.Tokens * r.StepsPerSec
	if w.SeqLen > 0 {
		if peak, _, err := PeakFLOPS(gpu, w.ComputeDtype); err == nil {
			r.MFU = flops / (peak * r.StepMs / 1000)
			// A measured compute faster than the GPU's datasheet peak
			// allows: the workload's size, batch or compute_ms is off.
			if need := flops / (peak * w.ComputeMs / 1000); w.ComputeMs > 0 && need > 1 { // need is +Inf, unused, without compute_ms
				r.Layout.Warnings = append(r.Layout.Warnings, fmt.Sprintf("warning: compute_ms %g ms does %.3g FLOPs per GPU per step (6 x params x tokens + attention), %.0f%% of the %s's peak: check compute_ms, the model size and the batch", w.ComputeMs, flops, 100*need, gpu.Name))
			}
		}
	}
	r.Efficiency = r.ComputeMs / r.StepMs
	r.CommToCompute = r.CommMs / r.ComputeMs
	r.Bottleneck, r.Breaks = r.limit()
	return r, nil
}

// addFunc adds a collective kind to the step and returns its index in
// Comm (-1 when the communicator has one rank or nothing moves).
type addFunc func(kind string, coll model.Collective, size model.Bytes, count int64, ranks, stride, elem int, exposedFrac float64) (int, error)

// at returns &r.Comm[i], nil for -1.
func (r *StepResult) at(i int) *CommKind {
	if i < 0 {
		return nil
	}
	return &r.Comm[i]
}

// dataParallel adds the DP collectives and their exposed time from the
// overlap timeline.
func (s *stepper) dataParallel(r *StepResult, w *scenarios.Workload, l Layout, add addFunc, tMicro float64) error {
	if l.DP <= 1 {
		return nil
	}
	gb := w.GradBytes
	dense := (w.Params - w.ExpertParams) / float64(w.TP*w.PP)
	expert := w.ExpertParams / float64(w.TP*w.PP*w.EP)
	stride := w.TP * w.CP
	tBwd := tMicro * 2 / 3 // backward is 4 of the 6 FLOPs per parameter and token
	tFwd := tMicro / 3
	groups := []struct {
		name          string
		params        float64
		ranks, stride int
	}{{"DP", dense, l.DP, stride}, {"expert DP", expert, l.DP / w.EP, stride * w.EP}}
	for _, g := range groups {
		if g.params <= 0 || g.ranks <= 1 {
			continue
		}
		total := model.Bytes(math.Ceil(g.params * float64(gb)))
		full, rest := int64(total/w.Bucket), total%w.Bucket
		sizes := []model.Bytes{}
		counts := []int64{}
		if full > 0 {
			sizes, counts = append(sizes, w.Bucket), append(counts, full)
		}
		if rest > 0 {
			sizes, counts = append(sizes, rest), append(counts, 1)
		}
		switch w.Zero {
		case 0, 1, 2:
			coll, what := model.AllReduce, "gradient AllReduce"
			if w.Zero > 0 {
				coll, what = model.ReduceScatter, "gradient ReduceScatter"
			}
			var idx []int
			for i := range sizes {
				k, err := add(g.name+" "+what, coll, sizes[i], counts[i], g.ranks, g.stride, gb, 0)
				if err != nil {
					return err
				}
				idx = append(idx, k)
			}
			kinds := make([]*CommKind, len(idx))
			for i, k := range idx {
				kinds[i] = r.at(k)
			}
			exposeBuckets(kinds, sizes, counts, total, tBwd)
			if w.Zero > 0 {
				// Updated parameter shards are gathered after the
				// optimizer step, outside backward: exposed.
				ptotal := model.Bytes(math.Ceil(g.params * float64(w.WeightBytes)))
				if _, err := add(g.name+" parameter AllGather (after the optimizer)", model.AllGather, ptotal, 1, g.ranks, g.stride, w.WeightBytes, 1); err != nil {
					return err
				}
			}
		case 3:
			units := full
			if rest > 0 {
				units++
			}
			psize := model.Bytes(math.Ceil(float64(total) / float64(units) * float64(w.WeightBytes) / float64(gb)))
			ag, err := add(g.name+" parameter AllGather (FSDP, forward and backward)", model.AllGather, psize, 2*units*int64(l.GradAccum), g.ranks, g.stride, w.WeightBytes, 0)
			if err != nil {
				return err
			}
			rs, err := add(g.name+" gradient ReduceScatter (FSDP)", model.ReduceScatter, total/model.Bytes(units), units, g.ranks, g.stride, gb, 0)
			if err != nil {
				return err
			}
			exposeFSDP(r.at(ag), r.at(rs), int(units), l.GradAccum, tFwd, tBwd)
		}
	}
	return nil
}

// exposeBuckets sets the exposed time of DDP-style bucket collectives
// from a timeline of the last micro-batch's backward: gradients are
// produced at a uniform rate (assumption), bucket i becomes ready when
// its last gradient exists, and the communicator runs one bucket at a
// time in order of readiness (one NCCL stream: PyTorch DDP's reducer
// launches buckets in order). Exposed = end of the last bucket - end of
// backward. kinds[i] holds counts[i] buckets of sizes[i].
func exposeBuckets(kinds []*CommKind, sizes []model.Bytes, counts []int64, total model.Bytes, tBwd float64) {
	var ready, end float64
	var done model.Bytes
	for i, k := range kinds {
		if k == nil {
			continue
		}
		per := k.TotalMs / float64(counts[i])
		for j := int64(0); j < counts[i]; j++ {
			done += sizes[i]
			ready = tBwd * float64(done) / float64(total)
			end = math.Max(end, ready) + per
		}
	}
	exposed := math.Max(0, end-tBwd)
	var sum float64
	for _, k := range kinds {
		if k != nil {
			sum += k.TotalMs
		}
	}
	for _, k := range kinds {
		if k != nil && sum > 0 {
			k.ExposedMs = exposed * k.TotalMs / sum
		}
	}
}

// exposeFSDP sets FSDP's exposed time from a timeline: forward needs unit
// u's parameters gathered before its compute, the next unit's AllGather
// is prefetched while the current one computes (FSDP forward_prefetch /
// BACKWARD_PRE); backward gathers again in reverse order and
// reduce-scatters each unit's gradients after its backward (on the last
// micro-batch only; earlier ones accumulate locally). One stream runs
// the collectives in issue order.
func exposeFSDP(ag, rs *CommKind, units, micro int, tFwd, tBwd float64) {
	if ag == nil {
		return
	}
	tAG := ag.TotalMs / float64(ag.Count)
	tRS := 0.0
	if rs != nil {
		tRS = rs.TotalMs / float64(rs.Count)
	}
	cf, cb := tFwd/float64(units), tBwd/float64(units)
	var stall, rsTail float64
	for m := 0; m < micro; m++ {
		// Forward: comm stream gathers unit u while unit u-1 computes.
		var comp, comm float64
		for u := 0; u < units; u++ {
			comm = math.Max(comm, comp-cf) + tAG // issued when the previous unit starts
			if comm > comp {
				stall += comm - comp
				comp = comm
			}
			comp += cf
		}
		// Backward, reverse order; RS of unit u after its backward.
		comm = math.Max(comm, comp)
		var pendingRS []float64
		for u := 0; u < units; u++ {
			comm = math.Max(comm, comp-cb) + tAG
			if comm > comp {
				stall += comm - comp
				comp = comm
			}
			comp += cb
			if m == micro-1 && rs != nil {
				pendingRS = append(pendingRS, comp)
			}
			for len(pendingRS) > 0 && pendingRS[0] <= comm {
				comm = math.Max(comm, pendingRS[0]) + tRS
				pendingRS = pendingRS[1:]
			}
		}
		for _, at := range pendingRS {
			comm = math.Max(comm, at) + tRS
		}
		if m == micro-1 {
			rsTail = math.Max(0, comm-comp)
		}
	}
	ag.ExposedMs = stall
	if rs != nil {
		rs.ExposedMs = rsTail
	}
}

// ioStep is a step's input and checkpoint I/O per node. The input of a
// step (its samples, each read once, spread over the nodes) flows from
// storage (NVMe or a storage NIC) to the GPUs: with GPUDirect Storage
// straight into GPU memory over each GPU's PCIe link; through a CPU
// bounce buffer it crosses the root complex twice (storage to host
// memory, host to GPU), so the PCIe bandwidth it gets is halved (NVIDIA
// GPUDirect Storage overview guide, "the bounce buffer in CPU system
// memory"). A checkpoint writes weights and optimizer state at the
// storage bandwidth, amortised over CheckpointEvery steps.
func ioStep(w *scenarios.Workload, l Layout, gpu model.GPUModel, samples float64) IOResult {
	var r IOResult
	pcie, _, err := model.PCIeBandwidth(gpu.PCIeGen, gpu.PCIeWidth)
	if err != nil {
		pcie = 0
	}
	path := float64(pcie) * float64(l.GPUsPerNode)
	mode := "GPUDirect Storage (storage -> GPU over PCIe)"
	if !w.GDS {
		path /= 2
		mode = "CPU bounce buffer (storage -> host memory -> GPU, PCIe crossed twice)"
	}
	bw := math.Min(w.StorageGBps, path)
	limit := fmt.Sprintf("storage %.1f GB/s per node", w.StorageGBps)
	if path < w.StorageGBps {
		limit = fmt.Sprintf("PCIe %.1f GB/s per node", path)
	}
	r.Path = mode + ", limited by " + limit
	if w.SampleBytes > 0 && bw > 0 {
		perNode := samples * float64(w.SampleBytes) / float64(l.Nodes)
		r.InputMs = 1000 * perNode / (bw * 1e9)
	}
	if w.CheckpointEvery > 0 && bw > 0 {
		perNode := w.Params * (float64(w.WeightBytes) + w.OptimizerBytes) / float64(l.Nodes)
		r.CheckpointMs = 1000 * perNode / (bw * 1e9) / float64(w.CheckpointEvery)
	}
	return r
}

// limit names the largest part of the step beyond compute and says why.
func (r *StepResult) limit() (string, string) {
	type part struct {
		name, why string
		ms, best  float64
	}
	parts := []part{{"pipeline bubble", fmt.Sprintf("%d stages, %d micro-batch(es) per step", r.Layout.PP, r.Layout.GradAccum), r.BubbleMs, 0},
		{"storage I/O", r.IO.Path, r.IOMs, 0}}
	byKind := map[string]*part{}
	var order []string
	for _, c := range r.Comm {
		name := c.Kind
		p := byKind[name]
		if p == nil {
			p = &part{name: name}
			byKind[name] = p
			order = append(order, name)
		}
		p.ms += c.ExposedMs
		if p.why == "" || c.ExposedMs > p.best {
			p.best = c.ExposedMs
			why := c.Point.Bottleneck
			if why == "" {
				why = c.Point.BottleneckClass
			}
			p.why = fmt.Sprintf("%s %s on %s, bound by %s", c.Coll, model.FormatBytes(c.Size), c.Group, why)
		}
	}
	for _, n := range order {
		parts = append(parts, *byKind[n])
	}
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].ms > parts[j].ms })
	top := parts[0]
	if top.ms <= 0.01*r.ComputeMs {
		return "compute", fmt.Sprintf("compute-bound: less than 1%% of the compute time is exposed (%.3g ms)", r.StepMs-r.ComputeMs)
	}
	return top.name, fmt.Sprintf("%s: %s ms exposed per step (%.1f%% of the step): %s", top.name, fmtMsShort(top.ms), 100*top.ms/r.StepMs, top.why)
}

// StepTerms lists the step model's terms with their sources, for reports.
func StepTerms() []scenarios.Term {
	return []scenarios.Term{
		{Name: "step: compute", Value: "FLOPs / (peak x MFU)", Source: "FLOPs per token 6 x active params (+ attention); peak: the GPU's dense datasheet rate for dtype.compute (study.PeakFLOPS); or compute_ms measured"},
		{Name: "step: forward/backward split", Value: "1/3, 2/3", Source: "2 of the 6 FLOPs per parameter and token are forward, 4 backward (Kaplan et al. 2020)"},
		{Name: "step: DDP overlap", Value: "bucket timeline", Source: "assumption: gradients produced uniformly over backward, buckets run one at a time when ready (PyTorch DDP reducer order); exposed = last bucket's end - end of backward"},
		{Name: "step: FSDP overlap", Value: "unit timeline with prefetch", Source: "PyTorch FSDP forward_prefetch and BACKWARD_PRE: the next unit's AllGather runs during the current unit's compute"},
		{Name: "step: TP", Value: "4 collectives per layer and micro-batch, exposed", Source: "Megatron-LM (Shoeybi et al. 2019, section 3): f and g operators, 2 AllReduce forward, 2 backward"},
		{Name: "step: PP bubble", Value: "(p-1)/v micro-batch times", Source: "Narayanan et al., SC'21, section 2.2: bubble fraction (p-1)/(m v)"},
		{Name: "step: shared NICs", Value: "c groups per NIC = c x bytes", Source: "assumption: max-min fair sharing gives c equal flows c equal shares of a link"},
		{Name: "step: memory", Value: "weights + grads + optimizer + activations", Source: "ZeRO (SC'20) sharding by stage; activations Korthikanti et al. (MLSys'23) eq. 1-4 without the score term (FlashAttention)"},
		{Name: "step: I/O", Value: "GDS or bounce buffer", Source: "NVIDIA GPUDirect Storage overview: DMA from storage straight to GPU memory, no bounce buffer in host memory; assumption: input prefetched during the step, checkpoints block"},
		{Name: "step: efficiency", Value: "compute / step", Source: "reference: one GPU doing the same per-GPU work with no communication (the single-GPU rate)"},
	}
}

// fmtMsShort prints milliseconds without an exponent: whole
// milliseconds from 100 ms ("17889"), three significant digits below.
func fmtMsShort(ms float64) string {
	if ms >= 100 {
		return fmt.Sprintf("%.0f", ms)
	}
	return fmt.Sprintf("%.3g", ms)
}
