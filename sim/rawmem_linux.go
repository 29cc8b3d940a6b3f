package sim

import (
	"syscall"
	"unsafe"
)

// adviseHuge asks the kernel to back b with huge pages where it can
// (transparent huge pages, when the system leaves them to madvise). The
// arrays rawAlloc maps are written whole soon after, so a 2 MiB page
// holds nothing that would not be touched anyway, and it is one fault
// instead of 512. Advice only: if the kernel declines, the memory is
// the same, in small pages.
func adviseHuge(b []byte) {
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) // advice; the mapping is usable either way
}

// hugePage is the size of a transparent huge page (x86-64, arm64 with 4
// KiB base pages).
const hugePage = 2 << 20

// adviseHugeRange is adviseHuge for the whole huge pages inside n bytes
// at p, memory of the Go heap that a schedule is about to fill (growFresh):
// pages the schedule does not span are left alone. Only arrays of 4 MiB
// or more are advised, so that at least one whole page lies inside.
func adviseHugeRange(p unsafe.Pointer, n uintptr) {
	if n < 2*hugePage {
		return
	}
	b := unsafe.Slice((*byte)(p), n)
	lo := (uintptr(p)+hugePage-1)&^(hugePage-1) - uintptr(p)
	hi := (uintptr(p)+n)&^(hugePage-1) - uintptr(p)
	if hi <= lo {
		return
	}
	_ = syscall.Madvise(b[lo:hi], syscall.MADV_HUGEPAGE) // advice, as in adviseHuge
}
