package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/collsim/collsim/study"
)

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		bad  string
	}{
		{"--node dgx-h100 --nodes 16", []string{"--node", "dgx-h100", "--nodes", "16"}, ""},
		{"  --nics\t8x400G-roce  ", []string{"--nics", "8x400G-roce"}, ""},
		{`--set 'NCCL_IB_HCA=mlx5_0,mlx5_1'`, []string{"--set", "NCCL_IB_HCA=mlx5_0,mlx5_1"}, ""},
		{`--cluster "my lab.yaml"`, []string{"--cluster", "my lab.yaml"}, ""},
		{`--cluster my\ lab.yaml`, []string{"--cluster", "my lab.yaml"}, ""},
		{`a"b c"d 'e'"f"`, []string{"ab cd", "ef"}, ""},
		{`"a \"q\" \$x \n"`, []string{`a "q" $x \n`}, ""},
		{`''`, []string{""}, ""},
		{"", nil, ""},
		{`--node 'dgx-h100`, nil, "unterminated single quote"},
		{`--node "dgx-h100`, nil, "unterminated double quote"},
		{`--node dgx\`, nil, "a backslash ends the text"},
	}
	for _, tc := range tests {
		got, err := splitArgs(tc.in)
		switch {
		case tc.bad != "":
			if err == nil || err.Error() != tc.bad {
				t.Errorf("splitArgs(%q) error %v, want %q", tc.in, err, tc.bad)
			}
		case err != nil || !reflect.DeepEqual(got, tc.want):
			t.Errorf("splitArgs(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// compareArgs are two small designs, 2 nodes of DGX A100 with few slow
// RoCE NICs against 8 HDR IB NICs (the README's default scenario and its fix).
var compareArgs = []string{"compare", "--design", "roce=--node dgx-a100 --nodes 2 --nics 2x100G-roce", "--design", "ib=--node dgx-a100 --nodes 2 --nics '8x200G-ib'",
	"-b", "1M", "-e", "1G", "-f", "8", "--engine", "analytic"}

// TestCompareGolden pins compare's table (analytic engine); -update rewrites it.
func TestCompareGolden(t *testing.T) {
	code, out, errs := runCLI(t, compareArgs...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkGolden(t, "compare/a100_nics.golden", out)
	// The NIC-bound design is the slower one and the summary says so.
	if !strings.Contains(out, "Faster at >= 64M (2 sizes): ib") || !strings.Contains(out, "roce: NIC (") {
		t.Errorf("summary:\n%s", out)
	}
}

func TestCompareFormatsDeterministic(t *testing.T) {
	for _, f := range []string{"json", "csv", "table"} {
		args := append(append([]string{}, compareArgs...), "--format", f)
		_, a, errs := runCLI(t, args...)
		_, b, _ := runCLI(t, args...)
		if a == "" || a != b {
			t.Errorf("%s: output differs between runs or is empty (%s)", f, errs)
		}
		if f == "csv" && !strings.HasPrefix(a, "design,requested_bytes,size_bytes") {
			t.Errorf("csv header: %q", strings.SplitN(a, "\n", 2)[0])
		}
	}
}

// compareJSON runs compare with --format json and decodes it.
func compareJSON(t *testing.T, args ...string) (doc struct {
	Designs []struct {
		Name            string `json:"name"`
		BottleneckClass string `json:"bottleneck_class"`
		Results         []struct {
			BusBW float64 `json:"busbw_gbps"`
		} `json:"results"`
	} `json:"designs"`
	Rows []struct {
		BusBW []float64  `json:"busbw_gbps"`
		Ratio []*float64 `json:"ratio_to_first"`
	} `json:"rows"`
	Fastest string `json:"fastest"`
}) {
	t.Helper()
	code, out, errs := runCLI(t, append(append([]string{"compare"}, args...), "--format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestCompareMoreNICsNeverSlower: adding NICs or making them faster never
// lowers the busbw of a NIC-bound multi-node AllReduce (more line rate per
// node can only raise the NIC ceiling). Sizes in the bandwidth regime.
func TestCompareMoreNICsNeverSlower(t *testing.T) {
	nics := []string{"1x100G-roce", "2x100G-roce", "4x100G-roce", "4x200G-roce", "8x200G-roce", "8x400G-roce"}
	var args []string
	for _, n := range nics {
		args = append(args, "--design", n+"=--node dgx-a100 --nodes 4 --nics "+n)
	}
	args = append(args, "-b", "64M", "-e", "1G", "-f", "4", "--engine", "analytic")
	doc := compareJSON(t, args...)
	if len(doc.Designs) != len(nics) {
		t.Fatalf("%d designs", len(doc.Designs))
	}
	for i := 1; i < len(nics); i++ {
		prev, cur := doc.Designs[i-1], doc.Designs[i]
		if prev.BottleneckClass != "NIC" {
			continue // only NIC-bound designs are held to it
		}
		for s := range cur.Results {
			if cur.Results[s].BusBW < prev.Results[s].BusBW*(1-1e-9) {
				t.Errorf("size %d: %s %.2f GB/s < %s %.2f GB/s", s, cur.Name, cur.Results[s].BusBW, prev.Name, prev.Results[s].BusBW)
			}
		}
	}
	if doc.Designs[0].BottleneckClass != "NIC" || doc.Fastest != "8x400G-roce" {
		t.Errorf("first bottleneck %q, fastest %q", doc.Designs[0].BottleneckClass, doc.Fastest)
	}
	// Ratios are relative to the first design.
	if r := doc.Rows[0].Ratio; *r[0] != 1 || *r[1] <= 1 {
		t.Errorf("ratios %v", doc.Rows[0].Ratio)
	}
}

// TestCompareClusterFiles: --cluster designs are named after the file and
// the shared options apply to them.
func TestCompareClusterFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := dir+"/lab-a.yaml", dir+"/lab-b.yaml"
	writeFile(t, a, "node: dgx-a100\nnodes: 2\nnics: 2x100G-roce\n")
	writeFile(t, b, "node: dgx-a100\nnodes: 2\nnics: 4x200G-ib\n")
	doc := compareJSON(t, "--cluster", a, "--cluster", b, "--design", "c=--cluster "+b+" --nics 8x200G-ib", "-b", "256M", "-e", "256M", "--engine", "analytic")
	if len(doc.Designs) != 3 || doc.Designs[0].Name != "c" || doc.Designs[1].Name != "lab-a" || doc.Designs[2].Name != "lab-b" {
		t.Errorf("designs %+v", doc.Designs)
	}
	if doc.Designs[0].Results[0].BusBW <= doc.Designs[2].Results[0].BusBW {
		t.Errorf("--nics in a design did not override its cluster file: %v vs %v", doc.Designs[0].Results[0].BusBW, doc.Designs[2].Results[0].BusBW)
	}
}

func TestCompareBadInput(t *testing.T) {
	ok := "ok=--node dgx-a100"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--design", "ib", "--design", ok}, `--design "ib": want NAME=ARGS`},
		{[]string{"--design", "=--node dgx-a100", "--design", ok}, "want NAME=ARGS"},
		{[]string{"--design", "x=--node 'dgx-a100", "--design", ok}, `design "x": unterminated single quote`},
		{[]string{"--design", "x=--nodez 2", "--design", ok}, `design "x": unknown flag --nodez`},
		{[]string{"--design", "x=dgx-a100", "--design", ok}, `design "x": unexpected argument "dgx-a100"`},
		{[]string{"--design", "x=--node dgx-a1000", "--design", ok}, `design "x": unknown node template "dgx-a1000"`},
		{[]string{"--design", "x=--node dgx-a100 --nodes 2 --nics 4x999G-ib", "--design", ok}, `design "x": --nics:`},
		{[]string{"--design", ok, "--design", ok}, `two designs are named "ok"`},
		{[]string{"--design", ok}, "give at least two designs"},
		{[]string{"--design", ok, "--design", "b=--node dgx-a100", "--format", "xml"}, "--format: unknown"},
		{[]string{"--design", ok, "--design", "b=--node dgx-a100", "extra"}, "compare takes no arguments"},
		{[]string{"--design", ok, "--cluster", "/nonexistent/lab.yaml"}, `design "lab":`},
	}
	for _, tc := range tests {
		code, out, errs := runCLI(t, append([]string{"compare", "-b", "1M", "-e", "1M", "--engine", "analytic"}, tc.args...)...)
		if code != ExitBadInput || out != "" || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want %q)", tc.args, code, out, errs, tc.want)
		}
	}
}

// TestCompareOneTieRule: IB and RoCE at the same speed predict the same
// busbw, and every output says so by the one rule of study.TieWithin: the
// report's badge and summary and the table's summary, each stating it.
func TestCompareOneTieRule(t *testing.T) {
	md := filepath.Join(t.TempDir(), "c.md")
	code, out, errs := runCLI(t, "compare", "--design", "ib=--node dgx-h100 --nodes 2 --nics 8x400G-ib",
		"--design", "roce=--node dgx-h100 --nodes 2 --nics 8x400G-roce", "-b", "64M", "-e", "256M", "--engine", "analytic", "--report", md)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rep, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	rule := study.TieRule()
	flat := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n#", " ")), " ") }
	out, rep = flat(out), []byte(flat(string(rep)))
	if !strings.Contains(out, "A tie at") || !strings.Contains(out, rule) {
		t.Errorf("stdout does not call it a tie by the rule:\n%s", out)
	}
	if !strings.Contains(string(rep), "a tie at") || !strings.Contains(string(rep), "are a tie ("+rule) || strings.Contains(string(rep), "faster at") {
		t.Errorf("report badge or summary disagree with the rule:\n%s", rep)
	}
}
