//go:build !cgo || !linux

package nvmlinfo

import "github.com/collsim/collsim/hwbench/internal/dl"

// Query always fails in this build with an error wrapping dl.ErrUnsupported.
func Query() (*Info, error) { return nil, dl.Probe(Sonames) }
