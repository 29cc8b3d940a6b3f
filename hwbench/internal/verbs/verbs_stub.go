//go:build !cgo || !linux

package verbs

import (
	"time"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

// Lib is a loaded libibverbs. In this build (no cgo, or not Linux) Load
// always fails, so no Lib exists.
type Lib struct{}

// Load always fails in this build with an error wrapping dl.ErrUnsupported.
func Load() (*Lib, error) { return LoadFrom(Sonames) }

// LoadFrom always fails in this build with an error wrapping dl.ErrUnsupported.
func LoadFrom(sonames []string) (*Lib, error) {
	_, err := dl.Open(sonames, nil)
	return nil, err
}

// Soname returns "".
func (l *Lib) Soname() string { return "" }

// Devices fails with dl.ErrUnsupported.
func (l *Lib) Devices() ([]Device, error) { return nil, dl.ErrUnsupported }

// Context is an open RDMA device.
type Context struct{}

// Open fails with dl.ErrUnsupported.
func (l *Lib) Open(name string) (*Context, error) { return nil, dl.ErrUnsupported }

// Close does nothing.
func (c *Context) Close() error { return nil }

// Route says how the two loopback QPs address each other.
type Route struct {
	Port     int
	LID      int
	UseGID   bool
	GIDIndex int
	GID      GID
	MTU      int
}

// Loopback is two connected queue pairs on one port.
type Loopback struct{}

// Loopback fails with dl.ErrUnsupported.
func (c *Context) Loopback(r Route) (*Loopback, error) { return nil, dl.ErrUnsupported }

// Close does nothing.
func (lb *Loopback) Close() error { return nil }

// MR is a registered memory region.
type MR struct{}

// Register fails with dl.ErrUnsupported.
func (lb *Loopback) Register(addr, n uint64) (*MR, error) { return nil, dl.ErrUnsupported }

// HasDMABuf reports false in this build.
func (l *Lib) HasDMABuf() bool { return false }

// RegisterDMABuf fails with dl.ErrUnsupported.
func (lb *Loopback) RegisterDMABuf(off, n, iova uint64, fd int) (*MR, error) {
	return nil, dl.ErrUnsupported
}

// Close does nothing.
func (m *MR) Close() error { return nil }

// WriteBandwidth fails with dl.ErrUnsupported.
func (lb *Loopback) WriteBandwidth(src, dst *MR, size uint64, iters, depth int) (time.Duration, error) {
	return 0, dl.ErrUnsupported
}

// WriteLatency fails with dl.ErrUnsupported.
func (lb *Loopback) WriteLatency(src, dst *MR, size uint64, iters int) (time.Duration, error) {
	return 0, dl.ErrUnsupported
}

// MaxQPs is the most queue pairs an Endpoint has.
const MaxQPs = 16

// Endpoint is queue pairs to connect to another node's.
type Endpoint struct{}

// Endpoint fails with dl.ErrUnsupported.
func (c *Context) Endpoint(port, qps int) (*Endpoint, error) { return nil, dl.ErrUnsupported }

// QPNs returns nil.
func (e *Endpoint) QPNs() []uint32 { return nil }

// Connect fails with dl.ErrUnsupported.
func (e *Endpoint) Connect(i int, remoteQPN uint32, r Route) error { return dl.ErrUnsupported }

// Register fails with dl.ErrUnsupported.
func (e *Endpoint) Register(addr, n uint64) (*MR, error) { return nil, dl.ErrUnsupported }

// RegisterDMABuf fails with dl.ErrUnsupported.
func (e *Endpoint) RegisterDMABuf(off, n, iova uint64, fd int) (*MR, error) {
	return nil, dl.ErrUnsupported
}

// Keys returns zeros.
func (m *MR) Keys() (addr uint64, rkey uint32) { return 0, 0 }

// WriteBandwidth fails with dl.ErrUnsupported.
func (e *Endpoint) WriteBandwidth(src *MR, raddr uint64, rkey uint32, size uint64, iters, depth int) (time.Duration, error) {
	return 0, dl.ErrUnsupported
}

// WriteLatency fails with dl.ErrUnsupported.
func (e *Endpoint) WriteLatency(src *MR, raddr uint64, rkey uint32, size uint64, iters int) (time.Duration, error) {
	return 0, dl.ErrUnsupported
}

// Close does nothing.
func (e *Endpoint) Close() error { return nil }
