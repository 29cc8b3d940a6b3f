package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/collsim/collsim/scenarios"
	yaml "go.yaml.in/yaml/v3"
)

// storyPoint is one point of `collsim scale --workload STORY --format json`.
type storyPoint struct {
	GPUs            int      `json:"gpus"`
	Nodes           int      `json:"nodes"`
	Efficiency      *float64 `json:"efficiency"`
	StepMs          float64  `json:"step_ms"`
	ExposedMs       float64  `json:"exposed_ms"`
	Bottleneck      string   `json:"bottleneck"`
	BottleneckClass string   `json:"bottleneck_class"`
	Breaks          string   `json:"breaks"`
	Advice          string   `json:"advice"`
	Refused         string   `json:"refused"`
}

func story(t *testing.T, name string) map[int]storyPoint {
	t.Helper()
	code, out, errs := runCLI(t, "scale", "--workload", "../../examples/stories/"+name+".yaml", "--format", "json")
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", name, code, errs)
	}
	var doc struct {
		Reference string       `json:"reference"`
		Points    []storyPoint `json:"points"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Reference, "one GPU") {
		t.Errorf("%s: reference %q", name, doc.Reference)
	}
	m := map[int]storyPoint{}
	for _, p := range doc.Points {
		m[p.GPUs] = p
	}
	return m
}

func eff(p storyPoint) float64 {
	if p.Efficiency == nil {
		return math.NaN()
	}
	return *p.Efficiency
}

// TestStoryDDPPCIe pins the first story, ResNet-50 DDP (NVIDIA's measured
// 103.6 ms per 256-image step on one A100) on one 8-GPU A100 PCIe server.
//
// The README states the claim to check: "~60% of 8x one GPU without P2P".
// The model computes 95.5% at 8 GPUs without P2P, and says why it is not
// lower: NCCL falls back to SHM, a copy through host memory (nccl-facts:
// transport order P2P -> SHM -> NET; a refused P2P path is rerouted
// through the CPU), where a GPU that sends and receives at once gets a
// third of its PCIe link (shm.eff.twoway), so the 102 MB of fp32 gradients
// take 21.5 ms, 21% of compute; but DDP's buckets run during backward
// (69 ms), so only the last bucket's ~5 ms is exposed. ~60%
// would need 2/3 of compute exposed: a job with ~4x more gradient bytes per
// FLOP, or a loss the communication model has not got (the SHM copy
// kernels competing with compute: on NVLink, where communication is
// nearly free, NVIDIA measured this job at 16621 / (8 x 2470) = 84% while
// the model gives 99.8%).
//
// With P2P on every path (NCCL_P2P_LEVEL=SYS) 8 GPUs reach 94.1%; with
// NCCL's default level (PXB) two GPUs under one switch use P2P (99.1%
// instead of 97.1%), but an 8-GPU ring crosses the sockets, where P2P is
// still refused, so at 8 GPUs it gives the no-P2P 95.5%.
func TestStoryDDPPCIe(t *testing.T) {
	no := story(t, "ddp-pcie-no-p2p")
	p2p := story(t, "ddp-pcie-p2p")
	nvl := story(t, "ddp-nvlink")
	within := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s: %.4f, want %.4f +- %.4f", what, got, want, tol)
		}
	}
	within("no P2P, 8 GPUs", eff(no[8]), 0.955, 0.005)
	within("no P2P, 2 GPUs", eff(no[2]), 0.971, 0.005)
	within("P2P, 2 GPUs", eff(p2p[2]), 0.991, 0.005)
	within("P2P, 8 GPUs", eff(p2p[8]), 0.941, 0.005)
	code, out, errs := runCLI(t, "scale", "--node", "pcie-gpu-server", "--gpu", "A100-PCIE", "--workload", "../../examples/stories/ddp-pcie-p2p.yaml", "--gpus-list", "2,8", "--format", "json")
	var def struct{ Points []storyPoint }
	if code != 0 || json.Unmarshal([]byte(out), &def) != nil || len(def.Points) != 2 {
		t.Fatalf("default P2P level: exit %d: %s", code, errs)
	}
	within("default P2P level, 2 GPUs", eff(def.Points[0]), 0.991, 0.005)
	within("default P2P level, 8 GPUs (SHM across sockets)", eff(def.Points[1]), eff(no[8]), 1e-9)
	within("NVLink, 8 GPUs", eff(nvl[8]), 0.998, 0.002)
	for _, p := range []storyPoint{no[1], p2p[1], nvl[1]} {
		within("one GPU", eff(p), 1, 0)
	}
	if !strings.Contains(no[8].Breaks, "host-memory reads, traffic both ways (SHM)") || no[8].Bottleneck != "DP gradient AllReduce" {
		t.Errorf("no P2P mechanism: %s / %s", no[8].Bottleneck, no[8].Breaks)
	}
	if !strings.Contains(no[8].Advice, "below the ~30% rule of thumb") || !strings.Contains(no[8].Advice, "mostly cost") {
		t.Errorf("advice: %s", no[8].Advice)
	}
}

// TestStory100B pins the second story: ~100B parameters (80 layers,
// hidden 10240) on 4 nodes of 8 A100-SXM4 with TP 8 inside each node and
// ZeRO-3 across nodes. It does not fit on 1 or 2 nodes (16 B of state per
// parameter: 101e9 x 16 / 16 GPUs = 101 GB, more than 80); on 2x 100GbE
// the parameter AllGathers of every micro-batch bind on the NICs (8.3%
// efficiency); 8x 400G (IB or RoCE alike) moves the limit to the PCIe
// Gen4 switch the GPU and its NIC share (62.0%).
func TestStory100B(t *testing.T) {
	slow := story(t, "100b-4x8-2x100g")
	ib := story(t, "100b-4x8-8x400g-ib")
	roce := story(t, "100b-4x8-8x400g-roce")
	for _, g := range []int{8, 16} {
		if !strings.Contains(slow[g].Refused, "does not fit in GPU memory") || slow[g].Efficiency != nil {
			t.Errorf("%d GPUs: %+v", g, slow[g])
		}
	}
	if e := eff(slow[32]); math.Abs(e-0.086) > 0.005 || slow[32].BottleneckClass != "NIC" || !strings.Contains(slow[32].Bottleneck, "DP parameter AllGather") {
		t.Errorf("2x100G: efficiency %.4f, %s / %s", e, slow[32].BottleneckClass, slow[32].Bottleneck)
	}
	if e := eff(ib[32]); math.Abs(e-0.620) > 0.005 || ib[32].BottleneckClass != "PCIe" {
		t.Errorf("8x400G IB: efficiency %.4f, %s", e, ib[32].BottleneckClass)
	}
	if eff(roce[32]) != eff(ib[32]) {
		t.Errorf("RoCE %.4f vs IB %.4f: both are PCIe-bound, so they should agree", eff(roce[32]), eff(ib[32]))
	}
	if !strings.Contains(slow[32].Advice, "agrees: a faster interconnect pays") {
		t.Errorf("advice: %s", slow[32].Advice)
	}
}

// TestExampleWorkloads: every built-in workload runs as its header says
// (the command line is the file's own), and the GPT-3 3D example's small
// DP ReduceScatter (one GPU per node over 24 nodes) runs NCCL's own
// choice there, PAT.
func TestExampleWorkloads(t *testing.T) {
	for _, tc := range []struct{ file, args string }{
		{"llama2-7b-fsdp", "--node dgx-h100 --nics 8x400G-ib --max-nodes 16"},
		{"gpt3-175b-3d", "--node dgx-a100 --nics 8x200G-ib --nodes-list 24,48,96,192"},
		{"moe-8x7b-ep", "--node dgx-h100 --nics 8x400G-ib --nodes-list 2,4,8"},
	} {
		args := append([]string{"scale"}, strings.Fields(tc.args)...)
		code, out, errs := runCLI(t, append(args, "--workload", "../../examples/workloads/"+tc.file+".yaml")...)
		if code != 0 || !strings.Contains(out, "efficiency") {
			t.Errorf("%s: exit %d: %s", tc.file, code, errs)
		}
		if tc.file == "gpt3-175b-3d" && !strings.Contains(out, "pat/simple") {
			t.Errorf("%s: no collective runs PAT:\n%s", tc.file, out)
		}
	}
}

// TestDistributedExamples: the Slurm array script parses (bash -n) and
// names the shard and merge steps; every document of the Kubernetes
// manifest parses and has the fields Kubernetes requires of a Job, the
// sweep Job being an Indexed one with as many completions as its shards;
// the grid they run loads.
func TestDistributedExamples(t *testing.T) {
	const dir = "../../examples/distributed/"
	if bash, err := exec.LookPath("bash"); err != nil {
		t.Log("bash not found; skipping the syntax check of the Slurm script")
	} else if out, err := exec.Command(bash, "-n", dir+"slurm-sweep.sh").CombinedOutput(); err != nil {
		t.Errorf("bash -n: %v: %s", err, out)
	}
	script, err := os.ReadFile(dir + "slurm-sweep.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH", "SLURM_ARRAY_TASK_ID", `--shard "$I/$SHARDS"`, `merge "${parts[@]}"`} {
		if !strings.Contains(string(script), want) {
			t.Errorf("slurm-sweep.sh lacks %q", want)
		}
	}
	f, err := os.Open(dir + "k8s-sweep.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var jobs []map[string]any
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("k8s-sweep.yaml: %v", err)
		}
		jobs = append(jobs, doc)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d documents, want the sweep Job and the merge Job", len(jobs))
	}
	for i, j := range jobs {
		spec, _ := j["spec"].(map[string]any)
		tmpl, _ := spec["template"].(map[string]any)
		tspec, _ := tmpl["spec"].(map[string]any)
		containers, _ := tspec["containers"].([]any)
		meta, _ := j["metadata"].(map[string]any)
		if j["apiVersion"] != "batch/v1" || j["kind"] != "Job" || meta["name"] == nil || spec == nil || tmpl == nil || len(containers) == 0 ||
			spec["completions"] == nil || spec["parallelism"] == nil || (tspec["restartPolicy"] != "Never" && tspec["restartPolicy"] != "OnFailure") {
			t.Errorf("document %d lacks a required Job field: %v", i, j)
		}
	}
	sweep := jobs[0]["spec"].(map[string]any)
	args := fmt.Sprint(sweep["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0])
	if sweep["completionMode"] != "Indexed" || sweep["completions"] != 8 || !strings.Contains(args, "JOB_COMPLETION_INDEX") || !strings.Contains(args, `--shard "$I/8"`) {
		t.Errorf("sweep Job: completionMode %v, completions %v, args %s", sweep["completionMode"], sweep["completions"], args)
	}
	if s, err := scenarios.LoadSweepFile(dir + "grid.yaml"); err != nil || s.Size() != 192 {
		t.Errorf("grid.yaml: %v", err)
	}
}
