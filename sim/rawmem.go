package sim

import (
	"fmt"
	"unsafe"
)

// rawArena holds the large arrays of one run that outlive no call
// (the executor's per-op state and successor lists) outside the Go heap:
// the collector lets the heap grow to about twice its live data, so an
// array there costs twice its bytes at the peak, one here costs its bytes
// and is unmapped the moment the run ends. Only data without pointers may
// live in it, and nothing may keep a slice of it after free.
type rawArena struct {
	blocks [][]byte
}

// rawSlice returns n zeroed elements of T from a (T must hold no
// pointers); small arrays are left on the Go heap, where a map costs more
// than it saves.
func rawSlice[T any](a *rawArena, n int) ([]T, error) {
	size := n * int(unsafe.Sizeof(*new(T)))
	if size < rawMinBytes {
		return make([]T, n), nil
	}
	b, err := rawAlloc(size)
	if err != nil {
		return nil, fmt.Errorf("sim: cannot map %s for the DES's execution state: %v", fmtMem(int64(size)), err)
	}
	a.blocks = append(a.blocks, b)
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n), nil
}

// rawMinBytes is the smallest array rawSlice maps (below it the Go heap's
// doubling costs less than a mapping's page and system calls).
const rawMinBytes = 1 << 20

// release unmaps the array of a that s is (a no-op for one left on the Go
// heap, which the collector reclaims); s must not be used after.
func release[T any](a *rawArena, s []T) {
	if len(s) == 0 {
		return
	}
	p := unsafe.Pointer(&s[0])
	for i, b := range a.blocks {
		if unsafe.Pointer(&b[0]) == p {
			_ = rawFree(b) // unmapping memory this arena mapped cannot fail
			a.blocks = append(a.blocks[:i], a.blocks[i+1:]...)
			return
		}
	}
}

// free unmaps every array of a; their slices must not be used after.
func (a *rawArena) free() {
	for _, b := range a.blocks {
		_ = rawFree(b) // unmapping memory this arena mapped cannot fail
	}
	a.blocks = nil
}
