package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHWBenchReportVerdictNothingCompared: a run on the fake measures
// nothing and compares nothing; its report must not say PASS "no problems
// found".
func TestHWBenchReportVerdictNothingCompared(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.md")
	code, _, stderr := runAt(t, "hwbench", "--fake", "-q", "--maxbytes", "64K", "--copybytes", "1M", "--iters", "2", "--warmup", "1",
		"--out", filepath.Join(dir, "hw.json"), "--report", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	page := readFile(t, out)
	if strings.Contains(page, "PASS") || strings.Contains(page, "no problems found") {
		t.Errorf("report passes a run that compared nothing:\n%s", page[:min(len(page), 1500)])
	}
	if !strings.Contains(page, "nothing measured, nothing compared") {
		t.Errorf("report does not say nothing was compared:\n%s", page[:min(len(page), 1500)])
	}
}
