//go:build !unix

package sim

import "unsafe"

// rawHeapFactor is how many times its bytes an array from rawAlloc holds
// at its peak: without anonymous mappings it is on the Go heap, which
// grows to about twice its live data (see bytesPerOp).
const rawHeapFactor = 2

// rawAlloc returns n zeroed bytes (on the Go heap here); rawFree lets go
// of them.
func rawAlloc(n int) ([]byte, error) { return make([]byte, n), nil }

func rawFree([]byte) error { return nil }

// adviseHugeRange leaves the pages as the system gives them.
func adviseHugeRange(unsafe.Pointer, uintptr) {}
