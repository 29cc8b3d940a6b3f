package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collsim/collsim/scenarios"
)

// TestCompareScaleSweepReports writes the HTML and Markdown reports of
// compare, scale and sweep: the same command gives the same bytes, each
// report has its plots and figures, and a sweep report says its prices
// are examples.
func TestCompareScaleSweepReports(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"compare", compareArgs, []string{"AllReduce: roce vs ib", "faster at &gt;= 64M", "busbw by design", "Busiest links of roce", "More or faster NICs than 2x100G-roce"}},
		{"scale", []string{"scale", "--node", "dgx-h100", "--nics", "4x400G-roce", "--max-nodes", "8"},
			[]string{"Scaling of AllReduce 1G on dgx-h100", "smallest multi-node count", "Scaling efficiency of AllReduce 1G"}},
		{"scale-workload", []string{"scale", "--node", "dgx-a100", "--nodes-list", "2,4", "--params", "1B", "--compute-ms", "100", "--strategy", "fsdp"},
			[]string{"Scaling of a training step on dgx-a100", "Step time by GPU count", "parameter AllGather", "workload: strategy", "FULL_SHARD"}},
		{"sweep", []string{"sweep", "testdata/sweep/fabric.yaml"},
			[]string{"What-if sweep fabric", scenarios.ExampleNotice, "Cost against AllReduce 256M busbw", "Pareto", "price: GPU A100-SXM4", "cost: switch ports", "assumption: press expected"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var html [2]string
			for i := range html {
				out := filepath.Join(dir, "r.html")
				code, stdout, stderr := runAt(t, append(append([]string{}, tc.args...), "--report", out)...)
				if code != ExitOK || stdout == "" {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				html[i] = readFile(t, out)
			}
			if html[0] != html[1] {
				t.Error("the same command wrote different reports")
			}
			if strings.Count(html[0], "<svg") < 2 {
				t.Error("the report has fewer than two plots")
			}
			for _, w := range tc.want {
				if !strings.Contains(html[0], strings.ReplaceAll(w, "'", "&#39;")) {
					t.Errorf("the report lacks %q", w)
				}
			}
			md := filepath.Join(dir, "r.md")
			if code, _, stderr := runAt(t, append(append([]string{}, tc.args...), "--report", md)...); code != ExitOK {
				t.Fatalf("md: exit %d: %s", code, stderr)
			}
			text := readFile(t, md)
			links := svgLink.FindAllStringSubmatch(text, -1)
			if len(links) == 0 {
				t.Error("no figure in the Markdown report")
			}
			for _, m := range links {
				if _, err := os.Stat(filepath.Join(dir, m[1])); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
