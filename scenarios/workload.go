package scenarios

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	yaml "go.yaml.in/yaml/v3"
)

// Strategy is how a data-parallel training step moves its gradients and
// parameters.
type Strategy string

// Training strategies.
const (
	// StrategyDDP is PyTorch DistributedDataParallel: every rank holds the
	// whole model and the gradients are summed with one AllReduce per bucket.
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

// Workload is one data-parallel training step: its compute time and the
// collectives that move its gradients (and, for FSDP, its parameters).
// It is plain data; Calls lists the collectives and Step turns their
// predicted time into a step time. The model is documented in
// docs/sweep.md and by Terms.
type Workload struct {
	// Name labels the workload in output (optional).
	Name string
	// Params is the number of model parameters (7e9 for a 7B model).
	Params float64
	// GradBytes is the size of one gradient element in bytes (2 for bf16,
	// 4 for fp32); FSDP gathers parameters of the same size.
	GradBytes int
	// Bucket is the size of one DDP gradient bucket or one FSDP unit.
	Bucket model.Bytes
	// ComputeMs is the forward plus backward compute time of one step on
	// one GPU, in milliseconds. Weak scaling keeps it fixed at every size.
	ComputeMs float64
	// Overlap is the fraction (0..1) of the communication time hidden
	// behind compute; the rest is exposed and adds to the step time.
	Overlap float64
	// BatchPerGPU is the number of samples each GPU processes per step
	// (0: not given; throughput is then reported in steps per second).
	BatchPerGPU int
	// SeqLen is the number of tokens per sample (0: not given; no tokens/s).
	SeqLen int
	// Strategy is ddp (default) or fsdp.
	Strategy Strategy
}

// WorkloadCall is one kind of collective call of a training step.
type WorkloadCall struct {
	// Coll is the collective; Size its size as nccl-tests counts it (the
	// whole buffer: for AllGather the gathered output, for ReduceScatter
	// the input).
	Coll model.Collective
	Size model.Bytes
	// Count is how many such calls one step makes.
	Count int64
	// Role says what the call does ("gradient AllReduce (bucket)").
	Role string
}

// WorkloadStep is the time of one training step on a cluster.
type WorkloadStep struct {
	// CommMs is the time of all the step's collectives, one after the
	// other, in milliseconds.
	CommMs float64
	// ExposedMs is the part of CommMs not hidden behind compute:
	// CommMs × (1 − Overlap).
	ExposedMs float64
	// StepMs is ComputeMs + ExposedMs.
	StepMs float64
	// GPUs is the number of data-parallel ranks.
	GPUs int
	// StepsPerSec, SamplesPerSec and TokensPerSec are the cluster's
	// throughput (SamplesPerSec is 0 without BatchPerGPU, TokensPerSec 0
	// without SeqLen).
	StepsPerSec, SamplesPerSec, TokensPerSec float64
}

// Limits of a workload's fields.
const (
	maxParams      = 1e15
	maxComputeMs   = 1e7
	minBucket      = model.KiB
	maxBucket      = 64 * model.GiB
	maxBatchPerGPU = 1 << 20
	maxSeqLen      = 1 << 24
)

// WithDefaults returns w with the documented defaults filled in: 2-byte
// gradients, 25 MiB buckets, strategy ddp.
func (w Workload) WithDefaults() Workload {
	if w.GradBytes == 0 {
		w.GradBytes = DefaultGradBytes
	}
	if w.Bucket == 0 {
		w.Bucket = DefaultBucket
	}
	if w.Strategy == "" {
		w.Strategy = StrategyDDP
	}
	return w
}

// Validate reports the first field outside its range, naming it.
func (w Workload) Validate() error {
	switch {
	case !(w.Params >= 1) || w.Params > maxParams:
		return fmt.Errorf("params: %g is outside 1..1e15 (give the parameter count, e.g. 7e9 or 7B)", w.Params)
	case w.GradBytes != 1 && w.GradBytes != 2 && w.GradBytes != 4 && w.GradBytes != 8:
		return fmt.Errorf("grad_bytes: %d is not 1, 2, 4 or 8 (bytes per gradient element: 2 for bf16, 4 for fp32)", w.GradBytes)
	case w.Bucket < minBucket || w.Bucket > maxBucket:
		return fmt.Errorf("bucket: %s is outside 1K..64G", model.FormatBytes(w.Bucket))
	case !(w.ComputeMs > 0) || w.ComputeMs > maxComputeMs:
		return fmt.Errorf("compute_ms: %g is outside (0, 1e7] (forward + backward time of one step in milliseconds)", w.ComputeMs)
	case !(w.Overlap >= 0 && w.Overlap <= 1):
		return fmt.Errorf("overlap: %g is outside 0..1 (the fraction of communication hidden behind compute)", w.Overlap)
	case w.BatchPerGPU < 0 || w.BatchPerGPU > maxBatchPerGPU:
		return fmt.Errorf("batch_per_gpu: %d is outside 0..%d", w.BatchPerGPU, maxBatchPerGPU)
	case w.SeqLen < 0 || w.SeqLen > maxSeqLen:
		return fmt.Errorf("seq_len: %d is outside 0..%d", w.SeqLen, maxSeqLen)
	case w.SeqLen > 0 && w.BatchPerGPU == 0:
		return fmt.Errorf("seq_len needs batch_per_gpu (tokens per step = GPUs x batch_per_gpu x seq_len)")
	}
	if _, err := ParseStrategy(string(w.Strategy)); err != nil {
		return err
	}
	return nil
}

// ParseStrategy reads ddp or fsdp (zero3 is accepted for fsdp).
func ParseStrategy(s string) (Strategy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ddp":
		return StrategyDDP, nil
	case "fsdp", "zero3", "zero-3":
		return StrategyFSDP, nil
	}
	return "", fmt.Errorf("strategy: unknown %q (known: ddp, fsdp)", s)
}

// GradientBytes is the size of all gradients (and, for FSDP, of all
// parameters): Params × GradBytes, rounded up to a whole byte.
func (w Workload) GradientBytes() model.Bytes {
	return model.Bytes(math.Ceil(w.Params * float64(w.GradBytes)))
}

// Buckets returns the number of full buckets and the size of the last,
// partial one (0 when the gradients divide evenly).
func (w Workload) Buckets() (full int64, rest model.Bytes) {
	total := w.GradientBytes()
	return int64(total / w.Bucket), total % w.Bucket
}

// Calls lists the collectives of one step, largest calls first. For ddp:
// one AllReduce per bucket. For fsdp: per unit, two AllGathers of the
// parameters (forward, and again for the backward pass, because
// FULL_SHARD frees gathered parameters after use) and one ReduceScatter of
// the gradients. The step's calls run one after another on one
// communicator. w must be valid.
func (w Workload) Calls() []WorkloadCall {
	full, rest := w.Buckets()
	var out []WorkloadCall
	add := func(size model.Bytes, n int64, unit string) {
		if n == 0 || size == 0 {
			return
		}
		switch w.Strategy {
		case StrategyFSDP:
			out = append(out,
				WorkloadCall{Coll: model.AllGather, Size: size, Count: 2 * n, Role: "parameter AllGather, forward and backward (" + unit + ")"},
				WorkloadCall{Coll: model.ReduceScatter, Size: size, Count: n, Role: "gradient ReduceScatter (" + unit + ")"})
		default:
			out = append(out, WorkloadCall{Coll: model.AllReduce, Size: size, Count: n, Role: "gradient AllReduce (" + unit + ")"})
		}
	}
	what := "bucket"
	if w.Strategy == StrategyFSDP {
		what = "unit"
	}
	add(w.Bucket, full, what)
	add(rest, 1, "last, partial "+what)
	return out
}

// Step combines the communication time of one step (the sum over Calls of
// count × predicted time, in microseconds) with the compute time on gpus
// data-parallel ranks: exposed = comm × (1 − Overlap), step = compute +
// exposed.
func (w Workload) Step(commUs float64, gpus int) WorkloadStep {
	s := WorkloadStep{CommMs: commUs / 1000, GPUs: gpus}
	s.ExposedMs = s.CommMs * (1 - w.Overlap)
	s.StepMs = w.ComputeMs + s.ExposedMs
	if s.StepMs > 0 {
		s.StepsPerSec = 1000 / s.StepMs
		s.SamplesPerSec = s.StepsPerSec * float64(gpus*w.BatchPerGPU)
		s.TokensPerSec = s.SamplesPerSec * float64(w.SeqLen)
	}
	return s
}

// WeakScalingEfficiency is the step-time scaling efficiency of at against
// the reference ref (one node): ref.StepMs / at.StepMs. With a fixed batch
// per GPU (weak scaling) perfect scaling keeps the step time, so the
// efficiency is 1; communication that grows with the cluster lowers it.
func WeakScalingEfficiency(ref, at WorkloadStep) float64 {
	if at.StepMs <= 0 {
		return math.NaN()
	}
	return ref.StepMs / at.StepMs
}

// Throughput returns the step's headline throughput and its unit: tokens/s
// with SeqLen, samples/s with BatchPerGPU, steps/s otherwise.
func (w Workload) Throughput(s WorkloadStep) (float64, string) {
	switch {
	case w.SeqLen > 0:
		return s.TokensPerSec, "tokens/s"
	case w.BatchPerGPU > 0:
		return s.SamplesPerSec, "samples/s"
	}
	return s.StepsPerSec, "steps/s"
}

// Describe summarises the workload in one line: "ddp, 7e+09 params x 2 B =
// 14 GB of gradients in 534 AllReduce buckets of 25M; compute 300 ms per
// step; overlap 0".
func (w Workload) Describe() string {
	full, rest := w.Buckets()
	n := full
	if rest > 0 {
		n++
	}
	name := ""
	if w.Name != "" {
		name = w.Name + ": "
	}
	what := fmt.Sprintf("%d AllReduce bucket(s) of %s", n, model.FormatBytes(w.Bucket))
	kind := "gradients"
	if w.Strategy == StrategyFSDP {
		what = fmt.Sprintf("%d unit(s) of %s, each gathered twice (AllGather) and reduced once (ReduceScatter)", n, model.FormatBytes(w.Bucket))
		kind = "parameters and gradients"
	}
	out := fmt.Sprintf("%s%s, %s params x %d B = %s GB of %s in %s; compute %s ms per step; overlap %s",
		name, w.Strategy, FormatCount(w.Params), w.GradBytes, strconv.FormatFloat(float64(w.GradientBytes())/1e9, 'g', 4, 64), kind, what,
		strconv.FormatFloat(w.ComputeMs, 'g', 6, 64), strconv.FormatFloat(w.Overlap, 'g', 4, 64))
	if w.BatchPerGPU > 0 {
		out += fmt.Sprintf("; %d sample(s) per GPU", w.BatchPerGPU)
		if w.SeqLen > 0 {
			out += fmt.Sprintf(" of %d tokens", w.SeqLen)
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

// Terms lists the workload model's terms with their sources, for reports.
func (w Workload) Terms() []Term {
	bucket := "PyTorch DDP default: torch.nn.parallel.DistributedDataParallel(bucket_cap_mb=25), 25 x 1024 x 1024 bytes"
	if w.Bucket != DefaultBucket {
		bucket = "given (PyTorch DDP default: bucket_cap_mb=25, 25 MiB)"
	}
	if w.Strategy == StrategyFSDP {
		bucket = "given as the FSDP unit size (the parameters one wrapped module holds); assumption: units of equal size"
	}
	ts := []Term{
		{"workload: strategy", string(w.Strategy), "ddp: one gradient AllReduce per bucket (PyTorch DDP); fsdp: AllGather of parameters before forward and backward, ReduceScatter of gradients, per unit (PyTorch FSDP FULL_SHARD, ZeRO-3)"},
		{"workload: gradient bytes", fmt.Sprintf("%s params x %d B", FormatCount(w.Params), w.GradBytes), "given; 2 B (bf16) is the default, an assumption for mixed-precision training"},
		{"workload: bucket", model.FormatBytes(w.Bucket), bucket},
		{"workload: calls", "one after another", "assumption: the step's collectives share one communicator, whose operations NCCL runs in order on one stream; the last bucket is the remainder (DDP's smaller first bucket, 1 MiB, is not modelled)"},
		{"workload: compute", strconv.FormatFloat(w.ComputeMs, 'g', 6, 64) + " ms", "given: forward + backward time of one step on one GPU; fixed at every cluster size (weak scaling: fixed batch per GPU)"},
		{"workload: overlap", strconv.FormatFloat(w.Overlap, 'g', 4, 64), "given (default 0: no overlap); exposed communication = communication x (1 - overlap), step = compute + exposed"},
		{"workload: scaling efficiency", "step(1 node) / step(N nodes)", "weak scaling: with the batch per GPU fixed, ideal scaling keeps the step time"},
	}
	return ts
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

// LoadWorkloadFile reads a workload YAML file (schema: LoadWorkload).
func LoadWorkloadFile(path string) (Workload, error) {
	data, err := readLimited(path)
	if err != nil {
		return Workload{}, err
	}
	return LoadWorkload(path, data)
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

// LoadWorkload parses a workload YAML document; errors name
// file:line:column and the key. The schema is:
//
//	name: text                # optional label
//	params: 7e9               # parameter count (7e9, 7B, 70B, 1.5T)
//	grad_bytes: 2             # bytes per gradient element (default 2: bf16)
//	bucket: 25M               # DDP bucket / FSDP unit (default 25M = 25 MiB)
//	compute_ms: 300           # forward + backward per step on one GPU
//	overlap: 0.5              # fraction of communication hidden (default 0)
//	batch_per_gpu: 4          # optional: samples per GPU per step
//	seq_len: 4096             # optional: tokens per sample
//	strategy: ddp             # ddp (default) | fsdp
func LoadWorkload(file string, data []byte) (Workload, error) {
	doc, err := parseYAML(file, data)
	if err != nil {
		return Workload{}, err
	}
	if len(doc.Content) == 0 {
		return Workload{}, fmt.Errorf("%s: empty workload file", file)
	}
	return decodeWorkload(file, doc.Content[0])
}

// decodeWorkload reads a workload mapping, fills the defaults and
// validates it; errors carry the position of the offending value.
func decodeWorkload(file string, n *yaml.Node) (Workload, error) {
	var w Workload
	if n.Kind != yaml.MappingNode {
		return w, errAt(file, n, "the workload must be a mapping of keys (params, compute_ms, ...)")
	}
	pos := map[string]*yaml.Node{}
	err := eachKey(file, n, func(k, v *yaml.Node) error {
		if !isWorkloadKey(k.Value) {
			return errAt(file, k, "unknown key %q (known: %s)", k.Value, strings.Join(workloadKeys[:], ", "))
		}
		if v.Kind != yaml.ScalarNode {
			return errAt(file, v, "%s: want a single value", k.Value)
		}
		pos[k.Value] = v
		var err error
		switch k.Value {
		case "name":
			w.Name = v.Value
		case "params":
			w.Params, err = ParseCount(v.Value)
		case "grad_bytes":
			w.GradBytes, err = strconv.Atoi(v.Value)
			if err != nil {
				err = fmt.Errorf("want an integer (2 for bf16, 4 for fp32), got %q", v.Value)
			}
		case "bucket":
			w.Bucket, err = model.ParseBytes(v.Value)
		case "compute_ms":
			w.ComputeMs, err = strconv.ParseFloat(v.Value, 64)
			if err != nil {
				err = fmt.Errorf("want a number of milliseconds, got %q", v.Value)
			}
		case "overlap":
			w.Overlap, err = ParseFraction(v.Value)
		case "batch_per_gpu":
			w.BatchPerGPU, err = strconv.Atoi(v.Value)
			if err != nil {
				err = fmt.Errorf("want an integer, got %q", v.Value)
			}
		case "seq_len":
			w.SeqLen, err = strconv.Atoi(v.Value)
			if err != nil {
				err = fmt.Errorf("want an integer, got %q", v.Value)
			}
		case "strategy":
			w.Strategy, err = ParseStrategy(v.Value)
			if err != nil {
				return errAt(file, v, "%v", err)
			}
		}
		if err != nil {
			return errAt(file, v, "%s: %v", k.Value, err)
		}
		return nil
	})
	if err != nil {
		return w, err
	}
	if pos["params"] == nil {
		return w, errAt(file, n, "missing key \"params\" (the parameter count, e.g. 7e9)")
	}
	if pos["compute_ms"] == nil {
		return w, errAt(file, n, "missing key \"compute_ms\" (forward + backward time of one step in milliseconds)")
	}
	w = w.WithDefaults()
	if err := w.Validate(); err != nil {
		key, _, _ := strings.Cut(err.Error(), ":")
		at := n
		if v := pos[key]; v != nil {
			at = v
		}
		return w, errAt(file, at, "%v", err)
	}
	return w, nil
}

// workloadKeys are the keys of a workload mapping, in schema order.
var workloadKeys = [...]string{"name", "params", "grad_bytes", "bucket", "compute_ms", "overlap", "batch_per_gpu", "seq_len", "strategy"}

func isWorkloadKey(k string) bool {
	for _, x := range workloadKeys {
		if x == k {
			return true
		}
	}
	return false
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
