package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collsim/collsim/calibrate"
)

// xxrjunAllReduce writes the all_reduce table of the xxrjun 8x H100 run
// (MANIFEST row 28; the file's first 35 lines) to a temporary file.
func xxrjunAllReduce(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(calRaw, "nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	path := filepath.Join(t.TempDir(), "allreduce.txt")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:35], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestValidateExitCodes: 0 when every bandwidth-regime point is within
// the tolerance, 1 when not, 2 on bad input.
func TestValidateExitCodes(t *testing.T) {
	moc := filepath.Join(calRaw, "nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt")
	tests := []struct {
		name string
		args []string
		code int
		want string // in stdout (exit 0/1) or stderr (exit 2)
		// stderr, for exit 1: the one-line failure.
		stderr string
	}{
		// 1-6% off the DGX H100 model at 64 MiB-16 GiB (accuracy harness).
		{"healthy run passes", []string{"--node", "dgx-h100", "--measured", xxrjunAllReduce(t)}, ExitOK, "overall: PASS", ""},
		// RoCE without GPUDirect RDMA: 15 GB/s against ~47.
		{"degraded run fails", []string{"--node", "dgx-h100", "--gpus-per-node", "1", "--nodes", "2", "--nics", "1x400G-roce", "--measured", moc}, ExitFailed, "no-gpudirect-rdma",
			"validate: 13 bandwidth-regime point(s) outside the 10% tolerance; most likely cause: No GPUDirect RDMA"},
		// Without --nodes the 2 ranks make 2 nodes of one GPU: the cluster
		// line says so and the staged path is reproduced, as with --nodes 2.
		{"degraded run, nodes inferred", []string{"--node", "dgx-h100", "--gpus-per-node", "1", "--nics", "1x400G-roce", "--measured", moc}, ExitFailed,
			"model 2 x dgx-h100", "most likely cause: No GPUDirect RDMA"},
		// ABCI 2x8 A100 stops at 32 MiB: the 8-32 MiB sizes gate, and the
		// one-line failure says which sizes those are.
		{"mid-regime gate", []string{"--node", "dgx-a100", "--nics", "4x200G-ib", "--measured", filepath.Join(calRaw, "nccltests_a100sxm40_2x8_ib-hdr200x4_abci_1.txt")}, ExitFailed,
			"overall: FAIL", "validate: 3 point(s) of at least 8 MiB (the measured sizes stop before 64 MiB) outside the 10% tolerance"},
		{"files may follow the flags", []string{"--node", "dgx-h100", "--gpus-per-node", "1", "--nodes", "2", "--nics", "1x400G-roce", moc}, ExitFailed, "overall: FAIL", ""},
		{"rank mismatch", []string{"--node", "dgx-h100", "--measured", moc}, ExitBadInput, "rank count: the run has 2 ranks, the cluster has 8", ""},
		{"GPU mismatch", []string{"--node", "dgx-a100", "--gpus-per-node", "1", "--nodes", "2", "--measured", moc}, ExitBadInput, "GPU type", ""},
		{"bad tolerance", []string{"--node", "dgx-h100", "--tolerance", "ten", "--measured", moc}, ExitBadInput, "--tolerance", ""},
		{"bad format", []string{"--node", "dgx-h100", "--format", "xml", "--measured", moc}, ExitBadInput, "--format", ""},
		{"not a measurement", []string{"--node", "dgx-h100", "--measured", "../../ingest/testdata/cases.yaml"}, ExitBadInput, "no known format", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := collsim(t, append([]string{"validate"}, tc.args...)...)
			where := out
			if tc.code == ExitBadInput {
				where = errs
			}
			if code != tc.code || !strings.Contains(where, tc.want) || !strings.Contains(errs, tc.stderr) {
				t.Errorf("exit %d (want %d); output lacks %q:\nstdout: %s\nstderr: %s", code, tc.code, tc.want, out, errs)
			}
		})
	}
}

// TestValidateXxrjunWholeFile: the whole xxrjun file (MANIFEST row 28: a
// healthy 8x H100 NVSwitch box; all_reduce, all_gather, reduce_scatter,
// alltoall and sendrecv, 32 MiB-16 GiB, NCCL 2.29.2) passes validate at
// the default tolerance, AlltoAll at 64 MiB-1 GiB included, where the
// all-to-all pattern through the switch runs below SendRecv's rate.
func TestValidateXxrjunWholeFile(t *testing.T) {
	path := filepath.Join(calRaw, "nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt")
	code, out, errs := collsim(t, "validate", "--node", "dgx-h100", "--measured", path)
	if code != ExitOK || !strings.Contains(out, "overall: PASS") {
		t.Fatalf("exit %d (want %d):\nstdout: %s\nstderr: %s", code, ExitOK, out, errs)
	}
	for _, coll := range []string{"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf", "sendrecv_perf"} {
		if !strings.Contains(out, coll) {
			t.Errorf("the report has no %s table:\n%s", coll, out)
		}
	}
	if n := strings.Count(out, "verdict: PASS (0 of the bandwidth points outside 10%)"); n != 5 {
		t.Errorf("%d of 5 tables pass with every bandwidth point inside 10%%:\n%s", n, out)
	}
}

func TestValidateFormats(t *testing.T) {
	bcm := filepath.Join(calRaw, "nccltests_v100sxm3_2x1_tcp-socket_bcm-manual_1.txt")
	args := []string{"validate", "--node", "v100-4gpu-nvlink", "--gpus-per-node", "1", "--nodes", "2", "--nics", "1x100G-ib", "--measured", bcm}
	code, out, _ := collsim(t, append(args, "--format", "json")...)
	if code != ExitFailed {
		t.Fatalf("exit %d", code)
	}
	var v calibrate.Validation
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.Pass || len(v.Series) != 1 || len(v.Diagnoses) == 0 || v.Diagnoses[0].Code != calibrate.DiagSocket {
		t.Fatalf("json: pass %v, %d series, diagnoses %+v", v.Pass, len(v.Series), v.Diagnoses)
	}
	p := v.Series[0].Points[0]
	if p.MeasuredTimeUs <= 0 || p.ModelTimeUs <= 0 || p.Ratio <= 0 || p.Regime == "" {
		t.Errorf("point fields: %+v", p)
	}
	code, out, _ = collsim(t, append(args, "--format", "md")...)
	if code != ExitFailed || !strings.Contains(out, "| size |") || !strings.Contains(out, "## Diagnosis") || !strings.Contains(out, "socket-instead-of-ib") {
		t.Errorf("md: exit %d\n%s", code, out)
	}
	code, out, _ = collsim(t, args...)
	if code != ExitFailed || !strings.Contains(out, "bandwidth regime (>= 64 MiB)") || !strings.Contains(out, "fix:") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
}

// TestValidateLog: evidence from a separate --log file joins the diagnosis.
func TestValidateLog(t *testing.T) {
	moc := filepath.Join(calRaw, "nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt")
	code, out, errs := collsim(t, "validate", "--node", "dgx-h100", "--gpus-per-node", "1", "--nodes", "2", "--nics", "1x400G-roce",
		"--measured", moc, "--log", moc, "--format", "json")
	if code != ExitFailed {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var v calibrate.Validation
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if d := v.Diagnoses[0]; d.Code != calibrate.DiagNoGDR || !d.FromFiles {
		t.Errorf("first diagnosis %+v", d)
	}
	// A file with no NCCL log lines is no log: refused, not ignored.
	for _, notLog := range []string{"../../examples/nvidia-smi-topo.txt", "../../ingest/testdata/perftest_ib_write_bw_ndr.txt"} {
		code, out, errs := collsim(t, "validate", "--node", "dgx-h100", "--gpus-per-node", "1", "--nodes", "2", "--nics", "1x400G-roce",
			"--measured", moc, "--log", notLog)
		if code != ExitBadInput || out != "" || !strings.Contains(errs, "no NCCL_DEBUG=INFO lines") {
			t.Errorf("--log %s: exit %d, stdout %d bytes, stderr %q; want exit 2 saying it is no NCCL log", notLog, code, len(out), errs)
		}
	}
}

func TestParseTolerance(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"10%", 0.10, true}, {"0.1", 0.1, true}, {"15", 0.15, true}, {"2.5%", 0.025, true},
		{"0", 0, false}, {"-5%", 0, false}, {"abc", 0, false}, {"", 0, false},
	}
	for _, tc := range tests {
		got, err := parseTolerance(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (got-tc.want > 1e-12 || tc.want-got > 1e-12)) {
			t.Errorf("parseTolerance(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestValidateDeterministic: the same validation twice prints the same bytes.
func TestValidateDeterministic(t *testing.T) {
	args := []string{"validate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--format", "json", "--measured", snellius2x4[0], "--measured", snellius2x4[1]}
	_, a, _ := collsim(t, args...)
	_, b, _ := collsim(t, args...)
	if a != b || a == "" {
		t.Errorf("two runs differ (or are empty)")
	}
}
