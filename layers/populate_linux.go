package layers

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// populate backs s's pages with memory now (MADV_POPULATE_WRITE, Linux 5.14), as a GPU
// allocation is backed when it is made: a fresh KV cache's pages are otherwise faulted
// in by the steps that first write them, a page at a time, while the ranks wait. Then it
// writes each page once from this process (touchPages): under a hypervisor that keeps
// shadow page tables (this project's VMs), a page the kernel populated still traps on the
// process's first write to it, 6-11 µs a page, which a fresh server's first requests
// paid in their KV writes. On an older kernel madvise does nothing and the writes fault
// the pages in. s must be freshly made (zeroed).
func populate[T float32 | uint16](s []T) {
	if len(s) == 0 {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
	// madvise wants a page-aligned start: skip to the first whole page.
	page := unix.Getpagesize()
	skip := (page - int(uintptr(unsafe.Pointer(&b[0])))%page) % page
	if skip < len(b) {
		_ = unix.Madvise(b[skip:], unix.MADV_POPULATE_WRITE)
	}
	touchPages(s, page)
}
