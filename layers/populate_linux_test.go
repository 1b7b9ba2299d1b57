package layers

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestKVCacheIsBacked: a new KV cache's pages are resident before any step writes them
// (mincore), so no step pays their first faults.
func TestKVCacheIsBacked(t *testing.T) {
	c, err := NewPagedKVCache(KVCacheConfig{Layers: 1, NumBlocks: 1024, BlockSize: 16, KVHeads: 4, HeadDim: 64})
	require.NoError(t, err)
	k, v := c.Layer(0)
	for name, s := range map[string][]float32{"K": k, "V": v} {
		page := unix.Getpagesize()
		start := uintptr(unsafe.Pointer(&s[0]))
		first := (start + uintptr(page) - 1) &^ uintptr(page-1)
		n := (int(start) + 4*len(s) - int(first)) / page
		resident := make([]byte, n)
		// x/sys/unix has no Mincore: the raw call.
		_, _, errno := unix.Syscall(unix.SYS_MINCORE, first, uintptr(n*page), uintptr(unsafe.Pointer(&resident[0])))
		require.Zero(t, errno, "mincore: %v", errno)
		missing := 0
		for _, r := range resident {
			missing += int(1 - r&1)
		}
		require.Zero(t, missing, "%s: %d of %d pages not resident", name, missing, n)
	}
}
