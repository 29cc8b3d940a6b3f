package hwbench_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collsim/collsim/hwbench"
	"github.com/collsim/collsim/internal/cli"
)

// TestCommandWithoutGPU is what `collsim hwbench` does on a machine without
// the CUDA runtime (this one, CI): a non-zero exit and one line naming the
// libraries it looked for. On a GPU machine it is skipped.
func TestCommandWithoutGPU(t *testing.T) {
	if _, err := hwbench.Open(); err == nil {
		t.Skip("this machine has a usable CUDA runtime and GPU")
	} else if !errors.Is(err, hwbench.ErrLibraryNotFound) && !errors.Is(err, hwbench.ErrUnsupported) {
		t.Skipf("CUDA runtime present but unusable: %v", err)
	}
	out := filepath.Join(t.TempDir(), "hw.json")
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), []string{"collsim", "hwbench", "--out", out}, &stdout, &stderr)
	msg := stderr.String()
	if code == 0 {
		t.Fatalf("exit 0 without a GPU; stderr %q", msg)
	}
	if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "collsim: hwbench: libcudart.so.13, libcudart.so.12, libcudart.so.11: ") {
		t.Errorf("stderr = %q, want one line naming the libcudart sonames", msg)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("report written without a GPU: %v", err)
	}
}

func TestCommandFake(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "hw.json")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
		files  []string
	}{
		{"all probes", []string{"--fake", "--out", out, "--maxbytes", "1M", "--copybytes", "1M", "--iters", "2", "--warmup", "1"}, 0, "hwbench: nccl allreduce 4 ranks", []string{out, out + ".nccl-tests.txt"}},
		{"quiet, own text file", []string{"--fake", "-q", "--out", out, "--probes", "nccl", "-b", "1K", "-e", "4K", "--nccl-text", filepath.Join(dir, "t.txt")}, 0, "", []string{filepath.Join(dir, "t.txt")}},
		{"unknown probe", []string{"--fake", "--out", out, "--probes", "topo,bogus"}, 2, `unknown probe "bogus"`, nil},
		{"bad size", []string{"--fake", "--out", out, "--maxbytes", "12Q"}, 2, "--maxbytes", nil},
		{"ranks without coordinator", []string{"--fake", "--out", out, "--nranks", "2"}, 2, "--coordinator", nil},
		{"argument", []string{"--fake", "extra"}, 2, "takes no arguments", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), append([]string{"collsim", "hwbench"}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if tc.stderr == "" && stderr.Len() > 0 {
				t.Errorf("stderr not quiet: %q", stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr.String())
			}
			for _, f := range tc.files {
				if _, err := os.Stat(f); err != nil {
					t.Errorf("%s: %v", f, err)
				}
			}
			if tc.code == 0 && !strings.Contains(stdout.String(), "hwbench: "+out) {
				t.Errorf("stdout %q does not name the report", stdout.String())
			}
		})
	}
}
