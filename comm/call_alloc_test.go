package comm

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestSmallCallAllocatesNothing holds a one-chunk all-reduce, issued and run, to no
// allocation: its call and kernel come back from the rank's free list and its kernel name
// is kept (chunkkernel.go). Calls issued back to back, as a step issues them, then
// Synchronize; what a batch allocates beyond Synchronize's own is the calls'.
func TestSmallCallAllocatesNothing(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector allocates")
	}
	const n, count, batch = 2, 256, 8
	g := newGroup(t, n, device.NVSwitch, Config{})
	ins, outs := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
	syncAll := func() {
		for _, s := range g.streams {
			require.NoError(t, s.Synchronize())
		}
	}
	syncOnly := testing.AllocsPerRun(20, syncAll)
	for _, algo := range []Algo{OneShot, TwoShot, Ring, Auto} {
		allocs := testing.AllocsPerRun(50, func() {
			for range batch {
				for r := range n {
					require.NoError(t, g.c.Rank(r).AllReduceProto(g.streams[r], algo, ProtoAuto, ins[r], outs[r], count))
				}
			}
			syncAll()
		})
		require.LessOrEqual(t, allocs, syncOnly, "%v: %d calls a rank allocate %.1f times beyond Synchronize's %.1f", algo, batch, allocs-syncOnly, syncOnly)
	}
}
