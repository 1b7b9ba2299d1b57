package testutil

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSyncBufferConcurrent: writers and a reader running at once (under -race) lose no
// write and tear none.
func TestSyncBufferConcurrent(t *testing.T) {
	var b SyncBuffer
	const writers, lines = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				_, err := fmt.Fprintf(&b, "w%d line %d\n", w, i)
				require.NoError(t, err)
			}
		})
	}
	wg.Go(func() {
		for range lines {
			_ = b.String()
		}
	})
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, got, writers*lines)
	for w := range writers {
		for i := range lines {
			require.Contains(t, got, fmt.Sprintf("w%d line %d", w, i))
		}
	}
}
