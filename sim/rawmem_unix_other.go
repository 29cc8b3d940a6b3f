//go:build unix && !linux

package sim

// adviseHuge leaves the mapping's pages as the system gives them (see
// rawmem_linux.go).
func adviseHuge([]byte) {}
