package device_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

// TestHelpersRunBackToBackKernels launches many kernels of every grid size around the
// budget, one right after another (the helpers still polling) and after pauses longer than
// the helpers poll (so they have blocked and must be woken): every block runs exactly once,
// and a kernel's blocks all finish before the next kernel's start.
func TestHelpersRunBackToBackKernels(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 4})
	d := dev(t, n, 0)
	for _, budget := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("budget%d", budget), func(t *testing.T) {
			s := newStream(t, d, "s", budget)
			const kernels = 300
			counts := make([][]atomic.Int32, kernels)
			var running, overlapped atomic.Int32
			for k := range kernels {
				grid := 1 + k%(budget+3)
				counts[k] = make([]atomic.Int32, grid)
				require.NoError(t, s.Launch(device.Kernel{Name: "count", Grid: grid,
					Prologue: func() error {
						if running.Load() != 0 {
							overlapped.Add(1)
						}
						return nil
					},
					Block: func(b device.Block) error {
						running.Add(1)
						defer running.Add(-1)
						counts[k][b.Index].Add(1)
						return nil
					}}))
				if k%50 == 49 {
					require.NoError(t, s.Synchronize())
					time.Sleep(2 * time.Millisecond) // the helpers stop polling and block
				}
			}
			require.NoError(t, s.Synchronize())
			require.Zero(t, overlapped.Load(), "a kernel started while the previous one's blocks ran")
			for k := range counts {
				for i := range counts[k] {
					require.EqualValuesf(t, 1, counts[k][i].Load(), "kernel %d block %d ran %d times", k, i, counts[k][i].Load())
				}
			}
		})
	}
}

// TestKernelsDoNotAllocate runs a sequence of 64 kernels on helpers and alone: what the
// stream allocates must not grow with the kernels (a step runs hundreds a rank), only
// Synchronize's acknowledgement remains.
func TestKernelsDoNotAllocate(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
	s := newStream(t, dev(t, n, 0), "s", 2)
	for _, grid := range []int{1, 2, 5} {
		seq := emptyKernels(64, grid)
		allocs := testing.AllocsPerRun(50, func() {
			require.NoError(t, s.LaunchSequence(seq))
			require.NoError(t, s.Synchronize())
		})
		require.LessOrEqualf(t, allocs, 2.0, "grid %d: %v allocations for 64 kernels", grid, allocs)
	}
}

// TestHelpersSeeBlockErrors fails one block of a wide kernel run by helpers: the stream
// reports it, and the next kernel is skipped.
func TestHelpersSeeBlockErrors(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 4})
	s := newStream(t, dev(t, n, 0), "s", 4)
	require.NoError(t, s.Launch(device.Kernel{Name: "fails", Grid: 1000, Block: func(b device.Block) error {
		if b.Index == 3 {
			return fmt.Errorf("block three")
		}
		return nil
	}}))
	var after atomic.Bool
	require.NoError(t, s.Launch(device.Kernel{Name: "after", Grid: 8, Block: func(device.Block) error { after.Store(true); return nil }}))
	require.ErrorContains(t, s.Synchronize(), "kernel fails block 3/1000: block three")
	require.False(t, after.Load(), "a kernel ran after its stream failed")
}

// TestCloseEndsHelpers checks that closing a node ends every stream's helpers before Close
// returns, blocked (the first two devices' streams have been idle for longer than helpers
// poll) or polling (the last two's just ran a kernel).
func TestCloseEndsHelpers(t *testing.T) {
	before := helperGoroutines()
	n, err := device.NewNode(device.NodeConfig{Devices: 4, SMs: 4})
	require.NoError(t, err)
	for i := range 4 {
		s := newStream(t, dev(t, n, i), "s", 0)
		require.NoError(t, s.Launch(device.Kernel{Name: "k", Grid: 8, Block: func(device.Block) error { return nil }}))
		require.NoError(t, s.Synchronize())
		if i == 1 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	require.Equal(t, before+4*3, helperGoroutines(), "each stream of 4 SMs keeps 3 helpers")
	require.NoError(t, n.Close())
	require.Equal(t, before, helperGoroutines(), "helpers left after Close")
}

// helperGoroutines counts the goroutines running a stream's SM helper.
func helperGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "device.(*Stream).helper(")
		}
		buf = make([]byte, 2*len(buf))
	}
}
