package cli

import (
	"fmt"
	"net"
	"os"
	"os/exec"
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
	for _, w := range []string{"P2P/CUMEM/read", "NVLS", "available (NCCL_DEBUG=INFO)", "mlx5_0:1 dmabuf"} {
		if !strings.Contains(page, w) {
			t.Errorf("report lacks %q", w)
		}
	}
	if !strings.Contains(page, "nothing measured, nothing compared") {
		t.Errorf("report does not say nothing was compared:\n%s", page[:min(len(page), 1500)])
	}
}

// TestHWBenchValidateAgainst closes the loop on the fake: measure, then
// compare with the model of a cluster YAML and diagnose. The fake's 4 x
// H100 match a 4-GPU dgx-h100 model (PASS, exit 0); a model forced to NVLS
// does not (FAIL, exit 1, one line naming the most likely cause); a bad or
// mismatched cluster file is the user's input (exit 2), the bad one before
// anything is measured.
func TestHWBenchValidateAgainst(t *testing.T) {
	if testing.Short() {
		t.Skip("fits and validates; the full run covers it")
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "name: fake-4x-h100\nnode: dgx-h100\nnodes: 1\ngpus_per_node: 4\n")
	nvls := write("nvls.yaml", "name: fake-4x-h100-nvls\nnode: dgx-h100\nnodes: 1\ngpus_per_node: 4\nenv:\n  NCCL_ALGO: NVLS\n")
	eight := write("eight.yaml", "name: dgx\nnode: dgx-h100\nnodes: 1\n")
	bad := write("bad.yaml", "name: x\nnode: dgx-h100\nnodes: many\n")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
		json   bool
	}{
		// The fake's broadcast, reduce, alltoall and sendrecv times are a
		// plain latency + bytes/bandwidth, not NCCL's: compare the three the
		// fake models as NCCL on NVSwitch.
		{"pass", []string{"--validate-against", good, "--collectives", "all_reduce,all_gather,reduce_scatter"}, ExitOK, "# overall: PASS", "", true},
		{"bad collective", []string{"--collectives", "all_reduce,gossip"}, ExitBadInput, "", "--collectives", false},
		{"fail", []string{"--validate-against", nvls}, ExitFailed, "# overall: FAIL", "bandwidth-regime point(s) outside the 10% tolerance of the model; most likely cause:", true},
		{"rank mismatch", []string{"--validate-against", eight}, ExitBadInput, "", "--validate-against", true},
		{"bad yaml", []string{"--validate-against", bad}, ExitBadInput, "", "bad.yaml", false},
		{"tolerance alone", []string{"--tolerance", "5%"}, ExitBadInput, "", "--tolerance needs --validate-against", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "hw.json")
			args := append([]string{"hwbench", "--fake", "-q", "--out", out, "--probes", "nccl", "--maxbytes", "128M", "--iters", "2", "--warmup", "1", "-c", "0"}, tc.args...)
			code, stdout, stderr := runAt(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stdout lacks %q or stderr %q lacks %q:\n%s", tc.stdout, stderr, tc.stderr, stdout)
			}
			if tc.code != ExitOK && strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", stderr)
			}
			if _, err := os.Stat(out); (err == nil) != tc.json {
				t.Errorf("JSON written = %v, want %v", err == nil, tc.json)
			}
		})
	}
	// The report of a passing comparison carries the model's verdict.
	rep := filepath.Join(dir, "r.md")
	if code, _, stderr := runAt(t, "hwbench", "--fake", "-q", "--out", filepath.Join(dir, "hw.json"), "--probes", "nccl", "--maxbytes", "128M",
		"--iters", "2", "--warmup", "1", "-c", "0", "--validate-against", good, "--collectives", "allreduce", "--report", rep); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	page := readFile(t, rep)
	for _, w := range []string{"PASS", "Diagnosis", "all_reduce"} {
		if !strings.Contains(page, w) {
			t.Errorf("report lacks %q", w)
		}
	}
	if strings.Contains(page, "nothing compared") {
		t.Error("report says nothing was compared")
	}
}

// TestHWBenchFakeAcrossProcesses: two ranks of --fake joined over
// 127.0.0.1 run the nccl sweep; their simulated machines share no data, so
// the data check is turned off with a line saying so (it counted every
// element wrong and failed the run), and each rank says which file it
// wrote: rank 0 its --out, rank 1 none. Rank 1 runs in a process of its
// own (this test binary again), as ranks do.
func TestHWBenchFakeAcrossProcesses(t *testing.T) {
	args := func(r int, addr, dir string) []string {
		return []string{"hwbench", "--fake", "--probes", "nccl", "-b", "8", "-e", "64K", "--collectives", "all_reduce",
			"--rank", fmt.Sprint(r), "--nranks", "2", "--coordinator", addr, "--out", filepath.Join(dir, fmt.Sprintf("r%d.json", r)), "-q"}
	}
	if addr := os.Getenv("COLLSIM_TEST_RANK1"); addr != "" {
		// The second process: rank 1, its output on this process's stdout
		// and stderr, its exit status this process's.
		code, so, se := runCLI(t, args(1, addr, os.Getenv("COLLSIM_TEST_DIR"))...)
		fmt.Fprint(os.Stdout, so)
		fmt.Fprint(os.Stderr, se)
		os.Exit(code)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHWBenchFakeAcrossProcesses$")
	cmd.Env = append(os.Environ(), "COLLSIM_TEST_RANK1="+addr, "COLLSIM_TEST_DIR="+dir)
	var so1, se1 strings.Builder
	cmd.Stdout, cmd.Stderr = &so1, &se1
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	code0, so0, se0 := runCLI(t, args(0, addr, dir)...)
	err = cmd.Wait()
	if code0 != ExitOK || !strings.Contains(se0, "the data check is off (-c 0)") {
		t.Errorf("rank 0: exit %d, stderr %q", code0, se0)
	}
	if err != nil || !strings.Contains(se1.String(), "the data check is off (-c 0)") {
		t.Errorf("rank 1: %v, stderr %q", err, se1.String())
	}
	if !strings.Contains(so0, "r0.json (nccl ok)") || !strings.Contains(so1.String(), "rank 1 (nccl ok) writes no file") {
		t.Errorf("files named: rank 0 %q, rank 1 %q", so0, so1.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "r1.json")); err == nil {
		t.Error("rank 1 wrote a file")
	}
}
