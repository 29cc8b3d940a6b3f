//go:build !cgo || !linux

package dl

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// Library is a loaded shared library. In this build (no cgo, or not Linux)
// no library can be loaded and Open always fails.
type Library struct{}

// Open always fails in this build with an error wrapping ErrUnsupported.
func Open(sonames []string, syms []Sym) (*Library, error) {
	return nil, unsupported(sonames)
}

func unsupported(sonames []string) error {
	return fmt.Errorf("%s: loading vendor libraries needs collsim built with cgo (CGO_ENABLED=1) on Linux; this build is for %s/%s: %w",
		strings.Join(sonames, ", "), runtime.GOOS, runtime.GOARCH, ErrUnsupported)
}

// Soname returns "".
func (l *Library) Soname() string { return "" }

// Has returns false.
func (l *Library) Has(name string) bool { return false }

// Addr returns nil.
func (l *Library) Addr(name string) unsafe.Pointer { return nil }

// Close does nothing.
func (l *Library) Close() error { return nil }

// Probe always fails in this build with an error wrapping ErrUnsupported.
func Probe(sonames []string) error { return unsupported(sonames) }
