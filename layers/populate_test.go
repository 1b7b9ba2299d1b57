package layers

import (
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestTouchPagesWritesEveryPage: touchPages writes one element on every page s spans and
// leaves the others alone, whatever the slice's alignment and element size.
func TestTouchPagesWritesEveryPage(t *testing.T) {
	page := os.Getpagesize()
	for _, skip := range []int{0, 1, 3, 1000, page/2 - 1} {
		for _, n := range []int{1, 7, page / 4, 5*page/4 + 3, 3 * page} {
			checkTouched(t, make([]float32, skip+n)[skip:], func(s []float32) { touchPages(s, page) })
			checkTouched(t, make([]uint16, skip+n)[skip:], func(s []uint16) { touchPages(s, page) })
		}
	}
}

// TestPopulateTouchesEveryPage: a KV cache's populate also writes every page from this
// process (madvise alone leaves the first write to trap under a shadow-paging hypervisor).
func TestPopulateTouchesEveryPage(t *testing.T) {
	checkTouched(t, make([]float32, 1+3*os.Getpagesize()/4)[1:], populate[float32])
	checkTouched(t, make([]uint16, 5*os.Getpagesize()), populate[uint16])
}

// checkTouched fills s with ones, runs touch on it, and requires exactly one zero on every
// page s spans.
func checkTouched[T float32 | uint16](t *testing.T, s []T, touch func([]T)) {
	t.Helper()
	page := os.Getpagesize()
	for i := range s {
		s[i] = 1
	}
	touch(s)
	size := uintptr(unsafe.Sizeof(s[0]))
	base := uintptr(unsafe.Pointer(&s[0]))
	written := map[uintptr]int{}
	for i := range s {
		p := (base + uintptr(i)*size) / uintptr(page)
		if _, ok := written[p]; !ok {
			written[p] = 0
		}
		if s[i] == 0 {
			written[p]++
		}
	}
	for p, n := range written {
		require.Equal(t, 1, n, "%d elements of %T at offset %d: page %#x written %d times, want once", len(s), s[0], base%uintptr(page), p*uintptr(page), n)
	}
}
