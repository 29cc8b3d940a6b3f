//go:build unix

package sim

import "syscall"

// rawHeapFactor is how many times its bytes an array from rawAlloc holds
// at its peak: mapped outside the Go heap, it is freed when the run ends,
// not by the collector, and so never waits for a collection as garbage.
const rawHeapFactor = 1

// rawAlloc maps n zeroed bytes outside the Go heap (anonymous private
// memory); rawFree unmaps them. The memory must only hold data without
// pointers.
func rawAlloc(n int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	adviseHuge(b)
	return b, nil
}

func rawFree(b []byte) error { return syscall.Munmap(b) }
