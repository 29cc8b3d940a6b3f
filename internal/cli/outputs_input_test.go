package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputIsNotAnInput: an output option naming one of the command's
// input files is refused with exit 2 before any work, and the input is
// left as it was: a report over the measured log, a profile over a log
// given after the options, a report over the workload, a trace over the
// cluster YAML. The same commands with another output name run.
func TestOutputIsNotAnInput(t *testing.T) {
	dir := t.TempDir()
	copyTo := func(src, name string) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	logMD := copyTo("../../examples/all_reduce.log", "m.md")
	logYAML := copyTo("../../examples/all_reduce.log", "meas.yaml")
	wl := copyTo("../../examples/stories/ddp-pcie-no-p2p.yaml", "wl.md")
	cl := copyTo("../../examples/fabric.yaml", "c.json")
	clMD := copyTo("../../examples/fabric.yaml", "design.md")
	node := []string{"--node", "hgx-h100-4gpu", "--nodes", "2", "--nics", "4x200G-ib"}
	cases := []struct {
		name  string
		args  []string
		input string
		says  string
	}{
		{"calibrate --report over --measured", append(append([]string{"calibrate"}, node...), "--measured", logMD, "-o", filepath.Join(dir, "p.yaml"), "--report", logMD), logMD, "--report " + logMD + " is also an input (--measured)"},
		{"calibrate -o over an argument", append(append([]string{"calibrate"}, node...), "-o", logYAML, logYAML), logYAML, "-o " + logYAML + " is also an input (argument)"},
		{"scale --report over --workload", []string{"scale", "--workload", wl, "--report", wl}, wl, "is also an input (--workload)"},
		{"validate --report through another spelling", append(append([]string{"validate"}, node...), "--measured", logMD, "--report", filepath.Join(dir, ".", "m.md")), logMD, "is also an input (--measured)"},
		{"predict --trace over --cluster", []string{"predict", "--cluster", cl, "--trace", cl, "-b", "1M", "-e", "1M"}, cl, "--trace " + cl + " is also an input (--cluster)"},
		{"compare --report over a repeatable --cluster", []string{"compare", "--cluster", "../../examples/fabric.yaml", "--cluster", clMD, "--report", clMD}, clMD, "is also an input (--cluster)"},
	}
	for _, tc := range cases {
		before, err := os.ReadFile(tc.input)
		if err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != ExitBadInput || !strings.Contains(stderr, tc.says) || stdout != "" {
			t.Errorf("%s: exit %d, stdout %d bytes, stderr %q; want exit %d naming %q and no output", tc.name, code, len(stdout), stderr, ExitBadInput, tc.says)
		}
		after, err := os.ReadFile(tc.input)
		if err != nil || !bytes.Equal(before, after) {
			t.Errorf("%s: the input file changed (%v)", tc.name, err)
		}
	}
	// Control: another output name is accepted.
	if code, _, stderr := runCLI(t, append(append([]string{"calibrate"}, node...), "--measured", logMD, "-o", filepath.Join(dir, "p.yaml"), "--report", filepath.Join(dir, "r.md"))...); code != 0 {
		t.Errorf("calibrate with distinct outputs: exit %d: %s", code, stderr)
	}
}
