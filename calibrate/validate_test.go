package calibrate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

func rawFile(t *testing.T, name string) *ingest.Artifact {
	t.Helper()
	a, err := ingest.ParseFile(filepath.Join("..", "ingest", "testdata", "raw", name))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func codes(ds []calibrate.Diagnosis) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Code+"/"+d.Severity)
	}
	return out
}

// TestValidateDegradedRuns validates the corpus's degraded runs against
// the model of the healthy cluster they should have been (MANIFEST rows
// 29, 44 and 2): each must fail, and the diagnosis must name the cause,
// whether the cluster is given at the runs' 2 nodes or at one node, as
// `collsim validate --node X --measured FILE` gives it, the node count
// then inferred from the rank count: the network's causes are weighed at
// the run's scale, and the cluster is described at it.
func TestValidateDegradedRuns(t *testing.T) {
	tests := []struct {
		name, file string
		healthy    scenarios.Overrides
		want       string
		// first: the cause must be the most likely one, not just listed.
		first bool
	}{
		// RoCE 400G without GPUDirect RDMA: ~15 GB/s against ~47 modelled;
		// the log says "GDR 0" and its NET lines lack GDRDMA.
		{"moc RoCE without GDR", "nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt",
			scenarios.Overrides{Node: "dgx-h100", Nodes: 2, GPUsPerNode: 1, NICs: "1x400G-roce", NCCLVersion: "2.26"}, calibrate.DiagNoGDR, true},
		// NCCL_IB_DISABLE=1 over ens3: ~0.9 GB/s against ~12 for 100G IB.
		{"bcm socket", "nccltests_v100sxm3_2x1_tcp-socket_bcm-manual_1.txt",
			scenarios.Overrides{Node: "v100-4gpu-nvlink", Nodes: 2, GPUsPerNode: 1, NICs: "1x100G-ib", NCCLVersion: "2.11"}, calibrate.DiagSocket, true},
		// A100 PCIe and HDR NIC on different sockets with GDR forced
		// across the CPU (nccl-tests#293): 6.4 GB/s against ~23.
		{"nccl-tests#293 GPU and NIC across sockets", "nccltests_a100pcie40_2x1_ib-hdr200x1-gdr-sys_ncclTests293_1.txt",
			scenarios.Overrides{Node: "pcie-gpu-server", Nodes: 2, GPU: "A100-PCIE", GPUsPerNode: 1, NICs: "1x200G-ib", NCCLVersion: "2.21"}, calibrate.DiagGDRFar, true},
	}
	for _, tc := range tests {
		for _, inferred := range []bool{false, true} {
			name := tc.name
			healthy := tc.healthy
			if inferred {
				name += ", nodes inferred"
				healthy.Nodes = 0
			}
			t.Run(name, func(t *testing.T) { validateDegraded(t, tc.file, healthy, tc.want, tc.first) })
		}
	}
}

func validateDegraded(t *testing.T, file string, healthy scenarios.Overrides, want string, first bool) {
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{rawFile(t, file)}, clusterOf(t, healthy), sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.Cluster, "2 x ") {
		t.Errorf("cluster %q, want the runs' 2 nodes", v.Cluster)
	}
	if v.Pass {
		t.Errorf("validation passed; want a failure")
	}
	if len(v.Diagnoses) == 0 {
		t.Fatal("no diagnosis")
	}
	t.Logf("diagnoses: %v", codes(v.Diagnoses))
	found := false
	for _, d := range v.Diagnoses {
		if d.Code == want {
			found = true
			if len(d.Evidence) == 0 || d.Fix == "" || d.Title == "" {
				t.Errorf("%s: missing title, evidence or fix: %+v", d.Code, d)
			}
		}
	}
	if !found {
		t.Errorf("diagnoses %v do not name %s", codes(v.Diagnoses), want)
	}
	if first {
		if d := v.Diagnoses[0]; d.Code != want || d.Severity != ingest.SevError || !d.Explains {
			t.Errorf("most likely cause %s (%s, explains %v), want %s explaining the curve", d.Code, d.Severity, d.Explains, want)
		}
	}
}

// TestValidateSHMBox: two GeForce GPUs under one switch without P2P (MANIFEST
// row 36, a healthy run of a box that cannot do PCIe P2P) pass against the
// model of that box, which already uses SHM (the catalog's NoPCIeP2P): every
// table, AllGather's included (its one-way ring steps, shm.eff.lockstep),
// is within the tolerance, and the SHM path is named as information.
func TestValidateSHMBox(t *testing.T) {
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{rawFile(t, "nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt")},
		clusterOf(t, scenarios.Overrides{Node: "pcie-gpu-server", GPU: "RTX-2080TI", GPUsPerNode: 2}), sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !v.Pass {
		t.Errorf("healthy SHM box failed; diagnoses %v", codes(v.Diagnoses))
	}
	found := false
	for _, d := range v.Diagnoses {
		if d.Code == calibrate.DiagSHM {
			found = true
			if d.Severity == ingest.SevError {
				t.Errorf("%s is an error on a box whose model uses SHM", d.Code)
			}
		}
	}
	if !found {
		t.Errorf("diagnoses %v do not name %s", codes(v.Diagnoses), calibrate.DiagSHM)
	}
}

// TestValidateHealthyRun: the xxrjun 8x H100 AllReduce run (MANIFEST row
// 28) against the DGX H100 model passes: its bandwidth-regime busbw is
// within 1-6% of the model (accuracy harness, uncalibrated column).
func TestValidateHealthyRun(t *testing.T) {
	a := rawFile(t, "nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt")
	a.Runs = a.Runs[:1] // the all_reduce table
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, clusterOf(t, scenarios.Overrides{Node: "dgx-h100", NCCLVersion: "2.29"}), sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := v.Series[0]
	if !v.Pass {
		t.Errorf("healthy run failed: %d points outside 10%%; bandwidth regime %+v; diagnoses %v", s.Failures, s.Regime(calibrate.RegimeBandwidth), codes(v.Diagnoses))
	}
	if s.Gate != calibrate.RegimeBandwidth || s.Regime(calibrate.RegimeBandwidth).Points != 9 {
		t.Errorf("gate %q with %d points; the run has 9 sizes of 64 MiB to 16 GiB", s.Gate, s.Regime(calibrate.RegimeBandwidth).Points)
	}
	for _, d := range v.Diagnoses {
		if d.Severity == ingest.SevError {
			t.Errorf("error diagnosis on a healthy run: %+v", d)
		}
	}
}

// TestValidateMidRegime: the ABCI runs stop at 32 MiB, so their sizes of
// 8-32 MiB decide, reported as the "mid" regime and said so.
func TestValidateMidRegime(t *testing.T) {
	a := rawFile(t, "nccltests_v100sxm2_1x4_nvlink_abci_1.txt")
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, clusterOf(t, scenarios.Overrides{Node: "v100-4gpu-nvlink", NCCLVersion: "2.8"}), sim.DefaultParams(), calibrate.ValidateOptions{Tolerance: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	s := v.Series[0]
	// 8, 16 and 32 MiB.
	if s.Gate != calibrate.RegimeMid || s.Regime(calibrate.RegimeMid).Points != 3 || s.Regime(calibrate.RegimeBandwidth).Points != 0 {
		t.Errorf("gate %q, regimes %+v; want the 3 sizes of 8-32 MiB as mid", s.Gate, s.Regimes)
	}
	if !strings.Contains(strings.Join(v.Notes, "\n"), "mid") {
		t.Errorf("notes %v do not say the mid regime decides", v.Notes)
	}
}

// TestValidateMismatch: measurements that do not match the cluster are
// refused with a message that says which fact differs.
func TestValidateMismatch(t *testing.T) {
	a := rawFile(t, "nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt")
	tests := []struct {
		name string
		o    scenarios.Overrides
		want string
	}{
		{"rank count", scenarios.Overrides{Node: "hgx-h100-4gpu", Nodes: 4, GPUsPerNode: 3}, "the run has 8 ranks, the cluster has 12"},
		{"GPU type", scenarios.Overrides{Node: "v100-4gpu-nvlink", Nodes: 2}, "GPU type: rank 0 runs on"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, clusterOf(t, tc.o), sim.DefaultParams(), calibrate.ValidateOptions{})
			if !errors.Is(err, calibrate.ErrMismatch) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrMismatch saying %q", err, tc.want)
			}
		})
	}
}

// TestDiagnoseSynthetic: measurements the model produces with one
// misconfiguration applied, validated against the healthy cluster, are
// diagnosed as that misconfiguration (no file evidence: the curve alone).
func TestDiagnoseSynthetic(t *testing.T) {
	tests := []struct {
		name    string
		healthy scenarios.Overrides
		broken  func(o scenarios.Overrides) scenarios.Overrides
		coll    model.Collective
		want    string
	}{
		{"P2P disabled on a PCIe switch", scenarios.Overrides{Node: "pcie-gpu-server", GPU: "L40S", GPUsPerNode: 2},
			func(o scenarios.Overrides) scenarios.Overrides { o.Set = []string{"NCCL_P2P_DISABLE=1"}; return o }, model.AllReduce, calibrate.DiagSHM},
		{"no GPUDirect RDMA", scenarios.Overrides{Node: "dgx-h100", Nodes: 2, GPUsPerNode: 1, NICs: "1x400G-ib"},
			func(o scenarios.Overrides) scenarios.Overrides { o.Set = []string{"NCCL_NET_GDR_LEVEL=LOC"}; return o }, model.AllReduce, calibrate.DiagNoGDR},
		{"sockets over 10GbE", scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "8xHDR-ib"},
			func(o scenarios.Overrides) scenarios.Overrides {
				o.Set, o.NICs = []string{"NCCL_IB_DISABLE=1"}, "1x10G-tcp"
				return o
			}, model.AllReduce, calibrate.DiagSocket},
		{"4 of 8 NICs in use", scenarios.Overrides{Node: "dgx-h100", Nodes: 4},
			func(o scenarios.Overrides) scenarios.Overrides {
				o.Set = []string{"NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3"}
				return o
			}, model.AllGather, calibrate.DiagFewerNICs},
		{"NVLS off", scenarios.Overrides{Node: "dgx-h100"},
			func(o scenarios.Overrides) scenarios.Overrides { o.Set = []string{"NCCL_NVLS_ENABLE=0"}; return o }, model.AllReduce, calibrate.DiagNoNVLS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			broken := clusterOf(t, tc.broken(tc.healthy))
			a := synthetic(t, broken, sim.DefaultParams(), tc.coll, powersOfTwo(1<<20, 4<<30))
			v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, clusterOf(t, tc.healthy), sim.DefaultParams(), calibrate.ValidateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if v.Pass {
				t.Fatalf("validation passed; the misconfigured curve should fail")
			}
			if d := v.Diagnoses[0]; d.Code != tc.want || !d.Explains || d.Residual > 0.05 {
				t.Errorf("most likely cause %s (explains %v, residual %.3f), want %s reproducing the curve; all: %v", d.Code, d.Explains, d.Residual, tc.want, codes(v.Diagnoses))
			}
		})
	}
}

// TestDiagnoseRoCEJitter: on a RoCE cluster, large sizes whose busbw
// swings by 40% from one size to the next (the signature of PFC pauses or
// an MTU mismatch) are reported as a fabric problem with the sizes that
// show it.
func TestDiagnoseRoCEJitter(t *testing.T) {
	healthy := clusterOf(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, GPUsPerNode: 1, NICs: "1x400G-roce"})
	a := synthetic(t, healthy, sim.DefaultParams(), model.AllReduce, powersOfTwo(64<<20, 4<<30))
	// Every other size takes 1.7x as long (busbw -41%).
	for i := range a.Runs[0].Rows {
		if i%2 == 1 {
			a.Runs[0].Rows[i].OOP.TimeUs *= 1.7
		}
	}
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, healthy, sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got *calibrate.Diagnosis
	for i := range v.Diagnoses {
		if v.Diagnoses[i].Code == calibrate.DiagRoCEFabric {
			got = &v.Diagnoses[i]
		}
	}
	if got == nil || !strings.Contains(strings.Join(got.Evidence, " "), "falls by 41%") {
		t.Fatalf("no RoCE fabric diagnosis with the 41%% drops; diagnoses %v", codes(v.Diagnoses))
	}
}

// TestDiagnosePCIeBound: a PCIe-only node whose links deliver half their
// rate (x8 instead of x16) is diagnosed as PCIe-bound.
func TestDiagnosePCIeBound(t *testing.T) {
	healthy := clusterOf(t, scenarios.Overrides{Node: "pcie-gpu-server", GPU: "L40S", GPUsPerNode: 2})
	slow := sim.DefaultParams()
	for g := range slow.PCIeEff {
		slow.PCIeEff[g] *= 0.5
	}
	a := synthetic(t, healthy, slow, model.AllReduce, powersOfTwo(64<<20, 1<<30))
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, healthy, sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := v.Diagnoses[0]; d.Code != calibrate.DiagPCIeBound || !d.Explains {
		t.Errorf("most likely cause %s, want %s; all: %v", d.Code, calibrate.DiagPCIeBound, codes(v.Diagnoses))
	}
}

// TestDiagnoseSlowRamp: the 2021 p4d EFA run (MANIFEST row 5) reaches the
// model's busbw from 1 GiB (within 3%) but takes 1.4-2.6 ms more per call
// than the model at 64-256 MiB: validate fails it (the gate is unchanged)
// and the leading diagnosis says the links deliver their rate and the
// shortfall is time per call, not "no single known cause". A run whose
// largest sizes are off as well (ABCI 2x8 A100, 8-32 MiB, ~2.3x slower)
// does not get it.
func TestDiagnoseSlowRamp(t *testing.T) {
	p4d, err := calibrate.Validate(context.Background(), []*ingest.Artifact{rawFile(t, "nccltests_a100sxm40_2x8_aws-p4d-efa4x100_1.txt")},
		clusterOf(t, scenarios.Overrides{Node: "dgx-a100", NICs: "4x100G-efa", NCCLVersion: "2.9"}), sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p4d.Pass || len(p4d.Diagnoses) == 0 {
		t.Fatalf("pass %v, diagnoses %v: want a failure with a diagnosis", p4d.Pass, codes(p4d.Diagnoses))
	}
	d := p4d.Diagnoses[0]
	if d.Code != calibrate.DiagSlowRamp || len(d.Evidence) != 1 || !strings.Contains(d.Evidence[0], "at 1G-4G (3 sizes) the measured busbw is within 3.0% of the model; at 64M-256M (3 sizes)") {
		t.Errorf("leading diagnosis %s %q, want %s naming the 1-4G plateau and the 64-256M sizes", d.Code, d.Evidence, calibrate.DiagSlowRamp)
	}
	for _, x := range p4d.Diagnoses {
		if x.Code == calibrate.DiagBelowModel {
			t.Errorf("the points slow-ramp covers are listed again under %s: %q", x.Code, x.Evidence)
		}
	}
	abci, err := calibrate.Validate(context.Background(), []*ingest.Artifact{rawFile(t, "nccltests_a100sxm40_2x8_ib-hdr200x4_abci_1.txt")},
		clusterOf(t, scenarios.Overrides{Node: "dgx-a100", NICs: "4x200G-ib"}), sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range abci.Diagnoses {
		if x.Code == calibrate.DiagSlowRamp {
			t.Errorf("ABCI 2x8, off at its largest sizes too, diagnosed %s: %q", x.Code, x.Evidence)
		}
	}
}

// TestDiagnoseUnsteady: the bcm run over 10G TCP sockets (MANIFEST row 43)
// swings between 0.66 and 0.88 GB/s over its 64 MiB-4 GiB sizes, where
// the model of its own socket cluster gives 0.96 at each: validate fails it
// and leads with the run's own spread (12%), which no model removes. The
// moc run without GDR, steadily 3x slower than its healthy model, is not
// called unsteady.
func TestDiagnoseUnsteady(t *testing.T) {
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{rawFile(t, "nccltests_v100sxm3_2x1_tcp-socket_bcm-manual_1.txt")},
		clusterOf(t, scenarios.Overrides{Node: "v100-4gpu-nvlink", GPUsPerNode: 1, NICs: "1x10G-tcp", Set: []string{"NCCL_IB_DISABLE=1"}, NCCLVersion: "2.11"}),
		sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Pass || len(v.Diagnoses) == 0 {
		t.Fatalf("pass %v, diagnoses %v: want a failure with a diagnosis", v.Pass, codes(v.Diagnoses))
	}
	if d := v.Diagnoses[0]; d.Code != calibrate.DiagUnsteady || len(d.Evidence) != 1 || !strings.Contains(d.Evidence[0], "spreads by 12%") || !strings.Contains(d.Evidence[0], "measured 0.656-0.882 GB/s") {
		t.Errorf("leading diagnosis %s %q, want %s with the run's 12%% spread and its range", d.Code, d.Evidence, calibrate.DiagUnsteady)
	}
	moc, err := calibrate.Validate(context.Background(), []*ingest.Artifact{rawFile(t, "nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt")},
		clusterOf(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, GPUsPerNode: 1, NICs: "1x400G-roce", NCCLVersion: "2.26"}), sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range moc.Diagnoses {
		if d.Code == calibrate.DiagUnsteady || d.Code == calibrate.DiagRoCEFabric {
			t.Errorf("the steady moc run is diagnosed %s: %q", d.Code, d.Evidence)
		}
	}
}

// TestDiagnoseNetShort: where the model is NIC-bound at a run's two largest
// gate sizes, the increment between them (which cancels every per-call
// cost) measures the network's rate. The ABCI V100 2x4 run (MANIFEST, ABCI
// job series) grows at 20.1 GB/s busbw from 16 to 32 MiB where the model's
// 2x EDR grow at 23.7 (85%); the untuned 8-node H100 run of nccl-tests#309
// (held-out row) at 322 against 361 from 4 to 8 GiB (89%); a synthetic
// DGX H100 pair with one NIC per node whose NICs deliver 80% of the model's rate is named at
// 80%. Not named: the ABCI V100 4x4 run, whose model changes protocol
// between its two largest sizes (no rate in the difference), and the
// unsteady socket run, whose difference is its noise.
func TestDiagnoseNetShort(t *testing.T) {
	lead := func(file string, o scenarios.Overrides) []calibrate.Diagnosis {
		t.Helper()
		v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{rawFile(t, file)}, clusterOf(t, o), sim.DefaultParams(), calibrate.ValidateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v.Pass || len(v.Diagnoses) == 0 {
			t.Fatalf("%s: pass %v, diagnoses %v: want a failure with a diagnosis", file, v.Pass, codes(v.Diagnoses))
		}
		return v.Diagnoses
	}
	for _, tc := range []struct {
		file, want string
		o          scenarios.Overrides
	}{
		{"nccltests_v100sxm2_2x4_ib-edr100x2_abci_1.txt", "from 16M to 32M the measured time grows at 20.1 GB/s busbw and the model's at 23.7", scenarios.Overrides{Node: "v100-4gpu-nvlink", Nodes: 2, NCCLVersion: "2.8"}},
		{"nccltests_h100sxm_8x8_ib-ndr400_ncclTests309-aion_1.txt", "from 4G to 8G the measured time grows at 322 GB/s busbw and the model's at 361", scenarios.Overrides{Node: "dgx-h100", Nodes: 8}},
	} {
		ds := lead(tc.file, tc.o)
		if d := ds[0]; d.Code != calibrate.DiagNetShort || len(d.Evidence) != 1 || !strings.Contains(d.Evidence[0], tc.want) {
			t.Errorf("%s: leading diagnosis %s %q, want %s with %q", tc.file, d.Code, d.Evidence, calibrate.DiagNetShort, tc.want)
		}
	}
	for _, tc := range []struct {
		file string
		o    scenarios.Overrides
	}{
		{"nccltests_v100sxm2_4x4_ib-edr100x2_abci_1.txt", scenarios.Overrides{Node: "v100-4gpu-nvlink", Nodes: 4, NCCLVersion: "2.8"}},
		{"nccltests_v100sxm3_2x1_tcp-socket_bcm-manual_1.txt", scenarios.Overrides{Node: "v100-4gpu-nvlink", GPUsPerNode: 1, NICs: "1x10G-tcp", Set: []string{"NCCL_IB_DISABLE=1"}, NCCLVersion: "2.11"}},
	} {
		for _, d := range lead(tc.file, tc.o) {
			if d.Code == calibrate.DiagNetShort {
				t.Errorf("%s diagnosed %s: %q", tc.file, d.Code, d.Evidence)
			}
		}
	}
	// One NIC per node, so no checklist hypothesis of fewer NICs in use
	// stands in for the slower one.
	healthy := clusterOf(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "1x400G-ib", Set: []string{"NCCL_ALGO=Ring"}})
	slow := sim.DefaultParams()
	slow.NetEff[0] *= 0.8
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{synthetic(t, healthy, slow, model.AllReduce, powersOfTwo(64<<20, 4<<30))}, healthy, sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got *calibrate.Diagnosis
	for i := range v.Diagnoses {
		if v.Diagnoses[i].Code == calibrate.DiagNetShort {
			got = &v.Diagnoses[i]
		}
	}
	if v.Pass || got == nil || !strings.Contains(got.Evidence[0], "at 80% of the rate the model gives the NICs") {
		t.Errorf("NICs at 80%%: pass %v, diagnoses %v, want %s at 80%%", v.Pass, codes(v.Diagnoses), calibrate.DiagNetShort)
	}
}

// TestValidateWrongResults: a run in which nccl-tests counted wrong result
// elements is not a valid measurement, whatever its times say. The healthy
// 8x H100 AllReduce with 12 wrong elements on its 1 GiB row (and the
// summary that follows from it) fails validate with wrong-results leading,
// and the row is left out of the series calibrate would fit, with a note.
func TestValidateWrongResults(t *testing.T) {
	path := filepath.Join("..", "ingest", "testdata", "raw", "nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(raw), "4000.82  268.38  469.67       0", "4000.82  268.38  469.67      12", 1)
	if text == string(raw) {
		t.Fatal("the 1 GiB row of the fixture changed; update the test")
	}
	a, err := ingest.Parse("wrong.txt", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	a.Runs = a.Runs[:1]
	spec := clusterOf(t, scenarios.Overrides{Node: "dgx-h100", NCCLVersion: "2.29"})
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, spec, sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Pass || len(v.Diagnoses) == 0 || v.Diagnoses[0].Code != calibrate.DiagWrong || v.Diagnoses[0].Severity != ingest.SevError {
		t.Fatalf("pass %v, diagnoses %v: want a failure led by %s", v.Pass, codes(v.Diagnoses), calibrate.DiagWrong)
	}
	if ev := strings.Join(v.Diagnoses[0].Evidence, "; "); !strings.Contains(ev, "wrong.txt:25: size 1073741824: #wrong 12") {
		t.Errorf("evidence %q does not name the row", ev)
	}
	if v.Series[0].Regime(calibrate.RegimeBandwidth).Points != 8 {
		t.Errorf("%d bandwidth points judged; the row with wrong elements must be left out of 9", v.Series[0].Regime(calibrate.RegimeBandwidth).Points)
	}
	if !slices.ContainsFunc(v.Notes, func(n string) bool { return strings.Contains(n, "wrong.txt:25") && strings.Contains(n, "row not used") }) {
		t.Errorf("no note names the row left out: %v", v.Notes)
	}
	// The same file unchanged passes (the test's own control).
	b, err := ingest.Parse("right.txt", strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	b.Runs = b.Runs[:1]
	if w, err := calibrate.Validate(context.Background(), []*ingest.Artifact{b}, spec, sim.DefaultParams(), calibrate.ValidateOptions{}); err != nil || !w.Pass {
		t.Fatalf("the unchanged run: error %v or no pass", err)
	}
}

// TestValidateSocketOnPluginStack: on an EFA cluster NCCL_IB_DISABLE
// changes nothing (aws-ofi-nccl ignores it), so a run that fell back to
// NET/Socket (the plugin not loaded; a model-made log over the same four
// 100G ports) is reproduced by sockets over the same ports and named
// socket-instead-of-ib.
func TestValidateSocketOnPluginStack(t *testing.T) {
	sock := clusterOf(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "4x100G-tcp"})
	cl, err := sock.Build()
	if err != nil {
		t.Fatal(err)
	}
	env, err := sim.NewEnv(cl, sim.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n")
	for r := 0; r < 16; r++ {
		fmt.Fprintf(&b, "#  Rank %2d Group  0 Pid %5d on      host%d device  %d [0x%02x] NVIDIA A100-SXM4-80GB\n", r, 1000+r, r/8, r%8, r)
	}
	b.WriteString("#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
	for s := int64(1 << 20); s <= 4<<30; s *= 4 {
		pt, err := env.Predict(context.Background(), sim.Request{Coll: model.AllReduce, ElemSize: 4, Engine: sim.EngineAnalytic}, model.Bytes(s))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%12d %13d     float     sum      -1  %7.1f %7.2f %7.2f      0  %7.1f %7.2f %7.2f      0\n", s, s/4, pt.TimeUs, pt.AlgBW, pt.BusBW, pt.TimeUs, pt.AlgBW, pt.BusBW)
	}
	b.WriteString("# Out of bounds values : 0 OK\n")
	a, err := ingest.Parse("sock.txt", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	efa := clusterOf(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "4x100G-efa"})
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, efa, sim.DefaultParams(), calibrate.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Pass || len(v.Diagnoses) == 0 || v.Diagnoses[0].Code != calibrate.DiagSocket || !strings.Contains(v.Diagnoses[0].Reproduce, "same ports") {
		t.Errorf("pass %v, diagnoses %v (%+v): want socket-instead-of-ib reproduced by sockets over the same ports", v.Pass, codes(v.Diagnoses), v.Diagnoses)
	}
}

// TestValidateNetworkMismatch: the p4d run's own log says AWS Libfabric;
// validated against a cluster modelled with TCP NICs (sockets), a note
// says the model describes another network; against EFA NICs, none.
func TestValidateNetworkMismatch(t *testing.T) {
	a := rawFile(t, "nccltests_a100sxm40_2x8_aws-p4d-efa4x100_1.txt")
	for _, tc := range []struct {
		nics string
		note bool
	}{{"4x100G-tcp", true}, {"4x100G-efa", false}} {
		spec := clusterOf(t, scenarios.Overrides{Node: "dgx-a100", GPU: "A100-SXM4-40GB", Nodes: 2, NICs: tc.nics, NCCLVersion: "2.9"})
		v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, spec, sim.DefaultParams(), calibrate.ValidateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := slices.ContainsFunc(v.Notes, func(n string) bool {
			return strings.Contains(n, "the NCCL log says the run used network AWS Libfabric")
		})
		if got != tc.note {
			t.Errorf("%s: mismatch note %v, want %v (notes %v)", tc.nics, got, tc.note, v.Notes)
		}
	}
}
