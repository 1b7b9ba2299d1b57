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

// TestBlockingCallKeepsItsKernel: a blocking call's kernel comes back to the host once the
// call returned, and the next blocking call takes that same kernel without the locked
// list; a queued call's kernel still goes back to the list from its epilogue.
func TestBlockingCallKeepsItsKernel(t *testing.T) {
	g := newGroup(t, 1, device.NVSwitch, Config{})
	in, out := g.alloc(t, dtype.F32, 256), g.alloc(t, dtype.F32, 256)
	r, s := g.c.Rank(0), g.streams[0]
	require.NoError(t, r.AllReduceWait(s, OneShot, ProtoAuto, in[0], out[0], 256))
	kept := r.calls.spare
	require.NotNil(t, kept, "the blocking call's kernel is the host's spare")
	for range 3 {
		require.NoError(t, r.AllReduceWait(s, OneShot, ProtoAuto, in[0], out[0], 256))
		require.Same(t, kept, r.calls.spare, "the next blocking call reuses it")
	}
	require.Empty(t, r.calls.free, "the locked list is left alone")
	require.Nil(t, kept.cl, "a kept kernel holds no call")

	require.NoError(t, r.AllReduceProto(s, OneShot, ProtoAuto, in[0], out[0], 256))
	require.NoError(t, s.Synchronize())
	require.Nil(t, r.calls.spare, "the queued call took the spare")
	require.Equal(t, []*chunkKernel{kept}, r.calls.free, "and its epilogue gave it to the list")
}
