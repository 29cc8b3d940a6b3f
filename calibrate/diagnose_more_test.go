package calibrate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// modelLog is an nccl-tests log of the model's prediction for spec, with a
// device line per rank: ranks fill hosts of perHost GPUs in order (host
// names node0, node1, ...), each device named gpuName. It is parsed as a
// file, so the findings the parser draws from device lines are there.
func modelLog(t *testing.T, spec model.ClusterSpec, coll model.Collective, sizes []int64, perHost int, gpuName string) *ingest.Artifact {
	t.Helper()
	cl, pts := modelPoints(t, spec, sim.DefaultParams(), coll, sizes)
	var b strings.Builder
	fmt.Fprintf(&b, "# Collective test starting: %s_perf\n", coll.TestName())
	fmt.Fprintf(&b, "# nThread 1 nGpus 1 minBytes %d maxBytes %d step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n", sizes[0], sizes[len(sizes)-1])
	for r := 0; r < cl.NumRanks(); r++ {
		fmt.Fprintf(&b, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0000:%02x:00] %s\n", r, 1000+r, fmt.Sprintf("node%d", r/perHost), r%perHost, 16+r%perHost, gpuName)
	}
	b.WriteString("#\n#                                                              out-of-place                       in-place\n")
	b.WriteString("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n")
	b.WriteString("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n")
	for _, p := range pts {
		fmt.Fprintf(&b, "%12d  %12d     float     sum      -1  %8.2f  %6.2f  %6.2f       0  %8.2f  %6.2f  %6.2f       0\n",
			int64(p.Size), p.Count, p.TimeUs, p.AlgBW, p.BusBW, p.TimeUs, p.AlgBW, p.BusBW)
	}
	fmt.Fprintf(&b, "# Out of bounds values : 0 OK\n#\n# Collective test concluded: %s_perf\n", coll.TestName())
	a, err := ingest.Parse("model.txt", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestDiagnoseNVLSOffMultiNode: on two DGX H100 the healthy model's large
// all_reduce is NVLSTree (NVLS inside each node, a tree across them), not
// NVLS: with NCCL_NVLS_ENABLE=0 the curve must still be put down to NVLS,
// whose re-prediction reproduces it, and not to a NIC missing.
func TestDiagnoseNVLSOffMultiNode(t *testing.T) {
	healthy := scenarios.Overrides{Node: "dgx-h100", Nodes: 2}
	broken := healthy
	broken.Set = []string{"NCCL_NVLS_ENABLE=0"}
	a := synthetic(t, clusterOf(t, broken), sim.DefaultParams(), model.AllReduce, powersOfTwo(1<<20, 1<<30))
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, clusterOf(t, healthy), sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Pass || len(v.Diagnoses) == 0 {
		t.Fatalf("pass %v, diagnoses %v: want a failure with a diagnosis", v.Pass, codes(v.Diagnoses))
	}
	d := v.Diagnoses[0]
	if d.Code != calibrate.DiagNoNVLS || d.Severity != ingest.SevError || !d.Explains || d.Residual > 0.02 || d.Reproduce != "--set NCCL_NVLS_ENABLE=0" {
		t.Errorf("leading %s/%s (explains %v, residual %.3f, %q), want %s reproducing the curve; all: %v",
			d.Code, d.Severity, d.Explains, d.Residual, d.Reproduce, calibrate.DiagNoNVLS, codes(v.Diagnoses))
	}
}

// TestCheckRunMultiHostNode: a GB200 NVL72 node is one NVLink domain of 18
// hosts (trays) of 4 GPUs: a run on all of them matches one node, a run on
// another host count or another layout of ranks per host does not, and a
// node that is one host still refuses a run on two.
func TestCheckRunMultiHostNode(t *testing.T) {
	run := func(ranks int, perHost ...int) *ingest.Run {
		r := &ingest.Run{Collective: model.AllReduce, Binary: "all_reduce_perf", Line: 1, Ranks: ranks}
		rank := 0
		for h, n := range perHost {
			host := fmt.Sprintf("tray%02d", h)
			r.Hosts = append(r.Hosts, host)
			for g := 0; g < n; g++ {
				r.Devices = append(r.Devices, ingest.Device{Rank: rank, Host: host, Dev: g, Name: "NVIDIA GB200"})
				rank++
			}
		}
		return r
	}
	even := func(hosts, per int) []int {
		out := make([]int, hosts)
		for i := range out {
			out[i] = per
		}
		return out
	}
	build := func(o scenarios.Overrides) *model.Cluster {
		cl, err := clusterOf(t, o).Build()
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	nvl72 := build(scenarios.Overrides{Node: "gb200-nvl72", Nodes: 1})
	if err := calibrate.CheckRun(run(72, even(18, 4)...), nil, "gb200.txt", nvl72); err != nil {
		t.Errorf("18 hosts x 4 GPUs on one GB200 NVL72: %v", err)
	}
	if err := calibrate.CheckRun(run(72, even(18, 4)...), &ingest.NCCLLog{Ranks: 72, Nodes: 18}, "gb200.txt", nvl72); err != nil {
		t.Errorf("18 hosts x 4 GPUs, NCCL log nNodes 18: %v", err)
	}
	if err := calibrate.CheckRun(run(144, even(36, 4)...), nil, "gb200.txt", build(scenarios.Overrides{Node: "gb200-nvl72", Nodes: 2})); err != nil {
		t.Errorf("36 hosts x 4 GPUs on two GB200 NVL72: %v", err)
	}
	uneven := even(18, 4)
	uneven[0], uneven[1] = 5, 3
	for name, r := range map[string]*ingest.Run{
		"24 hosts x 3 GPUs": run(72, even(24, 3)...),
		"9 hosts x 8 GPUs":  run(72, even(9, 8)...),
		"18 hosts, 5 and 3": run(72, uneven...),
	} {
		if err := calibrate.CheckRun(r, nil, "gb200.txt", nvl72); !errors.Is(err, calibrate.ErrMismatch) {
			t.Errorf("%s on one GB200 NVL72: %v, want a mismatch", name, err)
		}
	}
	if err := calibrate.CheckRun(run(8, 4, 4), nil, "h100.txt", build(scenarios.Overrides{Node: "dgx-h100", Nodes: 1})); !errors.Is(err, calibrate.ErrMismatch) {
		t.Errorf("2 hosts on one DGX H100: %v, want a mismatch", err)
	}
}

// TestValidateGB200Log: a GB200 NVL72 log with device lines on its 18
// trays validates against --node gb200-nvl72 --nodes 1.
func TestValidateGB200Log(t *testing.T) {
	if testing.Short() {
		t.Skip("a 72-GPU node")
	}
	spec := clusterOf(t, scenarios.Overrides{Node: "gb200-nvl72", Nodes: 1})
	a := modelLog(t, spec, model.AllReduce, powersOfTwo(64<<20, 1<<30), 4, "NVIDIA GB200")
	if h := len(a.Runs[0].Hosts); h != 18 {
		t.Fatalf("the log spans %d hosts, want 18", h)
	}
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, spec, sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !v.Pass {
		t.Errorf("the model's own curve fails; diagnoses %v", codes(v.Diagnoses))
	}
}

// TestDiagnoseHealthyPCIeServer: 8 L40S on a PCIe server connect over P2P
// under each switch and over SHM across host bridges and sockets; the
// model's own curve passes, and the SHM the file shows (busbw under half
// of PCIe) is what the healthy model expects: not a warning, and the
// re-prediction with P2P disabled is not said to miss a curve it fits as
// well as the healthy model.
func TestDiagnoseHealthyPCIeServer(t *testing.T) {
	spec := clusterOf(t, scenarios.Overrides{Node: "pcie-gpu-server", GPU: "L40S"})
	a := modelLog(t, spec, model.AllReduce, powersOfTwo(1<<20, 1<<30), 8, "NVIDIA L40S")
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, spec, sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !v.Pass {
		t.Fatalf("the model's own curve fails; diagnoses %v", codes(v.Diagnoses))
	}
	for _, d := range v.Diagnoses {
		if d.Severity != ingest.SevInfo {
			t.Errorf("%s is a %s on the healthy server: %q", d.Code, d.Severity, d.Evidence)
		}
		for _, ev := range d.Evidence {
			if strings.Contains(ev, "does not reproduce") {
				t.Errorf("%s: %q", d.Code, ev)
			}
		}
	}
}

// TestDiagnoseSHMNotOnlyGPU01: the SHM hypothesis does not look at GPU0
// and GPU1 alone: on a 4-GPU node whose NVLinks form the ring 0-2-1-3
// and whose GPU0 and GPU1 sit on different sockets without a link (SHM in
// the healthy model, NVB disabled), a run with P2P disabled everywhere is put down to
// SHM instead of P2P.
func TestDiagnoseSHMNotOnlyGPU01(t *testing.T) {
	node := model.NodeSpec{GPU: "A100-SXM4", GPUs: 4, CPU: "intel",
		Sockets: []model.SocketSpec{
			{HostBridges: []model.BridgeSpec{{Switches: []model.BridgeSpec{{GPUs: []int{0, 2}}}}}},
			{HostBridges: []model.BridgeSpec{{Switches: []model.BridgeSpec{{GPUs: []int{1, 3}}}}}},
		},
		NVLink: model.NVLinkSpec{Kind: "pairs", Pairs: [][3]int{{0, 2, 4}, {2, 1, 4}, {1, 3, 4}, {3, 0, 4}}},
	}
	// NCCL_NVB_DISABLE=1: GPU0 and GPU1 do not reach each other through
	// GPU2's NVLinks.
	healthy := model.ClusterSpec{Node: node, Nodes: 1, Env: map[string]string{"NCCL_NVB_DISABLE": "1"}}
	cl, err := healthy.Build()
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	g := cl.Nodes[0].GPUs
	if p := res.GPU(g[0], g[1]); p == nil || p.Transport == model.TransportP2P {
		t.Fatalf("GPU0-GPU1 should not be P2P in this layout: %+v", p)
	}
	broken := healthy
	broken.Env = map[string]string{"NCCL_NVB_DISABLE": "1", "NCCL_P2P_DISABLE": "1"}
	a := synthetic(t, broken, sim.DefaultParams(), model.AllReduce, powersOfTwo(1<<20, 1<<30))
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, healthy, sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Pass || len(v.Diagnoses) == 0 {
		t.Fatalf("pass %v, diagnoses %v: want a failure", v.Pass, codes(v.Diagnoses))
	}
	if d := v.Diagnoses[0]; d.Code != calibrate.DiagSHM || !d.Explains || d.Residual > 0.02 {
		t.Errorf("leading %s (explains %v, residual %.3f), want %s; all %v", d.Code, d.Explains, d.Residual, calibrate.DiagSHM, codes(v.Diagnoses))
	}
}

// TestDiagnoseSmoothNotUnsteady: curves the model makes with one setting
// changed are smooth; validated against the healthy cluster they fail, and
// however far they are from the healthy model at some sizes, they are not
// called unsteady (the bcm socket run, which swings on its own, still is:
// TestDiagnoseUnsteady).
func TestDiagnoseSmoothNotUnsteady(t *testing.T) {
	healthy := scenarios.Overrides{Node: "hgx-h100-4gpu", Nodes: 2}
	for _, set := range []string{"NCCL_IB_DISABLE=1", "NCCL_NET_GDR_LEVEL=LOC", "NCCL_P2P_DISABLE=1", "NCCL_ALGO=Ring", "NCCL_PROTO=LL"} {
		t.Run(set, func(t *testing.T) {
			broken := healthy
			broken.Set = []string{set}
			a := synthetic(t, clusterOf(t, broken), sim.DefaultParams(), model.AllReduce, powersOfTwo(1<<10, 1<<30))
			v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, clusterOf(t, healthy), sim.DefaultParams(), calibrate.ValidateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if v.Pass {
				t.Fatalf("validation passed; the misconfigured curve should fail")
			}
			for _, d := range v.Diagnoses {
				if d.Code == calibrate.DiagUnsteady {
					t.Errorf("a smooth curve is called unsteady: %q; all %v", d.Evidence, codes(v.Diagnoses))
				}
			}
		})
	}
}
