//go:build !cgo || !linux

package nccl

import "github.com/collsim/collsim/hwbench/internal/dl"

// Lib is a loaded NCCL library. In this build (no cgo, or not Linux) Load
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

// Version fails with dl.ErrUnsupported.
func (l *Lib) Version() (int, error) { return 0, dl.ErrUnsupported }

// GetUniqueID fails with dl.ErrUnsupported.
func (l *Lib) GetUniqueID() (UniqueID, error) { return UniqueID{}, dl.ErrUnsupported }

// InitRank fails with dl.ErrUnsupported.
func (l *Lib) InitRank(id UniqueID, nranks, rank int) (Comm, error) { return 0, dl.ErrUnsupported }

// InitAll fails with dl.ErrUnsupported.
func (l *Lib) InitAll(devs []int) ([]Comm, error) { return nil, dl.ErrUnsupported }

// Destroy fails with dl.ErrUnsupported.
func (l *Lib) Destroy(c Comm) error { return dl.ErrUnsupported }

// Abort fails with dl.ErrUnsupported.
func (l *Lib) Abort(c Comm) error { return dl.ErrUnsupported }

// ErrorString returns "".
func (l *Lib) ErrorString(code int) string { return "" }

// GroupStart fails with dl.ErrUnsupported.
func (l *Lib) GroupStart() error { return dl.ErrUnsupported }

// GroupEnd fails with dl.ErrUnsupported.
func (l *Lib) GroupEnd() error { return dl.ErrUnsupported }

// AllReduce fails with dl.ErrUnsupported.
func (l *Lib) AllReduce(send, recv uint64, count uint64, dt DataType, op RedOp, c Comm, stream uintptr) error {
	return dl.ErrUnsupported
}

// AllGather fails with dl.ErrUnsupported.
func (l *Lib) AllGather(send, recv uint64, sendcount uint64, dt DataType, c Comm, stream uintptr) error {
	return dl.ErrUnsupported
}

// ReduceScatter fails with dl.ErrUnsupported.
func (l *Lib) ReduceScatter(send, recv uint64, recvcount uint64, dt DataType, op RedOp, c Comm, stream uintptr) error {
	return dl.ErrUnsupported
}

// Broadcast fails with dl.ErrUnsupported.
func (l *Lib) Broadcast(send, recv uint64, count uint64, dt DataType, root int, c Comm, stream uintptr) error {
	return dl.ErrUnsupported
}

// Reduce fails with dl.ErrUnsupported.
func (l *Lib) Reduce(send, recv uint64, count uint64, dt DataType, op RedOp, root int, c Comm, stream uintptr) error {
	return dl.ErrUnsupported
}

// HasP2P reports false in this build.
func (l *Lib) HasP2P() bool { return false }

// Send fails with dl.ErrUnsupported.
func (l *Lib) Send(send uint64, count uint64, dt DataType, peer int, c Comm, stream uintptr) error {
	return dl.ErrUnsupported
}

// Recv fails with dl.ErrUnsupported.
func (l *Lib) Recv(recv uint64, count uint64, dt DataType, peer int, c Comm, stream uintptr) error {
	return dl.ErrUnsupported
}
