package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/calibrate/accuracy"
)

// calRaw is the calibrate package's copy of shared/data/raw.
const calRaw = "../../ingest/testdata/raw"

// collsim runs the CLI in-process.
func collsim(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), append([]string{"collsim"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// snellius2x4 are the 2-node Snellius runs (MANIFEST rows 30, 31).
var snellius2x4 = []string{
	filepath.Join(calRaw, "nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt"),
	filepath.Join(calRaw, "nccltests_h100sxm_2x4_ib-ndr200x4_snellius_allgather_2.txt"),
}

// TestCalibrateProfileUsedByOtherCommands: calibrate writes a profile that
// records what it was fitted on, and predict and validate take it.
func TestCalibrateProfileUsedByOtherCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("a full fit and four commands; the full run covers it")
	}
	prof := filepath.Join(t.TempDir(), "snellius.yaml")
	code, out, errs := collsim(t, "calibrate", "--node", "hgx-h100-4gpu", "--nodes", "2",
		"--measured", snellius2x4[0], "--measured", snellius2x4[1], "-o", prof)
	if code != ExitOK {
		t.Fatalf("calibrate exit %d: %s", code, errs)
	}
	for _, want := range []string{"TERM", "net.eff.ib", "fitted on", "wrote " + prof} {
		if !strings.Contains(out, want) {
			t.Errorf("calibrate output lacks %q:\n%s", want, out)
		}
	}
	p, err := calibrate.LoadProfile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.FittedOn) != 2 || p.FittedOn[0].Ranks != 8 || len(p.Params) == 0 || !p.Fit.Converged {
		t.Errorf("profile: fitted on %+v, %d params, converged %v", p.FittedOn, len(p.Params), p.Fit.Converged)
	}
	// Predict 16 nodes with the profile fitted on 2.
	code, out, errs = collsim(t, "predict", "--node", "hgx-h100-4gpu", "--nodes", "16", "--profile", prof, "-b", "1G", "-e", "1G", "--engine", "analytic")
	if code != ExitOK || !strings.Contains(out, "1073741824") {
		t.Fatalf("predict --profile exit %d: %s%s", code, errs, out)
	}
	// The profile makes validate agree better with what it was fitted on.
	code, out, _ = collsim(t, "validate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--profile", prof, "--measured", snellius2x4[1], "--format", "json")
	if code != ExitOK && code != ExitFailed {
		t.Fatalf("validate --profile exit %d", code)
	}
	var v calibrate.Validation
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.Profile != prof {
		t.Errorf("validation does not name the profile: %q", v.Profile)
	}
}

func TestCalibrateJSON(t *testing.T) {
	code, out, errs := collsim(t, "calibrate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", snellius2x4[1], "--format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Terms []struct {
			Name           string
			Default, Value float64
			StdErr         *float64
		}
		RMSLogBefore float64 `json:"rms_log_before"`
		RMSLogAfter  float64 `json:"rms_log_after"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Terms) == 0 || doc.RMSLogAfter > doc.RMSLogBefore {
		t.Errorf("json: %d terms, rms %.3f -> %.3f", len(doc.Terms), doc.RMSLogBefore, doc.RMSLogAfter)
	}
}

// TestCalibrateNotConverged: a fit that cannot converge says so, exits 1
// and leaves no profile file behind.
func TestCalibrateNotConverged(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "p.yaml")
	code, _, errs := collsim(t, "calibrate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", snellius2x4[0], "--max-evals", "2", "-o", prof)
	if code != ExitFailed || !strings.Contains(errs, "did not converge") || !strings.Contains(errs, "no profile written") {
		t.Fatalf("exit %d, stderr %q; want 1 and a message that the fit did not converge", code, errs)
	}
	if _, err := os.Stat(prof); !os.IsNotExist(err) {
		t.Errorf("%s exists after a failed fit", prof)
	}
	entries, _ := os.ReadDir(filepath.Dir(prof))
	if len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}

func TestCalibrateBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"rank count", []string{"--node", "hgx-h100-4gpu", "--gpus-per-node", "3", "--measured", snellius2x4[0]}, "rank count: the run has 8 ranks, the cluster has 3"},
		{"GPU type", []string{"--node", "dgx-a100", "--nodes", "2", "--gpus-per-node", "4", "--measured", snellius2x4[0]}, "GPU type"},
		{"no file", []string{"--node", "hgx-h100-4gpu"}, "at least one measurement file"},
		{"unknown term", []string{"--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", snellius2x4[0], "--terms", "warp.speed"}, "warp.speed"},
		{"missing file", []string{"--node", "hgx-h100-4gpu", "--measured", "no-such-file.txt"}, "no-such-file.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := collsim(t, append([]string{"calibrate"}, tc.args...)...)
			if code != ExitBadInput || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") > 2 {
				t.Errorf("exit %d, stderr %q; want 2 and a short message with %q", code, errs, tc.want)
			}
		})
	}
}

// TestCalibrateFileBeforeFlags: `collsim calibrate FILE --flag x` works
// like `collsim calibrate --flag x FILE`.
func TestCalibrateFileBeforeFlags(t *testing.T) {
	code, out, errs := collsim(t, "calibrate", snellius2x4[1], "--node", "hgx-h100-4gpu", "--nodes", "2")
	if code != ExitOK || !strings.Contains(out, "no profile written") {
		t.Errorf("exit %d: %s\n%s", code, errs, out)
	}
}

func TestCalibrateListTerms(t *testing.T) {
	code, out, _ := collsim(t, "calibrate", "--list-terms")
	if code != ExitOK || !strings.Contains(out, "lat.step.net.simple") || !strings.Contains(out, "nvlink.eff.4") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestAccuracyCommand runs the harness on two cases (the full corpus is
// calibrate's TestAccuracyHarness).
func TestAccuracyCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("fits corpus cases; the full run covers it")
	}
	// Two cases miss the corpus-wide bandwidth targets (their median is
	// 13%), so the command says so and exits 1.
	code, out, errs := collsim(t, "accuracy", "--cases", "../../ingest/testdata/cases.yaml", "--only", "moc_,bcm_")
	if code != ExitFailed || !strings.Contains(errs, "target is not met") {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, want := range []string{"moc_h100_2x1_roce400_nogdr", "bcm_v100_2x1_tcp_socket", "names no-gpudirect-rdma", "names socket-instead-of-ib", "target:", "NOT MET", "mid 64 KiB - 64 MiB", "collective, net socket"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = collsim(t, "accuracy", "--cases", "../../ingest/testdata/cases.yaml", "--only", "thanos_", "--format", "json")
	var rep accuracy.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Cases) != 2 {
		t.Fatalf("exit %d, json %v, %d cases", code, err, len(rep.Cases))
	}
	if code, _, errs = collsim(t, "accuracy"); code != ExitBadInput || !strings.Contains(errs, "--cases") {
		t.Errorf("no --cases: exit %d %q", code, errs)
	}
}

// TestCalibrateAcrossScales: the ABCI 2- and 4-node runs (MANIFEST rows 7,
// 8) fitted on a cluster given at one node: each run is modelled at the
// node count its rank count gives, and the fit's cluster line says so; a
// term whose default is 0 (lat.net.ib) reports its shift, not "+0.0%".
func TestCalibrateAcrossScales(t *testing.T) {
	if testing.Short() {
		t.Skip("a full fit")
	}
	code, out, errs := collsim(t, "calibrate", "--node", "dgx-a100", "--nics", "4x200G-ib",
		"--measured", filepath.Join(calRaw, "nccltests_a100sxm40_2x8_ib-hdr200x4_abci_1.txt"),
		"--measured", filepath.Join(calRaw, "nccltests_a100sxm40_4x8_ib-hdr200x4_abci_1.txt"))
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "# collsim calibrate: 4 x dgx-a100") || !strings.Contains(out, "the runs modelled at 2, 4 nodes") {
		t.Errorf("the cluster line does not give the runs' scales:\n%s", out)
	}
	found := false
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[0] == "lat.net.ib" {
			found = true
			if f[1] != "0" || f[4] != f[2] && f[4] != "+"+f[2] {
				t.Errorf("lat.net.ib moved from %s to %s, reads as change %s", f[1], f[2], f[4])
			}
		}
	}
	if !found {
		t.Errorf("lat.net.ib (default 0) not fitted:\n%s", out)
	}
}

// TestCalibrateChangeOfZeroDefault: a term whose default is 0 (the
// network hop latency lat.net.ib, fitted on the ABCI V100 2- and 4-node
// runs) has no relative change: JSON says null, not 0, and the report's
// change chart shows it N/A with a caption pointing to the table, where
// the shift is in the term's unit; the chart flags no fitted value as a
// suspect measurement.
func TestCalibrateChangeOfZeroDefault(t *testing.T) {
	args := []string{"calibrate", "--node", "v100-4gpu-nvlink", "--set", "NCCL_NET_GDR_LEVEL=2",
		"--measured", corpus + "/nccltests_v100sxm2_2x4_ib-edr100x2_abci_1.txt", "--measured", corpus + "/nccltests_v100sxm2_4x4_ib-edr100x2_abci_1.txt"}
	code, out, errs := collsim(t, append(append([]string{}, args...), "--format", "json")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Terms []struct {
			Name    string
			Default float64
			Value   float64
			Change  *float64
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	zero, other := 0, 0
	for _, tm := range doc.Terms {
		switch {
		case tm.Default == 0 && tm.Change != nil:
			t.Errorf("%s (default 0, fitted %g): change %g, want null", tm.Name, tm.Value, *tm.Change)
		case tm.Default == 0:
			zero++
		case tm.Change == nil || math.Abs(*tm.Change-(tm.Value-tm.Default)/tm.Default) > 1e-4:
			t.Errorf("%s: change %v, want (value - default)/default", tm.Name, tm.Change)
		default:
			other++
		}
	}
	if zero == 0 || other == 0 {
		t.Fatalf("%d terms of default 0 and %d others fitted: the fixture no longer exercises both", zero, other)
	}
	rep := filepath.Join(t.TempDir(), "r.md")
	if code, _, errs := collsim(t, append(append([]string{}, args...), "--report", rep)...); code != ExitOK {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	page := readFile(t, rep)
	if !strings.Contains(page, "| lat.net.ib | n/a |") || !strings.Contains(page, "has no relative change (N/A)") || strings.Contains(page, "Suspect") {
		t.Errorf("the change chart's data or caption: lat.net.ib not n/a, no caption, or a suspect flag")
	}
}

// TestCalibrateOnePointWarns: a fit of one term to a single size (the
// example log cut to its 4 GiB row) is allowed, since the term's prior
// keeps it sensible, but the report marks it WARN as underdetermined
// instead of PASS; the full log passes.
func TestCalibrateOnePointWarns(t *testing.T) {
	raw := readFile(t, "../../examples/all_reduce.log")
	var keep []string
	for _, l := range strings.Split(raw, "\n") {
		f := strings.Fields(l)
		if len(f) > 5 && !strings.HasPrefix(l, "#") && f[0] != "4294967296" {
			if _, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				continue // a results row other than 4 GiB
			}
		}
		keep = append(keep, l)
	}
	dir := t.TempDir()
	one := filepath.Join(dir, "one.log")
	if err := os.WriteFile(one, []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, want string
	}{{one, "**WARN** · underdetermined: 1 point(s) for 1 term(s)"}, {"../../examples/all_reduce.log", "**PASS**"}} {
		rep := filepath.Join(dir, "r.md")
		if code, _, errs := collsim(t, "calibrate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--nics", "4x200G-ib", "--measured", tc.file, "--report", rep); code != ExitOK {
			t.Fatalf("%s: exit %d: %s", tc.file, code, errs)
		}
		if page := readFile(t, rep); !strings.Contains(page, tc.want) {
			t.Errorf("%s: the report lacks %q", tc.file, tc.want)
		}
	}
}

// TestCalibrateShowsFileFindings: a fit on a run whose files show a fault
// (the moc RoCE run without GPUDirect RDMA) takes the fault in as the
// cluster's terms; the notes name it, and the report's verdict is WARN
// with a findings table, not a clean PASS.
func TestCalibrateShowsFileFindings(t *testing.T) {
	args := []string{"calibrate", "--node", "dgx-h100", "--gpus-per-node", "1", "--nodes", "2", "--nics", "1x400G-roce",
		"--measured", corpus + "/nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt"}
	rep := filepath.Join(t.TempDir(), "r.md")
	code, out, errs := collsim(t, append(append([]string{}, args...), "--report", rep)...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "# note: warning net-without-gdr:") {
		t.Errorf("the notes do not name the file's finding:\n%s", out)
	}
	page := readFile(t, rep)
	if !strings.Contains(page, "**WARN** · the measurements show net-without-gdr") || !strings.Contains(page, "## Findings") {
		t.Errorf("the report does not warn of the file's finding")
	}
}

// TestCalibrateReportedOnlySource: a bandwidth-tool file whose figure the
// nccl-tests runs make redundant (the A100 p2p matrix beside the 8x A100
// AllReduce, both observing nvlink.eff.3) is listed as read, not fitted:
// the header says so, and the report counts only the nccl-tests file.
func TestCalibrateReportedOnlySource(t *testing.T) {
	rep := filepath.Join(t.TempDir(), "r.md")
	code, out, errs := collsim(t, "calibrate", "--node", "dgx-a100", "--nodes", "1", "--measured", corpus+"/p2pbw_a100sxm80_1x8_nvswitch_distserve3.txt",
		"--measured", corpus+"/nccltests_a100sxm80_1x8_nvswitch_blog-thanos_1.txt", "--report", rep)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "p2pbw_a100sxm80_1x8_nvswitch_distserve3.txt (p2pbw): 1 points, reported, not fitted") || strings.Contains(out, "fitted on "+corpus+"/p2pbw") {
		t.Errorf("the header does not say the p2p file was only reported:\n%s", out)
	}
	page := readFile(t, rep)
	if !strings.Contains(page, "points from 1 file(s)") || !strings.Contains(page, "reported only (the nccl-tests runs determine the term)") {
		t.Errorf("the report counts the p2p file as fitted")
	}
}
