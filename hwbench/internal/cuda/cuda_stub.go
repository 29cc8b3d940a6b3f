//go:build !cgo || !linux

package cuda

import (
	"time"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

// Runtime is a loaded CUDA runtime library. In this build (no cgo, or not
// Linux) Load always fails, so no Runtime exists.
type Runtime struct{}

// Load always fails in this build with an error wrapping dl.ErrUnsupported.
func Load() (*Runtime, error) { return LoadFrom(Sonames) }

// LoadFrom always fails in this build with an error wrapping dl.ErrUnsupported.
func LoadFrom(sonames []string) (*Runtime, error) {
	_, err := dl.Open(sonames, nil)
	return nil, err
}

// LoadUsable always fails in this build with an error wrapping
// dl.ErrUnsupported.
func LoadUsable(sonames []string) (*Runtime, int, string, error) {
	r, err := LoadFrom(sonames)
	return r, 0, "", err
}

// MallocPageable always fails in this build.
func MallocPageable(n uint64) (Ptr, error) { return 0, dl.ErrUnsupported }

// FreePageable does nothing in this build.
func FreePageable(p Ptr) {}

// Soname returns "".
func (r *Runtime) Soname() string { return "" }

// DriverVersion fails with dl.ErrUnsupported.
func (r *Runtime) DriverVersion() (int, error) { return 0, dl.ErrUnsupported }

// RuntimeVersion fails with dl.ErrUnsupported.
func (r *Runtime) RuntimeVersion() (int, error) { return 0, dl.ErrUnsupported }

// ErrorString returns "".
func (r *Runtime) ErrorString(code int) string { return "" }

// DeviceCount fails with dl.ErrUnsupported.
func (r *Runtime) DeviceCount() (int, error) { return 0, dl.ErrUnsupported }

// SetDevice fails with dl.ErrUnsupported.
func (r *Runtime) SetDevice(dev int) error { return dl.ErrUnsupported }

// Attribute fails with dl.ErrUnsupported.
func (r *Runtime) Attribute(attr Attr, dev int) (int, error) { return 0, dl.ErrUnsupported }

// PCIBusID fails with dl.ErrUnsupported.
func (r *Runtime) PCIBusID(dev int) (string, error) { return "", dl.ErrUnsupported }

// MemInfo fails with dl.ErrUnsupported.
func (r *Runtime) MemInfo(dev int) (free, total uint64, err error) { return 0, 0, dl.ErrUnsupported }

// CanAccessPeer fails with dl.ErrUnsupported.
func (r *Runtime) CanAccessPeer(dev, peer int) (bool, error) { return false, dl.ErrUnsupported }

// EnablePeerAccess fails with dl.ErrUnsupported.
func (r *Runtime) EnablePeerAccess(dev, peer int) error { return dl.ErrUnsupported }

// DisablePeerAccess fails with dl.ErrUnsupported.
func (r *Runtime) DisablePeerAccess(dev, peer int) error { return dl.ErrUnsupported }

// DeviceSynchronize fails with dl.ErrUnsupported.
func (r *Runtime) DeviceSynchronize(dev int) error { return dl.ErrUnsupported }

// Malloc fails with dl.ErrUnsupported.
func (r *Runtime) Malloc(dev int, n uint64) (Ptr, error) { return 0, dl.ErrUnsupported }

// Free fails with dl.ErrUnsupported.
func (r *Runtime) Free(dev int, p Ptr) error { return dl.ErrUnsupported }

// Memset fails with dl.ErrUnsupported.
func (r *Runtime) Memset(dev int, p Ptr, value byte, n uint64) error { return dl.ErrUnsupported }

// MallocHost fails with dl.ErrUnsupported.
func (r *Runtime) MallocHost(n uint64) (Ptr, error) { return 0, dl.ErrUnsupported }

// FreeHost fails with dl.ErrUnsupported.
func (r *Runtime) FreeHost(p Ptr) error { return dl.ErrUnsupported }

// Memcpy fails with dl.ErrUnsupported.
func (r *Runtime) Memcpy(dev int, dst, src Ptr, n uint64, kind MemcpyKind) error {
	return dl.ErrUnsupported
}

// MemcpyAsync fails with dl.ErrUnsupported.
func (r *Runtime) MemcpyAsync(dev int, dst, src Ptr, n uint64, kind MemcpyKind, s Stream) error {
	return dl.ErrUnsupported
}

// MemcpyPeerAsync fails with dl.ErrUnsupported.
func (r *Runtime) MemcpyPeerAsync(dev int, dst Ptr, dstDev int, src Ptr, srcDev int, n uint64, s Stream) error {
	return dl.ErrUnsupported
}

// StreamCreate fails with dl.ErrUnsupported.
func (r *Runtime) StreamCreate(dev int) (Stream, error) { return 0, dl.ErrUnsupported }

// StreamDestroy fails with dl.ErrUnsupported.
func (r *Runtime) StreamDestroy(dev int, s Stream) error { return dl.ErrUnsupported }

// StreamSynchronize fails with dl.ErrUnsupported.
func (r *Runtime) StreamSynchronize(dev int, s Stream) error { return dl.ErrUnsupported }

// StreamWaitEvent fails with dl.ErrUnsupported.
func (r *Runtime) StreamWaitEvent(dev int, s Stream, e Event) error { return dl.ErrUnsupported }

// EventCreate fails with dl.ErrUnsupported.
func (r *Runtime) EventCreate(dev int) (Event, error) { return 0, dl.ErrUnsupported }

// EventRecord fails with dl.ErrUnsupported.
func (r *Runtime) EventRecord(dev int, e Event, s Stream) error { return dl.ErrUnsupported }

// EventSynchronize fails with dl.ErrUnsupported.
func (r *Runtime) EventSynchronize(e Event) error { return dl.ErrUnsupported }

// EventElapsed fails with dl.ErrUnsupported.
func (r *Runtime) EventElapsed(start, end Event) (time.Duration, error) {
	return 0, dl.ErrUnsupported
}

// EventDestroy fails with dl.ErrUnsupported.
func (r *Runtime) EventDestroy(e Event) error { return dl.ErrUnsupported }

// MallocHostNUMA fails with dl.ErrUnsupported.
func (r *Runtime) MallocHostNUMA(n uint64, numa int) (Ptr, bool, error) {
	return 0, false, dl.ErrUnsupported
}

// MappedFlag fails with dl.ErrUnsupported.
func (r *Runtime) MappedFlag() (host, dev Ptr, err error) { return 0, 0, dl.ErrUnsupported }

// SetFlag does nothing in this build.
func SetFlag(host Ptr, v uint32) {}

// DriverAttribute fails with dl.ErrUnsupported.
func (r *Runtime) DriverAttribute(attr, dev int) (int, error) { return 0, dl.ErrUnsupported }

// DMABufFD fails with dl.ErrUnsupported.
func (r *Runtime) DMABufFD(p Ptr, n uint64) (int, error) { return -1, dl.ErrUnsupported }

// LaunchDelay fails with dl.ErrUnsupported.
func (r *Runtime) LaunchDelay(dev int, s Stream, flagDev Ptr, timeoutClocks uint64) error {
	return dl.ErrUnsupported
}

// CloseFD fails with dl.ErrUnsupported.
func CloseFD(fd int) error { return dl.ErrUnsupported }

// HostSlice returns nil in this build.
func HostSlice(p Ptr, n int) []byte { return nil }
