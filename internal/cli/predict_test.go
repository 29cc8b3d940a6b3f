package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPredictDefault(t *testing.T) {
	code, out, errs := runCLI(t, "predict", "-b", "8", "-e", "64M", "--engine", "analytic")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "# Avg bus bandwidth", "Transports:", "Bottleneck", "NIC"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// 8 B .. 64 MiB by 2 is 24 rows.
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			rows++
		}
	}
	if rows != 24 {
		t.Errorf("%d rows, want 24", rows)
	}
}

func TestPredictJSON(t *testing.T) {
	code, out, errs := runCLI(t, "predict", "--node", "dgx-h100", "--nodes", "2", "--nics", "8x400G-ib", "-b", "1M", "-e", "64M", "-f", "2", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var d struct {
		Cluster struct {
			Nodes int    `json:"nodes"`
			GPU   string `json:"gpu"`
		} `json:"cluster"`
		Collective string                   `json:"collective"`
		Ranks      int                      `json:"ranks"`
		Results    []map[string]interface{} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Ranks != 16 || len(d.Results) != 7 || d.Collective != "allreduce" || d.Cluster.Nodes != 2 || d.Cluster.GPU != "H100-SXM" {
		t.Fatalf("json = %+v", d)
	}
	for _, k := range []string{"size_bytes", "count", "time_us", "algbw_gbps", "busbw_gbps", "algo", "proto", "channels"} {
		if _, ok := d.Results[0][k]; !ok {
			t.Errorf("result lacks %s", k)
		}
	}
}

func TestPredictCollectivesAndFormats(t *testing.T) {
	for _, c := range []string{"allgather", "reducescatter", "broadcast", "reduce", "alltoall", "sendrecv"} {
		if code, _, errs := runCLI(t, "predict", "--node", "dgx-a100", "--collective", c, "-b", "1M", "-e", "4M", "--format", "csv"); code != 0 {
			t.Errorf("%s: exit %d: %s", c, code, errs)
		}
	}
	code, out, _ := runCLI(t, "predict", "--node", "pcie-gpu-server", "--gpu", "L40S", "--gpus-per-node", "4", "-b", "1M", "-e", "1M", "--format", "csv")
	if code != 0 || !strings.HasPrefix(out, "size_bytes,count,type") {
		t.Errorf("csv: %d %q", code, out)
	}
}

// TestPredictGolden pins the table layout and the numbers of a small
// single-node prediction (analytic engine); -update rewrites it.
func TestPredictGolden(t *testing.T) {
	code, out, errs := runCLI(t, "predict", "--node", "dgx-h100", "-b", "1K", "-e", "1G", "-f", "8", "--engine", "analytic")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkGolden(t, "predict/dgx-h100.golden", out)
}

func TestPredictDeterministic(t *testing.T) {
	args := []string{"predict", "--node", "dgx-a100", "--nodes", "2", "--nics", "4x200G-ib", "-b", "8", "-e", "16M", "--format", "json"}
	_, a, _ := runCLI(t, args...)
	_, b, _ := runCLI(t, args...)
	if a != b || a == "" {
		t.Error("the same prediction printed differently")
	}
}

func TestPredictBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--node", "dgx-a1000"},
		{"-b", "8G", "-e", "1M"},
		{"-b", "0", "-e", "1M"},
		{"-e", "2T"},
		{"--node", "dgx-a100", "--gpus-per-node", "9"},
		{"--nics", "4x999G-ib"},
		{"--collective", "allscatter"},
		{"--engine", "quantum"},
		{"--format", "xml"},
		{"--set", "NCCL_NONSENSE=1"},
		{"--node", "dgx-a100", "--algo", "nvls"},
		{"--nodes", "-3"},
		{"--cluster", "/nonexistent/cluster.yaml"},
		{"extra-argument"},
	} {
		code, out, errs := runCLI(t, append([]string{"predict"}, args...)...)
		lines := strings.Count(strings.TrimSpace(errs), "\n") + 1
		if code != 2 || lines > 3 || out != "" || strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine") {
			t.Errorf("predict %v: exit %d, %d stderr lines %q, stdout %q", args, code, lines, errs, out)
		}
	}
}

func TestTopoAndPresets(t *testing.T) {
	code, out, errs := runCLI(t, "topo", "--node", "dgx-h100", "--nodes", "2")
	if code != 0 {
		t.Fatalf("topo exit %d: %s", code, errs)
	}
	for _, want := range []string{"GPU0", "NV18", "NIC0", "PIX", "SYS", "Channel 00/", "via P2P/CUMEM", "NET/IB", "GDRDMA", "coll channels"} {
		if !strings.Contains(out, want) {
			t.Errorf("topo output lacks %q", want)
		}
	}
	code, out, _ = runCLI(t, "topo", "--node", "pcie-gpu-server")
	if code != 0 || !strings.Contains(out, "via SHM/direct/direct") || !strings.Contains(out, "NODE") {
		t.Errorf("pcie topo: %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "topo", "--from", corpus+"/topo_a100sxm80_hgx8_roce100x8_deepep13.txt", "--gpu", "A100-SXM4")
	if code != 0 || !strings.Contains(out, "NV12") || !strings.Contains(out, "PXB") {
		t.Errorf("topo --from: %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "presets")
	if code != 0 || !strings.Contains(out, "gb200-nvl72") || !strings.Contains(out, "dgx1-v100") {
		t.Errorf("presets: %d %s", code, out)
	}
	if code, _, _ := runCLI(t, "nosuchcommand"); code != 2 {
		t.Errorf("unknown command exit %d", code)
	}
}

// TestPredictSizeSteps: -f 1 adds -i/--stepbytes as nccl-tests does, and a
// sweep of more than 4096 sizes is refused rather than cut short.
func TestPredictSizeSteps(t *testing.T) {
	code, out, errs := runCLI(t, "predict", "--node", "dgx-a100", "-b", "1M", "-e", "3M", "-f", "1", "-i", "512K", "--engine", "analytic", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// 1M, 1.5M, 2M, 2.5M, 3M plus the header.
	if n := strings.Count(strings.TrimSpace(out), "\n"); n != 5 {
		t.Errorf("%d rows, want 5:\n%s", n, out)
	}
	code, out, errs = runCLI(t, "predict", "-b", "1", "-e", "1T", "-f", "1.0001")
	if code != 2 || out != "" || !strings.Contains(errs, "more than 4096 sizes") {
		t.Errorf("huge sweep: exit %d, %q", code, errs)
	}
	// A factor that is not a number is refused as one; a factor past -e
	// gives -b alone (it used to wrap around int64 and step by 1 byte).
	code, out, errs = runCLI(t, "predict", "-b", "1M", "-e", "4M", "-f", "NaN")
	if code != 2 || out != "" || !strings.Contains(errs, `want a number >= 1, got "NaN"`) {
		t.Errorf("-f NaN: exit %d, %q", code, errs)
	}
	code, out, errs = runCLI(t, "predict", "--engine", "analytic", "-b", "1M", "-e", "4M", "-f", "1e20", "--format", "csv")
	if n := strings.Count(strings.TrimSpace(out), "\n"); code != 0 || n != 1 {
		t.Errorf("-f 1e20: exit %d, %d rows, want 1: %s %s", code, n, out, errs)
	}
}

// TestPredictSaysWhichProfile: a prediction made with --profile says so,
// in the table's header and in the JSON, with the terms that reach the
// cluster and those that cannot (a Hopper cluster takes no NVLink3 term;
// one node takes no network term); scale and compare do the same.
func TestPredictSaysWhichProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(prof, []byte(`format: collsim-profile/1
cluster: 2 x hgx-h100-4gpu (4x H100-SXM, 4x NDR200 ib), NCCL 2.22 model
fitted_on:
  - {file: snellius_2x4.txt, kind: nccl-tests, points: 20}
params:
  - {name: net.eff.ib, value: 0.91, default: 0.95, unit: fraction}
  - {name: nvlink.eff.3, value: 0.8, default: 0.85, unit: fraction}
fit: {points: 20}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "predict", "--node", "dgx-h100", "--nodes", "2", "--profile", prof, "-b", "1G", "-e", "1G", "--engine", "analytic")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var head []string // the comment lines, unwrapped
	for _, l := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(l, "# "); ok {
			head = append(head, c)
		}
	}
	if h := strings.Join(head, " "); !strings.Contains(h, "Profile: "+prof+", fitted on 2 x hgx-h100-4gpu") || !strings.Contains(h, ": 1 of its 2 term(s) applied (net.eff.ib); not applicable to this cluster: nvlink.eff.3") {
		t.Errorf("the header does not say which profile and terms:\n%s", out)
	}
	code, out, errs = runCLI(t, "predict", "--node", "dgx-h100", "--profile", prof, "-b", "1G", "-e", "1G", "--engine", "analytic", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var d struct {
		Profile *profileJSON `json:"profile"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if p := d.Profile; p == nil || p.File != prof || len(p.Applied) != 0 || strings.Join(p.NotApplicable, ",") != "net.eff.ib,nvlink.eff.3" {
		t.Errorf("one node: profile %+v, want both terms not applicable", d.Profile)
	}
	if code, out, _ := runCLI(t, "predict", "--node", "dgx-h100", "-b", "1G", "-e", "1G", "--engine", "analytic"); code != 0 || strings.Contains(out, "Profile") {
		t.Errorf("without --profile the header names one (exit %d):\n%s", code, out)
	}
	// scale judges the terms on its largest cluster.
	code, out, errs = runCLI(t, "scale", "--node", "dgx-h100", "--max-nodes", "4", "--size", "1G", "--profile", prof, "--format", "json")
	if code != 0 {
		t.Fatalf("scale: exit %d: %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if p := d.Profile; p == nil || strings.Join(p.Applied, ",") != "net.eff.ib" {
		t.Errorf("scale: profile %+v, want net.eff.ib applied", d.Profile)
	}
	// compare names it on the design it applies to.
	code, out, errs = runCLI(t, "compare", "--design", "cal=--node dgx-h100 --nodes 2 --profile "+prof, "--design", "plain=--node dgx-h100 --nodes 2",
		"-b", "1G", "-e", "1G", "--engine", "analytic")
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errs)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], "; profile "+prof+" (1 of 2 terms apply)") || strings.Contains(lines[2], "profile") {
		t.Errorf("compare's design lines do not say which design has the profile:\n%s", out)
	}
}

// TestSetKeepsCommas: --set takes its value whole; NCCL values hold
// commas (a list of HCAs), and the option used to split them into a
// second, malformed --set, while validate prints exactly such a command
// as the one that reproduces a fewer-NICs diagnosis.
func TestSetKeepsCommas(t *testing.T) {
	code, out, errs := runCLI(t, "predict", "--node", "hgx-h100-4gpu", "--nodes", "2", "--set", "NCCL_IB_HCA==mlx5_0,mlx5_1", "-b", "1G", "-e", "1G", "--engine", "analytic")
	if code != 0 || !strings.Contains(out, "over 2 of 4 NICs per node") {
		t.Errorf("exit %d, stderr %q; want the two HCAs named used:\n%s", code, errs, out)
	}
}

// TestInertSettingsSaid: settings that change nothing on the cluster are
// said in the summary (RoCE loss on InfiniBand NICs, CollNet asked for
// where NCCL would not run it), where they were ignored in silence and a
// design read as if it had them.
func TestInertSettingsSaid(t *testing.T) {
	dir := t.TempDir()
	ib := filepath.Join(dir, "ib.yaml")
	writeFile(t, ib, "node: dgx-h100\nnodes: 4\nnics: {count: 8, speed: NDR, kind: ib, roce: {loss_rate: 0.01}}\nenv: {NCCL_COLLNET_ENABLE: \"1\"}\n")
	code, out, errs := runCLI(t, "predict", "--cluster", ib, "-b", "1G", "-e", "1G", "--engine", "analytic")
	flat := strings.Join(strings.Fields(strings.ReplaceAll(out, "\n#", "")), " ")
	if code != 0 || !strings.Contains(flat, "The nics.roce settings change nothing: the NICs are ib, not RoCE.") || !strings.Contains(flat, "NCCL_COLLNET_ENABLE=1 runs no CollNet here") {
		t.Errorf("exit %d, stderr %q:\n%s", code, errs, out)
	}
	code, out, _ = runCLI(t, "predict", "--node", "dgx-h100", "--nodes", "4", "-b", "1G", "-e", "1G", "--engine", "analytic")
	if code != 0 || strings.Contains(out, "change nothing") || strings.Contains(out, "runs no CollNet") {
		t.Errorf("a plain cluster names inert settings:\n%s", out)
	}
}
