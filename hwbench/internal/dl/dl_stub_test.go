//go:build !cgo || !linux

package dl

import (
	"errors"
	"testing"
)

func TestStubUnsupported(t *testing.T) {
	if _, err := Open([]string{"libcudart.so.12"}, Syms("cudaMalloc")); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Open = %v, want ErrUnsupported", err)
	}
	if err := Probe([]string{"libnccl.so.2"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Probe = %v, want ErrUnsupported", err)
	}
}
