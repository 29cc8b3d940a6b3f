package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The -update flag rewrites the golden files. It is registered only if no
// other test file of the package has registered it.
var _ = func() bool {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files in testdata")
	}
	return true
}()

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// corpus is the testdata copy of shared/data/raw kept by the calibrate package.
const corpus = "../../ingest/testdata/raw"

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), append([]string{"collsim"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	// Bare names are inspect goldens; "dir/name" picks another folder of testdata.
	path := filepath.Join("testdata", "inspect", name)
	if strings.Contains(name, "/") {
		path = filepath.Join("testdata", name)
	}
	if updateGolden() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update to accept):\n%s", path, firstDiff(string(want), got))
	}
}

// firstDiff shows the first line that differs.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\nwant: " + a + "\ngot:  " + b
		}
	}
	return ""
}

func TestInspectGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		// log, rows split by a log line, NVLS info; ibstat alongside adds the NIC plateau note
		{"snellius_2x4.txt", []string{"inspect", corpus + "/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_allgather_2.txt", corpus + "/ibstat_snellius_h100_node.txt"}},
		// socket transport, bandwidth cliff, page-break line skipped, collective inferred
		{"bcm_socket.txt", []string{"inspect", corpus + "/nccltests_v100sxm3_2x1_tcp-socket_bcm-manual_1.txt"}},
		// six runs, suspected missing P2P
		{"autodl_2080ti.txt", []string{"inspect", corpus + "/nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt", corpus + "/p2pbw_rtx2080ti_1x2_pcie-nop2p_autodl.txt", corpus + "/topo_rtx2080ti_1x2_pcie-nop2p_autodl.txt"}},
		// topology with NICs and an inferred GPU; nvbandwidth; statements
		{"topo_nvb_summary.txt", []string{"inspect", corpus + "/topo_a100sxm80_hgx8_roce100x8_deepep13.txt", corpus + "/nvbandwidth_h800_1x8_nvswitch-400GBps_cn-readme.txt", corpus + "/summary_maintainer_and_user_statements.txt", corpus + "/ibstatus_a100sxm80_hgx8_roce100x8_deepep13.txt"}},
		{"moc_roce.json", []string{"inspect", "--format", "json", corpus + "/nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt"}},
		{"topo_p2p.json", []string{"inspect", "--format=json", corpus + "/topo_rtx2080ti_1x2_pcie-nop2p_autodl.txt", corpus + "/p2pbw_rtx2080ti_1x2_pcie-nop2p_autodl.txt"}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != ExitOK {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			checkGolden(t, tc.golden, out)
			if strings.HasSuffix(tc.golden, ".json") {
				var doc struct {
					Artifacts []map[string]any `json:"artifacts"`
				}
				files := 0
				for _, a := range tc.args {
					if strings.HasSuffix(a, ".txt") {
						files++
					}
				}
				if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Artifacts) != files {
					t.Errorf("JSON: %v, %d artifacts", err, len(doc.Artifacts))
				}
			}
		})
	}
}

// TestInspectCorpus inspects every file of the corpus: all are recognised.
func TestInspectCorpus(t *testing.T) {
	files, err := filepath.Glob(corpus + "/*.txt")
	if err != nil || len(files) < 30 {
		t.Fatalf("corpus: %v, %d files", err, len(files))
	}
	code, out, errOut := runCLI(t, append([]string{"inspect"}, files...)...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "\n== "); n+1 != len(files) {
		t.Errorf("%d file sections for %d files", n+1, len(files))
	}
	code, out, _ = runCLI(t, append([]string{"inspect", "--format", "json"}, files...)...)
	var doc struct {
		Artifacts []struct {
			File string `json:"file"`
			Kind string `json:"kind"`
		} `json:"artifacts"`
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Artifacts) != len(files) {
		t.Fatalf("json: exit %d, %d artifacts", code, len(doc.Artifacts))
	}
	for _, a := range doc.Artifacts {
		if a.Kind == "" {
			t.Errorf("%s: no kind", a.File)
		}
	}
}

func TestInspectBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	header := "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
	garbage := filepath.Join(dir, "garbage.bin")
	writeGarbage(t, garbage, 100<<20)
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"empty", []string{write("empty.txt", "")}, "empty.txt:1: empty input"},
		{"binary", []string{write("bin.dat", "\x7fELF\x02\x01\x01\x00\x00\x00")}, "bin.dat:1: binary data"},
		{"truncated table", []string{write("trunc.txt", header+"     1048576        262144     float     sum      -1    279.5    3.75")}, "trunc.txt:2: "},
		{"missing columns", []string{write("cols.txt", header+"     1048576        262144     float     sum      -1    279.5    3.75    3.75\n     2097152        524288     float     sum      -1    539.6\n")}, "incomplete table row: 8 of 13 columns"},
		{"garbage 100 MB", []string{garbage}, "garbage.bin:"},
		{"unreadable", []string{filepath.Join(dir, "missing.txt")}, "no such file"},
		{"one bad among good", []string{corpus + "/ibstat_snellius_h100_node.txt", write("x.txt", "nothing here\n")}, "x.txt:1: no known format"},
		{"two bad", []string{write("a.txt", ""), write("b.txt", "")}, "2 of 2 files could not be inspected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"inspect"}, tc.args...)...)
			if code != ExitBadInput {
				t.Errorf("exit %d, want %d", code, ExitBadInput)
			}
			if !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "panic") {
				t.Errorf("stderr = %q, want %q", errOut, tc.want)
			}
			if tc.name == "one bad among good" && !strings.Contains(out, "ibstat/ibstatus") {
				t.Errorf("the readable file was not printed: %q", out)
			}
		})
	}
	if code, _, errOut := runCLI(t, "inspect"); code != ExitBadInput || !strings.Contains(errOut, "at least one file") {
		t.Errorf("no file: exit %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "inspect", "--format", "xml", corpus+"/ibstat_snellius_h100_node.txt"); code != ExitBadInput || !strings.Contains(errOut, "want table or json") {
		t.Errorf("bad format: exit %d %q", code, errOut)
	}
}

// writeGarbage writes n bytes of printable noise without holding them in memory.
func writeGarbage(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	x := uint32(2463534242)
	buf := make([]byte, 1<<16)
	for written := 0; written < n; written += len(buf) {
		for i := range buf {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			buf[i] = byte(33 + x%90)
			if x%97 == 0 {
				buf[i] = '\n'
			}
		}
		if _, err := w.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestInspectHWBenchTable: the table view of a hwbench report prints what
// each probe measured, as inspect prints the same measurements read from
// their own tools (topology, nccl-tests runs, matrices, perftest-style
// RDMA results, ports), not only the findings.
func TestInspectHWBenchTable(t *testing.T) {
	code, stdout, stderr := runCLI(t, "inspect", "../../ingest/testdata/hwbench_fake.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"socket 0: hb[sw[GPU0 GPU1 NIC0]]", "all_reduce      float  4      11    8B - 8M  267.99", "Unidirectional P2P=Enabled Bandwidth Matrix (GB/s)",
		"hwbench loopback rdma_write bw gpu->gpu", "mlx5_1  1     Active"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("inspect of the hwbench fixture lacks %q:\n%s", want, stdout)
		}
	}
	checkGolden(t, "hwbench_fake.txt", stdout)
}
