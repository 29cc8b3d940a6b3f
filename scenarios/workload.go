package scenarios

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	yaml "go.yaml.in/yaml/v3"
)

// Strategy is how data parallelism moves gradients and parameters; it is
// the ZeRO stage under another name (ddp = 0, fsdp = 3).
type Strategy string

// Training strategies.
const (
	// StrategyDDP is PyTorch DistributedDataParallel (ZeRO stage 0): every
	// rank holds the whole model and the gradients are summed with one
	// AllReduce per bucket.
	StrategyDDP Strategy = "ddp"
	// StrategyFSDP is fully sharded data parallelism (PyTorch FSDP
	// FULL_SHARD, ZeRO stage 3): parameters are gathered with an AllGather
	// before the forward pass and again before the backward pass, and the
	// gradients are reduced with a ReduceScatter, one call of each per unit.
	StrategyFSDP Strategy = "fsdp"
)

// DefaultBucket is PyTorch DDP's gradient bucket: bucket_cap_mb=25 in
// torch.nn.parallel.DistributedDataParallel, which DDP turns into
// 25 * 1024 * 1024 bytes.
const DefaultBucket = 25 * model.MiB

// DefaultGradBytes is the size of one gradient element when none is given:
// 2 bytes, bf16 or fp16 gradients as mixed-precision training reduces them
// (an assumption; fp32 gradients are 4).
const DefaultGradBytes = 2

// DefaultOptimizerBytes is the optimizer state per parameter: Adam in
// mixed precision keeps an fp32 master copy, momentum and variance, 4+4+4 =
// 12 bytes (Rajbhandari et al., "ZeRO", SC'20, section 3.1: K = 12).
const DefaultOptimizerBytes = 12

// Pipeline schedules.
const (
	// Schedule1F1B is PipeDream-Flush / Megatron's one-forward-one-backward
	// schedule: bubble (p-1)/m of the ideal time (Narayanan et al., SC'21,
	// section 2.2.1).
	Schedule1F1B = "1f1b"
	// ScheduleInterleaved gives each stage v model chunks: bubble
	// (p-1)/(m*v) (same paper, section 2.2.2).
	ScheduleInterleaved = "interleaved"
)

// Workload is one training job: the model, its datatypes, the batch, the
// parallelism, how compute time is obtained and the input/checkpoint I/O.
// It is plain data; study.TrainingStep turns it into a step time on a
// cluster. The model is documented in docs/sweep.md and by Terms.
type Workload struct {
	// Name labels the workload in output (optional).
	Name string
	// Params is the number of model parameters (7e9 for a 7B model); when
	// zero and Layers and Hidden are given it is 12*L*h^2 + V*h.
	Params float64
	// Layers, Hidden, Heads and Vocab describe a transformer (0: not given).
	Layers, Hidden, Heads, Vocab int
	// SeqLen is the number of tokens per sample (0: not given; no tokens/s).
	SeqLen int
	// Experts and TopK describe a mixture-of-experts model; ExpertParams is
	// the part of Params held by the experts (all experts together).
	Experts, TopK int
	ExpertParams  float64
	// WeightBytes and GradBytes are bytes per weight and per gradient
	// element (2 for bf16); OptimizerBytes the optimizer state per
	// parameter (12 for mixed-precision Adam).
	WeightBytes, GradBytes int
	OptimizerBytes         float64
	// ComputeDtype names the datatype whose peak FLOP/s the compute time
	// uses: bf16, fp16, fp8, tf32 or fp32.
	ComputeDtype string
	// BatchPerGPU is the micro-batch: samples one data-parallel rank
	// processes per forward/backward pass (0: not given).
	BatchPerGPU int
	// GlobalBatch, when not zero, fixes the samples per optimizer step at
	// every size (gradient accumulation = GlobalBatch / (DP x BatchPerGPU));
	// zero means weak scaling: GradAccum micro-batches per rank per step.
	GlobalBatch int
	// GradAccum is the number of micro-batches per optimizer step when
	// GlobalBatch is zero (default 1).
	GradAccum int
	// TP, PP, EP and CP are the tensor-, pipeline-, expert- and
	// context-parallel degrees (1: none); DP is the rest of the GPUs.
	TP, PP, EP, CP int
	// PPSchedule is 1f1b or interleaved; VirtualStages the model chunks
	// per stage of the interleaved schedule.
	PPSchedule    string
	VirtualStages int
	// SP is Megatron sequence parallelism: TP's AllReduce becomes an
	// AllGather and a ReduceScatter of the same bytes.
	SP bool
	// Zero is the ZeRO stage 0..3 (3 = FSDP FULL_SHARD); Strategy the same
	// as a name.
	Zero     int
	Strategy Strategy
	// Bucket is the size of one DDP gradient bucket or one FSDP unit.
	Bucket model.Bytes
	// ComputeMs, when not zero, is the measured forward plus backward time
	// of one optimizer step on one GPU (its share of the model), in ms;
	// else MFU gives it from FLOPs.
	ComputeMs float64
	// MFU is the model-FLOPs utilisation the compute time assumes (0..1).
	MFU float64
	// SampleBytes is the input read per sample; GDS reads it with
	// GPUDirect Storage (storage straight to GPU memory) instead of a CPU
	// bounce buffer; StorageGBps is the storage bandwidth per node in GB/s.
	SampleBytes model.Bytes
	GDS         bool
	StorageGBps float64
	// CheckpointEvery is the steps between checkpoints (0: none); a
	// checkpoint writes weights and optimizer state at StorageGBps.
	CheckpointEvery int
	// Cluster is the cluster the workload file names (nil: none); ClusterAt
	// the file position of that section for messages.
	Cluster   *model.ClusterSpec
	ClusterAt string
}

// Limits of a workload's fields.
const (
	maxParams      = 1e15
	maxComputeMs   = 1e7
	minBucket      = model.KiB
	maxBucket      = 64 * model.GiB
	maxBatchPerGPU = 1 << 20
	maxSeqLen      = 1 << 24
	maxDegree      = 1 << 17
	maxDim         = 1 << 22
)

// WithDefaults returns w with the documented defaults filled in: 2-byte
// weights and gradients, 12-byte optimizer state, bf16 compute, 25 MiB
// buckets, degrees 1, ZeRO 0 (ddp), 1F1B, one micro-batch per step.
func (w Workload) WithDefaults() Workload {
	if w.GradBytes == 0 {
		w.GradBytes = DefaultGradBytes
	}
	if w.WeightBytes == 0 {
		w.WeightBytes = w.GradBytes
	}
	if w.OptimizerBytes == 0 {
		w.OptimizerBytes = DefaultOptimizerBytes
	}
	if w.ComputeDtype == "" {
		w.ComputeDtype = "bf16"
	}
	if w.Bucket == 0 {
		w.Bucket = DefaultBucket
	}
	for _, p := range []*int{&w.TP, &w.PP, &w.EP, &w.CP, &w.GradAccum, &w.VirtualStages} {
		if *p == 0 {
			*p = 1
		}
	}
	if w.PPSchedule == "" {
		w.PPSchedule = Schedule1F1B
	}
	switch {
	case w.Strategy == StrategyFSDP:
		w.Zero = 3
	case w.Zero == 3:
		w.Strategy = StrategyFSDP
	default:
		w.Strategy = StrategyDDP
	}
	if w.Params == 0 && w.Layers > 0 && w.Hidden > 0 {
		h := float64(w.Hidden)
		w.Params = 12*float64(w.Layers)*h*h + float64(w.Vocab)*h
	}
	return w
}

// ComputeDtypes are the datatypes a compute time can be based on.
var ComputeDtypes = []string{"bf16", "fp16", "fp8", "tf32", "fp32"}

// Validate reports the first field outside its range, naming it by its
// YAML key.
func (w Workload) Validate() error {
	deg := func(name string, v int) error {
		if v < 1 || v > maxDegree {
			return fmt.Errorf("%s: %d is outside 1..%d", name, v, maxDegree)
		}
		return nil
	}
	switch {
	case !(w.Params >= 1) || w.Params > maxParams:
		return fmt.Errorf("params: %g is outside 1..1e15 (give the parameter count, e.g. 7e9 or 7B, or layers and hidden)", w.Params)
	case w.GradBytes != 1 && w.GradBytes != 2 && w.GradBytes != 4 && w.GradBytes != 8:
		return fmt.Errorf("grad_bytes: %d is not 1, 2, 4 or 8 (bytes per gradient element: 2 for bf16, 4 for fp32)", w.GradBytes)
	case w.WeightBytes != 1 && w.WeightBytes != 2 && w.WeightBytes != 4 && w.WeightBytes != 8:
		return fmt.Errorf("dtype.weights: %d bytes is not 1, 2, 4 or 8", w.WeightBytes)
	case !(w.OptimizerBytes >= 0 && w.OptimizerBytes <= 64):
		return fmt.Errorf("dtype.optimizer: %g bytes per parameter is outside 0..64", w.OptimizerBytes)
	case w.Bucket < minBucket || w.Bucket > maxBucket:
		return fmt.Errorf("bucket: %s is outside 1K..64G", model.FormatBytes(w.Bucket))
	case w.ComputeMs < 0 || w.ComputeMs > maxComputeMs || math.IsNaN(w.ComputeMs):
		return fmt.Errorf("compute_ms: %g is outside (0, 1e7] (forward + backward time of one step in milliseconds)", w.ComputeMs)
	case !(w.MFU >= 0 && w.MFU <= 1):
		return fmt.Errorf("compute.mfu: %g is outside (0, 1] (the model-FLOPs utilisation, e.g. 0.4)", w.MFU)
	case w.ComputeMs == 0 && w.MFU == 0:
		return fmt.Errorf("compute_ms: give a measured step time (compute_ms) or an MFU (compute.mfu) to compute it from FLOPs")
	case w.ComputeMs > 0 && w.MFU > 0:
		return fmt.Errorf("compute.mfu: give compute_ms (measured) or compute.mfu (from FLOPs), not both")
	case w.MFU > 0 && (w.SeqLen == 0 || w.BatchPerGPU == 0):
		return fmt.Errorf("compute.mfu: computing the step from FLOPs needs seq_len and batch_per_gpu (tokens per step)")
	case w.BatchPerGPU < 0 || w.BatchPerGPU > maxBatchPerGPU:
		return fmt.Errorf("batch_per_gpu: %d is outside 0..%d", w.BatchPerGPU, maxBatchPerGPU)
	case w.SeqLen < 0 || w.SeqLen > maxSeqLen:
		return fmt.Errorf("seq_len: %d is outside 0..%d", w.SeqLen, maxSeqLen)
	case w.SeqLen > 0 && w.BatchPerGPU == 0:
		return fmt.Errorf("seq_len needs batch_per_gpu (tokens per step = GPUs x batch_per_gpu x seq_len)")
	case w.GlobalBatch < 0 || w.GlobalBatch > maxBatchPerGPU*maxDegree:
		return fmt.Errorf("batch.global: %d is out of range", w.GlobalBatch)
	case w.GlobalBatch > 0 && w.BatchPerGPU == 0:
		return fmt.Errorf("batch.global needs batch.micro (samples per rank per micro-batch)")
	case w.GlobalBatch > 0 && w.ComputeMs > 0:
		// The global batch spreads over the data-parallel ranks: one GPU's
		// micro-batches per step, and so its compute, change with the
		// cluster, while compute_ms was measured on one. Taken as it is,
		// 8 times the GPUs gave the same step and 100% efficiency.
		return fmt.Errorf("batch.global: a fixed global batch spreads over the data-parallel ranks, so one GPU's compute per step changes with the cluster, which a measured compute_ms cannot follow: give compute.mfu (compute from FLOPs), or batch.accumulation with compute_ms (a fixed per-GPU step)")
	case w.Layers < 0 || w.Layers > maxDim || w.Hidden < 0 || w.Hidden > maxDim || w.Heads < 0 || w.Heads > maxDim || w.Vocab < 0 || w.Vocab > 1<<26:
		return fmt.Errorf("model: layers, hidden, heads or vocab out of range")
	case w.Zero < 0 || w.Zero > 3:
		return fmt.Errorf("parallel.zero: stage %d is not 0, 1, 2 or 3", w.Zero)
	case w.PPSchedule != Schedule1F1B && w.PPSchedule != ScheduleInterleaved:
		return fmt.Errorf("parallel.pp_schedule: unknown %q (known: 1f1b, interleaved)", w.PPSchedule)
	case w.PPSchedule == Schedule1F1B && w.VirtualStages != 1:
		return fmt.Errorf("parallel.virtual_stages: %d chunks per stage needs pp_schedule: interleaved", w.VirtualStages)
	case w.Experts < 0 || w.Experts > maxDegree || w.TopK < 0 || w.TopK > max(w.Experts, 0):
		return fmt.Errorf("model.top_k: %d is outside 0..experts (%d)", w.TopK, w.Experts)
	case !(w.ExpertParams >= 0 && w.ExpertParams < w.Params):
		return fmt.Errorf("model.expert_params: %g is outside 0..params", w.ExpertParams)
	case w.SampleBytes < 0 || w.StorageGBps < 0 || math.IsNaN(w.StorageGBps) || w.CheckpointEvery < 0:
		return fmt.Errorf("io: sample_bytes, storage_gbps and checkpoint_every must not be negative")
	case (w.SampleBytes > 0 || w.CheckpointEvery > 0) && w.StorageGBps == 0:
		return fmt.Errorf("io.storage_gbps: input or checkpoint I/O needs the storage bandwidth per node")
	}
	for _, d := range []struct {
		n string
		v int
	}{{"parallel.tp", w.TP}, {"parallel.pp", w.PP}, {"parallel.ep", w.EP}, {"parallel.cp", w.CP}, {"batch.accumulation", w.GradAccum}, {"parallel.virtual_stages", w.VirtualStages}} {
		if err := deg(d.n, d.v); err != nil {
			return err
		}
	}
	if !slicesContains(ComputeDtypes, w.ComputeDtype) {
		return fmt.Errorf("dtype.compute: unknown %q (known: %s)", w.ComputeDtype, strings.Join(ComputeDtypes, ", "))
	}
	need := func(key, what string, ok bool) error {
		if !ok {
			return fmt.Errorf("%s: needs %s", key, what)
		}
		return nil
	}
	for _, e := range []error{
		need("parallel.tp", "model.hidden and seq_len (the activations TP reduces per layer)", w.TP == 1 || (w.Hidden > 0 && w.Layers > 0 && w.SeqLen > 0)),
		need("parallel.pp", "model.layers, model.hidden and seq_len (stages and the activations they pass)", w.PP == 1 || (w.Hidden > 0 && w.Layers > 0 && w.SeqLen > 0)),
		need("parallel.cp", "model.hidden and seq_len", w.CP == 1 || (w.Hidden > 0 && w.Layers > 0 && w.SeqLen > 0)),
		need("parallel.ep", "model.experts, model.expert_params, model.hidden and seq_len", w.EP == 1 || (w.Experts > 0 && w.ExpertParams > 0 && w.Hidden > 0 && w.Layers > 0 && w.SeqLen > 0)),
		need("parallel.sp", "parallel.tp above 1", !w.SP || w.TP > 1),
	} {
		if e != nil {
			return e
		}
	}
	if w.Layers > 0 && w.Layers%(w.PP*w.VirtualStages) != 0 {
		return fmt.Errorf("parallel.pp: %d stages x %d chunk(s) do not divide the %d layers", w.PP, w.VirtualStages, w.Layers)
	}
	if w.Heads > 0 && w.Heads%w.TP != 0 {
		return fmt.Errorf("parallel.tp: %d does not divide the %d attention heads", w.TP, w.Heads)
	}
	if w.Experts > 0 && w.Experts%w.EP != 0 {
		return fmt.Errorf("parallel.ep: %d does not divide the %d experts", w.EP, w.Experts)
	}
	if w.SeqLen > 0 && w.SeqLen%w.CP != 0 {
		return fmt.Errorf("parallel.cp: %d does not divide seq_len %d", w.CP, w.SeqLen)
	}
	if w.Experts > 0 && w.TopK == 0 {
		return fmt.Errorf("model.top_k: a mixture of %d experts needs top_k (experts each token visits)", w.Experts)
	}
	if _, err := ParseStrategy(string(w.Strategy)); err != nil {
		return err
	}
	return nil
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ParseStrategy reads ddp or fsdp (zero3 is accepted for fsdp).
func ParseStrategy(s string) (Strategy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ddp", "zero0":
		return StrategyDDP, nil
	case "fsdp", "zero3", "zero-3":
		return StrategyFSDP, nil
	}
	return "", fmt.Errorf("strategy: unknown %q (known: ddp, fsdp)", s)
}

// ActiveParams is the parameter count one token's FLOPs use: all dense
// parameters and top_k/experts of the expert parameters.
func (w Workload) ActiveParams() float64 {
	if w.Experts == 0 {
		return w.Params
	}
	return w.Params - w.ExpertParams + w.ExpertParams*float64(w.TopK)/float64(w.Experts)
}

// FLOPsPerToken is the training FLOPs of one token: 6 x active parameters
// (2 forward, 4 backward; Kaplan et al. 2020, "Scaling laws", section 2.1)
// plus, for a transformer with layers and hidden given, the attention
// scores 12 x L x h x s (Narayanan et al., SC'21, appendix: 72BsLh^2(1 +
// s/6h + ...) per batch, of which the s/6h term is this one).
func (w Workload) FLOPsPerToken() float64 {
	f := 6 * w.ActiveParams()
	if w.Layers > 0 && w.Hidden > 0 && w.SeqLen > 0 {
		f += 12 * float64(w.Layers) * float64(w.Hidden) * float64(w.SeqLen)
	}
	return f
}

// Describe summarises the workload in one line.
func (w Workload) Describe() string {
	name := ""
	if w.Name != "" {
		name = w.Name + ": "
	}
	par := fmt.Sprintf("TP %d x PP %d", w.TP, w.PP)
	if w.PP > 1 {
		par += " (" + w.PPSchedule
		if w.VirtualStages > 1 {
			par += fmt.Sprintf(", %d chunks", w.VirtualStages)
		}
		par += ")"
	}
	if w.CP > 1 {
		par += fmt.Sprintf(" x CP %d", w.CP)
	}
	if w.EP > 1 {
		par += fmt.Sprintf(", EP %d over %d experts (top-%d)", w.EP, w.Experts, w.TopK)
	}
	if w.SP {
		par += ", sequence parallel"
	}
	out := fmt.Sprintf("%s%s params, ZeRO %d (%s), %s, rest data parallel; %d B gradients in %s buckets", name, FormatCount(w.Params), w.Zero, w.Strategy, par,
		w.GradBytes, model.FormatBytes(w.Bucket))
	if w.ComputeMs > 0 {
		out += fmt.Sprintf("; compute %s ms per step (measured)", strconv.FormatFloat(w.ComputeMs, 'g', 6, 64))
	} else {
		out += fmt.Sprintf("; compute from FLOPs at MFU %s (%s)", strconv.FormatFloat(w.MFU, 'g', 3, 64), w.ComputeDtype)
	}
	if w.BatchPerGPU > 0 {
		out += fmt.Sprintf("; micro-batch %d", w.BatchPerGPU)
		if w.SeqLen > 0 {
			out += fmt.Sprintf(" x %d tokens", w.SeqLen)
		}
		if w.GlobalBatch > 0 {
			out += fmt.Sprintf(", global batch %d", w.GlobalBatch)
		} else if w.GradAccum > 1 {
			out += fmt.Sprintf(", %d micro-batches per step", w.GradAccum)
		}
	}
	return out
}

// Term is one documented number behind a result: its name, the value used
// and where the value comes from (a citation, a file position, or
// "assumption: ...").
type Term struct {
	Name, Value, Source string
}

// Terms lists the workload's own terms with their sources, for reports
// (the step model's terms are study.StepTerms).
func (w Workload) Terms() []Term {
	bucket := "PyTorch DDP default: torch.nn.parallel.DistributedDataParallel(bucket_cap_mb=25), 25 x 1024 x 1024 bytes"
	if w.Bucket != DefaultBucket {
		bucket = "given (PyTorch DDP default: bucket_cap_mb=25, 25 MiB)"
	}
	if w.Strategy == StrategyFSDP {
		bucket = "given as the FSDP unit size (the parameters one wrapped module holds); assumption: units of equal size"
	}
	ts := []Term{
		{"workload: strategy", fmt.Sprintf("%s (ZeRO %d)", w.Strategy, w.Zero), "0: DDP AllReduce per bucket; 1/2: ReduceScatter of gradients per bucket + AllGather of updated parameters (Rajbhandari et al., ZeRO, SC'20, section 5); 3: FSDP FULL_SHARD AllGather before forward and backward, ReduceScatter of gradients, per unit"},
		{"workload: gradient bytes", fmt.Sprintf("%s params x %d B", FormatCount(w.Params), w.GradBytes), "given; 2 B (bf16) is the default, an assumption for mixed-precision training"},
		{"workload: optimizer state", strconv.FormatFloat(w.OptimizerBytes, 'g', 4, 64) + " B/param", "Adam in mixed precision: fp32 master weights, momentum, variance (ZeRO, SC'20, section 3.1, K = 12)"},
		{"workload: bucket", model.FormatBytes(w.Bucket), bucket},
		{"workload: FLOPs per token", strconv.FormatFloat(w.FLOPsPerToken(), 'g', 4, 64), "6 x active params (Kaplan et al. 2020) + 12 x layers x hidden x seq_len attention (Narayanan et al., SC'21)"},
	}
	if w.ComputeMs > 0 {
		ts = append(ts, Term{"workload: compute", strconv.FormatFloat(w.ComputeMs, 'g', 6, 64) + " ms", "given (measured): forward + backward time of one step on one GPU's share"})
	} else {
		ts = append(ts, Term{"workload: MFU", strconv.FormatFloat(w.MFU, 'g', 3, 64), "given: model-FLOPs utilisation of the compute (Chowdhery et al., PaLM, 2022, appendix B defines MFU)"})
	}
	return ts
}

// LoadWorkloadFile reads a workload YAML file (schema: LoadWorkload); a
// cluster file it names is relative to its directory.
func LoadWorkloadFile(path string) (Workload, error) {
	data, err := readLimited(path)
	if err != nil {
		return Workload{}, err
	}
	return LoadWorkload(path, data)
}

// LoadWorkload parses a workload YAML document; errors name
// file:line:column and the key. The schema (docs/sweep.md) is:
//
//	name: text
//	params: 7e9             # or model.params; or model.layers + model.hidden
//	grad_bytes: 2           # or dtype.grads (bytes or bf16/fp16/fp32/fp8)
//	bucket: 25M             # DDP bucket / FSDP unit (default 25M = 25 MiB)
//	compute_ms: 300         # measured step compute on one GPU, or compute.mfu
//	batch_per_gpu: 4        # or batch.micro: samples per rank per micro-batch
//	seq_len: 4096           # or model.seq_len
//	strategy: ddp           # ddp | fsdp (or parallel.zero: 0..3)
//	model:    {params, layers, hidden, heads, vocab, seq_len, experts, top_k, expert_params}
//	dtype:    {weights, grads, optimizer, compute}
//	batch:    {micro, global, accumulation}
//	parallel: {tp, pp, pp_schedule: 1f1b|interleaved, virtual_stages, ep, cp, sp, zero}
//	compute:  {mfu, step_ms}
//	io:       {sample_bytes, gds, storage_gbps, checkpoint_every}
//	cluster:  {file, node, gpu, nodes, gpus_per_node, nics, env: {NCCL_X: v}}
func LoadWorkload(file string, data []byte) (Workload, error) {
	doc, err := parseYAML(file, "workload file", data)
	if err != nil {
		return Workload{}, err
	}
	if len(doc.Content) == 0 {
		return Workload{}, fmt.Errorf("%s: empty workload file", file)
	}
	return decodeWorkload(file, doc.Content[0])
}

// parseDtypeBytes reads a datatype as a byte count (2) or a name (bf16).
func parseDtypeBytes(s string) (int, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "fp8", "int8":
		return 1, nil
	case "bf16", "fp16", "half", "bfloat16":
		return 2, nil
	case "fp32", "float", "tf32":
		return 4, nil
	case "fp64", "double":
		return 8, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("want bytes per element (2) or a datatype (bf16, fp16, fp32, fp8), got %q", s)
	}
	return n, nil
}

func parseInt(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("want an integer, got %q", s)
	}
	return n, nil
}

func parseFloat(s, what string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("want %s, got %q", what, s)
	}
	return v, nil
}

// workloadSetters maps each scalar key (sections flattened as
// "section.key") to what it sets; aliases share a setter.
func workloadSetters(w *Workload) map[string]func(string) error {
	intTo := func(p *int) func(string) error {
		return func(s string) (err error) { *p, err = parseInt(s); return }
	}
	count := func(p *float64) func(string) error {
		return func(s string) (err error) { *p, err = ParseCount(s); return }
	}
	dtype := func(p *int) func(string) error {
		return func(s string) (err error) { *p, err = parseDtypeBytes(s); return }
	}
	computeMs := func(s string) (err error) {
		w.ComputeMs, err = parseFloat(s, "a number of milliseconds")
		if err == nil && !(w.ComputeMs > 0) {
			err = fmt.Errorf("%g is outside (0, 1e7] (forward + backward time of one step in milliseconds)", w.ComputeMs)
		}
		return
	}
	bucket := func(s string) (err error) {
		w.Bucket, err = model.ParseBytes(s)
		if err == nil && w.Bucket <= 0 {
			err = fmt.Errorf("%q is not a bucket size (give e.g. 25M; PyTorch DDP's default is 25 MiB)", s)
		}
		return
	}
	strategy := func(s string) (err error) {
		w.Strategy, err = ParseStrategy(s)
		if err != nil {
			return fmt.Errorf("unknown %q (known: ddp, fsdp)", s)
		}
		if w.Strategy == StrategyFSDP {
			w.Zero = 3
		}
		return
	}
	boolTo := func(p *bool) func(string) error {
		return func(s string) error {
			switch strings.ToLower(strings.TrimSpace(s)) {
			case "true", "yes", "on":
				*p = true
			case "false", "no", "off":
				*p = false
			default:
				return fmt.Errorf("want true or false, got %q", s)
			}
			return nil
		}
	}
	return map[string]func(string) error{
		"name":   func(s string) error { w.Name = s; return nil },
		"params": count(&w.Params), "model.params": count(&w.Params),
		"grad_bytes": dtype(&w.GradBytes), "dtype.grads": dtype(&w.GradBytes),
		"bucket": bucket, "compute_ms": computeMs, "compute.step_ms": computeMs,
		"batch_per_gpu": intTo(&w.BatchPerGPU), "batch.micro": intTo(&w.BatchPerGPU),
		"seq_len": intTo(&w.SeqLen), "model.seq_len": intTo(&w.SeqLen),
		"strategy":     strategy,
		"model.layers": intTo(&w.Layers), "model.hidden": intTo(&w.Hidden), "model.heads": intTo(&w.Heads), "model.vocab": intTo(&w.Vocab),
		"model.experts": intTo(&w.Experts), "model.top_k": intTo(&w.TopK), "model.expert_params": count(&w.ExpertParams),
		"dtype.weights": dtype(&w.WeightBytes),
		"dtype.optimizer": func(s string) (err error) {
			w.OptimizerBytes, err = parseFloat(s, "bytes of optimizer state per parameter (12 for Adam)")
			return
		},
		"dtype.compute": func(s string) error { w.ComputeDtype = strings.ToLower(strings.TrimSpace(s)); return nil },
		"batch.global":  intTo(&w.GlobalBatch), "batch.accumulation": intTo(&w.GradAccum),
		"parallel.tp": intTo(&w.TP), "parallel.pp": intTo(&w.PP), "parallel.ep": intTo(&w.EP), "parallel.cp": intTo(&w.CP),
		"parallel.pp_schedule":    func(s string) error { w.PPSchedule = strings.ToLower(strings.TrimSpace(s)); return nil },
		"parallel.virtual_stages": intTo(&w.VirtualStages),
		"parallel.sp":             boolTo(&w.SP),
		"parallel.zero": func(s string) (err error) {
			w.Zero, err = parseInt(s)
			if err == nil && w.Zero == 3 {
				w.Strategy = StrategyFSDP
			}
			return
		},
		"compute.mfu":     func(s string) (err error) { w.MFU, err = ParseFraction(s); return },
		"io.sample_bytes": func(s string) (err error) { w.SampleBytes, err = model.ParseBytes(s); return },
		"io.gds":          boolTo(&w.GDS),
		"io.storage_gbps": func(s string) (err error) {
			w.StorageGBps, err = parseFloat(s, "GB/s of storage bandwidth per node")
			return
		},
		"io.checkpoint_every": intTo(&w.CheckpointEvery),
	}
}

// workloadSections are the keys whose value is a mapping.
var workloadSections = []string{"model", "dtype", "batch", "parallel", "compute", "io", "cluster"}

// decodeWorkload reads a workload mapping, fills the defaults and
// validates it; errors carry the position of the offending value.
func decodeWorkload(file string, n *yaml.Node) (Workload, error) {
	var w Workload
	if n.Kind != yaml.MappingNode {
		return w, errAt(file, n, "the workload must be a mapping of keys (params, compute_ms, ...)")
	}
	set := workloadSetters(&w)
	pos := map[string]*yaml.Node{}
	known := func(prefix string) string {
		var ks []string
		for k := range set {
			if prefix == "" && !strings.Contains(k, ".") {
				ks = append(ks, k)
			} else if prefix != "" && strings.HasPrefix(k, prefix+".") {
				ks = append(ks, strings.TrimPrefix(k, prefix+"."))
			}
		}
		if prefix == "" {
			ks = append(ks, workloadSections...)
		}
		sort.Strings(ks)
		return strings.Join(ks, ", ")
	}
	var clusterNode *yaml.Node
	var visit func(prefix string, m *yaml.Node) error
	visit = func(prefix string, m *yaml.Node) error {
		return eachKey(file, m, func(k, v *yaml.Node) error {
			key := k.Value
			if prefix != "" {
				key = prefix + "." + k.Value
			}
			if prefix == "" && k.Value == "overlap" {
				return errAt(file, k, "overlap: a fixed hidden fraction is no longer an input; DDP overlap is computed as a timeline of buckets against backward (docs/sweep.md)")
			}
			if prefix == "" && slicesContains(workloadSections, k.Value) {
				if v.Kind != yaml.MappingNode {
					keys := known(k.Value)
					if k.Value == "cluster" {
						keys = workloadClusterKeys
					}
					hint := ""
					if ext := strings.ToLower(filepath.Ext(v.Value)); k.Value == "cluster" && v.Kind == yaml.ScalarNode && (ext == ".yaml" || ext == ".yml") {
						hint = fmt.Sprintf("; a cluster file is written cluster: {file: %s}", v.Value)
					}
					return errAt(file, v, "%s: want a mapping (%s), got %s%s", k.Value, keys, gotWords(v), hint)
				}
				if k.Value == "cluster" {
					clusterNode = v
					return nil
				}
				return visit(k.Value, v)
			}
			fn := set[key]
			if fn == nil {
				return errAt(file, k, "unknown key %q (known: %s)", key, known(prefix))
			}
			if v.Kind != yaml.ScalarNode {
				return errAt(file, v, "%s: want a single value (a scalar), got %s", key, nodeWords(v))
			}
			if alias := pos[canonicalKey(key)]; alias != nil {
				return errAt(file, k, "%s: given twice (also at line %d)", key, alias.Line)
			}
			pos[canonicalKey(key)] = v
			if err := fn(v.Value); err != nil {
				return errAt(file, v, "%s: %v", key, err)
			}
			return nil
		})
	}
	if err := visit("", n); err != nil {
		return w, err
	}
	if pos["params"] == nil && (pos["model.layers"] == nil || pos["model.hidden"] == nil) {
		return w, errAt(file, n, "missing key \"params\" (the parameter count, e.g. 7e9, or model.layers and model.hidden)")
	}
	if pos["compute_ms"] == nil && pos["compute.mfu"] == nil {
		return w, errAt(file, n, "missing key \"compute_ms\" (forward + backward time of one step in milliseconds) or compute.mfu")
	}
	if clusterNode != nil {
		spec, err := decodeWorkloadCluster(file, clusterNode)
		if err != nil {
			return w, err
		}
		w.Cluster, w.ClusterAt = &spec, fmt.Sprintf("%s:%d:%d", file, clusterNode.Line, clusterNode.Column)
	}
	w = w.WithDefaults()
	if err := w.Validate(); err != nil {
		key, _, _ := strings.Cut(err.Error(), ":")
		at := n
		if v := pos[canonicalKey(key)]; v != nil {
			at = v
		}
		return w, errAt(file, at, "%v", err)
	}
	return w, nil
}

// canonicalKey maps an alias to the key its value is stored under.
func canonicalKey(k string) string {
	switch k {
	case "model.params":
		return "params"
	case "dtype.grads":
		return "grad_bytes"
	case "compute.step_ms":
		return "compute_ms"
	case "batch.micro":
		return "batch_per_gpu"
	case "model.seq_len":
		return "seq_len"
	case "parallel.zero":
		return "strategy"
	}
	return k
}

// decodeWorkloadCluster reads a workload's cluster section: a cluster
// file (relative to the workload file) or a preset, with the overrides
// the command line also takes.
func decodeWorkloadCluster(file string, n *yaml.Node) (model.ClusterSpec, error) {
	var o Overrides
	err := eachKey(file, n, func(k, v *yaml.Node) error {
		if k.Value == "env" {
			if v.Kind != yaml.MappingNode {
				return errAt(file, v, "cluster.env: want a mapping of NCCL variables")
			}
			return eachKey(file, v, func(ek, ev *yaml.Node) error {
				val, err := scalarText(file, ev, "cluster.env."+ek.Value)
				o.Set = append(o.Set, ek.Value+"="+val)
				return err
			})
		}
		if v.Kind != yaml.ScalarNode {
			return errAt(file, v, "cluster.%s: want a single value (a scalar), got %s", k.Value, nodeWords(v))
		}
		var err error
		switch k.Value {
		case "file":
			o.Cluster = v.Value
			if !filepath.IsAbs(o.Cluster) {
				o.Cluster = filepath.Join(filepath.Dir(file), o.Cluster)
			}
			err = unreadable(o.Cluster)
		case "node":
			o.Node = v.Value
		case "gpu":
			o.GPU = v.Value
		case "nics":
			o.NICs = v.Value
		case "nodes":
			o.Nodes, err = parseInt(v.Value)
		case "gpus_per_node":
			o.GPUsPerNode, err = parseInt(v.Value)
		case "nccl_version":
			o.NCCLVersion = v.Value
		default:
			return errAt(file, k, "unknown key \"cluster.%s\" (known: %s)", k.Value, workloadClusterKeys)
		}
		if err != nil {
			return errAt(file, v, "cluster.%s: %v", k.Value, err)
		}
		return nil
	})
	if err != nil {
		return model.ClusterSpec{}, err
	}
	if o.Cluster == "" && o.Node == "" {
		return model.ClusterSpec{}, errAt(file, n, "cluster: give a node preset (node: dgx-a100) or a cluster file (file: x.yaml)")
	}
	spec, err := o.Resolve()
	if err != nil {
		return spec, errAt(file, n, "cluster: %v", err)
	}
	return spec, nil
}

// ParseCount reads a count such as a parameter count: a number in any Go
// float syntax ("7e9", "7000000000", "1.5e12") or with a decimal suffix K
// (1e3), M (1e6), B or G (1e9), T (1e12): "7B", "70B", "1.5T".
func ParseCount(s string) (float64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult, t = 1e3, t[:n-1]
		case 'm', 'M':
			mult, t = 1e6, t[:n-1]
		case 'b', 'B', 'g', 'G':
			mult, t = 1e9, t[:n-1]
		case 't', 'T':
			mult, t = 1e12, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("invalid count %q (want a number such as 7e9 or 7B)", s)
	}
	return v * mult, nil
}

// FormatCount prints a count the short way: 7B, 1.5T, 350M, 12K or the
// number itself.
func FormatCount(v float64) string {
	for _, u := range []struct {
		m float64
		s string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}} {
		if v >= u.m {
			return strconv.FormatFloat(v/u.m, 'g', 4, 64) + u.s
		}
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// ParseFraction reads a fraction as a number (0.5) or a percentage (50%).
func ParseFraction(s string) (float64, error) {
	t := strings.TrimSpace(s)
	div := 1.0
	if strings.HasSuffix(t, "%") {
		t, div = strings.TrimSpace(strings.TrimSuffix(t, "%")), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("invalid fraction %q (want e.g. 0.5 or 50%%)", s)
	}
	return v / div, nil
}

// workloadClusterKeys are the keys of a workload's cluster section.
const workloadClusterKeys = "env, file, gpu, gpus_per_node, nccl_version, nics, node, nodes"

// unreadable says why the file at path, named in an input, cannot be read
// ("x.yaml does not exist"), or nil when it can be opened.
func unreadable(path string) error {
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", path)
	case err != nil:
		return fmt.Errorf("cannot read %s: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory, not a file", path)
	}
	return nil
}

// readLimited reads a YAML input of at most maxScenarioBytes.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scenarios: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScenarioBytes+1))
	if err != nil {
		return nil, fmt.Errorf("scenarios: %s: %w", path, err)
	}
	if len(data) > maxScenarioBytes {
		return nil, fmt.Errorf("scenarios: %s: file is larger than %d bytes", path, maxScenarioBytes)
	}
	return data, nil
}

// eachKey calls fn for each key and value of a mapping node in document
// order, refusing duplicate keys.
func eachKey(file string, n *yaml.Node, fn func(k, v *yaml.Node) error) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			return errAt(file, k, "duplicate key %q", k.Value)
		}
		seen[k.Value] = true
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}
