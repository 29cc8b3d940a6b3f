package cuda

import (
	"errors"
	"testing"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

func TestVersionString(t *testing.T) {
	tests := []struct {
		v    int
		want string
	}{
		{12040, "12.4"}, // cudaRuntimeGetVersion encoding: 1000*major + 10*minor
		{11080, "11.8"},
		{13000, "13.0"},
		{0, ""},
	}
	for _, tc := range tests {
		if got := VersionString(tc.v); got != tc.want {
			t.Errorf("VersionString(%d) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Op: "cudaMalloc", Code: 2, Name: "cudaErrorMemoryAllocation", Msg: "out of memory"}
	if got, want := e.Error(), "cuda: cudaMalloc: out of memory (cudaErrorMemoryAllocation=2)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestLoadOnThisMachine loads the real runtime when there is one and checks
// that a machine without it gets ErrLibraryNotFound (or ErrUnsupported in a
// build without cgo), never a panic.
func TestLoadOnThisMachine(t *testing.T) {
	r, err := Load()
	if err != nil {
		if !errors.Is(err, dl.ErrLibraryNotFound) && !errors.Is(err, dl.ErrUnsupported) {
			t.Fatalf("Load: %v (want ErrLibraryNotFound or ErrUnsupported when absent)", err)
		}
		t.Skipf("no CUDA runtime: %v", err)
	}
	n, err := r.DeviceCount()
	if err != nil {
		t.Skipf("CUDA runtime without a usable GPU: %v", err)
	}
	if n < 1 {
		t.Skip("no GPU")
	}
	p, err := r.Malloc(0, 1<<20)
	if err != nil {
		t.Fatalf("Malloc: %v", err)
	}
	if err := r.Free(0, p); err != nil {
		t.Fatalf("Free: %v", err)
	}
}
