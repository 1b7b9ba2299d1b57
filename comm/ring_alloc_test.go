package comm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRingAllocatesNothing holds the ring's kernel to no allocation of its own: the step
// under way lives in the rank (a step on the schedule's stack, whose address the
// primitives take through their interface, would move to the heap every call), so a ring
// call under Simple allocates no more than a one-shot call.
func TestRingAllocatesNothing(t *testing.T) {
	allocs := newAllocCounter(t)
	require.LessOrEqual(t, allocs(Ring, Simple), allocs(OneShot, ProtoAuto), "ring/Simple allocates more a call than one-shot")
}
