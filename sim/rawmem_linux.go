package sim

import "syscall"

// adviseHuge asks the kernel to back b with huge pages where it can
// (transparent huge pages, when the system leaves them to madvise). The
// arrays rawAlloc maps are written whole soon after, so a 2 MiB page
// holds nothing that would not be touched anyway, and it is one fault
// instead of 512. Advice only: if the kernel declines, the memory is
// the same, in small pages.
func adviseHuge(b []byte) {
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) // advice; the mapping is usable either way
}
