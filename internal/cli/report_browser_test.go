package cli

import (
	"path/filepath"
	"testing"

	"github.com/collsim/collsim/internal/browsertest"
)

// This file renders the HTML report of every command in headless Chromium
// and checks, with the page's own layout, that no text overflows its box.
// The measuring code is shared with the reports package's browser test.

// TestReportBrowserLayout writes the HTML report of every command and
// lays each out in headless Chromium at 1280 px: nothing may overflow its
// box. It skips without Chromium and in -short mode.
func TestReportBrowserLayout(t *testing.T) {
	bin := browsertest.Require(t, "browser layout")
	moc := corpus + "/nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt"
	snellius := []string{corpus + "/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt", corpus + "/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_allgather_2.txt"}
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"predict", []string{"predict", "--engine", "analytic", "-b", "8", "-e", "1G", "-f", "2"}, ExitOK},
		{"compare", compareArgs, ExitOK},
		{"scale", []string{"scale", "--node", "dgx-h100", "--nics", "4x400G-roce", "--max-nodes", "8"}, ExitOK},
		{"scale-workload", []string{"scale", "--node", "dgx-a100", "--nodes-list", "2,4", "--params", "1B", "--compute-ms", "100", "--strategy", "fsdp"}, ExitOK},
		{"sweep", []string{"sweep", "testdata/sweep/fabric.yaml"}, ExitOK},
		{"validate", []string{"validate", "--node", "dgx-h100", "--gpus-per-node", "1", "--nodes", "2", "--nics", "1x400G-roce", "--measured", moc}, ExitFailed},
		{"calibrate", []string{"calibrate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", snellius[0], "--measured", snellius[1]}, ExitOK},
		{"accuracy", []string{"accuracy", "--cases", "../../ingest/testdata/cases.yaml", "--only", "moc_,bcm_"}, ExitFailed}, // two cases cannot meet the corpus targets: exit 1, report written
		{"inspect", []string{"inspect", corpus + "/p2pbw_a100sxm80_1x8_nvswitch_distserve3.txt", moc, snellius[1]}, ExitOK},
		{"hwbench", []string{"hwbench", "--fake", "-q", "--maxbytes", "64K", "--copybytes", "1M", "--iters", "2", "--warmup", "1"}, ExitOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "r.html")
			args := append([]string{}, tc.args...)
			if tc.name == "hwbench" {
				args = append(args, "--out", filepath.Join(dir, "hw.json"))
			}
			if code, _, stderr := runAt(t, append(args, "--report", out)...); code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			for _, p := range browsertest.OverflowProblems(t, bin, out) {
				t.Errorf("overflows its box: %s", p)
			}
		})
	}
}
