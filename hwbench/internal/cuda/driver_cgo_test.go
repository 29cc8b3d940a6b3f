//go:build cgo && linux

package cuda

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/collsim/collsim/hwbench/internal/cfake"
)

// TestDriverBindingAgainstFake calls the driver API through the binding
// into a stand-in libcuda that checks what it is given: the DMA-BUF
// attribute (124) on a CUdevice from cuDeviceGet, the DMA-BUF export with
// handle type CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD and no flags on a
// page-aligned range, the spin kernel's PTX, its 1x1x1 launch on the given
// stream with the flag's device address and the timeout as parameters, and
// the mapped, portable host flag.
func TestDriverBindingAgainstFake(t *testing.T) {
	lib := cfake.Build(t, "fakecuda.c", "libfakecuda.so")
	r, err := LoadWith([]string{lib}, []string{lib})
	if err != nil {
		t.Fatalf("LoadWith: %v", err)
	}
	if v, err := r.DriverAttribute(AttrDMABufSupported, 0); err != nil || v != 1 {
		t.Errorf("DMA-BUF attribute of device 0 = %d, %v; want 1", v, err)
	}
	if v, err := r.DriverAttribute(AttrDMABufSupported, 1); err != nil || v != 0 {
		t.Errorf("DMA-BUF attribute of device 1 = %d, %v; want 0", v, err)
	}
	fd, err := r.DMABufFD(0x7f0000200000, 2<<20)
	if err != nil || fd != 77 {
		t.Errorf("DMABufFD = %d, %v; want the fake's descriptor 77", fd, err)
	}
	if p, n := cfake.Var[uint64](t, lib, "last_range_ptr"), cfake.Var[uint64](t, lib, "last_range_size"); p != 0x7f0000200000 || n != 2<<20 {
		t.Errorf("range %#x+%d", p, n)
	}
	if _, err := r.DMABufFD(0x7f0000200010, 2<<20); err == nil {
		t.Error("an unaligned range was accepted")
	}
	host, dev, err := r.MappedFlag()
	if err != nil || dev != host+0x1000000000 {
		t.Fatalf("MappedFlag = %#x, %#x, %v", host, dev, err)
	}
	if f := cfake.Var[uint32](t, lib, "last_host_alloc_flags"); f != 3 { // cudaHostAllocPortable | cudaHostAllocMapped
		t.Errorf("host alloc flags %d, want 3", f)
	}
	if err := r.LaunchDelay(0, Stream(0x5000), dev, 12345); err != nil {
		t.Fatalf("LaunchDelay: %v", err)
	}
	if err := r.LaunchDelay(0, Stream(0x5000), dev, 12345); err != nil { // the module is loaded once
		t.Fatalf("LaunchDelay again: %v", err)
	}
	if f, to, s, n := cfake.Var[uint64](t, lib, "launch_flag"), cfake.Var[uint64](t, lib, "launch_timeout"), cfake.Var[uintptr](t, lib, "launch_stream"), cfake.Var[int32](t, lib, "launches"); f != uint64(dev) || to != 12345 || s != 0x5000 || n != 2 {
		t.Errorf("launch flag %#x timeout %d stream %#x count %d", f, to, s, n)
	}
	SetFlag(host, 1)
	if got := *(*uint32)(unsafe.Pointer(&HostSlice(host, 4)[0])); got != 1 {
		t.Errorf("flag = %d after SetFlag", got)
	}
	p, bound, err := r.MallocHostNUMA(1<<20, 0)
	if err != nil || p == 0 {
		t.Fatalf("MallocHostNUMA: %v", err)
	}
	t.Logf("NUMA binding took: %v", bound)                               // depends on this kernel's policy support
	if f := cfake.Var[uint32](t, lib, "last_host_alloc_flags"); f != 0 { // cudaHostAllocDefault
		t.Errorf("host alloc flags %d, want 0", f)
	}
}

// TestLoadUsablePassesOverTooNewRuntime: a runtime newer than the driver
// (cudaGetDeviceCount fails with cudaErrorInsufficientDriver) is passed
// over for the next soname, and said so; a runtime that works is taken
// first; when the only runtime is too new, its error is returned.
func TestLoadUsablePassesOverTooNewRuntime(t *testing.T) {
	tooNew := cfake.Build(t, "fakecuda_olddriver.c", "libcudart.so.13")
	works := cfake.Build(t, "fakecuda.c", "libcudart.so.12")
	r, n, passed, err := LoadUsable([]string{tooNew, works})
	if err != nil || r == nil || r.Soname() != works || n != 2 || passed == "" {
		t.Fatalf("LoadUsable(too new, works) = %v, %d GPUs, passed %q, %v; want the second with 2 GPUs, the first named", r, n, passed, err)
	}
	if r, n, passed, err := LoadUsable([]string{works, tooNew}); err != nil || r.Soname() != works || n != 2 || passed != "" {
		t.Errorf("LoadUsable(works, too new) = %v, %d, %q, %v; want the first, nothing passed over", r, n, passed, err)
	}
	var ce *Error
	if _, _, _, err := LoadUsable([]string{tooNew}); !errors.As(err, &ce) || ce.Code != ErrInsufficientDriver {
		t.Errorf("LoadUsable(too new) error %v, want cudaErrorInsufficientDriver", err)
	}
}
