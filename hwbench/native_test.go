package hwbench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/collsim/collsim/model"
)

// TestNativeOpen checks what Open says on this machine: without libcudart
// an error wrapping ErrLibraryNotFound (ErrUnsupported without cgo), on one
// line.
func TestNativeOpen(t *testing.T) {
	n, err := Open()
	if err == nil {
		if _, herr := n.Hostname(); herr != nil {
			t.Errorf("Hostname: %v", herr)
		}
		return
	}
	if !errors.Is(err, ErrLibraryNotFound) && !errors.Is(err, ErrUnsupported) {
		t.Skipf("CUDA runtime present but no usable GPU: %v", err)
	}
	if got := err.Error(); len(got) == 0 || got[:9] != "hwbench: " || containsNewline(got) {
		t.Errorf("Open error %q: want one line starting with \"hwbench: \"", got)
	}
}

func containsNewline(s string) bool {
	for _, c := range s {
		if c == '\n' {
			return true
		}
	}
	return false
}

// TestNativeSmoke runs every probe briefly on real hardware. It needs a GPU
// and the CUDA runtime (NCCL, NVML and libibverbs when present; probes
// whose library is missing are skipped) and is skipped elsewhere.
func TestNativeSmoke(t *testing.T) {
	n, err := Open()
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	o := DefaultOptions()
	o.Out = filepath.Join(t.TempDir(), "hwbench.json")
	o.NCCLText = o.Out + ".nccl-tests.txt"
	o.MaxBytes, o.CopyBytes, o.Iters, o.Warmup = model.MiB, model.MiB, 3, 1
	o.Progress = os.Stderr
	o.BackendName = "native"
	rep, err := Run(context.Background(), n, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, p := range rep.Probes {
		t.Logf("%s: %s %s", p.Name, p.Status, p.Error)
	}
	if rep.Copy == nil || len(rep.Copy.GPUs) == 0 || float64(rep.Copy.GPUs[0].H2DPinned) <= 0 {
		t.Errorf("copy probe measured nothing: %+v", rep.Copy)
	}
}
