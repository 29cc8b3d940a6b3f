package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// newEnv builds a preset cluster with overrides in the CLI's form.
func newEnv(t testing.TB, o scenarios.Overrides) *sim.Env {
	t.Helper()
	return specEnv(t, resolve(t, o))
}

// resolve turns overrides in the CLI's form into a cluster spec.
func resolve(t testing.TB, o scenarios.Overrides) model.ClusterSpec {
	t.Helper()
	spec, err := o.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// specEnv builds spec with the default parameters.
func specEnv(t testing.TB, spec model.ClusterSpec) *sim.Env {
	t.Helper()
	c, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.NewEnv(c, sim.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func predict(t testing.TB, e *sim.Env, coll model.Collective, eng sim.EngineKind, algo string, size model.Bytes) sim.Point {
	t.Helper()
	req := sim.Request{Coll: coll, Engine: eng, ElemSize: 4}
	if algo != "" {
		a, err := model.ParseAlgo(algo)
		if err != nil {
			t.Fatal(err)
		}
		req.Algo = &a
	}
	p, err := e.Predict(context.Background(), req, size)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPublishedFigures holds the uncalibrated DES to the published figures
// of shared/data (the acceptance list).
func TestPublishedFigures(t *testing.T) {
	type point struct {
		size     model.Bytes
		measured float64
	}
	tests := []struct {
		name   string
		source string
		o      scenarios.Overrides
		coll   model.Collective
		algo   string
		points []point
		tol    float64
		// gap, when set, reports the rows without asserting them and says why.
		gap string
	}{
		{"8x A100 AllReduce", "nccl-tests#149 (~230 GB/s); nccltests_a100sxm80_1x8_nvswitch_blog-thanos_1.txt 1-4 GB",
			scenarios.Overrides{Node: "dgx-a100"}, model.AllReduce, "", []point{{1 << 30, 230}, {4 << 30, 230}}, 0.10, ""},
		{"8x H100 ring", "nccl-tests#212 (~370 GB/s with NCCL_ALGO=RING)",
			scenarios.Overrides{Node: "dgx-h100"}, model.AllReduce, "ring", []point{{1 << 30, 370}, {8 << 30, 370}}, 0.10, ""},
		{"8x H100 NVLS", "nccl-tests#212 (~480 GB/s); xxrjun 8G 481.4, 16G 482.3 (nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt)",
			scenarios.Overrides{Node: "dgx-h100"}, model.AllReduce, "", []point{{4 << 30, 479.71}, {8 << 30, 481.39}}, 0.10, ""},
		{"Snellius 2x4 H100 AllReduce", "nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt (>= 512 MiB)",
			scenarios.Overrides{Node: "hgx-h100-4gpu", Nodes: 2, NICs: "4x200G-ib", NCCLVersion: "2.22"}, model.AllReduce, "",
			[]point{{512 << 20, 150.7}, {1 << 30, 153.6}, {2 << 30, 154.71}, {4 << 30, 155.72}, {8 << 30, 156.14}}, 0.15, ""},
		{"Snellius 2x4 H100 AllGather", "nccltests_h100sxm_2x4_ib-ndr200x4_snellius_allgather_2.txt",
			scenarios.Overrides{Node: "hgx-h100-4gpu", Nodes: 2, NICs: "4x200G-ib", NCCLVersion: "2.22"}, model.AllGather, "",
			[]point{{64 << 20, 87.29}, {256 << 20, 94.06}, {1 << 30, 95.49}, {8 << 30, 97.65}}, 0.15, ""},
		{"RTX 2080 Ti no P2P", "nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt",
			scenarios.Overrides{Node: "pcie-gpu-server", GPU: "RTX-2080TI", GPUsPerNode: 2}, model.AllReduce, "",
			[]point{{64 << 20, 3.99}, {256 << 20, 4.0}, {1 << 30, 4.0}}, 0.25, ""},
		{"ABCI 2x8 A100 (4x HDR)", "nccltests_a100sxm40_2x8_ib-hdr200x4_abci_1.txt",
			scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "4x200G-ib", NCCLVersion: "2.8"}, model.AllReduce, "",
			[]point{{16 << 20, 30.66}, {32 << 20, 33.34}}, 0.15,
			"no point >= 64 MiB in the file; at 16-32 MiB the model's NIC-bound ring is ~2.5x the 2021 measurement (see README, known gaps)"},
		{"ABCI 4x8 A100 (4x HDR)", "nccltests_a100sxm40_4x8_ib-hdr200x4_abci_1.txt",
			scenarios.Overrides{Node: "dgx-a100", Nodes: 4, NICs: "4x200G-ib", NCCLVersion: "2.8"}, model.AllReduce, "",
			[]point{{16 << 20, 29.82}, {32 << 20, 31.33}}, 0.15,
			"no point >= 64 MiB in the file; same gap as the 2-node run"},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-30s %10s %10s %10s %7s\n", "case", "size", "measured", "model", "error")
	for _, tc := range tests {
		e := newEnv(t, tc.o)
		for _, p := range tc.points {
			got := predict(t, e, tc.coll, sim.EngineDES, tc.algo, p.size)
			rel := (got.BusBW - p.measured) / p.measured
			mark := ""
			if tc.gap != "" {
				mark = "  not asserted: " + tc.gap
			}
			fmt.Fprintf(&table, "%-30s %10s %10.1f %10.1f %+6.1f%%%s\n", tc.name, model.FormatBytes(p.size), p.measured, got.BusBW, 100*rel, mark)
			if tc.gap == "" && math.Abs(rel) > tc.tol {
				t.Errorf("%s at %s: model %.1f GB/s vs measured %.1f (%s): %+.1f%% beyond %.0f%%", tc.name, model.FormatBytes(p.size), got.BusBW, p.measured, tc.source, 100*rel, 100*tc.tol)
			}
		}
	}
	t.Log(table.String())
}

// TestScheduleBytes checks each algorithm moves what its formula says,
// through the schedule's own link accounting (Schedule.LinkLoad via the
// analytic loads): ring AllReduce sends 2(n-1)/n*S per rank, AllGather and
// ReduceScatter (n-1)/n*S, NVLS about S(1+1/G) per GPU each way, AlltoAll
// (n-1)/n*S per rank.
func TestScheduleBytes(t *testing.T) {
	const S = 256 << 20
	tests := []struct {
		name    string
		preset  string
		coll    model.Collective
		algo    string
		perRank float64 // bytes each GPU sends, as a multiple of S
	}{
		{"ring allreduce", "dgx-a100", model.AllReduce, "ring", 2 * 7.0 / 8},
		{"ring allgather", "dgx-a100", model.AllGather, "ring", 7.0 / 8},
		{"ring reducescatter", "dgx-h100", model.ReduceScatter, "ring", 7.0 / 8},
		{"nvls allreduce", "dgx-h100", model.AllReduce, "nvls", (1 + 1.0/8) / sim.DefaultParams().NVLSEff[0]},
		{"alltoall", "dgx-a100", model.AlltoAll, "", 7.0 / 8},
		{"broadcast", "dgx-a100", model.Broadcast, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, scenarios.Overrides{Node: tc.preset})
			up := e.UplinkBytes(t.Context(), tc.coll, tc.algo, S)
			for g, b := range up {
				want := tc.perRank * S
				if tc.coll == model.Broadcast {
					// The last rank of the chain forwards nothing.
					if g == len(up)-1 {
						want = 0
					}
				}
				if math.Abs(b-want) > 1e-6*S+1 {
					t.Errorf("GPU%d sends %.0f B, want %.0f (%.3f S)", g, b, want, tc.perRank)
				}
			}
		})
	}
}

func TestDeterminism(t *testing.T) {
	run := func() []byte {
		e := newEnv(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "4x200G-ib"})
		pts, err := e.Sweep(context.Background(), sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4,
			Sizes: []model.Bytes{8, 64 << 10, 4 << 20, 64 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(pts)
		return b
	}
	a, b := run(), run()
	if string(a) != string(b) {
		t.Fatal("two identical predictions differ")
	}
}

func TestSymmetricRingMatchesFull(t *testing.T) {
	// The node-periodic ring (one node simulated) must equal the full ring
	// on a non-blocking fabric; a leaf-spine fabric with one node per leaf
	// and no oversubscription simulates every node and must agree.
	sizes := []model.Bytes{1 << 20, 64 << 20}
	sym := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4, Set: []string{"NCCL_ALGO=Ring"}})
	spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4, Set: []string{"NCCL_ALGO=Ring"}})
	spec.Fabric = model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: 4, Oversubscription: 1}
	full := specEnv(t, spec)
	for _, s := range sizes {
		a := predict(t, sym, model.AllReduce, sim.EngineDES, "", s)
		b := predict(t, full, model.AllReduce, sim.EngineDES, "", s)
		if rel := math.Abs(a.TimeUs-b.TimeUs) / b.TimeUs; rel > 0.01 {
			t.Errorf("%s: symmetric %.2f us, full %.2f us", model.FormatBytes(s), a.TimeUs, b.TimeUs)
		}
	}
}

func TestOversubscriptionSlowsCrossLeafRings(t *testing.T) {
	spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4, Set: []string{"NCCL_ALGO=Ring"}})
	spec.Fabric = model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: 1, Oversubscription: 4}
	over := specEnv(t, spec)
	flat := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4, Set: []string{"NCCL_ALGO=Ring"}})
	a := predict(t, over, model.AllReduce, sim.EngineDES, "", 1<<30)
	b := predict(t, flat, model.AllReduce, sim.EngineDES, "", 1<<30)
	// Every node-to-node hop crosses a 4:1 uplink: ~1/4 of the NIC bandwidth.
	if a.BusBW > 0.3*b.BusBW {
		t.Errorf("4:1 oversubscribed %.1f GB/s vs non-blocking %.1f", a.BusBW, b.BusBW)
	}
}

func TestMisconfigurationsCostBandwidth(t *testing.T) {
	base := scenarios.Overrides{Node: "dgx-h100", Nodes: 2, Set: []string{"NCCL_ALGO=Ring"}}
	healthy := predict(t, newEnv(t, base), model.AllReduce, sim.EngineAnalytic, "", 1<<30).BusBW
	for _, set := range []string{"NCCL_NET_GDR_LEVEL=LOC", "NCCL_IB_DISABLE=1", "NCCL_IB_HCA==mlx5_0"} {
		o := base
		o.Set = append([]string{set}, base.Set...)
		got := predict(t, newEnv(t, o), model.AllReduce, sim.EngineAnalytic, "", 1<<30).BusBW
		if got > 0.5*healthy {
			t.Errorf("%s: %.1f GB/s, healthy %.1f", set, got, healthy)
		}
	}
}

func TestBottleneckNamed(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{})
	p := predict(t, e, model.AllReduce, sim.EngineAnalytic, "", 1<<30)
	if p.BottleneckClass != "NIC" || !strings.Contains(p.Bottleneck, "nic") {
		t.Errorf("default scenario bottleneck = %s (%s)", p.Bottleneck, p.BottleneckClass)
	}
	us := p.Utilisation
	if len(us) == 0 || !sort.SliceIsSorted(us, func(i, j int) bool { return us[i].Busy > us[j].Busy }) {
		t.Errorf("utilisation not sorted: %+v", us)
	}
}

// TestRoCEFabricSettings: a smaller MTU and packet loss on a lossy RoCE
// fabric lower the NIC-bound busbw as the documented terms say.
func TestRoCEFabricSettings(t *testing.T) {
	busbw := func(mtu int, loss float64) float64 {
		spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "4x400G-roce", Set: []string{"NCCL_ALGO=Ring"}})
		r := model.DefaultRoCE()
		r.MTU, r.LossRate, r.PFC = mtu, loss, loss == 0
		spec.Node.NICs.RoCE = &r
		return predict(t, specEnv(t, spec), model.AllReduce, sim.EngineAnalytic, "", 4<<30).BusBW
	}
	base := busbw(4096, 0)
	// MTU 1024: (1024/1106)/(4096/4178) = 0.944 of the 4096 rate on the NICs.
	if r := busbw(1024, 0) / base; r > 0.97 || r < 0.90 {
		t.Errorf("MTU 1024 ratio %.3f, want ~0.944", r)
	}
	// 1e-3 loss at 400G: window 50e9*5e-6/4096 = 61 packets -> 0.999/1.061 = 0.941.
	if r := busbw(4096, 1e-3) / base; r > 0.97 || r < 0.90 {
		t.Errorf("loss 1e-3 ratio %.3f, want ~0.94", r)
	}
	// 1e-2 loss collapses go-back-N: 0.99/1.61 = 0.61.
	if r := busbw(4096, 1e-2) / base; r > 0.66 || r < 0.56 {
		t.Errorf("loss 1e-2 ratio %.3f, want ~0.61", r)
	}
}

// TestNVLSTree: on 2 DGX H100 nodes NCCL runs NVLS inside the nodes and a
// tree between them, which beats the ring (a user measured 430 GB/s with
// NVLS against 330 without on 2 nodes of 8x H100 with 8x 400G RoCE, NCCL
// 2.19, NVIDIA/nccl#1221); on 4 nodes NCCL 2.19 keeps the ring (320 GB/s
// both ways in the same report). The DES and analytic engines agree.
func TestNVLSTree(t *testing.T) {
	if testing.Short() {
		t.Skip("4 GiB through the DES on 2 and 4 nodes")
	}
	two := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "8x400G-roce", NCCLVersion: "2.19"})
	four := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4, NICs: "8x400G-roce", NCCLVersion: "2.19"})
	p2 := predict(t, two, model.AllReduce, sim.EngineDES, "", 4<<30)
	p4 := predict(t, four, model.AllReduce, sim.EngineDES, "", 4<<30)
	ring2 := predict(t, two, model.AllReduce, sim.EngineDES, "ring", 4<<30)
	if p2.Choice.Algo != model.AlgoNVLSTree || p4.Choice.Algo != model.AlgoRing {
		t.Fatalf("2 nodes chose %s, 4 nodes %s; want nvlstree, ring", p2.Choice.Algo, p4.Choice.Algo)
	}
	if p2.BusBW < 1.15*ring2.BusBW {
		t.Errorf("NVLSTree %.1f GB/s not above ring %.1f", p2.BusBW, ring2.BusBW)
	}
	if rel := math.Abs(p2.BusBW-430) / 430; rel > 0.25 {
		t.Errorf("2-node NVLSTree %.1f GB/s vs ~430 reported (nccl#1221)", p2.BusBW)
	}
	for _, size := range []model.Bytes{64 << 20, 1 << 30} {
		d := predict(t, two, model.AllReduce, sim.EngineDES, "nvlstree", size)
		a := predict(t, two, model.AllReduce, sim.EngineAnalytic, "nvlstree", size)
		if rel := math.Abs(d.TimeUs-a.TimeUs) / a.TimeUs; rel > 0.05 {
			t.Errorf("%s: DES %.1f us vs analytic %.1f", model.FormatBytes(size), d.TimeUs, a.TimeUs)
		}
	}
	// NVLSTree needs an NVSwitch with multicast: not on A100.
	if _, err := newEnv(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2}).Predict(t.Context(), sim.Request{Coll: model.AllReduce, Algo: ptrAlgo(model.AlgoNVLSTree)}, 1<<20); err == nil {
		t.Error("NVLSTree on A100 accepted")
	}
}

func ptrAlgo(a model.Algo) *model.Algo { return &a }
