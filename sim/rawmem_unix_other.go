//go:build unix && !linux

package sim

import "unsafe"

// adviseHuge leaves the mapping's pages as the system gives them (see
// rawmem_linux.go).
func adviseHuge([]byte) {}

// adviseHugeRange leaves the pages as the system gives them.
func adviseHugeRange(unsafe.Pointer, uintptr) {}
