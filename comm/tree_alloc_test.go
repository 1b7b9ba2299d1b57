package comm

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestTreeAllocatesNothing holds the tree's kernel to no allocation of its own (its
// primitives, state and steps live in the rank; a method value kept there, or a step's
// address passed to a poll from the stack, would cost one every call): a tree call
// allocates what its launch does, no more than a ring call of the same protocol, and under
// Simple no more than a one-shot call.
func TestTreeAllocatesNothing(t *testing.T) {
	allocs := newAllocCounter(t)
	oneShot := allocs(OneShot, ProtoAuto)
	require.LessOrEqual(t, allocs(Tree, Simple), oneShot, "tree/Simple allocates more a call than one-shot")
	for _, proto := range []Proto{Simple, LL, LL128} {
		require.LessOrEqual(t, allocs(Tree, proto), allocs(Ring, proto), "tree/%v allocates more a call than ring/%v", proto, proto)
	}
}

// newAllocCounter returns how many allocations one all-reduce of 2048 f32 on all 8 ranks
// of a group costs, by algorithm and protocol, launches included.
func newAllocCounter(t *testing.T) func(Algo, Proto) float64 {
	if raceDetector {
		t.Skip("the race detector allocates")
	}
	const n, count = 8, 2048
	g := newGroup(t, n, device.NVSwitch, Config{})
	ins, outs := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
	return func(algo Algo, proto Proto) float64 {
		return testing.AllocsPerRun(100, func() {
			for r := range n {
				require.NoError(t, g.c.Rank(r).AllReduceProto(g.streams[r], algo, proto, ins[r], outs[r], count))
			}
			for _, s := range g.streams {
				require.NoError(t, s.Synchronize())
			}
		})
	}
}
